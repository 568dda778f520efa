"""`phase_plan`: the structured request becomes 1-5 phases (one step per attempt)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.nodes._common import (
    Deps,
    context_of,
    dump,
    limits_of,
    plan_review_on,
    retries_within_budget,
    stage_failure,
)
from phasegraph.progress import emit
from phasegraph.state import PhasePlan, State
from phasegraph.structured import call_structured


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
    update |= {
        "phases": phases,
        "execution_strategy": call.value.execution_strategy,
        "phase_index": 0,
        "phase_round": 0,
    }
    emit(runtime, "phases_planned", phases=[{"id": p["id"], "name": p["name"]} for p in phases])
    if plan_review_on(limits_of(state)):
        update["pending_review"] = {
            "kind": "plan_review",
            "stage": "phase_plan",
            "phases": phases,
            "execution_strategy": call.value.execution_strategy,
        }
        update["status"] = "awaiting_review"
        emit(runtime, "awaiting_review", kind="plan_review")
    return update
