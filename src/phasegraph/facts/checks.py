"""Checks as facts of a run: which phase owns each, their results, and what they ask, in words.

SPEC section 11: which phase must make each check true and whether it does; what the failing
ones ask of the work, as steps for the next plan; what kept an ended run short of ``completed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.state import CheckRecord, PhaseOutcome, RoundRecord, State
from phasegraph.tools.checks import HAS_TEXT, absent, evaluate, failing
from phasegraph.tools.workspace import Workspace


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


#: How prompts name a ``matches`` check's pattern, which they never quote (see `in_words`).
SAID_BY_EXPRESSION = "code checks it with a regular expression"


def check_lines(checks: Sequence[CheckRecord]) -> str:
    """Checks with their latest results, one line each, in words."""
    return "\n".join(f"- {c['id']}: {in_words(c)}: {_verdict(c)}" for c in checks)


def in_words(check: Mapping[str, Any]) -> str:
    """What a check asks, in words.

    Prompts say this, not the label. Nothing here is quotable as a file's content, and a
    ``matches`` check's pattern is never quoted (`SAID_BY_EXPRESSION` stands for it), nor is an
    example of the text it wants: a model shown a label, a pattern or an example may search for
    it, or write it into the file, instead of doing what the request asks. So plans, judges and
    phase plans are not shown a pattern: the request says what to do, and code checks. (The
    summary, written for a person, names a failing check by its label.)
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
        case "equals":
            return f"{check['path']} must hold exactly {whole_text(check['text'])} and nothing more"
        case "number":
            return (
                f"{check['path']} must hold one number and nothing else (code does not check "
                "that it is the number the request asks for)"
            )
        case "keeps":
            return f"{check['path']} must still hold each line it had before the work"
        case "copy":
            return f"{check['path']} must hold the same bytes as {check.get('of', '')}"
        case _:
            output = f" and print {check['expect']!r}" if check.get("expect") else ""
            return f"the command {' '.join(check['argv'])!r} must succeed{output}"


#: How much of an ``equals`` check's text prompts quote: a file's whole text may be long.
WHOLE_TEXT_SHOWN = 300


def whole_text(text: str) -> str:
    """An ``equals`` check's text as prompts quote it: whole, or its start and its size."""
    if len(text) <= WHOLE_TEXT_SHOWN:
        return repr(text)
    lines = len(text.splitlines())
    return f"{text[:WHOLE_TEXT_SHOWN]!r}... ({len(text)} characters, {lines} lines in all)"


def to_do(
    checks: Iterable[CheckRecord],
    missing: Callable[[str], bool],
    made: Callable[[str], bool] = lambda path: False,
) -> list[str]:
    """What the failing checks ask of the work, as steps; a file to write whole is one step.

    A file not there yet is one step, and so is a file this run made (``made``: the request
    named it and it was not there when the run began) whose texts fall short of its checks:
    `write_whole`, naming no text (the check lines above it still say what code looks for). A
    step per text looked for, or one naming them, can be taken for the file's whole content;
    and a file the run made holds nothing of the user's that writing it again could lose.
    ``missing``: whether a path is not there now (a check's detail may date from an earlier
    phase).
    """
    open_checks = failing(checks)
    # a path with checks of what it holds is a file (one with only "exists" may be a folder)
    new_files = {
        c["path"]
        for c in open_checks
        if c["kind"] in ("contains", "matches", "equals", "number", "copy") and missing(c["path"])
    }
    steps = [
        write_whole(path, absent(path))
        for path in dict.fromkeys(c["path"] for c in open_checks if c["path"] in new_files)
    ]
    short = {
        c["path"]
        for c in open_checks
        if c["kind"] in ("contains", "matches") and c["path"] not in new_files and made(c["path"])
    }
    steps += [
        write_whole(path, prompts.MADE_SHORT.format(path=path))
        for path in dict.fromkeys(c["path"] for c in open_checks if c["path"] in short)
    ]
    return steps + [
        still_to_do(c)
        for c in open_checks
        if c["path"] not in new_files
        and not (c["path"] in short and c["kind"] in ("contains", "matches"))
    ]


