"""The workspace's files as plans and judges are shown them, read by code.

What the changed files hold now and which lines a run changed in them, the workspace's entries,
the files a request names as they are now.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice

from langchain_core.tools import BaseTool

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.facts.request import named_files
from phasegraph.facts.tools import listing_tools, on_workspace
from phasegraph.tools.workspace import Workspace, WorkspaceError, workspace_path

#: How much of a changed file the judge is shown, so it can see what was written.
PREVIEW_CHARS = 160


#: Changed files the judge is told about; more are counted.
FILES_SHOWN = 8


#: How much of each file the request names plans and judges are shown.
NAMED_PREVIEW_CHARS = 400


#: Workspace entries plans and judges are shown; more are counted.
ENTRIES_SHOWN = 30


#: Files the request names up to this size are kept as they began, to show the judge changes.
ORIGINAL_BYTES = 4_096


#: Changes (added, removed or replaced runs of lines) the judge is shown per file.
CHANGES_SHOWN = 4


#: Characters of one changed line the judge is shown: a one-line JSON file is one long line.
CHANGED_LINE_CHARS = 100


def resolved_paths(paths: Iterable[object], context: Context) -> list[str]:
    """Paths as the workspace resolves them, each once; a path outside it is kept as written.

    Two spellings of one file (``./a.txt``, ``sub/../a.txt``) compare equal this way.
    """
    space = Workspace(context.workspace)
    seen: dict[str, None] = {}
    for path in paths:
        text = str(path).strip()
        seen[workspace_path(space, text) or text] = None
    return list(seen)


def describe_files(
    paths: Sequence[str],
    context: Context,
    originals: Mapping[str, str] | None = None,
    made: Mapping[str, str] | None = None,
) -> str:
    """Changed files as the judge reads them: each with its size and how it begins now.

    ``originals``: what files held when the run began (see `file_originals`), for the lines
    the run changed in them, and for a changed file that now holds the very text another of
    them held (`copy_of`): a judge shown two equal texts far apart in its prompt is told.
    ``made``: how each file's last write made its text, by path (`tools.how_written`).
    """
    if not paths:
        return "none"
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    lines = []
    for path in paths[:FILES_SHOWN]:
        try:
            line = _describe_file(space, path, absent="no longer there")
            rel = workspace_path(space, path)
            before = (originals or {}).get(rel or "")
            # read whole only where there is something to compare it with
            now = file_text(space, rel) if rel and originals else None
            if before is not None and now is not None:
                line += f", {_changes_since(before, now)}"
            if rel and now and (source := copy_of(rel, now, originals or {})):
                line += f", the very text {source} held when the run began"
            if how := (made or {}).get(path):
                line += f"; {how}"
        except WorkspaceError:
            line = f"{path} (no longer there)"
        lines.append(line)
    if len(paths) > FILES_SHOWN:
        lines.append(f"and {len(paths) - FILES_SHOWN} more")
    return "; ".join(lines)


def copy_of(rel: str, text: str, originals: Mapping[str, str]) -> str | None:
    """The other file whose text, when the run began, was ``text`` (ends trimmed), if any."""
    return next(
        (name for name, was in originals.items() if name != rel and was.strip() == text), None
    )


def _describe_file(
    space: Workspace, path: str, chars: int = PREVIEW_CHARS, absent: str = "not there"
) -> str:
    rel = space.relative(path)
    if not (space.real_root / rel).is_file():
        return f"{path} ({absent})"
    try:
        data, size = space.read_bytes(rel, chars)
    except OSError:
        return f"{path} ({absent})"
    text = data.decode("utf-8", errors="replace")
    more = "..." if size > len(data) else ""
    return f"{path} ({size} bytes, now {text!r}{more})"


def file_originals(request: str, context: Context) -> dict[str, str]:
    """What the files the request names hold before any work, by workspace path.

    Files up to `ORIGINAL_BYTES`; the judge is then told which lines the run changed in them:
    a judge shown only a file's beginning cannot tell where a change went (a new section at the
    end, say, for a setting asked for in an existing one).
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    kept: dict[str, str] = {}
    for name in files_named(request, space)[:FILES_SHOWN]:
        rel = workspace_path(space, name)
        try:
            data, size = space.read_bytes(space.relative(name), ORIGINAL_BYTES)
        except (OSError, WorkspaceError):
            continue  # not there yet, a folder, or outside the workspace
        if rel and size <= ORIGINAL_BYTES and b"\x00" not in data:
            kept[rel] = data.decode("utf-8", errors="replace").strip()
    return kept


