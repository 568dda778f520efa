"""`analyse`: the raw request becomes a `StructuredRequest` (not counted in the step budget)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.models.structured import call_structured
from phasegraph.nodes.deps import Deps, context_of
from phasegraph.nodes.human_review import person_available
from phasegraph.nodes.step_budget import limits_from, stage_failure
from phasegraph.progress import emit
from phasegraph.state import State, StructuredRequest

# A model that asks forever must not keep the run waiting: after this many answered rounds of
# questions, analyse works with what it has.
MAX_CLARIFICATION_ROUNDS = 2


def initial_values(context: Context) -> dict[str, Any]:
    """Every field a run reports, set once when it starts, so callers always find them."""
    return {
        "limits": limits_from(context),
        "status": "running",
        "stop_reason": None,
        "error": None,
        "structured_request": None,
        "phases": [],
        "execution_strategy": "",
        "phase_index": 0,
        "phase_round": 0,
        "current_plan": None,
        "results": [],
        "round_seq": 0,
        "phase_window_seq": 0,
        "dispatch": [],
        "wave": 0,
        "last_wave": False,
        "tool_decisions": {},
        "judgement": None,
        "replan_count": 0,
        "replan_reason": None,
        "reflection_note": None,
        "pending_review": None,
        "human_feedback": None,
        "last_review": None,
        "review_feedback": None,
        "final_response": None,
        "final_summary": None,
        "summary": None,
    }


def analyse(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Ask `request_analyser` for the structured request; ask the person when it must."""
    context = context_of(runtime)
    update: dict[str, Any] = {} if state.get("limits") else initial_values(context)
    limits = state.get("limits") or update["limits"]
    clarifications = state.get("clarifications", [])
    pairs = "\n".join(f"Q: {c['question']}\nA: {c['answer']}" for c in clarifications)
    messages = [
        SystemMessage(prompts.ANALYSE_SYSTEM),
        HumanMessage(
            prompts.ANALYSE_USER.format(
                request=state["request"],
                clarifications=prompts.CLARIFICATIONS.format(pairs=pairs) if pairs else "",
            )
        ),
    ]
    call = call_structured(
        deps.chat_model(runtime),
        "request_analyser",
        StructuredRequest,
        messages,
        retries=context.max_parse_retries,
    )
    update |= call.counters(counted=False)
    if call.value is None:
        emit(runtime, "stage_failed", node="analyse", reason=call.failure)
        return update | stage_failure("analyse", call, state)
    request = call.value
    update["structured_request"] = request.model_dump()
    emit(runtime, "analysed", goal=request.core_goal, task_type=request.task_type)
    if (
        request.clarification_needed
        and person_available(limits)
        and len(clarifications) < MAX_CLARIFICATION_ROUNDS
    ):
        update["pending_review"] = {
            "kind": "clarification",
            "stage": "analyse",
            "questions": request.clarification_questions,
        }
        update["status"] = "awaiting_review"
        emit(runtime, "awaiting_review", kind="clarification")
    return update
