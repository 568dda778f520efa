"""Checks: facts about the workspace that code evaluates, never the model (SPEC section 11).

A check is one of a closed set of kinds: a file ``exists``; a file ``contains`` a text; a file
``matches`` a regular expression; a file ``equals`` a text (its whole text, blanks at line ends
and the file's end aside); a file holds one ``number``; a file ``keeps`` each line it had
when the run began; a file is a ``copy`` of another; a ``command`` succeeds (run exactly as
``run_command`` runs one: allowlist, confinement, timeout, scrubbed environment), optionally
with a text its output must contain. On a command line a check is one word-like string:

- ``exists:PATH``
- ``contains:PATH:TEXT``
- ``matches:PATH:PATTERN``
- ``equals:PATH:TEXT`` (TEXT as given: a shell's ``$'...'`` quoting writes a line break)
- ``number:PATH``
- ``keeps:PATH`` (the lines PATH holds when the run begins)
- ``copy:PATH:SOURCE``
- ``cmd:PROGRAM ARGS...`` or ``cmd:PROGRAM ARGS... => TEXT`` (the output must contain TEXT)

In the state a check is a `CheckRecord`: the check itself, where it came from, the phase that
must make it true, and its latest result with what code saw (``detail``).
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import regex
from pydantic import TypeAdapter, ValidationError

from phasegraph.errors import CheckError, redact
from phasegraph.state import CheckRecord, CheckSource
from phasegraph.state.checks import Check, normalise_check
from phasegraph.tools.command_line import CommandLineError, parse
from phasegraph.tools.commands import CommandSettings, check_argv
from phasegraph.tools.pipeline import plan_command, run_command
from phasegraph.tools.workspace import SEARCH_TIMEOUT_S, Workspace, WorkspaceError

KINDS = ("exists", "contains", "matches", "equals", "number", "keeps", "copy", "cmd")
EXPECT_SEPARATOR = " => "
#: How much of a short file a failing check quotes ("sum.txt holds '11'").
QUOTED_CHARS = 60
DETAIL_CHARS = 300

_CHECK: TypeAdapter[Any] = TypeAdapter(Check)


def parse_check(value: str | Mapping[str, Any]) -> dict[str, Any]:
    """A check from its command-line text or its object form, as a plain dict; `CheckError`."""
    if isinstance(value, str):
        data = _from_text(value)
    elif isinstance(value, Mapping):
        data = normalise_check(dict(value))
    else:
        raise CheckError(f"a check is a string such as 'exists:out.txt' or an object: {value!r}")
    try:
        check = _CHECK.validate_python(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'check'}: {e['msg']}" for e in exc.errors()
        )
        raise CheckError(f"check {_show(value)} is not valid: {problems}") from None
    return cast(dict[str, Any], check.model_dump())


def _from_text(text: str) -> dict[str, Any]:
    kind, sep, rest = text.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in (*KINDS, "command"):
        raise CheckError(
            f"unknown check {text!r}: use exists:PATH, contains:PATH:TEXT, matches:PATH:PATTERN, "
            "equals:PATH:TEXT, number:PATH, keeps:PATH, copy:PATH:SOURCE or cmd:COMMAND "
            "(optionally cmd:COMMAND => TEXT)"
        )
    if kind in ("exists", "number", "keeps"):
        return {"kind": kind, "path": rest.strip()}
    if kind in ("contains", "matches", "equals", "copy"):
        path, sep, tail = rest.partition(":")
        key = {"contains": "text", "matches": "pattern", "equals": "text", "copy": "of"}[kind]
        if not sep or not tail:
            raise CheckError(f"check {text!r} needs a path and a {key}: {kind}:PATH:{key.upper()}")
        return {"kind": kind, "path": path.strip(), key: tail}
    command, _, expect = rest.partition(EXPECT_SEPARATOR)
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise CheckError(f"check {text!r}: the command cannot be split into words: {exc}") from None
    check: dict[str, Any] = {"kind": "command", "argv": argv, "expect": expect.strip()}
    return check | pipeline_line(command.strip(), text)


def pipeline_line(command: str, text: str) -> dict[str, str]:
    """``{"line": command}`` when a check's command is a pipeline or reads a file with ``<``.

    Run as `run_command` runs a line; a check writes nothing, so ``>`` is refused.
    """
    try:
        stages = parse(command)
    except CommandLineError:
        return {}  # an argv as shlex splits it, checked as before
    if any(s.stdout or (s.stderr not in (None, "&1")) for s in stages):
        raise CheckError(f"check {text!r}: a check writes no file; drop its > redirection")
    if len(stages) > 1 or stages[0].stdin is not None:
        return {"line": command}
    return {}


def _show(value: object) -> str:
    return repr(value) if isinstance(value, str) else repr(dict(cast(Mapping[str, Any], value)))


def label(check: Mapping[str, Any]) -> str:
    """A check in its command-line form, the way summaries and reports name it."""
    kind = check["kind"]
    if kind in ("exists", "number", "keeps"):
        return f"{kind}:{check['path']}"
    if kind == "copy":
        return f"copy:{check['path']}:{check['of']}"
    if kind in ("contains", "equals"):
        return f"{kind}:{check['path']}:{check['text']}"
    if kind == "matches":
        return f"matches:{check['path']}:{check['pattern']}"
    command = check.get("line") or shlex.join(check["argv"])
    return f"cmd:{command}" + (f"{EXPECT_SEPARATOR}{check['expect']}" if check["expect"] else "")


def problem(
    check: Mapping[str, Any], workspace: Workspace, commands: CommandSettings
) -> str | None:
    """Why a check cannot be used in this workspace (a path outside it, a command not allowed)."""
    try:
        if check["kind"] == "command" and check.get("line"):
            plan_command(check["line"], commands, workspace)
        elif check["kind"] == "command":
            check_argv(list(check["argv"]), commands, workspace)
        else:
            workspace.relative(check["path"])
            if check["kind"] == "copy":
                workspace.relative(check["of"])
    except WorkspaceError as exc:
        return f"{label(check)}: {exc}"
    if check["kind"] == "copy" and workspace.relative(check["of"]) == workspace.relative(
        check["path"]
    ):
        return f"{label(check)}: a file is always a copy of itself"
    if check["kind"] in BASELINE_KINDS and not with_baseline(check, workspace).get("text"):
        if check["kind"] == "copy":
            return (
                f"{label(check)}: {check['of']} is no file that is there to copy "
                f"(of at most {BASELINE_BYTES} bytes)"
            )
        return f"{label(check)}: {check['path']} is no text file with lines to keep"
    return None


#: The largest file a ``keeps`` check holds the lines of, or a ``copy`` check the digest of.
BASELINE_BYTES = 64_000
#: Kinds that compare with a baseline read when the check is set (see `with_baseline`).
BASELINE_KINDS = ("keeps", "copy")


def with_baseline(check: Mapping[str, Any], workspace: Workspace) -> dict[str, Any]:
    """A ``keeps`` or ``copy`` check with what it compares against, read from the files now.

    Called when the check is set, before the work it guards: a ``keeps`` check gets the lines
    its file holds (``text``), a ``copy`` check the sha256 of its source (``text``), so later
    work that changes the source, or the lines, cannot move what the check wants. A check that
    has its baseline, or of another kind, is returned as it is; a file that is not there, not
    text or over `BASELINE_BYTES` gives none (`problem` refuses such a check).
    """
    kind = check["kind"]
    if kind not in BASELINE_KINDS or check.get("text"):
        return dict(check)
    try:
        rel = workspace.relative(check["path"] if kind == "keeps" else check["of"])
        data, size = workspace.read_bytes(rel, BASELINE_BYTES)
    except (OSError, WorkspaceError):
        return dict(check)
    if size > BASELINE_BYTES:
        return dict(check)
    if kind == "copy":
        return {**check, "text": _digest(data)}
    if b"\x00" in data:
        return dict(check)
    lines = [line.rstrip() for line in data.decode("utf-8", errors="replace").splitlines()]
    return {**check, "text": "\n".join(line for line in lines if line)}


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def validate_checks(checks: Sequence[object], context: Any) -> list[dict[str, Any]]:
    """The checks parsed, or `CheckError` naming the first that cannot be used in the run.

    ``context`` is the run's `Context`: its workspace and allowed commands decide.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    parsed = []
    for value in checks:
        check = parse_check(value)  # type: ignore[arg-type]
        why = problem(check, space, context.command_settings)
        if why:
            raise CheckError(f"check {why}")
        parsed.append(with_baseline(check, space))
    return parsed


