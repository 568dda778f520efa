"""The workspace's folders as the tools see them: which are protected, which skipped, the walk."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

# Directories no tool writes into: .git runs hooks, .phasegraph holds the run's own database.
PROTECTED_DIRS = frozenset({".git", ".phasegraph"})
# Directories listings and searches skip: large, generated or private.
SKIPPED_DIRS = PROTECTED_DIRS | {"__pycache__", "node_modules", ".venv", ".mypy_cache"}


DirOpener = Callable[[tuple[str, ...]], AbstractContextManager[int]]
"""Opens a folder under the root by its names, following no symlink (`Workspace.directory`)."""


def walk_tree(
    root: Path, start: tuple[str, ...], open_dir: DirOpener
) -> Iterator[tuple[Path, list[str], list[str], set[str]]]:
    """``(folder, its folders, its other entries, those of them that are symlinks)``, sorted.

    From the folder ``start`` (names under ``root``) down, top first, without recursion (a tree
    of any depth is walked; Python 3.11's os.walk recurses and raises RecursionError past about
    a thousand levels), never through a symlinked folder, and without the folders in
    `SKIPPED_DIRS`. Each folder is listed through a descriptor ``open_dir`` opens from the root
    one name at a time, following no symlink: a folder swapped for a link while the walk goes
    is not followed out of the tree, and a folder whose path is too long to name is listed.
    A folder that cannot be opened is left out.
    """
    stack = [start]
    while stack:
        parts = stack.pop()
        try:
            with open_dir(parts) as fd, os.scandir(fd) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except (OSError, ValueError):  # gone, swapped for a link: a WorkspaceError is one
            continue
        dirs = [
            e.name
            for e in entries
            if e.is_dir(follow_symlinks=False) and e.name not in SKIPPED_DIRS
        ]
        others = [e.name for e in entries if not e.is_dir(follow_symlinks=False)]
        links = {e.name for e in entries if e.is_symlink()}
        yield root.joinpath(*parts), dirs, others, links
        stack.extend((*parts, d) for d in reversed(dirs))
