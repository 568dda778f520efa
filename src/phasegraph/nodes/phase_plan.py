"""`phase_plan`: the structured request becomes 1-5 phases (one step per attempt).

A plan of one-tool phases ("read the file", "count the rows", "write the result"), each
narrowed to its tool, delivers nothing in any one phase, and each phase costs a plan and a
judge; such a plan, or several phases for a simple request, becomes one phase whose goal names
the planned steps in order (see `fits_one_phase`). Each check goes to the phase the plan names
for it, else the last (SPEC section 11).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.facts.checks import assign_checks, check_lines
from phasegraph.models.structured import call_structured
from phasegraph.nodes.deps import Deps, context_of
from phasegraph.nodes.fallback import fell_back, stopped
from phasegraph.nodes.human_review import plan_review_on
from phasegraph.nodes.prompt_render import request_facts
from phasegraph.nodes.step_budget import limits_of, retries_within_budget
from phasegraph.progress import emit
from phasegraph.state import CheckRecord, PhasePlan, State
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
    state: State,
    planned: list[dict[str, Any]],
    steps: list[str] | None = None,
    phase_id: str = "p1",
) -> dict[str, Any]:
    """The whole request as one phase, with the rounds the planned phases would have taken.

    Its goal is the request's, followed by ``steps`` (default: the request's requirements).
    """
    request = state["structured_request"] or {}
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


def fits_one_phase(state: State, phases: list[dict[str, Any]]) -> bool:
    """Whether several phases are a small job split into its tool calls.

    So they are when the request is simple; when all of them (of three or more one-round
    phases: all but one) are single tool calls, `is_one_call`, each a plan and a judge spent
    before anything is written; or when the phases together need no more rounds than one phase
    may have and all of them but at most one narrow their tools. A plan of phases that keep
    their tools open, or that need more rounds, is kept as it is.
    """
    if len(phases) < 2:
        return False
    if (state.get("structured_request") or {}).get("complexity") == "simple":
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


def shaped(
    state: State, phases: list[dict[str, Any]], tool_names: Iterable[str]
) -> tuple[list[dict[str, Any]], str | None]:
    """Planned phases as the run works them, and why they were merged into one, if they were.

    The phase planner's and the replanner's phases alike: a model that splits a job into tool
    calls may do it again when it replans.
    """
    phase_id = str(phases[0]["id"]) if phases else "p1"
    copied = named_after_tools(phases, tool_names)
    if copied:
        # Asking again does not help a model that does this (a small one, decoding
        # greedily: it answers the same).
        note = prompts.TOOL_PHASES_NOTE.format(names=", ".join(copied))
        return [one_phase(state, phases, phase_id=phase_id)], note
    if fits_one_phase(state, phases):
        note = prompts.ONE_PHASE_NOTE.format(count=len(phases))
        steps = [str(p["goal"]) for p in phases]
        return [one_phase(state, phases, steps, phase_id=phase_id)], note
    return phases, None


def phase_plan(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Plan the phases with the model; hold them for review when it is on."""
    context = context_of(runtime)
    checks = list(state.get("checks") or [])
    messages = [
        SystemMessage(prompts.PHASE_PLAN_SYSTEM.format(max_phases=context.max_phases)),
        HumanMessage(
            prompts.PHASE_PLAN_USER.format(
                structured_request=request_facts(state),
                tools=", ".join(deps.tools_for(context)) or "(none)",
                checks=prompts.PHASE_PLAN_CHECKS.format(checks=check_lines(checks))
                if checks
                else "",
            )
        ),
    ]
    call = call_structured(
        deps.chat_model(runtime, state.get("run_id", "")),
        "phase_planner",
        PhasePlan,
        messages,
        retries=retries_within_budget(state, context.max_parse_retries),
        validation_context={"max_phases": context.max_phases},
    )
    update: dict[str, Any] = call.counters(counted=True)
    if (stop := stopped("phase_plan", call, state, runtime)) is not None:
        return update | stop
    if call.value is None:
        action = "planned the whole request as one phase"
        phases, strategy = [one_phase(state, [])], action
        update |= fell_back("phase_plan", call, state, runtime, action)
    else:
        phases, merged = shaped(
            state, [p.model_dump() for p in call.value.phases], deps.tools_for(context)
        )
        strategy = merged or call.value.execution_strategy
    return update | _planned(state, phases, strategy, checks, runtime)


def _planned(
    state: State,
    phases: list[dict[str, Any]],
    strategy: str,
    checks: list[CheckRecord],
    runtime: Runtime[Context],
) -> dict[str, Any]:
    """The phases as the run keeps them, each check with its phase, and the review if on."""
    checks = assign_checks(checks, phases)
    update: dict[str, Any] = {
        "phases": phases,
        "execution_strategy": strategy,
        "phase_index": 0,
        "phase_round": 0,
        "checks": checks,
    }
    emit(runtime, "phases_planned", phases=[{"id": p["id"], "name": p["name"]} for p in phases])
    if plan_review_on(limits_of(state)):
        update["pending_review"] = {
            "kind": "plan_review",
            "stage": "phase_plan",
            "phases": phases,
            "execution_strategy": strategy,
            "checks": review_checks(checks, phases),
        }
        update["status"] = "awaiting_review"
        emit(runtime, "awaiting_review", kind="plan_review")
    return update


def review_checks(checks: list[CheckRecord], phases: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The checks as a plan review shows them: each beside the phase that must make it true."""
    last = phases[-1]["id"] if phases else ""
    return [{"id": c["id"], "check": c["label"], "phase": c["phase_id"] or last} for c in checks]