def record(
    check: Mapping[str, Any], check_id: str, source: CheckSource, phase_id: str = ""
) -> CheckRecord:
    """A check as the state keeps it, not yet evaluated."""
    kept: CheckRecord = {
        "id": check_id,
        "kind": check["kind"],
        "path": check.get("path", ""),
        "text": check.get("text", ""),
        "pattern": check.get("pattern", ""),
        "argv": list(check.get("argv", [])),
        "expect": check.get("expect", ""),
        "of": check.get("of", ""),
        "label": label(check),
        "source": source,
        "phase_id": phase_id,
        "passed": None,
        "detail": "not evaluated yet",
    }
    if check.get("line"):
        kept["line"] = check["line"]
    return kept


def evaluate(check: CheckRecord, workspace: Workspace, commands: CommandSettings) -> CheckRecord:
    """The check with its result and what code saw, secrets masked (`redact`); never raises."""
    try:
        passed, detail = _evaluate(check, workspace, commands)
    except WorkspaceError as exc:
        passed, detail = False, str(exc)
    except Exception as exc:  # a check that cannot run has not passed; the reason is kept
        passed, detail = False, f"{type(exc).__name__}: {exc}"
    # what code saw may quote a file or a command's output that holds a secret
    return {**check, "passed": passed, "detail": _short(redact(detail), DETAIL_CHARS)}


