"""What git reads as a repository, so that no tool or command plants one (SPEC section 5).

Git takes a folder for a repository when it holds ``HEAD`` and either ``objects`` and ``refs``
or a ``commondir`` file naming the folder that holds them (its ``is_git_directory``: a bare
repository, or a worktree's, is found this way by any git command run inside it), and it
follows a ``.git`` entry, a folder or a file naming one. A repository's ``config`` names
programs git runs (``core.pager``, ``core.fsmonitor``, ``core.sshCommand``, aliases) and its
``hooks`` run on commits: one laid out in the workspace runs code on the host at the user's
next git command there. Both shapes are recognised by their entries, whatever the folder is
called; names are compared case-folded, as git on a case-insensitive file system reads them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from phasegraph.tools.tree import DirOpener, walk_tree

#: The entry git follows into a repository from the folder that holds it.
GIT_ENTRY = ".git"
#: The entries that make a folder a repository to git, case-folded: HEAD, and objects and refs
#: or a commondir that names where they are.
LAYOUT = frozenset({"head", "objects", "refs", "commondir"})
#: How many entries a scan looks at before it gives up (and the command is refused).
SCAN_ENTRIES = 200_000


def holds_layout(names: set[str]) -> bool:
    """Whether a folder with these entry names (case-folded) is a repository to git."""
    return "head" in names and ("commondir" in names or {"objects", "refs"} <= names)


def write_refusal(root: Path, parts: tuple[str, ...]) -> str | None:
    """Why a file at ``parts`` under ``root`` may not be written: it would be git's, or None.

    Refused: a path through a ``.git`` entry, and one that leaves a folder on its way (the
    root included) laid out as git reads a repository (`holds_layout`), or already in one.
    """
    for index, name in enumerate(parts):
        if name.casefold() == GIT_ENTRY:
            return f"{GIT_ENTRY} is git's; it is never written"
        folder = root.joinpath(*parts[:index])
        present = {n for n in LAYOUT if _has(folder, n)} | {name.casefold()} & LAYOUT
        if holds_layout(present):
            where = "/".join(parts[:index]) or "the workspace root"
            return (
                f"{where} would hold HEAD with objects and refs (or a commondir), which git reads "
                "as a repository (whose config names programs git runs); it is never written"
            )
    return None


def _has(folder: Path, name: str) -> bool:
    return os.path.lexists(folder / name) or os.path.lexists(folder / name.upper())


@dataclass(frozen=True)
class Scan:
    """The git metadata found in a tree, as paths relative to its root; complete or not."""

    found: frozenset[str]
    complete: bool


def scan(root: Path, open_dir: DirOpener, *, limit: int | None = None) -> Scan:
    """Every ``.git`` entry and every folder laid out as a repository under ``root``.

    Nothing is skipped (git reads any folder a user goes into), and nothing is entered
    through a symlink; a ``.git`` that is a symlink is found as ``.git@``, so one a command
    replaces by a folder is found anew. Past ``limit`` entries (`SCAN_ENTRIES`), or where a
    folder cannot be opened or listed (its mode), the scan is not `Scan.complete`.
    """
    limit = SCAN_ENTRIES if limit is None else limit
    found: set[str] = set()
    seen = 0
    unread: list[tuple[str, ...]] = []
    for folder in walk_tree(root, (), open_dir, skip=(), on_error=unread.append):
        names = folder.dirs + folder.others
        seen += len(names)
        if seen > limit:
            return Scan(frozenset(found), False)
        here = "/".join(folder.parts)
        folded = {n.casefold() for n in names}
        if holds_layout(folded):
            found.add(here or ".")
            folder.dirs.clear()  # git's already: what is inside is its, not entered
        found.update(
            (f"{here}/{n}" if here else n) + ("@" if n in folder.links else "")
            for n in names
            if n.casefold() == GIT_ENTRY
        )
        folder.dirs[:] = [n for n in folder.dirs if n.casefold() != GIT_ENTRY]
    return Scan(frozenset(found), not unread)