def _changes_since(original: str, now: str) -> str:
    """The lines a run changed in a file, in words: what it added, removed or replaced."""
    before, after = original.splitlines(), now.splitlines()
    changes = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after).get_opcodes():
        old, new = _lines(before[i1:i2]), _lines(after[j1:j2])
        if op == "insert":
            where = f"after {_quote(before[i1 - 1])}" if i1 else "at the start"
            changes.append(f"added {new} {where}")
        elif op == "delete":
            changes.append(f"removed {old}")
        elif op == "replace":
            changes.append(f"replaced {old} with {new}")
    if not changes:
        return "the same lines as when the run began"
    extra = len(changes) - CHANGES_SHOWN
    more = f", and {extra} more changes" if extra > 0 else ""
    return "since the run began: " + "; ".join(changes[:CHANGES_SHOWN]) + more


def _lines(lines: Sequence[str], shown: int = 4) -> str:
    quoted = ", ".join(_quote(line) for line in lines[:shown])
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    return f"line{'s' if len(lines) > 1 else ''} {quoted}{more}"


def _quote(line: str) -> str:
    """A changed line as the judge is shown it, cut so that the prompt stays bounded (SPEC 7)."""
    if len(line) <= CHANGED_LINE_CHARS:
        return repr(line)
    return f"{line[:CHANGED_LINE_CHARS]!r}... ({len(line)} characters)"


def workspace_files(context: Context, tools: Mapping[str, BaseTool]) -> str:
    """What the workspace holds now, by code's own listing, when the run has the workspace tools.

    Empty where the run has no tool that lists the workspace, or the listing fails. Shown the
    real names, a plan can write them rather than make names up, and a judge can see a made-up
    list for what it is; a strong model is spared a round of listing.
    """
    entries = _listing(context, tools)
    if entries is None:
        return ""
    shown = ", ".join(sorted(entries[:ENTRIES_SHOWN])) or "nothing"
    more = ", and more" if len(entries) > ENTRIES_SHOWN else ""
    return prompts.WORKSPACE_FILES.format(files=shown + more)


def _listing(context: Context, tools: Mapping[str, BaseTool]) -> list[str] | None:
    """The workspace's first entries, one past those shown; None where prompts show none."""
    if not listing_tools(tools):
        return None
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    try:
        # one past those shown says whether there are more, without walking a large tree whole
        return list(islice(space.walk("."), ENTRIES_SHOWN + 1))
    except (WorkspaceError, OSError):
        return None


def fully_shown_files(request: str, context: Context, tools: Mapping[str, BaseTool]) -> list[str]:
    """The files the request names that `request_files` shows whole to plans and judges."""
    if not on_workspace(tools):
        return []  # request_files shows nothing then
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    shown = []
    for name in files_named(request, space)[:FILES_SHOWN]:
        try:
            _data, size = space.read_bytes(space.relative(name), 0)
        except (OSError, WorkspaceError):
            continue
        if size <= NAMED_PREVIEW_CHARS:  # its preview is its whole text
            shown.append(name)
    return shown


def request_files(request: str, context: Context, tools: Mapping[str, BaseTool]) -> str:
    """The files the request names as they are now, read by code, for plans and judges.

    With the named files' beginnings in view, a plan can use what they hold rather than guess
    it, and a judge can hold the result to them; a larger file is still read with the tools.
    """
    if not on_workspace(tools):
        return ""
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    names = files_named(request, space)[:FILES_SHOWN]
    if not names:
        return ""
    shown = []
    for name in names:
        try:
            shown.append(_describe_file(space, name, NAMED_PREVIEW_CHARS))
        except WorkspaceError:
            continue  # outside the workspace: not for code to read
    return prompts.REQUEST_FILES.format(files="; ".join(shown)) if shown else ""


def file_text(space: Workspace, rel: str) -> str | None:
    """A file's text, its ends trimmed; None when it cannot be read or is too large to compare."""
    try:
        data, size = space.read_bytes(space.relative(rel), COPY_COMPARED_BYTES)
    except (OSError, WorkspaceError):
        return None
    return data.decode("utf-8", errors="replace").strip() if size <= COPY_COMPARED_BYTES else None


#: Files up to this size are compared whole when looking for a copied input.
COPY_COMPARED_BYTES = 65_536


def files_named(request: str, space: Workspace) -> list[str]:
    """The files a request names (`request.named_files`), a name that is a file here counting."""

    def is_file(name: str) -> bool:
        try:
            return (space.real_root / space.relative(name)).is_file()
        except (OSError, WorkspaceError):
            return False

    return named_files(request, exists=is_file)
