"""A command's process count, bounded by a pids cgroup where the kernel exempts its user.

The kernel applies ``RLIMIT_NPROC`` to every user but root (`processes.Limits`). A command of a
process run as root is bounded by a pids cgroup instead, where the machine lets this process
make one: a child of its own cgroup in the pids hierarchy (cgroup v1), or in the unified one
(v2) where the pids controller is handed down to children. The command's first process joins
it before it runs anything (`joined`), so every process it starts is counted; past
``pids.max`` a fork fails with "Resource temporarily unavailable", as with the limit. Where no
such cgroup can be made (a read-only ``/sys/fs/cgroup`` in a container), a command run as root
is bounded by its timeout and its pid namespace alone (docs/sandbox.md).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import threading
from collections.abc import Iterator
from pathlib import Path

_counter = itertools.count()
_lock = threading.Lock()
#: This process's cgroups: all it made, and those no command runs in now.
_made: list[Path] = []
_free: list[Path] = []


@functools.cache
def pids_parent() -> Path | None:
    """A cgroup folder with the pids controller where this process may make children, or None."""
    if os.geteuid() != 0:
        return None
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in own:
        number, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            base = _mount_point(mounts, "cgroup", "pids")
            if base is not None and _usable(base / path.lstrip("/"), "tasks"):
                return base / path.lstrip("/")
        elif number == "0":
            base = _mount_point(mounts, "cgroup2", "")
            folder = base / path.lstrip("/") if base is not None else None
            if folder is not None and _hands_down_pids(folder) and _usable(folder, "cgroup.procs"):
                return folder
    return None


def _mount_point(mounts: list[str], kind: str, option: str) -> Path | None:
    """Where a cgroup file system of ``kind`` (with ``option`` among its options) is mounted."""
    for line in mounts:
        fields = line.split()
        if "-" not in fields:
            continue
        after = fields[fields.index("-") + 1 :]
        if after[0] == kind and (not option or option in after[-1].split(",")):
            return Path(fields[4])
    return None


def _hands_down_pids(folder: Path) -> bool:
    """Whether v2's ``folder`` gives its children the pids controller (turning it on if root)."""
    try:
        if "pids" in (folder / "cgroup.subtree_control").read_text().split():
            return True
        if "pids" in (folder / "cgroup.controllers").read_text().split():
            (folder / "cgroup.subtree_control").write_text("+pids")
            return True
    except OSError:
        pass
    return False


def _usable(folder: Path, procs: str) -> bool:
    """Whether a child can be made in ``folder``, given a pids.max, and removed again."""
    probe = folder / f"phasegraph-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        (probe / "pids.max").write_text("1")
        return (probe / procs).exists() or (probe / "cgroup.procs").exists()
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@contextlib.contextmanager
def pids_cgroup(limit: int) -> Iterator[Path | None]:
    """A cgroup of at most ``limit`` processes for one command; None where none can be had.

    Yields the file a process writes ``0`` to, to join it (`joined`). Cgroups are kept for
    the next command once one ends, and removed when this process exits: removing a cgroup a
    process has run in waits for the kernel's bookkeeping, 10 ms and more a command.
    """
    parent = pids_parent() if limit > 0 else None
    if parent is None:
        yield None
        return
    folder = _take(parent)
    try:
        if folder is not None:
            (folder / "pids.max").write_text(str(limit))
    except OSError:
        folder = None
    try:
        yield None if folder is None else folder / "cgroup.procs"
    finally:
        if folder is not None:
            with _lock:
                _free.append(folder)


def _take(parent: Path) -> Path | None:
    """A cgroup no command runs in: one kept from before, or a new one."""
    with _lock:
        for folder in _free:
            if _empty(folder):  # a command's processes may die a moment after its end
                _free.remove(folder)
                return folder
        if not _made:
            atexit.register(_remove_all)
            _remove_stale(parent)
        folder = parent / f"phasegraph-{os.getpid()}-{next(_counter)}"
        try:
            folder.mkdir()
        except OSError:
            return None
        _made.append(folder)
        return folder


def _empty(folder: Path) -> bool:
    """Whether no process is left in a cgroup."""
    try:
        return (folder / "pids.current").read_text().strip() == "0"
    except OSError:
        return False


def _remove_all() -> None:
    """Remove this process's cgroups, at its exit."""
    for folder in _made:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _remove_stale(parent: Path) -> None:
    """Remove the cgroups of phasegraph processes that ended without removing theirs."""
    for folder in parent.glob("phasegraph-*-*"):
        pid = folder.name.split("-")[1]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                folder.rmdir()


def joined(procs: Path, argv: list[str]) -> list[str]:
    """``argv`` run by a process that first joins the cgroup whose ``cgroup.procs`` is given.

    The host's ``sh`` runs a fixed script: it writes its own pid (``0``) to the file, then
    replaces itself with ``argv``, which is passed as arguments and never read as shell text.
    """
    return ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', str(procs), *argv]
