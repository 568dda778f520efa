"""`search_text`: lines of the workspace's files that match a pattern, in bounded time.

One deadline covers the whole call (walking, reading, matching); the pattern is refused before
compiling when it would unroll past a bound (`patterns.pattern_refusal`); each line's match
has regex's own timeout too, so one catastrophic line cannot take the whole deadline. Files
are opened relative to the folder the walk is at, so a deep tree costs no more than its
entries.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import regex

from phasegraph.tools.patterns import pattern_refusal
from phasegraph.tools.stopping import Deadline
from phasegraph.tools.text_files import decode
from phasegraph.tools.workspace import (
    BINARY_SNIFF_BYTES,
    MAX_LINE_CHARS,
    MAX_MATCHES,
    MAX_PATTERN_CHARS,
    SEARCH_TIMEOUT_S,
    SEARCH_TOTAL_S,
    WorkspaceError,
    not_regular,
    open_in,
)

if TYPE_CHECKING:
    from phasegraph.tools.workspace import Workspace


def search_text(space: Workspace, pattern: str, path: str = ".") -> str:
    """Lines matching a regular expression, as ``file:line: text``, at most MAX_MATCHES.

    Their count ends the output, as ``grep -c`` gives it: a count a tool shows is one code
    can trace (`phasegraph.facts.evidence.unsourced_numbers`).
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise WorkspaceError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    if why := pattern_refusal(pattern):
        raise WorkspaceError(why)
    deadline = Deadline(SEARCH_TOTAL_S, f"the search for {pattern!r}")
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        raise WorkspaceError(f"invalid regular expression {pattern!r}: {exc}") from None
    rel = space.relative(path)
    start = space.real_root / rel
    if os.path.lexists(start) and not (start.is_file() or start.is_dir()):
        raise WorkspaceError(not_regular(str(rel)))
    matches: list[str] = []
    skipped = 0
    for file_rel, fd in _files(space, rel, deadline):
        if fd is None:
            skipped += 1
            continue
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(space.max_read_bytes)
        if size > space.max_read_bytes or b"\x00" in data[:BINARY_SNIFF_BYTES]:
            skipped += 1
            continue
        text, _ = decode(data)
        for number, line in enumerate(text.splitlines(), start=1):
            try:
                deadline.check()
                found = compiled.search(line, timeout=min(SEARCH_TIMEOUT_S, deadline.left()))
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
    count = f"[{len(matches)} matching line{'' if len(matches) == 1 else 's'}]"
    if not matches:
        return f"no match for {pattern!r} under {rel}\n{count}{note}"
    return "\n".join(matches) + "\n" + count + note


def _files(
    space: Workspace, rel: PurePosixPath, deadline: Deadline
) -> Iterator[tuple[PurePosixPath, int | None]]:
    """Each file to search and a read descriptor of it (None: it could not be opened).

    Symlinks are left out (their targets inside are searched as themselves).
    """
    if (space.real_root / rel).is_file():
        try:
            yield rel, space.open_file(rel)
        except (WorkspaceError, OSError):
            yield rel, None
        return
    for folder in space.folders(rel, deadline):
        for name in folder.others:
            if name in folder.links:
                continue
            file_rel = PurePosixPath(*folder.parts, name)
            try:
                yield file_rel, open_in(folder.fd, name, str(file_rel))
            except (WorkspaceError, OSError):
                yield file_rel, None
