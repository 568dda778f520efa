"""Where code overrules a judge: a completion the facts contradict (SPEC sections 1 and 11).

The judge is a model; what it may not claim is decided here, from facts code computed: a phase
is not done while one of its checks fails, nor when the writes its round planned never ran and
no file changed, nor when a file it wrote is a copy of an input the request did not ask to
copy, nor, for the last phase, when no file the request writes or changes was written, or
when a program the request asks to run never ran. An overruled judgement goes on
(``continue_phase``) and says why (``overridden``); the round limit and the budget still end
the phase.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph.nodes.facts import UNSOURCED, in_words, not_a_path, writes_files
from phasegraph.state import CheckRecord, TaskResult

#: The least completion rate at which a judge's "phase completed" is taken.
COMPLETED_RATE = 0.5

#: Words by which a request asks for a file to be copied as it is.
ASKS_FOR_A_COPY = re.compile(
    r"\b(cop(y|ies|ied|ying)|duplicat\w*|back\s?ups?|clon\w*|mirror\w*)\b", re.I
)


def _claims_done(judgement: dict[str, Any]) -> bool:
    """``phase_completed``, or ``end_phase`` at a rate that claims the goal is met.

    An ``end_phase`` at a low rate (the goal cannot be met) still ends the phase, short of it.
    """
    return bool(judgement["phase_completed"]) or (
        judgement["next_action"] == "end_phase"
        and judgement["phase_completion_rate"] >= COMPLETED_RATE
    )


def _overrule(judgement: dict[str, Any], why: str) -> None:
    judgement["phase_completed"] = False
    judgement["next_action"] = "continue_phase"
    judgement["overridden"] = why


def hold_to_checks(judgement: dict[str, Any], failing: list[CheckRecord]) -> None:
    """Override a judgement that calls the phase done while one of its checks fails.

    The checks are said in words, as every prompt says them: the reason reaches the next plan.
    """
    if failing and _claims_done(judgement):
        _overrule(
            judgement,
            "checks fail: "
            + "; ".join(f"{c['id']}: {in_words(c)} ({c['detail']})" for c in failing),
        )


def hold_to_writes(
    judgement: dict[str, Any],
    results: list[TaskResult],
    changed: list[str],
    tools: Mapping[str, BaseTool],
) -> None:
    """Override a judgement that calls the phase done when its writes never ran.

    Traced on the 1.5B model: asked to rename a function in greet.py and to add a setting to
    app.ini, it planned each edit beside a read, the edits were skipped (see
    `execute.blind_writes`), and its judge gave 1.0, "the phase goal was met", with no file
    changed. A round that planned writes, none of which ran, in a phase that has changed no
    file, has not done what it set out to.
    """
    writes = [r for r in results if writes_files(tools.get(r["tool"]))]
    if writes and not changed and all(r["status"] != "ok" for r in writes) and _claims_done(
        judgement
    ):
        _overrule(
            judgement,
            "no file changed: the writes planned ("
            + ", ".join(f"{r['task_id']} {r['status']}" for r in writes)
            + ") did not run",
        )


def hold_to_sources(judgement: dict[str, Any], copies: Mapping[str, str], request: str) -> None:
    """Override a judgement that calls the phase done when what it wrote is an input, copied.

    See `facts.copied_inputs`: the 1.5B model wrote the numbers where their sum belonged and
    the whole log where its count of ERROR lines did, and its judge, told the file held the
    same text as the input, still called it done. A request that asks for a copy gets one.
    """
    if copies and _claims_done(judgement) and not ASKS_FOR_A_COPY.search(request):
        _overrule(
            judgement,
            "; ".join(f"{path} holds the same text as {source}" for path, source in copies.items())
            + ": copied, not made from it as the request asks",
        )


def hold_to_evidence(
    judgement: dict[str, Any],
    unsourced: Mapping[str, str],
    last_phase: bool,
    runners: Sequence[str],
) -> None:
    """Override a last phase called done on a number no input or tool output shows.

    See `facts.unsourced_numbers`: the 1.5B model wrote 58 for the sum of 17, 25 and 8, and 0
    for a count of three, and its judges called both done. A number worked out in a model's
    head is not known to be right; one a tool computed, or an input holds, is. Only where the
    phase may run a program (``runners``) that can count or compute it: otherwise the model's
    word is all there can be.
    """
    if last_phase and unsourced and runners and _claims_done(judgement):
        _overrule(
            judgement,
            "; ".join(f"{path} holds {value}, {UNSOURCED}" for path, value in unsourced.items())
            + ": worked out without a tool, it is not known to be right; get it from a tool "
            f"whose output shows it (a program that counts or computes, with {runners[0]}), "
            "then write that",
        )


#: A request asking for where a file is: "its path", "the path of"; not "the PATH variable".
ASKS_FOR_A_PATH = re.compile(
    r"\b(?:[Tt]he|[Ii]ts|[Tt]heir|[Ff]ull|[Rr]elative|[Ff]ile)\s+paths?\b|\b[Pp]aths?\s+(?:of|to)\b"
)


def hold_to_paths(
    judgement: dict[str, Any],
    misplaced: Mapping[str, tuple[str, list[str]]],
    request: str,
    last_phase: bool,
) -> None:
    """Override a last phase called done on a path the request asks for that leads nowhere.

    See `facts.misplaced_names`: asked to write the path of the file that defines a function,
    the 1.5B model wrote its bare name, which the caller's check "contains dates.py" passed.
    A request that asks for a name, not a path, gets the name.
    """
    if last_phase and misplaced and ASKS_FOR_A_PATH.search(request) and _claims_done(judgement):
        _overrule(
            judgement,
            "; ".join(f"{path} holds {not_a_path(*held)}" for path, held in misplaced.items())
            + ": the request asks for a path",
        )


def hold_to_named_files(
    judgement: dict[str, Any], named: list[str], written: list[str], last_phase: bool
) -> None:
    """Override a last phase called done while no file the request writes or changes was written.

    Traced on the 1.5B model: asked to rename a function in greet.py, its round read the file,
    planned no edit, and its judge called the rename done. ``named``: the files the analysis
    says the request writes or changes (``files_to_write``); ``written``: the files the run's
    tools wrote, in any phase; both as the workspace resolves them (see `workspace_path`).
    Earlier phases may well only read; the last one ends the work.
    """
    done = set(written)
    if last_phase and named and not any(n in done for n in named) and _claims_done(judgement):
        _overrule(
            judgement,
            "no file the request writes or changes was written ("
            + ", ".join(named)
            + "): the work is not done",
        )


def hold_to_named_commands(
    judgement: dict[str, Any],
    named: list[str],
    ran: set[str],
    fed: set[str],
    last_phase: bool,
    runners: Sequence[str] = ("run_command",),
) -> None:
    """Override a last phase called done while a program the request asks to run had no effect.

    It had none when it never ran, or ran only after the files the request writes were last
    written.

    Traced on the 1.5B model: asked to run wc -l on data.csv and write the count it reports,
    it wrote the numbers 1 to 100 without running anything, and its judge called it done; in
    another run it wrote 0, then ran wc, wrote nothing after it, and its judge called that
    done. What such a program reports is known only by running it, and reaches a file only by
    a write after the run. ``named``: see `facts.commands_named`, given only where the phase
    may use a tool that runs programs (``runners``); ``ran``: the programs the run's command
    tools ran, in any phase; ``fed``: those of them after which a file the request writes was
    written (all of ``ran`` when the request names no file to write).
    """
    if not last_phase or not _claims_done(judgement):
        return
    never = [name for name in named if name not in ran]
    unused = [name for name in named if name in ran and name not in fed]
    if never:
        _overrule(
            judgement,
            "the request asks to run " + ", ".join(never) + ", and it never ran ("
            + " or ".join(runners) + "): what it reports is not known, so the work is not done",
        )
    elif unused:
        _overrule(
            judgement,
            ", ".join(unused) + " ran, but no file the request writes was written after it: "
            "what it reported is not in them, so the work is not done",
        )
