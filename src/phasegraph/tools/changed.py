"""The files a command changed, found by their state before it ran and after.

A program may write files its command line does not name: ``sed -i`` edits its operands in
place, a script writes where it likes. The state of each regular file (its size, modification
time and inode) is read before such a command and after, and a file whose state differs, or
that is new, counts as written, as a file a ``>`` names does. Folders no tool writes into and
those listings skip (`tree.SKIPPED_DIRS`) are not read, and a tree of more than `STATE_FILES`
files is not compared: nothing is said of it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from phasegraph.tools.tree import DirOpener, walk_tree

#: The most files whose state is compared; a larger tree is not.
STATE_FILES = 20_000

FileStates = dict[str, tuple[int, int, int]]
"""Each regular file's size, modification time (ns) and inode, by its path under the root."""


def file_states(root: Path, open_dir: DirOpener, limit: int = STATE_FILES) -> FileStates | None:
    """The state of each regular file under ``root``; None past ``limit`` files.

    Read from each folder's descriptor, following no symlink (`tree.walk_tree`).
    """
    states: FileStates = {}
    for folder in walk_tree(root, (), open_dir):
        for name in folder.others:
            try:
                found = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(found.st_mode):
                rel = "/".join((*folder.parts, name))
                states[rel] = (found.st_size, found.st_mtime_ns, found.st_ino)
        if len(states) > limit:
            return None
    return states


def changed_files(before: FileStates | None, after: FileStates | None) -> list[tuple[str, int]]:
    """The files new or changed between two states, each with its size now, by path."""
    if before is None or after is None:
        return []
    return sorted((rel, now[0]) for rel, now in after.items() if before.get(rel) != now)