def _evaluate(
    check: CheckRecord, workspace: Workspace, commands: CommandSettings
) -> tuple[bool, str]:
    if check["kind"] == "command":
        return _run(check, workspace, commands)
    path = check["path"]
    rel = workspace.relative(path)
    full = workspace.real_root / rel
    if not os.path.lexists(full):
        return False, absent(path)
    if check["kind"] == "exists":
        return True, f"{path} exists"
    data, size = workspace.read_bytes(rel, workspace.max_read_bytes)
    text = data.decode("utf-8", errors="replace")
    if check["kind"] in ("equals", "number", "keeps", "copy"):
        return _compare(check, workspace, data, size)
    if check["kind"] == "contains":
        if check["text"] in text:
            return True, f"{path} contains {check['text']!r}"
        return False, _missing(path, text, size, f"{check['text']!r}")
    # The pattern is not quoted: details reach the prompts, and a model may copy an expression
    # it is shown into the file (see `phasegraph.facts.checks.in_words`); the check's label,
    # beside its detail in every report, names it.
    if expression(check).search(text, timeout=SEARCH_TIMEOUT_S):
        if check["pattern"] == HAS_TEXT:
            # In plain words: a judge told only of "text the check's expression finds" may
            # still take the file for missing or blank.
            return True, f"{path} is there and holds text"
        return True, f"{path} holds text the check's expression finds"
    return False, _missing(path, text, size, "text the check's expression finds")


def expression(check: CheckRecord) -> regex.Pattern[str]:
    """A ``matches`` check's expression as code evaluates it: ``^`` and ``$`` at each line."""
    return regex.compile(check["pattern"], regex.MULTILINE)


#: One number as people write one: a sign, digits (maybe grouped by commas), a decimal part.
NUMBER = regex.compile(r"[-+]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?")


