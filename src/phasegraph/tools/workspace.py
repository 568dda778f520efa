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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import regex

# Directories no tool writes into: .git runs hooks, .phasegraph holds the run's own database.
PROTECTED_DIRS = frozenset({".git", ".phasegraph"})
# Directories listings and searches skip: large, generated or private.
SKIPPED_DIRS = PROTECTED_DIRS | {"__pycache__", "node_modules", ".venv", ".mypy_cache"}
BINARY_SNIFF_BYTES = 8192
MAX_LISTED = 500
MAX_MATCHES = 200
MAX_LINE_CHARS = 400
MAX_PATTERN_CHARS = 500
# regex's own timeout stops a catastrophic pattern; re would spin until the process ends.
SEARCH_TIMEOUT_S = 5.0

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class WorkspaceError(ValueError):
    """A tool call the workspace refuses; the message says why and what to do instead."""


# Control characters a text file written by a tool does not hold: all but tab, newline,
# carriage return, form feed (page breaks in old sources) and escape (terminal colours).
_STRAY_CONTROL = regex.compile("[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_CONTROL_NAMES = {"\x00": "NUL", "\x08": "backspace", "\x0b": "vertical tab"}


def stray_control(text: str, already: Callable[[], str]) -> str | None:
    r"""Why ``text`` cannot be written: a control character that ``already()`` does not hold.

    A model writes a file's text as a JSON string, where ``\b`` is a backspace: the 1.5B
    model wrote "alpha\beta" for "alpha\nbeta", the file got "alpha", a backspace and
    "eta", and its judge, reading the text back, called the join done. A text that holds such
    a character by design (the file held it already) is written as asked.
    """
    if _STRAY_CONTROL.search(text) is None:
        return None
    held = already()
    for found in _STRAY_CONTROL.finditer(text):
        char = found.group()
        if char not in held:
            line = text.count("\n", 0, found.start()) + 1
            column = found.start() - text.rfind("\n", 0, found.start())
            name = _CONTROL_NAMES.get(char, f"U+{ord(char):04X}")
            return (
                f"it holds a control character ({name}) at line {line}, column {column}, which "
                "a text file does not hold: a mistyped escape (\\b for \\n?); nothing was written"
            )
    return None


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

    def relative(self, path: str, *, for_write: bool = False) -> PurePosixPath:
        """The path's components under the root, after every check; raises WorkspaceError."""
        if not isinstance(path, str):
            raise WorkspaceError(f"a path must be a string; got {type(path).__name__}")
        if "\x00" in path:
            raise WorkspaceError("a path may not contain a NUL byte")
        text = path.strip() or "."
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
            protected = [p for p in parts if p.casefold() in PROTECTED_DIRS]
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
                fd = os.open(rel.name, _FILE_FLAGS, dir_fd=d)
            except FileNotFoundError:
                raise WorkspaceError(f"{str(rel)!r} does not exist") from None
            except OSError as exc:
                raise _moved(rel.name, exc) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise WorkspaceError(f"{str(rel)!r} is not a regular file")
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
            temp = f".{rel.name}.phasegraph-{os.getpid()}-{os.urandom(4).hex()}.tmp"
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
        if (self.real_root / rel).is_file():
            return str(rel)
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
        for current, dirs, files in os.walk(start, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            here = Path(current).relative_to(root)
            for name in [*dirs, *sorted(files)]:
                full = Path(current) / name
                mark = "@" if full.is_symlink() else "/" if name in dirs else ""
                yield f"{here / name}{mark}"

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """A text file's lines (1-based, inclusive range), capped at ``max_read_bytes``."""
        rel = self.relative(path)
        if start_line is not None and start_line < 1:
            raise WorkspaceError("start_line counts from 1")
        if end_line is not None and start_line is not None and end_line < start_line:
            raise WorkspaceError("end_line must not be before start_line")
        data, size = self.read_bytes(rel, self.max_read_bytes)
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            return f"{rel} is a binary file ({size} bytes); it is not shown"
        text, note = _decode(data)
        lines = text.splitlines(keepends=True)
        if len(data) < size and lines and not data.endswith(b"\n"):
            lines.pop()  # the cap cut this line short
        first = start_line or 1
        last = min(end_line or len(lines), len(lines))
        body = "".join(lines[first - 1 : last])
        notes = [note] if note else []
        if len(data) < size:
            notes.append(
                f"the file is {size} bytes; only the first {len(data)} were read "
                "(use start_line/end_line for the rest)"
            )
        if start_line or end_line:
            notes.append(
                f"lines {first}-{last} of {'at least ' if len(data) < size else ''}{len(lines)}"
            )
        return body + "".join(f"\n[{n}]" for n in notes)

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
                f"old_text occurs {count} times in {rel}; include more of the surrounding text "
                "so it matches exactly once (nothing was changed)"
            )
        self.write_bytes(rel, text.replace(old_text, new_text, 1).encode("utf-8"))
        return f"replaced 1 occurrence in {rel}"

    def search_text(self, pattern: str, path: str = ".") -> str:
        """Lines matching a regular expression, as ``file:line: text``, at most MAX_MATCHES.

        Their count ends the output: asked to count the lines that hold a word and shown the
        three, the 1.5B model wrote 0; a count a tool shows is also one code can trace (see
        `phasegraph.nodes.facts.unsourced_numbers`).
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
        files = [start] if start.is_file() else _walk_files(start)
        matches: list[str] = []
        skipped = 0
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
            text, _ = _decode(data)
            for number, line in enumerate(text.splitlines(), start=1):
                try:
                    found = compiled.search(line, timeout=SEARCH_TIMEOUT_S)
                except TimeoutError:
                    raise WorkspaceError(
                        f"the pattern {pattern!r} took too long (catastrophic backtracking?)"
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


def _walk_files(start: Path) -> list[Path]:
    if not start.is_dir():
        raise WorkspaceError(f"{start.name!r} does not exist")
    found: list[Path] = []
    for current, dirs, files in os.walk(start, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        # a symlink is searched where it points, if that is inside; never through the link
        found.extend(
            Path(current) / n for n in sorted(files) if not os.path.islink(Path(current) / n)
        )
    return found


def _decode(data: bytes) -> tuple[str, str]:
    """Text of a file; undecodable bytes become U+FFFD and a note says so."""
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            # the read cap split a multi-byte character
            return data[: exc.start].decode("utf-8", errors="replace"), ""
        return (
            data.decode("utf-8", errors="replace"),
            "the file is not valid UTF-8; undecodable bytes are shown as U+FFFD",
        )


def _moved(name: str, exc: OSError) -> WorkspaceError:
    """The error for a component that is a symlink (or no directory) at open time."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return WorkspaceError(
            f"{name!r} is a symlink or not a directory at the time of the call; refused"
        )
    return WorkspaceError(f"{name!r}: {exc.strerror or exc}")
