"""Evidence against a written file: an input copied, a number nothing shows, a bare name.

Each is a fact code finds in what the run wrote, read against what it started from and saw;
the workspace guards (`phasegraph.guards`) hold a judge to them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from pathlib import PurePosixPath

from langchain_core.tools import BaseTool

from phasegraph.context import Context
from phasegraph.facts.deliverables import pinned_paths
from phasegraph.facts.files import file_text
from phasegraph.facts.request import FILE_NAME, named_files
from phasegraph.facts.tools import writes_files
from phasegraph.state import CheckRecord, TaskResult
from phasegraph.tools.workspace import Workspace, WorkspaceError, workspace_path


def input_texts(
    written: Sequence[str], request: str, context: Context, read: Iterable[object] = ()
) -> dict[str, str]:
    """What each input holds now, by its workspace path: the files the work starts from.

    An input is a file the request names, or one the run read (``read``: the paths its reads
    named), that the run has not written (``written``, as the workspace resolves them). A file
    above `COPY_COMPARED_BYTES`, a folder or a path outside the workspace is left out.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    inputs: dict[str, str] = {}
    for name in [*named_files(request), *read]:
        rel = workspace_path(space, name)
        if not rel or rel in written or rel in inputs:
            continue
        held = file_text(space, rel)  # None for what cannot be read as a file: a folder
        if held:
            inputs[rel] = held
    return inputs


def _written(changed: Sequence[str], space: Workspace) -> dict[str, str]:
    """Changed files by their workspace path, each with the path as the tool was given it."""
    return {rel: path for path in changed if (rel := workspace_path(space, path))}


def copied_inputs(
    changed: Sequence[str],
    request: str,
    context: Context,
    read: Iterable[object] = (),
    checks: Iterable[CheckRecord] = (),
) -> dict[str, str]:
    """Changed files that hold, word for word, the text of an input the run has not changed.

    An input is as `input_texts` finds it. A changed file with an input's very text (its ends
    trimmed) is a copy; so is one with the values of an input of one value a line, set out
    otherwise (on one line, say). An input of one value is left out: its text may well be the
    answer (a value written on); one line of JSON with several members holds several values.
    A file a passing ``equals`` or ``copy`` check among ``checks`` pins is none: the caller
    said what it must hold (`pinned_paths`). Returns each copy, by the path its tool was given,
    with the input it copies. A model asked for something worked out of an input may write the
    input itself, and a judge may call that done. Why: docs/traces.md.
    Known blind spot: a result that happens to equal its input (sorting a sorted file).
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    written = _written(changed, space)
    inputs = {
        rel: text
        for rel, text in input_texts(list(written), request, context, read).items()
        if _several_values(text)
    }
    pinned = pinned_paths(checks, space) if inputs else set()
    copies: dict[str, str] = {}
    for rel, path in written.items():
        held = file_text(space, rel) if inputs and rel not in pinned else None
        source = next((n for n, t in inputs.items() if held and _same_text(t, held)), None)
        if source:
            copies[path] = source
    return copies


#: A file's whole text as one whole number: a count or a sum the work worked out.
_WHOLE_NUMBER = re.compile(r"[+-]?(\d+)")


#: The status line `run_command` puts first: every command that ran would "show" a 0 otherwise,
#: the count a model most readily makes up (docs/traces.md, facts.evidence.unsourced_numbers).
_EXIT_CODE = re.compile(r"^exit code: -?\d+$", re.M)


def unsourced_numbers(
    changed: Sequence[str],
    request: str,
    context: Context,
    results: Iterable[TaskResult],
    tools: Mapping[str, BaseTool],
    read: Iterable[object] = (),
    checks: Iterable[CheckRecord] = (),
) -> dict[str, str]:
    """Changed files that hold one whole number which nothing the run started from or saw shows.

    A number is sourced when the request, a text the run's ``checks`` want (a caller who wrote
    "sum.txt contains 50" gave it), an input (see `input_texts`) or the output of one of the
    run's ok tool calls holds it, as a number of its own. Not a source: a call of a tool
    that writes files (its receipt), a call that names the file the number is in (reading it
    back), or one whose arguments hold the number (``echo 58`` only repeats it). Only for work
    that starts from inputs: with none, a number can only come from knowledge or the request.
    ``results``: the run's results so far; ``read``: the paths its reads named. Returns each
    such file, by the path its tool was given, with its number. A count or a sum a model works
    out in its head is its word alone, and a judge shown the input and the number may still
    call the work done. Why: docs/traces.md.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    written = _written(changed, space)
    numbers: dict[str, str] = {}
    for rel, path in written.items():
        match = _WHOLE_NUMBER.fullmatch(file_text(space, rel) or "")
        if match:
            numbers[path] = match.group(1)
    if not numbers:
        return {}
    inputs = input_texts(list(written), request, context, read)
    if not inputs:
        return {}
    outputs = [
        (json.dumps(r["arguments"], ensure_ascii=False), _EXIT_CODE.sub("", r["output"]))
        for r in results
        if r["status"] == "ok" and not writes_files(tools.get(r["tool"]))
    ]
    wanted = [c.get("text") or c.get("expect") or "" for c in checks]
    unsourced: dict[str, str] = {}
    for path, digits in numbers.items():
        number = re.compile(rf"(?<![\d.]){re.escape(digits)}(?!\d|\.\d)")
        given = [request, *wanted, *inputs.values()]
        names = _names_file(PurePosixPath(path).name)
        shown = [out for args, out in outputs if not names.search(args) and not number.search(args)]
        if not any(number.search(text) for text in [*given, *shown]):
            unsourced[path] = digits
    return unsourced


