"""Facts computed by code, never taken from the model (SPEC sections 1 and 11).

Which phase must make each check true and whether it does, which files a phase has changed
(from the tools' own results and what the workspace now holds), and what kept an ended run
short of ``completed``. Stages read these facts in their prompts; the judge cannot contradict
them (see ``judge``), and the summary's status is decided by them (see ``summarize``).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from itertools import islice
from pathlib import PurePosixPath
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.state import CheckRecord, PhaseOutcome, State, TaskResult
from phasegraph.tools.checks import HAS_TEXT, absent, evaluate, failing
from phasegraph.tools.workspace import Workspace, WorkspaceError

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
#: Files up to this size are compared whole when looking for a copied input.
COPY_COMPARED_BYTES = 65_536

#: What code says of a number that no input, tool output or the request shows.
UNSOURCED = "a number that no input, no tool output and not the request shows"

FILE_KINDS = ("exists", "contains", "matches")


def not_a_path(name: str, found: Sequence[str]) -> str:
    """What code says of a file name that is no path in the workspace (see `misplaced_names`)."""
    return f"{name!r} is not a path in the workspace (a file of that name: {', '.join(found)})"
#: How prompts name a ``matches`` check's pattern, which they never quote (see `in_words`).
SAID_BY_EXPRESSION = "code checks it with a regular expression"

ENDED_SHORT = {
    "end_phase": "the judge ended it short of its goal",
    "round_limit": "it reached its round limit",
    "replan_cap": "the replans allowed were used up",
    "consecutive_failures": "its tasks failed in a row",
    "no_plan": "no usable round plan came",
}


def check_owner(check: Mapping[str, Any], phases: Sequence[Mapping[str, Any]], index: int) -> str:
    """The phase that must make ``check`` true.

    That is the phase the plan named, while it is current or still to come; else the last phase
    (a check its phase left failing falls to the last).
    """
    if not phases:
        return ""
    upcoming = {p["id"] for p in phases[index:]}
    return str(check["phase_id"]) if check["phase_id"] in upcoming else str(phases[-1]["id"])


def owned_checks(state: State, phase_id: str) -> list[CheckRecord]:
    """The checks the given phase must make true."""
    phases, index = state.get("phases") or [], state.get("phase_index", 0)
    return [c for c in state.get("checks") or [] if check_owner(c, phases, index) == phase_id]


def evaluate_checks(
    checks: Sequence[CheckRecord], context: Context, ids: Iterable[str] | None = None
) -> list[CheckRecord]:
    """The checks with fresh results (only those in ``ids`` when given), run as tools run."""
    wanted = None if ids is None else set(ids)
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    return [
        evaluate(check, space, context.command_settings)
        if wanted is None or check["id"] in wanted
        else check
        for check in checks
    ]


def number_checks(checks: list[CheckRecord]) -> list[CheckRecord]:
    """Checks with ids c1, c2, ... in order (a person's edit may have renumbered them)."""
    return [{**check, "id": f"c{n}"} for n, check in enumerate(checks, start=1)]


def assign_checks(checks: list[CheckRecord], phases: list[dict[str, Any]]) -> list[CheckRecord]:
    """Each check with the phase that must make it true.

    That is the last phase naming it, else the last phase; ids a phase names that are no check
    are dropped from it.
    """
    known = {c["id"] for c in checks}
    owner = {}
    for phase in phases:
        phase["checks"] = [c for c in phase.get("checks", []) if c in known]
        owner.update({c: phase["id"] for c in phase["checks"]})
    return [{**c, "phase_id": owner.get(c["id"], "")} for c in checks]


def writes_needed(
    checks: Iterable[CheckRecord], tools: Mapping[str, BaseTool], files_to_write: Sequence[str] = ()
) -> set[str]:
    """Every tool that writes files, while a file check fails or the request names files to write.

    Traced on the 1.5B model: it called "in config.ini, change debug = true to debug = false"
    analysis work, which may not write, and, refused the file tools, tried sed round after
    round until the budget ran out; the same analysis named config.ini among the files to
    write.
    """
    failing = any(c["kind"] in FILE_KINDS and c["passed"] is not True for c in checks)
    if not failing and not files_to_write:
        return set()
    return {name for name, tool in tools.items() if writes_files(tool)}


def writes_files(tool: BaseTool | None) -> bool:
    """Whether a tool declares that it writes files (``metadata={"writes": "path"}``)."""
    return bool(written_argument(tool))


def written_argument(tool: BaseTool | None) -> str | None:
    """The argument naming the file a tool writes, as it declares it, if it writes one."""
    return (tool.metadata or {}).get("writes") if tool is not None else None


def workspace_path(space: Workspace, path: object) -> str | None:
    """A path as the workspace resolves it (``./a.txt`` is ``a.txt``); None outside it."""
    if not isinstance(path, str) or not path.strip():
        return None
    try:
        return str(space.relative(path.strip()))
    except WorkspaceError:
        return None


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


def read_only(tools: Mapping[str, BaseTool]) -> set[str]:
    """Tools that declare they change nothing (``metadata={"read_only": True}``)."""
    return {name for name, tool in tools.items() if (tool.metadata or {}).get("read_only")}


def paths_read(results: Iterable[TaskResult], tools: Mapping[str, BaseTool]) -> list[object]:
    """The paths the ok calls of read-only tools named, as the model gave them."""
    reading = read_only(tools)
    return [
        r["arguments"].get("path") for r in results if r["tool"] in reading and r["status"] == "ok"
    ]


def changed_files(results: Iterable[TaskResult], tools: Mapping[str, BaseTool]) -> list[str]:
    """Files the given results wrote, in order, each once.

    They are the ok results of tools that declare the argument naming the file they write
    (``metadata={"writes": "path"}``).
    """
    seen: dict[str, None] = {}
    for result in results:
        argument = written_argument(tools.get(result["tool"]))
        path = result["arguments"].get(argument) if argument else None
        if result["status"] == "ok" and isinstance(path, str) and path.strip():
            seen[path.strip()] = None
    return list(seen)


def describe_files(
    paths: Sequence[str],
    context: Context,
    copies: Mapping[str, str] | None = None,
    unsourced: Mapping[str, str] | None = None,
    originals: Mapping[str, str] | None = None,
    misplaced: Mapping[str, tuple[str, list[str]]] | None = None,
) -> str:
    """Changed files as the judge reads them: each with its size and how it begins now.

    ``copies``: changed files that hold an input's text (see `copied_inputs`), said beside them;
    ``unsourced``: those holding a number nothing shows (see `unsourced_numbers`), likewise;
    ``originals``: what files held when the run began (see `file_originals`), for the lines
    the run changed in them; ``misplaced``: those naming a file where it is not (see
    `misplaced_names`).
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
            now = _file_text(space, rel) if rel and before is not None else None
            if before is not None and now is not None:
                line += f", {_changes_since(before, now)}"
        except WorkspaceError:
            line = f"{path} (no longer there)"
        if copies and path in copies:
            line += f", the same text as {copies[path]}"
        if unsourced and path in unsourced:
            line += f", {UNSOURCED}"
        if misplaced and path in misplaced:
            line += f", {not_a_path(*misplaced[path])}"
        lines.append(line)
    if len(paths) > FILES_SHOWN:
        lines.append(f"and {len(paths) - FILES_SHOWN} more")
    return "; ".join(lines)


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

    Files up to `ORIGINAL_BYTES`; the judge is then told which lines the run changed in them.
    Traced on the 1.5B model: asked to add a setting to the [server] section of app.ini, it
    wrote the file whole with a new [timeout] section at its end, and its judge, shown the
    file's first 160 characters now, called the setting added.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    kept: dict[str, str] = {}
    for name in named_files(request)[:FILES_SHOWN]:
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

    Traced on the 1.5B model: asked to write the folder's file names to files.md, its first
    plan wrote "file1" to "file173" without listing anything, and its judge, shown only what
    was written, called it done. Shown the real names, a plan can write them and a judge can
    see a made-up list for what it is; a strong model is spared a round of listing.
    """
    entries = _listing(context, tools)
    if entries is None:
        return ""
    shown = ", ".join(sorted(entries[:ENTRIES_SHOWN])) or "nothing"
    more = ", and more" if len(entries) > ENTRIES_SHOWN else ""
    return prompts.WORKSPACE_FILES.format(files=shown + more)


def listed_whole(context: Context, tools: Mapping[str, BaseTool]) -> bool:
    """Whether `workspace_files` shows the whole workspace: a listing then shows nothing new."""
    entries = _listing(context, tools)
    return entries is not None and len(entries) <= ENTRIES_SHOWN


def _listing(context: Context, tools: Mapping[str, BaseTool]) -> list[str] | None:
    """The workspace's first entries, one past those shown; None where prompts show none."""
    if "list_files" not in tools:
        return None
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    try:
        # one past those shown says whether there are more, without walking a large tree whole
        return list(islice(space.walk("."), ENTRIES_SHOWN + 1))
    except (WorkspaceError, OSError):
        return None


# A file name as requests write one: a name with a short extension, perhaps under folders.
_FILE_NAME = re.compile(r"(?<![\w/.:-])((?:[\w-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{1,7})(?![\w/])")


#: "Run wc -l on ...", "then execute the command grep ...": "run" or "execute" as an order (a
#: sentence's first word, or after "please", "then", "and", "first", "also" or a comma), the
#: program right after it, or after "the command" or "the program". Not "the run date", "do not
#: run cat", "tell users to run find", "re-run the date conversion", "run the file names".
_RUN_PROGRAM = re.compile(
    r"(?:^|[.!?;:,]\s+|\b(?:please|then|and|first|also)\s+)(?:run|execute)\s+"
    r"(?:the\s+(?:command|program)\s+)?[`'\"]?([\w+-]+(?:\.[\w+-]+)*)",
    re.I | re.M,
)


def commands_named(request: str, allowed: Sequence[str]) -> list[str]:
    """The allowed programs the request asks to run ("run wc -l on data.csv"), each once."""
    found = (m.group(1) for m in _RUN_PROGRAM.finditer(request))
    return list(dict.fromkeys(name for name in found if name in allowed))


def runs_argument(tool: BaseTool | None) -> str | None:
    """The argument holding the argv a tool runs, as it declares it (``runs``), if it runs one."""
    return (tool.metadata or {}).get("runs") if tool is not None else None


def runs_programs(tool: BaseTool | None) -> bool:
    """Whether a tool declares that it runs programs."""
    return bool(runs_argument(tool))


def _program(result: TaskResult, tools: Mapping[str, BaseTool]) -> str | None:
    """The program an ok result of a command tool ran (the first word of its argv)."""
    argument = runs_argument(tools.get(result["tool"]))
    argv = result["arguments"].get(argument) if argument else None
    if result["status"] == "ok" and isinstance(argv, list) and argv:
        return str(argv[0]).strip()
    return None


def programs_run(results: Iterable[TaskResult], tools: Mapping[str, BaseTool]) -> set[str]:
    """The programs the ok results of command tools ran."""
    return {p for result in results if (p := _program(result, tools))}


def programs_written_after(
    rounds: Sequence[Sequence[TaskResult]],
    tools: Mapping[str, BaseTool],
    files: Set[str],
    context: Context,
) -> set[str]:
    """The programs that ran before one of ``files`` was written, in a later wave or round.

    ``rounds``: the run's results round by round, in order. A write in the same wave ran beside
    the program and could not hold what it returned.
    """
    space = Workspace(context.workspace)
    runs: list[tuple[tuple[int, int], str]] = []
    last_write: tuple[int, int] | None = None
    for number, results in enumerate(rounds):
        for result in results:
            at = (number, result.get("wave", 0))
            argument = written_argument(tools.get(result["tool"]))
            path = workspace_path(space, result["arguments"].get(argument)) if argument else None
            if result["status"] == "ok" and path in files:
                last_write = at if last_write is None else max(last_write, at)
            if program := _program(result, tools):
                runs.append((at, program))
    return {program for at, program in runs if last_write is not None and at < last_write}


def named_files(request: str) -> list[str]:
    """The file names a request mentions, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in _FILE_NAME.finditer(request)))


def fully_shown_files(
    request: str, context: Context, tools: Mapping[str, BaseTool]
) -> list[str]:
    """The files the request names that `request_files` shows whole to plans and judges."""
    if "read_file" not in tools:
        return []  # request_files shows nothing then
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    shown = []
    for name in named_files(request)[:FILES_SHOWN]:
        try:
            _data, size = space.read_bytes(space.relative(name), 0)
        except (OSError, WorkspaceError):
            continue
        if size <= NAMED_PREVIEW_CHARS:  # its preview is its whole text
            shown.append(name)
    return shown


def request_files(request: str, context: Context, tools: Mapping[str, BaseTool]) -> str:
    """The files the request names as they are now, read by code, for plans and judges.

    Traced on the 1.5B model: shown the workspace's names but not what the input holds, its
    first plan for "read numbers.txt and write their sum to sum.txt" wrote 1234567890 without
    reading, and its judge, who had not seen the numbers either, called it done. With the
    named files' beginnings in view, a plan can use them and a judge can hold the result to
    them; a larger file is still read with the tools.
    """
    if "read_file" not in tools:
        return ""
    names = named_files(request)[:FILES_SHOWN]
    if not names:
        return ""
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    shown = []
    for name in names:
        try:
            shown.append(_describe_file(space, name, NAMED_PREVIEW_CHARS))
        except WorkspaceError:
            continue  # outside the workspace: not for code to read
    return prompts.REQUEST_FILES.format(files="; ".join(shown)) if shown else ""


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
        held = _file_text(space, rel)  # None for what cannot be read as a file: a folder
        if held:
            inputs[rel] = held
    return inputs


def _file_text(space: Workspace, rel: str) -> str | None:
    """A file's text, its ends trimmed; None when it cannot be read or is too large to compare."""
    try:
        data, size = space.read_bytes(space.relative(rel), COPY_COMPARED_BYTES)
    except (OSError, WorkspaceError):
        return None
    return data.decode("utf-8", errors="replace").strip() if size <= COPY_COMPARED_BYTES else None


def _written(changed: Sequence[str], space: Workspace) -> dict[str, str]:
    """Changed files by their workspace path, each with the path as the tool was given it."""
    return {rel: path for path in changed if (rel := workspace_path(space, path))}


def copied_inputs(
    changed: Sequence[str], request: str, context: Context, read: Iterable[object] = ()
) -> dict[str, str]:
    """Changed files that hold, word for word, the text of an input the run has not changed.

    An input is as `input_texts` finds it. Traced on the 1.5B model: asked to write the sum of
    numbers.txt to sum.txt, it wrote the numbers themselves; asked for the count of ERROR lines
    in app.log, it wrote the whole log to errors.txt; asked which file defines parse_date, it
    wrote that file's text, which it had read, to answer.txt; its judge called each done. A
    changed file with an input's very text (its ends trimmed) is a copy; so is one with the
    values of an input of one value a line, set out otherwise: told sum.txt held numbers.txt's
    text, the model wrote "17 25 8".
    An input of one value is left out: its text may well be the answer (a value written on).
    One line may hold several, though: asked for one field of a one-line settings.json, the
    1.5B model wrote the whole object to timeout.txt and its judge called it done.
    Known blind spot: a result that happens to equal its input (sorting a sorted file).
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    written = _written(changed, space)
    inputs = {
        rel: text
        for rel, text in input_texts(list(written), request, context, read).items()
        if _several_values(text)
    }
    copies: dict[str, str] = {}
    for rel, path in written.items():
        held = _file_text(space, rel) if inputs else None
        source = next((n for n, t in inputs.items() if held and _same_text(t, held)), None)
        if source:
            copies[path] = source
    return copies


#: A file's whole text as one whole number: a count or a sum the work worked out.
_WHOLE_NUMBER = re.compile(r"[+-]?(\d+)")
#: The status line `run_command` puts first: every command that ran would "show" a 0 otherwise,
#: the small model's favourite count.
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

    Traced on the 1.5B model: asked to write the sum of numbers.txt (17, 25, 8) to sum.txt,
    it wrote 58; asked for the count of the lines of app.log that hold ERROR, it wrote 0
    without a look at the log beyond the prompt's; both judges, shown the input and the number,
    called the work done. A count or a sum a model works out in its head is its word alone. A
    number is sourced when the request, a text the run's ``checks`` want (a caller who wrote
    "sum.txt contains 50" gave it), an input (see `input_texts`) or the output of one of the
    run's ok tool calls holds it, as a number of its own. Not a source: a call of a tool
    that writes files (its receipt), a call that names the file the number is in (reading it
    back), or one whose arguments hold the number (``echo 58`` only repeats it). Only for work
    that starts from inputs: with none, a number can only come from knowledge or the request.
    ``results``: the run's results so far; ``read``: the paths its reads named.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    written = _written(changed, space)
    numbers: dict[str, str] = {}
    for rel, path in written.items():
        match = _WHOLE_NUMBER.fullmatch(_file_text(space, rel) or "")
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
    is there elsewhere (up to 3 are given). Traced on the 1.5B model, with the caller's check
    "answer.txt contains dates.py": asked to find the file that defines a function and write
    its path to answer.txt, it wrote "dates.py" in its first round without a search, the check
    passed, and its judge called it done; the file is src/util/dates.py.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    names: dict[str, str] = {}
    for rel, path in _written(changed, space).items():
        held = _file_text(space, rel) or ""
        if _FILE_NAME.fullmatch(held) and not _exists(space, held):
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


def check_lines(checks: Sequence[CheckRecord]) -> str:
    """Checks with their latest results, one line each, in words."""
    return "\n".join(f"- {c['id']}: {in_words(c)}: {_verdict(c)}" for c in checks)


def in_words(check: Mapping[str, Any]) -> str:
    """What a check asks, in words.

    Prompts say this, not the label: shown ``matches:files.md:`` and its pattern, the 1.5B
    model searched the workspace for that text instead of writing the file. Nothing here is
    quotable as a file's content: told a file "must hold its content (some text)", the 1.5B
    model wrote "some text" to it, and its judge, told the check passed, called it done.
    Told package.json "must match the pattern" of its version 1.2.0 with the dot escaped, it
    wrote the expression, escapes and all, into the file; told "text that the expression finds
    (write that text, not the expression)", it put the expression's escapes into its edits'
    old text. An example of the text instead (``"version":"1.2.0"``) was measured worse: the
    model copied the example's spacing into its edits, which the file did not hold, and wrote
    the example alone over package.json. With the request alone, it did both jobs right. So
    plans, judges and phase plans are not shown a pattern: the request says what to do, and
    code checks. (The summary, written for a person, names a failing check by its label.)
    """
    match check["kind"]:
        case "exists":
            return f"{check['path']} must exist"
        case "contains":
            return f"{check['path']} must contain {check['text']!r}"
        case "matches" if check["pattern"] == HAS_TEXT:
            return (
                f"{check['path']} must exist and not be blank (code does not check whether "
                "what it holds is right)"
            )
        case "matches":
            return f"{check['path']} must be as the request asks ({SAID_BY_EXPRESSION})"
        case _:
            output = f" and print {check['expect']!r}" if check.get("expect") else ""
            return f"the command {' '.join(check['argv'])!r} must succeed{output}"


def to_do(checks: Iterable[CheckRecord], missing: Callable[[str], bool]) -> list[str]:
    """What the failing checks ask of the work, as steps; a file not there yet is one step.

    Traced on the 1.5B model with a caller's checks "contains alpha" and "contains delta" on the
    new file of a join of two files: told "make full.txt contain 'alpha'" and the same of
    'delta', it wrote those two lines and nothing else, and its judge called the join done; told
    to write it whole "with 'alpha' and 'delta' among the rest", it still wrote those two lines
    alone. So the step for a file not there yet names no text (the check lines above it still
    say what code looks for); it is `write_whole`. ``missing``: whether a path is not there now
    (a check's detail may date from an earlier phase).
    """
    open_checks = failing(checks)
    # a path with checks of what it holds is a file (one with only "exists" may be a folder)
    new_files = {
        c["path"]
        for c in open_checks
        if c["kind"] in ("contains", "matches") and missing(c["path"])
    }
    steps: list[str] = []
    steps = [
        write_whole(path, absent(path))
        for path in dict.fromkeys(c["path"] for c in open_checks if c["path"] in new_files)
    ]
    return steps + [still_to_do(c) for c in open_checks if c["path"] not in new_files]


def write_from_a_tool(path: str, value: str) -> str:
    """The step to write again a file holding a number no tool showed (see `unsourced_numbers`).

    Traced on the 1.5B model: asked to count a log's ERROR lines, it wrote 0 beside a search
    that ended "[3 matching lines]"; each judge after was overruled on the 0, and each plan,
    told nothing of it, ran the search again until the budget was spent.
    """
    again = f"write {path} again with the number a tool's output shows"
    return f"{path} holds {value}, {UNSOURCED}: {again}"


def write_the_path(path: str, name: str, found: Sequence[str]) -> str:
    """The step to write again a file holding a name where a path is asked for.

    See `misplaced_names`; traced on the 1.5B model, whose plans, told nothing of it after
    each judge was overruled, read answer.txt back round after round.
    """
    return f"{path} holds {not_a_path(name, found)}: write {path} again with the path"


def write_whole(path: str, why: str) -> str:
    """The step to write a file the work must make, from nothing: "write answer.txt with ...".

    Traced on the 1.5B model: told to write timeout.txt "with the whole content the request
    asks for", where the request asked for one field of settings.json, it wrote the whole of
    settings.json, and wrote it again after code had called that a copy; told to write it
    "with what the request asks it to hold", it read settings.json and wrote the field's value.
    The same words kept the join of two files whole.
    """
    return f"write {path} with what the request asks it to hold ({why})"


def still_to_do(check: CheckRecord) -> str:
    """What a failing check asks of the work, as a step: "write files.md ..."."""
    match check["kind"]:
        case "exists":
            return f"create {check['path']} ({check['detail']})"
        case "contains":
            return f"make {check['path']} contain {check['text']!r} ({check['detail']})"
        case "matches" if check["pattern"] == HAS_TEXT:
            return write_whole(check["path"], check["detail"])
        case "matches":
            return f"change {check['path']} as the request asks ({check['detail']})"
        case _:
            return f"make the command {' '.join(check['argv'])!r} succeed ({check['detail']})"


def _verdict(check: CheckRecord) -> str:
    if check["passed"] is None:
        return "not evaluated yet"
    return f"passes ({check['detail']})" if check["passed"] else f"FAILS: {check['detail']}"


def shortfalls(outcomes: Iterable[PhaseOutcome], checks: Iterable[CheckRecord]) -> list[str]:
    """What kept the run from ``completed``: each phase that ended short, each failing check.

    A phase a replan replaced is not counted: the phases that replaced it carry its work.
    """
    found = [
        f"phase {o['name']} ({o['phase_id']}) ended short: "
        f"{ENDED_SHORT.get(o['ended_by'], o['ended_by'])}, at {o['completion_rate']:.0%}"
        for o in outcomes
        if not o["completed"] and o["ended_by"] != "replanned"
    ]
    found += [f"check {c['label']} fails: {c['detail']}" for c in checks if c["passed"] is not True]
    return found
