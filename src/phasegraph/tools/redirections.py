"""A checked command's plan, and the files its redirections open (`pipeline.execute_command`).

``<`` opens a regular file of the workspace, or a text given as ``input`` (an earlier task's
output by reference, ``$t1``) is the first program's input; with neither, a program that reads
its input is found out (`no_input`).
``>`` and ``>>`` write a temporary file beside the target, renamed over it once the command has
ended by itself, so a stopped command leaves the file as it was and ``sort a > a`` sorts ``a``.
Where the file system allows, the temporary file has no name until then (``O_TMPFILE``): a
program that lists the folder (``ls -a``, ``find``) does not list it.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import stat
import tempfile
import termios
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from phasegraph.tools.command_line import Stage
from phasegraph.tools.workspace import Workspace, WorkspaceError, open_in

DEV_NULL = "/dev/null"
#: Where this process's open files have names, through which an unnamed file is linked.
PROC_FDS = "/proc/self/fd"
#: What the input of a program given none holds: a program that reads it takes it.
UNASKED = b"\n"


@dataclass
class Planned:
    """A checked command: each program's argv and where its input and output go."""

    argvs: list[list[str]]
    stages: list[Stage]
    reads: PurePosixPath | None = None
    text_input: str | None = None
    """Text given to the first program as its input, in place of a file ``<`` names."""
    writes: dict[str, tuple[PurePosixPath, bool]] = field(default_factory=dict)
    """Files written, by what writes them ("out", or "err<stage>"): the path, and appended."""


def no_input(planned: Planned) -> bool:
    """Whether the first program is given no input: no ``<`` (not even /dev/null), no text.

    Its input is then a pipe holding one byte that no one gave (`Redirected.input_was_read`):
    a program that reads its input when no file was named (``wc -l`` alone) takes it, and the
    command is refused, whatever the program then printed or however it ended.
    """
    return (
        planned.reads is None and planned.text_input is None and planned.stages[0].stdin != DEV_NULL
    )


class Redirected:
    """A command's redirected files: its input opened, each output as a temporary file beside it."""

    def __init__(self, workspace: Workspace, planned: Planned, stack: contextlib.ExitStack) -> None:
        """Open what ``planned`` redirects, each closed (a temporary file removed) by ``stack``."""
        self.stdin: int | None = None
        self.unasked: int | None = None
        """The read end of the pipe a first program given no input reads from, if it is one."""
        self.outputs: dict[str, tuple[int, str, PurePosixPath, int]] = {}
        if planned.reads is not None:
            self.stdin = stack.enter_context(closing_fd(workspace.open_file(planned.reads)))
        elif planned.text_input is not None:
            self.stdin = stack.enter_context(closing_fd(_text_file(planned.text_input)))
        elif no_input(planned):
            self.stdin = self.unasked = stack.enter_context(closing_fd(_unasked_input()))
        for key, (rel, append) in planned.writes.items():
            folder = stack.enter_context(workspace.directory(rel.parent.parts, create=True))
            temp, fd = _temporary(folder, rel, append)
            stack.callback(_discard, folder, temp)
            stack.enter_context(closing_fd(fd))
            self.outputs[key] = (folder, temp, rel, fd)

    def input_was_read(self) -> bool:
        """Whether a first program given no input read from it (took the byte it holds)."""
        if self.unasked is None:
            return False
        left = array.array("i", [0])
        fcntl.ioctl(self.unasked, termios.FIONREAD, left)
        return left[0] < len(UNASKED)

    def fd(self, key: str) -> int | None:
        """The descriptor the program's output ``key`` goes to, if redirected to a file."""
        return self.outputs[key][3] if key in self.outputs else None

    def keep(self) -> list[tuple[str, int]]:
        """Rename each output over its target; each target and its size."""
        kept = []
        for folder, temp, rel, fd in self.outputs.values():
            size = os.fstat(fd).st_size
            _replace(folder, temp, fd, rel.name)
            kept.append((str(rel), size))
        return kept


def _unasked_input() -> int:
    """The read end of a pipe holding `UNASKED`, its write end closed."""
    read, write = os.pipe()
    try:
        os.write(write, UNASKED)
    finally:
        os.close(write)
    return read


def _text_file(text: str) -> int:
    """A descriptor reading ``text`` from its start: an unnamed file, gone once it is closed."""
    with tempfile.TemporaryFile() as handle:
        handle.write(text.encode("utf-8"))
        handle.flush()
        fd = os.dup(handle.fileno())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _temporary(folder: int, rel: PurePosixPath, append: bool) -> tuple[str, int]:
    """A new file beside ``rel`` (in the open ``folder``), holding its text when ``append``."""
    mode = 0o644
    with contextlib.suppress(FileNotFoundError):
        found = os.stat(rel.name, dir_fd=folder, follow_symlinks=False)
        if stat.S_ISDIR(found.st_mode):
            raise WorkspaceError(f"{str(rel)!r} is a folder; name a file to write")
        mode = found.st_mode & 0o777
    temp, fd = "", -1
    # unnamed until kept: a program that lists the folder (ls -a, find) does not see it; it is
    # named through /proc when kept, so without /proc it is named from the start
    if os.path.isdir(PROC_FDS):
        with contextlib.suppress(OSError, AttributeError):  # a file system without them
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, mode, dir_fd=folder)
    if fd < 0:
        temp = _temporary_name()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, mode, dir_fd=folder)
    if append:
        with contextlib.suppress(FileNotFoundError, WorkspaceError):
            source = open_in(folder, rel.name, str(rel))
            with os.fdopen(source, "rb") as handle:
                while chunk := handle.read(1 << 16):
                    os.write(fd, chunk)
    return temp, fd


def _temporary_name() -> str:
    return f".pg-{os.getpid()}-{os.urandom(6).hex()}.tmp"


def _discard(folder: int, temp: str) -> None:
    if temp:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=folder)


def _replace(folder: int, temp: str, fd: int, name: str) -> None:
    """The output in ``fd`` renamed over ``name``; an unnamed one (no ``temp``) named first."""
    if temp:
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        return
    temp = _temporary_name()
    os.link(f"{PROC_FDS}/{fd}", temp, dst_dir_fd=folder)
    try:
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        _discard(folder, temp)
        raise


@contextlib.contextmanager
def closing_fd(fd: int) -> Iterator[int]:
    """``fd``, closed when the block ends."""
    try:
        yield fd
    finally:
        os.close(fd)
