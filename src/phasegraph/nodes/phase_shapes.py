"""Phases as planned, and the whole request as one phase: what the phase rules read and make.

A plan of one-tool phases ("read the file", "count the rows", "write the result"), each
narrowed to its tool, delivers nothing in any one phase, and each phase costs a plan and a
judge. The rules that merge such plans into one phase are `phasegraph.policy`'s; these are the
facts they read (`named_after_tools`, `fits_one_phase`) and the phase they make (`one_phase`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from phasegraph.state.result import clip
from phasegraph.state.schemas import DEFAULT_ROUNDS, MAX_ROUNDS, NAME_CHARS


def _words(name: str) -> str:
    return " ".join(re.split(r"[\W_]+", name.lower())).strip()


def named_after_tools(phases: list[dict[str, Any]], tool_names: Iterable[str]) -> list[str]:
    """Names of phases that are the tool list copied out: several phases named after tools.

    A single phase may be called "List files"; list_files, read_file, edit_file, ... as phases
    plan no work. Empty unless the plan has several phases and more than one of them is named
    (by name or id) after a tool.
    """
    tools = {_words(t) for t in tool_names}
    named = [
        str(p["name"])
        for p in phases
        if _words(str(p["name"])) in tools or _words(str(p["id"])) in tools
    ]
    return named if len(phases) > 1 and len(named) > 1 else []


def one_phase(
    request: Mapping[str, Any],
    planned: list[dict[str, Any]],
    steps: list[str] | None = None,
    phase_id: str = "p1",
) -> dict[str, Any]:
    """The whole request as one phase, with the rounds the planned phases would have taken.

    Its goal is the structured request's, followed by ``steps`` (default: its requirements).
    """
    goal = str(request.get("core_goal", ""))
    if steps is None:
        steps = [str(r) for r in request.get("requirements", [])]
    rounds = sum(int(p["estimated_rounds"]) for p in planned) or DEFAULT_ROUNDS
    return {
        "id": phase_id,
        # a name, not a tool's output: cut on one line, without truncate's note of what was cut
        "name": clip(goal, NAME_CHARS),
        "goal": "; ".join([goal, *(s for s in steps if s != goal)]),
        "estimated_rounds": min(MAX_ROUNDS, max(DEFAULT_ROUNDS, rounds)),
        "dependencies": [],
        "allowed_tools": [],
        "checks": [c for p in planned for c in p.get("checks", [])],
    }


def fits_one_phase(request: Mapping[str, Any], phases: list[dict[str, Any]]) -> bool:
    """Whether several phases are a small job split into its tool calls.

    So they are when the request is simple; when all of them (of three or more one-round
    phases: all but one) are single tool calls, `is_one_call`, each a plan and a judge spent
    before anything is written; or when the phases together need no more rounds than one phase
    may have and all of them but at most one narrow their tools. A plan of phases that keep
    their tools open, or that need more rounds, is kept as it is.
    """
    if len(phases) < 2:
        return False
    if request.get("complexity") == "simple":
        return True
    calls = sum(1 for p in phases if is_one_call(p))
    one_round = all(int(p["estimated_rounds"]) <= 1 for p in phases)
    if calls == len(phases) or (len(phases) > 2 and calls == len(phases) - 1 and one_round):
        return True
    rounds = sum(int(p["estimated_rounds"]) for p in phases)
    open_phases = sum(1 for p in phases if not p.get("allowed_tools"))
    return rounds <= MAX_ROUNDS and open_phases <= 1


def is_one_call(phase: dict[str, Any]) -> bool:
    """Whether a phase is a tool call in a phase's clothes: one round, narrowed to one tool.

    Phases of several rounds on one tool (a long read of many records, say) are work.
    """
    return len(phase.get("allowed_tools") or []) == 1 and int(phase["estimated_rounds"]) <= 1
