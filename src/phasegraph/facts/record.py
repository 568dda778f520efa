"""The facts record of a round, computed once when its tasks are in (SPEC section 1).

`round_facts` evaluates the checks the phase owns and reads what the run wrote, against what it
started from and what its tools showed; the judge's node calls it before the judge is asked and
keeps the record in the state, where the guards, the next plan, the replan and the summary read
it. `first_facts` is the record before any round: nothing written, every file still to write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.facts.checks import evaluate_checks, in_words, owned_checks
from phasegraph.facts.files import describe_files, request_files, resolved_paths, workspace_files
from phasegraph.facts.formats import broken_formats
from phasegraph.facts.tools import changed_files, how_written, tool_kinds
from phasegraph.state import CheckRecord, State, TaskResult
from phasegraph.state.facts import RoundFacts
from phasegraph.state.reading import current_phase, is_last_phase, phase_window


def round_facts(
    state: State,
    results: Sequence[TaskResult],
    context: Context,
    tools: Mapping[str, BaseTool],
) -> tuple[RoundFacts, list[CheckRecord]]:
    """The facts of the round in progress, and every check with the phase's evaluated afresh.

    ``results``: the round's, in plan order.
    """
    phase = current_phase(state)
    owned_ids = [c["id"] for c in owned_checks(state, phase["id"])]
    checks = evaluate_checks(state.get("checks") or [], context, ids=owned_ids)
    failing = [c for c in checks if c["id"] in owned_ids and not c["passed"]]
    window = [r for record in phase_window(state) for r in record["results"]]
    by_round = [*(record["results"] for record in state.get("rounds") or []), list(results)]
    so_far = [r for round_results in by_round for r in round_results]
    changed = changed_files([*window, *results], tools)
    written = changed_files(so_far, tools)
    to_write = resolved_paths(_files_to_write(state), context)
    done = resolved_paths(written, context)
    writers = tool_kinds(tools)["writes"]
    facts: RoundFacts = {
        "phase_id": phase["id"],
        "round": state.get("phase_round", 0),
        "last_phase": is_last_phase(state, phase),
        "tasks": len(results),
        "succeeded": sum(1 for r in results if r["status"] == "ok"),
        "phase_succeeded": sum(1 for r in [*window, *results] if r["status"] == "ok"),
        "writes": [f"{r['task_id']} {r['status']}" for r in results if r["tool"] in writers],
        "changed_files": changed,
        "written_files": done,
        "failing_checks": [f"{c['id']}: {in_words(c)} ({c['detail']})" for c in failing],
        "malformed": broken_formats(
            written, context, state.get("originals") or {}, state.get("new_files") or []
        ),
        "to_write": to_write,
        "unwritten": [path for path in to_write if path not in done],
        "files": describe_files(
            changed, context, state.get("originals"), how_written([*window, *results], tools)
        ),
        "workspace": workspace_files(context, tools),
        "named": request_files(state["request"], context, tools),
    }
    return facts, checks


def first_facts(state: State, context: Context, tools: Mapping[str, BaseTool]) -> RoundFacts:
    """The record before the run's first round: nothing written, every file still to write."""
    to_write = resolved_paths(_files_to_write(state), context)
    phases = state.get("phases") or []
    return {
        "phase_id": phases[state.get("phase_index", 0)]["id"] if phases else "",
        "round": 0,
        "last_phase": len(phases) == 1,
        "tasks": 0,
        "succeeded": 0,
        "phase_succeeded": 0,
        "writes": [],
        "changed_files": [],
        "written_files": [],
        "failing_checks": [],
        "malformed": {},
        "to_write": to_write,
        "unwritten": to_write,
        "files": "none",
        "workspace": workspace_files(context, tools),
        "named": request_files(state["request"], context, tools),
    }


def judge_facts(facts: RoundFacts, owned: Sequence[CheckRecord], check_lines: str) -> str:
    """The facts as the judge's prompt says them."""
    return prompts.JUDGE_FACTS.format(
        files=facts["files"],
        workspace=facts["workspace"],
        named=facts["named"],
        checks=prompts.PHASE_CHECKS.format(checks=check_lines) if owned else "",
    )


def _files_to_write(state: State) -> list[Any]:
    return list((state.get("structured_request") or {}).get("files_to_write") or [])