def _names_file(name: str) -> re.Pattern[str]:
    """Text naming a file called ``name``, in any folder: "checksum.txt" does not name sum.txt."""
    return re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)")


#: Workspace entries walked when looking for a file by its name; a larger tree is not searched.
NAME_SEARCH_ENTRIES = 2_000


def misplaced_names(changed: Sequence[str], context: Context) -> dict[str, tuple[str, list[str]]]:
    """Changed files that hold a file's name where it is not: the name, and where such files are.

    A file holds one file name which is no path in the workspace, though a file of that name
    is there elsewhere (up to 3 are given). A bare name where a path is asked for can pass a
    caller's "contains" check and a judge while it names no file. Why: docs/traces.md.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    names: dict[str, str] = {}
    for rel, path in _written(changed, space).items():
        held = file_text(space, rel) or ""
        if FILE_NAME.fullmatch(held) and not _exists(space, held):
            names[path] = held
    if not names:
        return {}
    found: dict[str, list[str]] = {}
    for entry in islice(space.walk("."), NAME_SEARCH_ENTRIES):
        found.setdefault(PurePosixPath(entry).name, []).append(entry)
    misplaced = {}
    for path, name in names.items():
        there = found.get(PurePosixPath(name).name, [])
        # a path with folders that ends a real one is relative to a folder ("util/dates.py"
        # for src/util/dates.py, asked relative to src/), not a name put where it is not
        if there and not ("/" in name and any(p.endswith("/" + name) for p in there)):
            misplaced[path] = (name, there[:3])
    return misplaced


def _exists(space: Workspace, path: str) -> bool:
    try:
        return os.path.lexists(space.real_root / space.relative(path))
    except WorkspaceError:
        return False


def _same_text(source: str, held: str) -> bool:
    """Whether ``held`` is ``source``: the same text, or the same values of one a line."""
    if source == held:
        return True
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    one_a_line = all(len(line.split()) == 1 for line in lines)
    return one_a_line and held.split() == lines


def _several_values(text: str) -> bool:
    """Whether a file's text holds more than one value.

    It does on several lines, or on one line of JSON with several members (an object of two
    keys, a list of two items).
    """
    if sum(1 for line in text.splitlines() if line.strip()) > 1:
        return True
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict | list) and len(value) > 1
