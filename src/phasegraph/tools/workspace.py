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
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import regex

from phasegraph.tools.text_files import decode, lines_of, occurrences, stray_control
from phasegraph.tools.tree import PROTECTED_DIRS, walk_tree

BINARY_SNIFF_BYTES = 8192
MAX_LISTED = 500
MAX_MATCHES = 200
MAX_LINE_CHARS = 400
MAX_PATTERN_CHARS = 500
# regex's own timeout stops a catastrophic pattern; re would spin until the process ends.
SEARCH_TIMEOUT_S = 5.0
# A search's whole time: lines each just under SEARCH_TIMEOUT_S would add up without end, and a
# task given up on (its timeout) leaves its thread searching.
SEARCH_TOTAL_S = 30.0

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

    @property
    def real_root(self) -> Path:
        """The root with symlinks resolved; it must exist and be a directory."""
        real = Path(os.path.realpath(os.path.expanduser(self.root)))
        if not real.is_dir():
            raise WorkspaceError(f"the workspace {self.root!r} is not an existing directory")
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
            try:
                # looked at first: opening a FIFO wakes a writer waiting on it, and a device's
                # open may act; the check after the open still holds if it was swapped between
                mode = os.stat(rel.name, dir_fd=d, follow_symlinks=False).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):  # a link: refused below
                    raise WorkspaceError(not_regular(str(rel)))
                fd = os.open(rel.name, _FILE_FLAGS, dir_fd=d)
            except FileNotFoundError:
                raise WorkspaceError(f"{str(rel)!r} does not exist") from None
            except OSError as exc:
                raise _moved(rel.name, exc) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise WorkspaceError(not_regular(str(rel)))
        os.set_blocking(fd, True)
        return fd

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
        for entry in self.walk(path):
            if len(entries) < MAX_LISTED:
                entries.append(entry)
            else:
                more += 1
        entries.sort()
        if not entries:
            return f"{rel}/ is empty"
        tail = f"\n[... {more} more entries not listed ...]" if more else ""
        return "\n".join(entries) + tail

    def walk(self, path: str = ".") -> Iterator[str]:
        """The entries under a directory as `list_files` writes them, a folder's own first.

        Lazy, so a caller that shows a few (the plan and judge prompts) stops walking a large
        tree once it has them.
        """
        rel = self.relative(path)
        root = self.real_root
        start = root / rel
        if not start.is_dir():
            raise WorkspaceError(f"{path!r} does not exist")
        for current, dirs, files, links in walk_tree(root, rel.parts, self.directory):
            here = current.relative_to(root)
            for name in [*dirs, *files]:
                mark = "@" if name in links else "/" if name in dirs else ""
                yield f"{here / name}{mark}"

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """A text file's lines (1-based, inclusive range), at most ``max_read_bytes`` of them.

        Any part of a larger file can be read: the lines before ``start_line`` are skipped, not
        kept, and when the cap stops a read its note names the ``start_line`` that reads on.
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
                return f"{rel} is a binary file ({size} bytes); it is not shown"
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
        return text + "".join(f"\n[{n}]" for n in notes)

    def write_file(self, path: str, content: str) -> str:
        """Create or replace a file with ``content``."""
        rel = self.relative(path, for_write=True)
        if why := stray_control(content, lambda: self._text_or_nothing(rel)):
            raise WorkspaceError(f"content: {why}")
        data = content.encode("utf-8")
        self.write_bytes(rel, data)
        return f"wrote {len(data)} bytes to {rel}"

    def _text_or_nothing(self, rel: PurePosixPath) -> str:
        """What a file holds now as text, or "" when it cannot be read."""
        try:
            data, _size = self.read_bytes(rel, self.max_read_bytes)
        except (OSError, WorkspaceError):
            return ""
        return data.decode("utf-8", errors="replace")

    def edit_file(self, path: str, old_text: str, new_text: str) -> str:
        """Replace the one occurrence of ``old_text`` with ``new_text``."""
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
            raise WorkspaceError(f"old_text was not found in {rel}; nothing was changed")
        if count > 1:
            raise WorkspaceError(
                f"old_text occurs {count} times in {rel}, {occurrences(text, old_text)}; give "
                "more of the text around the one to change (its whole line, say) so it matches "
                "exactly once (nothing was changed)"
            )
        self.write_bytes(rel, text.replace(old_text, new_text, 1).encode("utf-8"))
        return f"replaced 1 occurrence in {rel}"

    def _files_under(self, rel: PurePosixPath) -> list[Path]:
        """The files under a folder, symlinks left out (searched where they point, if inside)."""
        if not (self.real_root / rel).is_dir():
            raise WorkspaceError(f"{rel.name!r} does not exist")
        found: list[Path] = []
        for current, _dirs, files, links in walk_tree(self.real_root, rel.parts, self.directory):
            found.extend(current / n for n in files if n not in links)
        return found

    def search_text(self, pattern: str, path: str = ".") -> str:
        """Lines matching a regular expression, as ``file:line: text``, at most MAX_MATCHES.

        Their count ends the output: a model shown the matching lines may still miscount them,
        and a count a tool shows is one code can trace (see
        `phasegraph.facts.evidence.unsourced_numbers`). Why: docs/traces.md.
        """
        if len(pattern) > MAX_PATTERN_CHARS:
            raise WorkspaceError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
        try:
            compiled = regex.compile(pattern)
        except regex.error as exc:
            raise WorkspaceError(f"invalid regular expression {pattern!r}: {exc}") from None
        rel = self.relative(path)
        root = self.real_root
        start = root / rel
        if os.path.lexists(start) and not (start.is_file() or start.is_dir()):
            raise WorkspaceError(not_regular(str(rel)))
        files = [start] if start.is_file() else self._files_under(rel)
        matches: list[str] = []
        skipped = 0
        deadline = time.monotonic() + SEARCH_TOTAL_S
        for file in files:
            file_rel = PurePosixPath(file.relative_to(root))
            try:
                data, size = self.read_bytes(file_rel, self.max_read_bytes)
            except (WorkspaceError, OSError):
                skipped += 1
                continue
            if size > self.max_read_bytes or b"\x00" in data[:BINARY_SNIFF_BYTES]:
                skipped += 1
                continue
            text, _ = decode(data)
            for number, line in enumerate(text.splitlines(), start=1):
                left = deadline - time.monotonic()
                try:
                    if left <= 0:
                        raise TimeoutError
                    found = compiled.search(line, timeout=min(SEARCH_TIMEOUT_S, left))
                except TimeoutError:
                    raise WorkspaceError(
                        f"the pattern {pattern!r} took too long (catastrophic backtracking?), "
                        f"stopped at {file_rel}:{number}; narrow the pattern or the path"
                    ) from None
                if found:
                    matches.append(f"{file_rel}:{number}: {line[:MAX_LINE_CHARS]}")
                    if len(matches) >= MAX_MATCHES:
                        return "\n".join(matches) + f"\n[... stopped at {MAX_MATCHES} matches ...]"
        note = f"\n[{skipped} binary, unreadable or oversized files skipped]" if skipped else ""
        # the count, as grep -c gives it: a number asked for is then one a tool showed, 0 too
        count = f"[{len(matches)} matching line{'' if len(matches) == 1 else 's'}]"
        if not matches:
            return f"no match for {pattern!r} under {rel}\n{count}{note}"
        return "\n".join(matches) + "\n" + count + note


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
