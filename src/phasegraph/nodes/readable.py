"""A write may not leave a readable file unreadable as its format (SPEC section 5).

A whole-file write of a fragment (one setting written as a whole JSON file), an edit that
leaves a bracket open, a command's ``>`` over a TOML file: each turns a file its readers read
into one they cannot, and the work that follows starts from a broken file. The file a task
writes is kept as it was before the task runs, where it reads as the format its suffix names
(`facts.formats.FORMATS`); if the task leaves it unreadable, it is put back and the task fails,
saying why, so the next plan starts from the file it read. Read from what tools declare of
themselves (the file they write), never a tool's name; a file that did not read before, or
that is new, is left to the checks. The file kept is the one the task declares (a command's
last output file); a tool that declares no file, run in the same wave on the same file,
could have its change put back with it: the built-in tools declare every file they write.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from langchain_core.tools import BaseTool

from phasegraph.facts.formats import FORMATS, format_error
from phasegraph.nodes.holds import written_path
from phasegraph.tools.workspace import Workspace, WorkspaceError

#: Files up to this size are kept before a write; a larger one is left to the checks.
KEPT_BYTES = 1_048_576


class Readable(NamedTuple):
    """A file as it was before a task wrote it, which read as its format then."""

    path: str
    data: bytes


def _kept(space: Workspace, path: str, errors: str = "strict") -> tuple[bytes, str] | None:
    """A file's bytes and text, where it is there and within `KEPT_BYTES`.

    ``errors``: how bytes that are not UTF-8 are read (``strict``: the file is not kept).
    """
    try:
        data, size = space.read_bytes(space.relative(path), KEPT_BYTES)
        return (data, data.decode("utf-8", errors=errors)) if size <= KEPT_BYTES else None
    except (OSError, WorkspaceError, UnicodeDecodeError):
        return None  # not there, not a file code may read, or not text


def readable_before(
    task: Mapping[str, Any], tools: Mapping[str, BaseTool], space: Workspace
) -> Readable | None:
    """The file ``task`` writes, as it is now, where it reads as its format; None otherwise."""
    path = written_path(task, tools, space)
    if path is None or PurePosixPath(path).suffix.lower() not in FORMATS:
        return None
    kept = _kept(space, path)
    if kept is None or format_error(path, kept[1]) is not None:
        return None
    return Readable(path, kept[0])


def put_back_if_broken(before: Readable, space: Workspace) -> str | None:
    """Why the write was undone, where it left ``before``'s file unreadable; else None.

    The file is written back as it was; a file the task removed, or left too large to read,
    is left as it is.
    """
    kept = _kept(space, before.path, errors="replace")
    error = format_error(before.path, kept[1]) if kept is not None else None
    if error is None:
        return None
    space.write_bytes(space.relative(before.path), before.data)
    return (
        f"refused: after this call {before.path} {error}, so it was put back as it was. "
        "Write the whole file in its format, or change a part of it with an edit"
    )