def write_readable(path: str, error: str) -> str:
    """The step to write again a file that no longer reads as its format (`broken_formats`).

    The plan is told what is wrong and what to do instead: a plan told nothing of why its
    judge was overruled may repeat its work until the budget is spent.
    """
    return f"{path} {error}: write {path} again so that it does"


def write_whole(path: str, why: str) -> str:
    """The step to write a file the work makes, whole: "..., so write answer.txt with ...".

    ``why`` (a check's detail) comes first and the step ends at "with what the request asks it
    to hold": it points the work at the request, and no text of code's own stands where the
    file's content would be read (a detail after "hold" reads as the text to write). It names no
    command, so no command's words are offered as the file's content either.
    """
    return f"{why}, so write {path} with what the request asks it to hold"


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
        case "equals":
            wanted = whole_text(check["text"])
            return f"make {check['path']} hold exactly {wanted} ({check['detail']})"
        case "number":
            return (
                f"work out from the inputs the number the request asks for, then write only "
                f"that number to {check['path']} ({check['detail']})"
            )
        case "keeps":
            return f"put back into {check['path']} the lines it had ({check['detail']})"
        case "copy":
            return f"copy {check.get('of', '')} to {check['path']} unchanged ({check['detail']})"
        case _:
            return f"make the command {' '.join(check['argv'])!r} succeed ({check['detail']})"


def _verdict(check: CheckRecord) -> str:
    if check["passed"] is None:
        return "not evaluated yet"
    return f"passes ({check['detail']})" if check["passed"] else f"FAILS: {check['detail']}"


ENDED_SHORT = {
    "end_phase": "the judge ended it short of its goal",
    "round_limit": "it reached its round limit",
    "replan_cap": "the replans allowed were used up",
    "consecutive_failures": "its tasks failed in a row",
    "no_plan": "no usable round plan came",
    "replan_done": "a replan called the work done before it completed",
}


def shortfalls(
    outcomes: Iterable[PhaseOutcome],
    checks: Iterable[CheckRecord],
    last: Mapping[str, Mapping[str, Any]] | None = None,
    rounds: Iterable[RoundRecord] = (),
) -> list[str]:
    """What kept the run from ``completed``: each phase that ended short, each failing check.

    A phase a replan replaced is not counted: the phases that replaced it carry its work. A
    phase whose last judgement (in ``last``, by phase id) code overruled is not given its
    judge's rate as where it got to: the line says the judge's claim was overruled, and why.
    A phase that completed though none of its tasks (in ``rounds``) succeeded is counted, as a
    failing check is, whatever guards the graph has (SPEC section 1: such a phase cannot
    complete).
    """
    succeeded: dict[str, int] = {}
    for record in rounds:
        ok = sum(1 for r in record["results"] if r["status"] == "ok")
        succeeded[record["phase_id"]] = succeeded.get(record["phase_id"], 0) + ok
    found = []
    for o in outcomes:
        if o["completed"] and succeeded.get(o["phase_id"], 1) == 0:
            found.append(f"phase {o['name']} ({o['phase_id']}) completed, but {NONE_SUCCEEDED}")
            continue
        if o["completed"] or o["ended_by"] == "replanned":
            continue
        overruled = ((last or {}).get(o["phase_id"]) or {}).get("overridden")
        rate = f"{o['completion_rate']:.0%}"
        where = f"its judge's {rate} overruled: {overruled}" if overruled else f"at {rate}"
        if o["ended_by"] == "replan_done" and not o["rounds"]:
            where = "before any round of it ran"
        why = ENDED_SHORT.get(o["ended_by"], o["ended_by"])
        found.append(f"phase {o['name']} ({o['phase_id']}) ended short: {why}, {where}")
    found += [f"check {c['label']} fails: {c['detail']}" for c in checks if c["passed"] is not True]
    return found


#: Why a phase that completed with no task succeeded is a shortfall (`shortfalls`).
NONE_SUCCEEDED = "none of its tasks succeeded: its judge's word alone says it is done"
