"""The workspace's folders as the tools see them: which are protected, which skipped, the walk."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

# Directories no tool writes into: .git runs hooks, .phasegraph holds the run's own database.
PROTECTED_DIRS = frozenset({".git", ".phasegraph"})
# Directories listings and searches skip: large, generated or private.
SKIPPED_DIRS = PROTECTED_DIRS | {"__pycache__", "node_modules", ".venv", ".mypy_cache"}


def walk_tree(start: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    """``(folder, its folders, its other entries)`` from ``start`` down, sorted, top first.

    Without recursion (a tree of any depth is walked; Python 3.11's os.walk recurses and
    raises RecursionError past about a thousand levels), never through a symlinked folder, and
    without the folders in `SKIPPED_DIRS`.
    """
    stack = [start]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        dirs = [
            e.name
            for e in entries
            if e.is_dir(follow_symlinks=False) and e.name not in SKIPPED_DIRS
        ]
        others = [e.name for e in entries if not e.is_dir(follow_symlinks=False)]
        yield current, dirs, others
        stack.extend(current / d for d in reversed(dirs))
