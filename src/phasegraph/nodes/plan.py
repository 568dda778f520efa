"""`plan`: one round of 1-8 tool calls for the current phase (one step per attempt)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.nodes._common import (
    Deps,
    budget_spent,
    context_of,
    current_phase,
    dump,
    limits_of,
    retries_within_budget,
    round_limit,
    stage_failure,
)
from phasegraph.progress import emit
from phasegraph.state import RoundPlan, RoundRecord, State
from phasegraph.structured import call_structured
from phasegraph.tools import describe_tools
from phasegraph.tools.base import truncate

# Rounds of the phase shown in full; older ones by their judge summary (SPEC section 7).
FULL_ROUNDS = 2
PROMPT_OUTPUT_CHARS = 1200


def allowed_tools(phase: dict[str, Any], deps: Deps) -> list[str]:
    """Tools the phase may use: its own list narrowed to the tools that exist (empty: all)."""
    named = phase.get("allowed_tools") or []
    return [t for t in named if t in deps.tools] if named else list(deps.tools)


def render_history(rounds: list[RoundRecord]) -> str:
    """Earlier rounds of a phase: the latest in full, older ones by their judge summary."""
    lines = []
    for record in rounds[:-FULL_ROUNDS] if len(rounds) > FULL_ROUNDS else []:
        lines.append(f"Round {record['round']}: {record['judgement'].get('user_summary', '')}")
    for record in rounds[-FULL_ROUNDS:]:
        lines.append(f"Round {record['round']} (judged: {record['judgement'].get('user_summary')})")
        for result in record["results"]:
            output = truncate(result["output"], PROMPT_OUTPUT_CHARS)
            lines.append(
                f"  - {result['task_id']} {result['tool']}({dump(result['arguments'])}) "
                f"-> {result['status']}: <tool-output>{output}</tool-output>"
            )
    return prompts.HISTORY.format(rounds="\n".join(lines)) if lines else ""


def plan(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Ask `plan_tool_call` for the next round of the current phase."""
    if budget_spent(state):  # routers check first; this keeps the node safe on its own
        return {"stop_reason": "budget"}
    context = context_of(runtime)
    limits = limits_of(state)
    phase = current_phase(state)
    round_no = state.get("phase_round", 0) + 1
    tools = allowed_tools(phase, deps)
    request = state["structured_request"] or {}
    phase_rounds = [r for r in state.get("rounds", []) if r["phase_id"] == phase["id"]]
    note = state.get("reflection_note")
    messages = [
        SystemMessage(prompts.PLAN_SYSTEM.format(max_tasks=context.max_tasks_per_round)),
        HumanMessage(
            prompts.PLAN_USER.format(
                core_goal=request.get("core_goal", ""),
                requirements=dump(request.get("requirements", [])),
                constraints=dump(request.get("constraints", [])),
                phase_number=state["phase_index"] + 1,
                phase_total=len(state["phases"]),
                phase_name=phase["name"],
                phase_id=phase["id"],
                phase_goal=phase["goal"],
                round=round_no,
                round_limit=round_limit(phase, limits),
                tools=describe_tools(deps.tools[t] for t in tools),
                history=render_history(phase_rounds),
                reflection=prompts.REFLECTION.format(note=note) if note else "",
            )
        ),
    ]
    call = call_structured(
        deps.chat_model(runtime),
        "plan_tool_call",
        RoundPlan,
        messages,
        retries=retries_within_budget(state, context.max_parse_retries),
        validation_context={"allowed_tools": tools, "max_tasks": context.max_tasks_per_round},
    )
    update: dict[str, Any] = call.counters(counted=True)
    if call.value is None:
        emit(runtime, "stage_failed", node="plan", reason=call.failure)
        return update | stage_failure("plan", call, state)
    if round_no == 1:
        emit(
            runtime,
            "phase_started",
            phase_id=phase["id"],
            name=phase["name"],
            index=state["phase_index"] + 1,
            total=len(state["phases"]),
        )
    tasks = [t.model_dump() for t in call.value.tasks]
    emit(runtime, "round_planned", phase_id=phase["id"], round=round_no, tasks=len(tasks))
    return update | {
        "current_plan": call.value.model_dump(),
        "phase_round": round_no,
        "results": [],
        # The note has been carried into this plan; the next trigger writes a new one.
        "reflection_note": None,
    }
