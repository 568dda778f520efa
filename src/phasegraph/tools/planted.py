"""What a command may plant for the host to run later, found before it runs and taken away after.

A program the argument checks cannot see into (an interpreter, a caller's own), and a command
line whose redirections write files, may lay out git metadata anywhere in the workspace (a
``.git``, a folder git reads as a repository, `git_layout`), or a Python startup module in a
folder on the interpreter's path (`boundary.startup_modules`). The workspace is scanned before
such a command (what is there is bound read-only; a tree too large to scan refuses it) and
after: what it made is taken away, and the call fails saying so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from phasegraph.tools.boundary import startup_modules
from phasegraph.tools.git_layout import scan
from phasegraph.tools.sandbox import undo_created
from phasegraph.tools.workspace import Workspace, WorkspaceError

#: How many entries the scan after a command looks at: more than before (it may have made some).
AFTER_SCAN_ENTRIES = 5 * 200_000


def git_before(root: Path, workspace: Workspace, free: list[str]) -> frozenset[str] | None:
    """The git metadata in the workspace before a command whose programs may write anywhere.

    None when every program is confined by the argument checks (it writes nothing); a tree too
    large to scan whole refuses the command: what it lays out could not be found after.
    """
    if not free:
        return None
    found = scan(root, workspace.directory)
    if not found.complete:
        raise WorkspaceError(
            f"{', '.join(sorted(set(free)))} may write anywhere in the workspace, and it holds "
            "too many entries to check afterwards for git metadata laid out by the command; "
            "the command is refused (work in a smaller folder, or use programs the argument "
            "checks know)"
        )
    return found.found | _startup_modules(root)


def _startup_modules(root: Path) -> frozenset[str]:
    """The Python startup modules in the workspace, of any suffix (`boundary.startup_modules`)."""
    return frozenset(str(path.relative_to(root)) for path in startup_modules(root))


def take_away(
    root: Path, workspace: Workspace, absent: list[str], before: frozenset[str] | None
) -> None:
    """Remove what the command made of git metadata and startup modules; fail saying what."""
    undone = [f"{n}/" for n in undo_created(root, absent)] if absent else []
    if before is not None:
        after = scan(root, workspace.directory, limit=AFTER_SCAN_ENTRIES)
        for rel in sorted((after.found | _startup_modules(root)) - before):
            _remove(root / rel.removesuffix("@"), root)
            undone.append(rel.removesuffix("@"))
        if not after.complete:
            raise WorkspaceError(
                "the command left the workspace too large to check, or a folder it cannot "
                "read, so git metadata it may have laid out cannot be found; check the "
                "workspace before running git in it"
            )
    if undone:
        raise WorkspaceError(
            f"the command made {', '.join(undone)}, which git would read as a repository or "
            "commands may not write; it was taken away"
        )


def _remove(path: Path, root: Path) -> None:
    """Take a planted repository away: its ``HEAD`` first (no longer one), then the rest.

    A folder is renamed out of its name first (``.git`` is followed by name), then removed
    as far as it can be.
    """
    with contextlib.suppress(OSError):
        if not path.is_dir() or path.is_symlink():
            path.unlink()
            return
        path.chmod(0o700)  # a mode the command set must not keep it (removal needs write)
        for name in os.listdir(path):
            if name.casefold() == "head":
                (path / name).unlink()
        if path != root:
            aside = path.with_name(f".removed-by-phasegraph-{os.urandom(4).hex()}")
            os.replace(path, aside)
            shutil.rmtree(aside, onerror=_writable_then_again)


def _writable_then_again(_: object, path: str, __: object) -> None:
    """Rmtree's error handler: make the folder above writable, and try once more."""
    with contextlib.suppress(OSError):
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
