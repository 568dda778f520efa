"""The built-in file tools, confined to one workspace root (SPEC section 5).

Confinement has two layers. First a path is resolved the way the kernel would (symlinks
included) and its components must lie under the resolved root; a string-prefix test would let
``/work/root-evil`` pass for ``/work/root``. Then the resolved path is opened one component at a
time from a descriptor of the root, with ``O_NOFOLLOW`` on every component: if anything was
swapped for a symlink between the check and the open, the open fails instead of following it.
Writes are also refused inside ``.git/`` (hooks run code) and ``.phasegraph/`` (the run's own
database), and go through a temporary file and a rename, so a reader never sees half a file.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from phasegraph.tools.boundary import guarded_reason, workspace_refusal
from phasegraph.tools.git_layout import write_refusal
from phasegraph.tools.stopping import Deadline
from phasegraph.tools.text_files import decode, lines_of, not_found, occurrences, stray_control
from phasegraph.tools.tree import PROTECTED_DIRS, Folder, walk_tree

BINARY_SNIFF_BYTES = 8192
MAX_LISTED = 500
MAX_MATCHES = 200
MAX_LINE_CHARS = 400
MAX_PATTERN_CHARS = 500
# regex's own timeout stops a catastrophic pattern; re would spin until the process ends.
SEARCH_TIMEOUT_S = 5.0
# A search's whole time, walking and reading included: lines each just under SEARCH_TIMEOUT_S
# would add up without end.
SEARCH_TOTAL_S = 30.0
#: A listing's whole time.
LIST_TOTAL_S = 30.0
#: The most a write_file or edit_file may write, unless the settings say otherwise.
MAX_WRITE_BYTES = 1_000_000

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: a FIFO opened to read waits for a writer; non-blocking, the open returns at once
# and the file is then refused for what it is.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)



class WorkspaceError(ValueError):
    """A tool call the workspace refuses; the message says why and what to do instead."""


@dataclass(frozen=True)
class Workspace:
    """One root directory and the caps its tools keep to."""

    root: str
    max_read_bytes: int = 1_000_000
    max_write_bytes: int = MAX_WRITE_BYTES

    @property
    def real_root(self) -> Path:
        """The root with symlinks resolved; an existing folder that may be a workspace.

        A folder `boundary.workspace_refusal` refuses (``/``, a home or system folder, the
        Python environment that runs phasegraph) is never one.
        """
        real = Path(os.path.realpath(os.path.expanduser(self.root)))
        if not real.is_dir():
            raise WorkspaceError(f"the workspace {self.root!r} is not an existing directory")
        if why := _refused_root(str(real)):
            raise WorkspaceError(why)
        return real

    # -- resolution -----------------------------------------------------------------------

    def relative(
        self, path: str, *, for_write: bool = False, exact: bool = False
    ) -> PurePosixPath:
        """The path's components under the root, after every check; raises WorkspaceError.

        Blank space around a tool's path is taken as a slip and dropped; ``exact`` keeps it,
        for a path a program will open as it is written (a command's argument).
        """
        if not isinstance(path, str):
            raise WorkspaceError(f"a path must be a string; got {type(path).__name__}")
        if "\x00" in path:
            raise WorkspaceError("a path may not contain a NUL byte")
        text = (path if exact else path.strip()) or "."
        if text.startswith("~"):
            raise WorkspaceError(
                f"{path!r}: '~' (a home directory) is outside the workspace; use a path "
                "relative to the workspace root"
            )
        if os.path.isabs(text):
            raise WorkspaceError(
                f"{path!r} is an absolute path; give a path relative to the workspace root"
            )
        root = self.real_root
        resolved = Path(os.path.realpath(root / text))
        if not resolved.is_relative_to(root):
            raise WorkspaceError(f"{path!r} resolves outside the workspace; it is refused")
        parts = resolved.relative_to(root).parts
        if for_write:
            # as written too: a symlink named .git is git's folder whatever it points to
            given = PurePosixPath(text).parts
            protected = [p for p in (*given, *parts) if p.casefold() in PROTECTED_DIRS]
            if protected:
                raise WorkspaceError(f"{path!r} is inside {protected[0]}/, which is never written")
            if not parts:
                raise WorkspaceError("the workspace root itself is not a file")
            if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text):
                raise WorkspaceError(f"{path!r}: a file name may not hold control characters")
            if why := write_refusal(root, parts) or guarded_reason(resolved):
                raise WorkspaceError(f"{path!r}: {why}")
        return PurePosixPath(*parts) if parts else PurePosixPath(".")

    @contextmanager
    def directory(self, parts: tuple[str, ...], *, create: bool = False) -> Iterator[int]:
        """A descriptor of a directory under the root, opened without following any symlink."""
        fd = os.open(self.real_root, _DIR_FLAGS)
        try:
            for name in parts:
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(name, 0o755, dir_fd=fd)
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _moved(name, exc) from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def open_file(self, rel: PurePosixPath) -> int:
        """A read descriptor of a regular file under the root (no symlink at any component)."""
        if rel == PurePosixPath("."):
            raise WorkspaceError("the workspace root is a directory, not a file")
        with self.directory(rel.parent.parts if rel.parent != PurePosixPath(".") else ()) as d:
            return open_in(d, rel.name, str(rel))

    def read_bytes(self, rel: PurePosixPath, limit: int) -> tuple[bytes, int]:
        """Up to ``limit`` bytes of a file and its full size."""
        fd = self.open_file(rel)
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            return handle.read(limit), size

    def write_bytes(self, rel: PurePosixPath, data: bytes) -> None:
        """Replace a file whole: a temporary file in the same directory, then a rename."""
        parent = rel.parent.parts if rel.parent != PurePosixPath(".") else ()
        with self.directory(parent, create=True) as d:
            mode = 0o644
            try:
                existing = os.stat(rel.name, dir_fd=d, follow_symlinks=False)
                if stat.S_ISDIR(existing.st_mode):
                    raise WorkspaceError(f"{str(rel)!r} is a directory")
                mode = stat.S_IMODE(existing.st_mode)
            except FileNotFoundError:
                pass
            # short whatever the name: a name near the 255-byte limit still gets written
            temp = f".pg-{os.getpid()}-{os.urandom(6).hex()}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            fd = os.open(temp, flags, mode, dir_fd=d)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                # rename replaces a symlink itself, never the file it points to
                os.replace(temp, rel.name, src_dir_fd=d, dst_dir_fd=d)
            except BaseException:
                try:
                    os.unlink(temp, dir_fd=d)
                except FileNotFoundError:
                    pass
                raise

    # -- the tools' bodies ----------------------------------------------------------------

    def list_files(self, path: str = ".") -> str:
        """Files under ``path``, recursively; directories end in '/', symlinks in '@' (as ls -F)."""
        rel = self.relative(path)
        full = self.real_root / rel
        if full.is_file():
            return str(rel)
        if os.path.lexists(full) and not full.is_dir():
            raise WorkspaceError(not_regular(str(rel)))
        entries: list[str] = []
        more = 0
        for entry in self.walk(path, Deadline(LIST_TOTAL_S, f"listing {rel}")):
            if len(entries) < MAX_LISTED:
                entries.append(entry)
            else:
                more += 1
        entries.sort()
        if not entries:
            return f"{rel}/ is empty"
        tail = f"\n[... {more} more entries not listed ...]" if more else ""
        return "\n".join(entries) + tail

    def walk(self, path: str = ".", deadline: Deadline | None = None) -> Iterator[str]:
        """The entries under a directory as `list_files` writes them, a folder's own first.

        Lazy, so a caller that shows a few (the plan and judge prompts) stops walking a large
        tree once it has them; past ``deadline`` the walk stops with a WorkspaceError.
        """
        rel = self.relative(path)
        for folder in self.folders(rel, deadline):
            here = PurePosixPath(*folder.parts)
            for name in [*folder.dirs, *folder.others]:
                mark = "@" if name in folder.links else "/" if name in folder.dirs else ""
                yield f"{here / name}{mark}"

    def folders(self, rel: PurePosixPath, deadline: Deadline | None = None) -> Iterator[Folder]:
        """The folders under ``rel`` as `tree.walk_tree` gives them, within ``deadline``."""
        root = self.real_root
        if not (root / rel).is_dir():
            raise WorkspaceError(f"{str(rel)!r} does not exist")
        check = deadline.check if deadline is not None else None
        try:
            yield from walk_tree(root, rel.parts, self.directory, check=check)
        except TimeoutError as exc:
            raise WorkspaceError(f"{exc}; narrow the path") from None

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """A text file's lines (1-based, inclusive range), at most ``max_read_bytes`` of them.

        Any part of a larger file can be read: the lines before ``start_line`` are skipped, not
        kept, and when the cap stops a read its note names the ``start_line`` that reads on.
        """
        text, notes, _whole = self.read_text(path, start_line, end_line)
        return text + "".join(f"\n[{n}]" for n in notes)

    def read_text(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> tuple[str, list[str], bool]:
        """What `read_file` shows: the text, its notes, and whether the text is all it asked.

        Not whole: the read cap stopped it, the file is binary or not UTF-8.
        """
        rel = self.relative(path)
        if start_line is not None and start_line < 1:
            raise WorkspaceError("start_line counts from 1")
        if end_line is not None and start_line is not None and end_line < start_line:
            raise WorkspaceError("end_line must not be before start_line")
        first = start_line or 1
        with os.fdopen(self.open_file(rel), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if b"\x00" in handle.read(BINARY_SNIFF_BYTES):
                return f"{rel} is a binary file ({size} bytes); it is not shown", [], False
            handle.seek(0)
            part = lines_of(handle, first, end_line, self.max_read_bytes)
        text, note = decode(part.data)
        notes = [note] if note else []
        shown = f"lines {first}-{part.last}" if part.last >= first else f"no line from {first}"
        if part.capped:
            notes.append(
                f"the file is {size} bytes; {shown} are shown, up to the {self.max_read_bytes}-"
                f"byte read cap; read on with start_line={part.last + 1}"
            )
        elif start_line or end_line:
            total = f"of {part.total}" if part.total is not None else "; the file goes on"
            notes.append(f"{shown} {total}")
        return text, notes, not part.capped and not note

    def write_file(self, path: str, content: str) -> str:
        """Create or replace a file with ``content``."""
        rel = self.relative(path, for_write=True)
        if why := stray_control(content, lambda: self._text_or_nothing(rel)):
            raise WorkspaceError(f"content: {why}")
        data = content.encode("utf-8")
        self._within_write_cap(rel, len(data))
        self.write_bytes(rel, data)
        return f"wrote {len(data)} bytes to {rel}"

    def _within_write_cap(self, rel: PurePosixPath, size: int) -> None:
        """Refuse a write of ``size`` bytes past ``max_write_bytes``, saying which setting."""
        if size > self.max_write_bytes:
            raise WorkspaceError(
                f"{rel}: {size} bytes is more than the {self.max_write_bytes}-byte write cap "
                "(the setting max_write_bytes); nothing was written"
            )

    def _text_or_nothing(self, rel: PurePosixPath) -> str:
        """What a file holds now as text, or "" when it cannot be read."""
        try:
            data, _size = self.read_bytes(rel, self.max_read_bytes)
        except (OSError, WorkspaceError):
            return ""
        return data.decode("utf-8", errors="replace")

    def edit_file(
        self, path: str, old_text: str, new_text: str, replace_all: bool = False
    ) -> str:
        """Replace the one occurrence of ``old_text`` with ``new_text``, or every one."""
        rel = self.relative(path, for_write=True)
        if not old_text:
            raise WorkspaceError("old_text is empty; give the exact text to replace")
        data, size = self.read_bytes(rel, self.max_read_bytes + 1)
        if size > self.max_read_bytes:
            raise WorkspaceError(
                f"{rel} is {size} bytes, over the {self.max_read_bytes}-byte edit limit"
            )
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            raise WorkspaceError(f"{rel} is a binary file; it cannot be edited as text")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise WorkspaceError(f"{rel} is not UTF-8 text; it cannot be edited") from None
        if why := stray_control(new_text, lambda: text):
            raise WorkspaceError(f"new_text: {why}")
        count = text.count(old_text)
        if count == 0:
            raise WorkspaceError(f"{rel}: {not_found(text, old_text, new_text)}")
        if count > 1 and not replace_all:
            raise WorkspaceError(
                f"old_text occurs {count} times in {rel}, {occurrences(text, old_text)}; give "
                "more of the text around the one to change (its whole line, say) so it matches "
                "exactly once, or replace_all true to change every one (nothing was changed)"
            )
        data = text.replace(old_text, new_text, -1 if replace_all else 1).encode("utf-8")
        self._within_write_cap(rel, len(data))
        self.write_bytes(rel, data)
        changed = count if replace_all else 1
        return f"replaced {changed} occurrence{'s' if changed > 1 else ''} in {rel}"

    def search_text(self, pattern: str, path: str = ".") -> str:
        """Lines matching a regular expression, as ``file:line: text`` (`search.search_text`)."""
        from phasegraph.tools.search import search_text

        return search_text(self, pattern, path)


def open_in(folder: int, name: str, label: str) -> int:
    """A blocking read descriptor of the regular file ``name`` in the open folder ``folder``.

    Never a symlink, and never opened when it is not a regular file (``label`` names it).
    """
    try:
        # looked at first: opening a FIFO wakes a writer waiting on it, and a device's open may
        # act; the check after the open still holds if it was swapped between
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):  # a link: refused below
            raise WorkspaceError(not_regular(label))
        fd = os.open(name, _FILE_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        raise WorkspaceError(f"{label!r} does not exist") from None
    except OSError as exc:
        raise _moved(name, exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WorkspaceError(not_regular(label))
    os.set_blocking(fd, True)
    return fd


@functools.lru_cache(maxsize=64)
def _refused_root(real: str) -> str | None:
    """`boundary.workspace_refusal` of a resolved root, asked once per root per process."""
    return workspace_refusal(Path(real))


def not_regular(rel: str) -> str:
    """Why a path that is neither a regular file nor a folder is refused."""
    return (
        f"{rel!r} is not a regular file (a FIFO, socket or device); it is refused, never opened"
    )


def _moved(name: str, exc: OSError) -> WorkspaceError:
    """The error for a component that is a symlink (or no directory) at open time."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return WorkspaceError(
            f"{name!r} is a symlink or not a directory at the time of the call; refused"
        )
    return WorkspaceError(f"{name!r}: {exc.strerror or exc}")


def workspace_path(space: Workspace, path: object) -> str | None:
    """A path as the workspace resolves it (``./a.txt`` is ``a.txt``); None outside it."""
    if not isinstance(path, str) or not path.strip():
        return None
    try:
        return str(space.relative(path.strip()))
    except WorkspaceError:
        return None