def _compare(
    check: CheckRecord, workspace: Workspace, data: bytes, size: int
) -> tuple[bool, str]:
    """An ``equals``, ``number``, ``keeps`` or ``copy`` check of a file's bytes (``size`` long)."""
    path, text = check["path"], data.decode("utf-8", errors="replace")
    if size > len(data):
        return False, f"{path} ({size} bytes) is over the read limit: code cannot read it whole"
    if check["kind"] == "equals":
        if plain_text(text) == plain_text(check["text"]):
            return True, f"{path} holds exactly the text the check gives"
        return False, _unequal(path, text, size, check["text"])
    if check["kind"] == "number":
        if NUMBER.fullmatch(text.strip()):
            return True, f"{path} holds one number, {text.strip()}"
        return False, _missing(path, text, size, "one number alone")
    if check["kind"] == "keeps":
        now = {line.rstrip() for line in text.splitlines()}
        lost = [line for line in check["text"].splitlines() if line.rstrip() not in now]
        if not lost:
            return True, f"{path} still holds each line it had"
        return False, f"{path} lost {len(lost)} of the lines it had, first {_short(lost[0], 60)!r}"
    source = check.get("of", "")
    if _digest(data) == (check["text"] or _digest(_now(source, workspace))):
        return True, f"{path} holds the same bytes as {source} had"
    return False, f"{path} ({size} bytes) differs from what {source} held"


def plain_text(text: str) -> str:
    """A text as an ``equals`` check compares it: blanks at line ends and the text's end dropped.

    A line break of any kind (CRLF, LF) is one; leading blanks and blank lines inside are kept.
    """
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n")


def _now(path: str, workspace: Workspace) -> bytes:
    """A file's bytes now (a copy check set without its source's digest, from an old thread)."""
    return workspace.read_bytes(workspace.relative(path), workspace.max_read_bytes)[0]


#: The pattern of a file that holds some text (not only spaces): a deliverable's check.
HAS_TEXT = r"\S"


def absent(path: str) -> str:
    """The detail of a file check whose file is not there."""
    return f"{path} does not exist"


def _missing(path: str, text: str, size: int, wanted: str) -> str:
    """What a file holds instead of what a check wants: short files are quoted."""
    if not text.strip():
        return f"{path} is empty" if size == 0 else f"{path} holds only blank space"
    if len(text) <= QUOTED_CHARS:
        return f"{path} holds {text.strip()!r}, not {wanted}"
    return f"{path} ({size} bytes) has no {wanted}"


def _unequal(path: str, text: str, size: int, wanted: str) -> str:
    """How a file's text differs from an ``equals`` check's: quoted when short, else where."""
    held, want = plain_text(text), plain_text(wanted)
    if not held:
        return _missing(path, text, size, "")
    if len(held) <= QUOTED_CHARS:
        return f"{path} holds {held!r}, not exactly {_short(repr(want), QUOTED_CHARS)}"
    have, lines = held.split("\n"), want.split("\n")
    n = next((i for i, (a, b) in enumerate(zip(have, lines, strict=False)) if a != b), None)
    if n is not None:
        return f"{path} ({size} bytes) differs from the check's text at line {n + 1}: " + repr(
            _short(have[n], QUOTED_CHARS)
        )
    return (
        f"{path} ({size} bytes) has {len(have)} lines where the check's text has {len(lines)}, "
        f"the same up to line {min(len(have), len(lines))}"
    )


def _run(check: CheckRecord, workspace: Workspace, commands: CommandSettings) -> tuple[bool, str]:
    command = check.get("line") or shlex.join(check["argv"])
    given: str | list[str] = check.get("line") or list(check["argv"])
    output = run_command(given, workspace=workspace, settings=commands)
    status, _, body = output.partition("\n")
    tail = _short(" ".join(body.split()[-60:]), 160)
    if status.strip() != "exit code: 0":
        return False, f"{command} ended with {status.strip()}: {tail}"
    if check["expect"] and check["expect"] not in body:
        return False, f"{command} succeeded but its output has no {check['expect']!r}: {tail}"
    return True, f"{command} succeeded"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def failing(checks: Iterable[CheckRecord]) -> list[CheckRecord]:
    """The checks whose latest result is not a pass."""
    return [c for c in checks if c["passed"] is not True]
