"""`phase_plan`: the structured request becomes 1-5 phases (one step per attempt)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.models.structured import call_structured
from phasegraph.nodes.deps import Deps, context_of
from phasegraph.nodes.human_review import plan_review_on
from phasegraph.nodes.prompt_render import dump
from phasegraph.nodes.step_budget import limits_of, retries_within_budget, stage_failure
from phasegraph.progress import emit
from phasegraph.state import Phase, PhasePlan, State
from phasegraph.tools.base import truncate


def _words(name: str) -> str:
    return " ".join(re.split(r"[\W_]+", name.lower())).strip()


def named_after_tools(phases: list[Phase], tool_names: Iterable[str]) -> list[str]:
    """Names of phases that are the tool list copied out: several phases named after tools.

    A single phase may be called "List files"; list_files, read_file, edit_file, ... as phases
    (seen with small models) plan no work.
    """
    tools = {_words(t) for t in tool_names}
    named = [p.name for p in phases if _words(p.name) in tools or _words(p.id) in tools]
    return named if len(phases) > 1 and len(named) > 1 else []


def one_phase(state: State, planned: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole request as one phase, given the rounds the planner's phases would have taken."""
    request = state["structured_request"] or {}
    goal = str(request.get("core_goal", ""))
    requirements = [str(r) for r in request.get("requirements", [])]
    return {
        "id": "p1",
        "name": truncate(goal, 80),
        "goal": "; ".join([goal, *requirements]),
        "estimated_rounds": min(4, sum(p["estimated_rounds"] for p in planned)),
        "dependencies": [],
        "allowed_tools": [],
    }


def phase_plan(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Ask `phase_planner` for the phases; hold them for approval when plan review is on."""
    context = context_of(runtime)
    messages = [
        SystemMessage(prompts.PHASE_PLAN_SYSTEM.format(max_phases=context.max_phases)),
        HumanMessage(
            prompts.PHASE_PLAN_USER.format(
                structured_request=dump(state["structured_request"]),
                tools=", ".join(deps.tools_for(context)) or "(none)",
            )
        ),
    ]
    call = call_structured(
        deps.chat_model(runtime),
        "phase_planner",
        PhasePlan,
        messages,
        retries=retries_within_budget(state, context.max_parse_retries),
        validation_context={"max_phases": context.max_phases},
    )
    update: dict[str, Any] = call.counters(counted=True)
    if call.value is None:
        emit(runtime, "stage_failed", node="phase_plan", reason=call.failure)
        return update | stage_failure("phase_plan", call, state)
    phases = [p.model_dump() for p in call.value.phases]
    strategy = call.value.execution_strategy
    copied = named_after_tools(call.value.phases, deps.tools_for(context))
    if copied:
        # Asking again does not help a model that does this (a small one, decoding greedily:
        # it answers the same); the work it was asked to split is one phase, its goal the
        # request's.
        phases, strategy = (
            [one_phase(state, phases)],
            prompts.TOOL_PHASES_NOTE.format(names=", ".join(copied)),
        )
    update |= {
        "phases": phases,
        "execution_strategy": strategy,
        "phase_index": 0,
        "phase_round": 0,
    }
    emit(runtime, "phases_planned", phases=[{"id": p["id"], "name": p["name"]} for p in phases])
    if plan_review_on(limits_of(state)):
        update["pending_review"] = {
            "kind": "plan_review",
            "stage": "phase_plan",
            "phases": phases,
            "execution_strategy": strategy,
        }
        update["status"] = "awaiting_review"
        emit(runtime, "awaiting_review", kind="plan_review")
    return update
