"""The workspace's folders as the tools see them: which are protected, which skipped, the walk."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

# Directories no tool writes into: .git runs hooks, .phasegraph holds the run's own database.
PROTECTED_DIRS = frozenset({".git", ".phasegraph"})
# Directories listings and searches skip: large, generated or private.
SKIPPED_DIRS = PROTECTED_DIRS | {"__pycache__", "node_modules", ".venv", ".mypy_cache"}

#: How a folder is opened by the walk: a directory, no symlink followed, not inherited.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

DirOpener = Callable[[tuple[str, ...]], AbstractContextManager[int]]
"""Opens a folder under the root by its names, following no symlink (`Workspace.directory`)."""


@dataclass(frozen=True)
class Folder:
    """One folder of a walk: where it is, its entries, and a descriptor of it.

    ``fd`` is open while the walk is at this folder (until the next one is asked for): what
    its entries name can be opened relative to it, without walking the path from the root.
    """

    path: Path
    parts: tuple[str, ...]
    dirs: list[str]
    others: list[str]
    links: set[str]
    fd: int


def walk_tree(
    root: Path,
    start: tuple[str, ...],
    open_dir: DirOpener,
    *,
    skip: Collection[str] = SKIPPED_DIRS,
    check: Callable[[], None] | None = None,
    on_error: Callable[[tuple[str, ...]], None] | None = None,
) -> Iterator[Folder]:
    """Each `Folder` from ``start`` (names under ``root``) down, top first, entries sorted.

    Linear in the entries walked, and holding two descriptors whatever the depth: a folder is
    opened from its parent's descriptor, and the walk goes back up through ``..``, which must
    be the folder it came from (same device and inode) or the walk stops there; so a folder
    moved or swapped for a link while the walk goes is not followed out of the tree. No
    symlinked folder is entered, nor a folder named in ``skip``; one that cannot be opened is
    left out. ``check`` is called before each folder is listed: it raises to stop the walk
    (a deadline, a call given up on). A caller may take names out of a folder's ``dirs``
    while it is at that folder, as with ``os.walk``: those folders are not entered.
    ``on_error`` is told each folder (its names) that could not be opened or listed.
    """
    try:
        with open_dir(start) as opened:
            fd = os.dup(opened)
    except (OSError, ValueError):  # gone, swapped for a link: a WorkspaceError is one
        if on_error is not None:
            on_error(start)
        return
    parts = start
    frames: list[tuple[tuple[str, ...], Iterator[str], tuple[int, int]]] = []
    try:
        while True:
            if check is not None:
                check()
            folder = _listed(root, parts, fd, skip, on_error)
            yield folder
            frames.append((parts, iter(folder.dirs), _identity(fd)))
            while True:
                above, pending, _ = frames[-1]
                name = next(pending, None)
                if name is not None:
                    try:
                        child = os.open(name, DIR_FLAGS, dir_fd=fd)
                    except OSError:
                        if on_error is not None:
                            on_error((*above, name))
                        continue
                    os.close(fd)
                    fd, parts = child, (*above, name)
                    break
                frames.pop()
                if not frames:
                    return
                parent = os.open("..", DIR_FLAGS, dir_fd=fd)
                if _identity(parent) != frames[-1][2]:
                    os.close(parent)
                    return  # moved while walked: what is above is no longer the tree
                os.close(fd)
                fd = parent
    finally:
        os.close(fd)


def _listed(
    root: Path,
    parts: tuple[str, ...],
    fd: int,
    skip: Collection[str],
    on_error: Callable[[tuple[str, ...]], None] | None,
) -> Folder:
    try:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        entries = []
        if on_error is not None:
            on_error(parts)
    dirs, others, links = [], [], set()
    for entry in entries:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if entry.is_symlink():
            links.add(entry.name)
        if is_dir:
            if entry.name not in skip:
                dirs.append(entry.name)
        else:
            others.append(entry.name)
    return Folder(root.joinpath(*parts), parts, dirs, others, links, fd)


def _identity(fd: int) -> tuple[int, int]:
    found = os.fstat(fd)
    if not stat.S_ISDIR(found.st_mode):
        return (-1, -1)
    return (found.st_dev, found.st_ino)
