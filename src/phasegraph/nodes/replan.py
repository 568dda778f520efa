"""`replan`: new remaining phases, or the work is done (one step per attempt).

The replanner sees the checks with their latest results and may assign them to its new phases.
When its answers cannot be used after their retries, the remaining phases stay as they were
(SPEC section 1), with a fresh window for the reflection triggers.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.facts.checks import assign_checks, check_lines
from phasegraph.models.structured import call_structured
from phasegraph.nodes.deps import Deps, context_of
from phasegraph.nodes.fallback import fell_back, stopped
from phasegraph.nodes.human_review import replan_review_on
from phasegraph.nodes.judgement import phase_outcome
from phasegraph.nodes.phase_plan import review_checks, shaped
from phasegraph.nodes.prompt_render import dump, recent_outcomes, request_facts
from phasegraph.nodes.step_budget import budget_spent, limits_of, retries_within_budget
from phasegraph.progress import emit
from phasegraph.state import PhaseOutcome, Replan, State

#: What a grammar-decoded replanner is held to: phases with "replanned", a response with "done".
VARIANTS = [
    {
        "properties": {
            "status": {"const": "replanned"},
            "phases": {"type": "array", "items": {"$ref": "#/$defs/Phase"}, "minItems": 1},
        },
        "required": ["status", "phases"],
    },
    {
        "properties": {
            "status": {"const": "done"},
            "response": {"type": "string", "minLength": 1},
        },
        "required": ["status", "response"],
    },
]

# Finished phases shown one by one in the replan prompt; earlier ones are counted (SPEC 7).
SHOWN_OUTCOMES = 5
OUTCOME_SUMMARY_CHARS = 400


def interrupted_outcome(state: State) -> PhaseOutcome | None:
    """How the current phase ends when a replan replaces it after it ran rounds, else None."""
    if not state.get("phase_round") or state["phase_index"] >= len(state["phases"]):
        return None
    judgement = state.get("judgement") or {}
    return phase_outcome(
        state["phases"][state["phase_index"]],
        "replanned",
        rate=float(judgement.get("phase_completion_rate", 0.0)),
        rounds=int(state["phase_round"]),
        summary=str(judgement.get("user_summary", "")),
    )


def ended_by_done(state: State, interrupted: PhaseOutcome | None) -> list[PhaseOutcome]:
    """How the phases of the plan end when a replan calls the work done instead of going on.

    None of them had completed (their judge did not say so, or code held its claim: a
    replanner's "done" is not a way past the guards, SPEC section 1): the phase it interrupted
    and every phase of the plan not run yet (a replan's own new ones included) end short
    (``replan_done``), which keeps the run from ``completed`` (`facts.checks.shortfalls`). A
    replan with new phases leaves the interrupted outcome as `interrupted_outcome` made it: the
    new phases carry its work.
    """
    unrun = state["phases"][state["phase_index"] + (1 if interrupted else 0) :]
    ended: list[PhaseOutcome] = [interrupted | {"ended_by": "replan_done"}] if interrupted else []
    return ended + [phase_outcome(phase, "replan_done") for phase in unrun]


def replan(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Ask `replanner` to replace the phases from the current one on, or to finish."""
    if budget_spent(state):  # routers check first; this keeps the node safe on its own
        return {"stop_reason": "budget"}
    context = context_of(runtime)
    index = state["phase_index"]
    judgement = state.get("judgement") or {}
    interrupted = interrupted_outcome(state)
    # A phase that already ran rounds stays in the plan as ended, so its rounds keep their
    # phase in reports and its findings reach later prompts; new phases come after it.
    kept = state["phases"][: index + 1 if interrupted else index]
    reason = (
        state.get("replan_reason")
        or state.get("reflection_note")
        or judgement.get("failed_reason")
        or "the current plan no longer fits"
    )
    messages = _messages(state, context, reason)
    call = call_structured(
        deps.chat_model(runtime, state.get("run_id", "")),
        "replanner",
        Replan,
        messages,
        retries=retries_within_budget(state, context.max_parse_retries),
        validation_context={
            "max_phases": context.max_phases,
            # The replaced phase, once it ran rounds, keeps its id (reports group its rounds by
            # it); a revised version that comes back under it is numbered by validation.
            "done_phase_ids": [p["id"] for p in kept],
        },
        variants=VARIANTS,
    )
    update: dict[str, Any] = call.counters(counted=True)
    update["replan_count"] = state.get("replan_count", 0) + 1
    if (stop := stopped("replan", call, state, runtime)) is not None:
        return update | stop
    if call.value is None:
        action = "kept the remaining phases as they were"
        return (
            update
            | fell_back("replan", call, state, runtime, action)
            | {
                "replan_reason": None,
                "review_feedback": None,
                # the rounds that fired the trigger do not fire it again
                "phase_window_seq": state.get("round_seq", 0),
            }
        )
    update |= {"replan_reason": None, "review_feedback": None, "phase_index": len(kept)}
    if call.value.status == "done":
        emit(runtime, "replanned", status="done")
        update["phase_outcomes"] = ended_by_done(state, interrupted)
        # every phase has its outcome now: none is left to do (as after the last one)
        update["phase_index"] = len(state["phases"])
        return update | {"final_response": call.value.response, "stop_reason": "done"}
    if interrupted:
        update["phase_outcomes"] = [interrupted]
    return update | _replanned(state, call.value, kept, reason, deps, runtime)


def _messages(state: State, context: Context, reason: str) -> list[BaseMessage]:
    """The replanner's prompt: the request, the checks, what is done and what remains, why."""
    index = state["phase_index"]
    judgement = state.get("judgement") or {}
    feedback = state.get("review_feedback")
    note = state.get("reflection_note")
    checks = list(state.get("checks") or [])
    finished = recent_outcomes(
        state.get("phase_outcomes", []), SHOWN_OUTCOMES, OUTCOME_SUMMARY_CHARS
    )
    return [
        SystemMessage(prompts.REPLAN_SYSTEM.format(max_phases=context.max_phases)),
        HumanMessage(
            prompts.REPLAN_USER.format(
                structured_request=request_facts(state),
                checks=prompts.REPLAN_CHECKS.format(checks=check_lines(checks)) if checks else "",
                finished="\n".join(finished) or "-",
                remaining=dump(state["phases"][index:]),
                judgement=judgement.get("user_summary", "-"),
                reason=reason,
                feedback=prompts.REPLAN_FEEDBACK.format(feedback=feedback) if feedback else "",
                reflection=prompts.REFLECTION.format(note=note) if note else "",
            )
        ),
    ]


def _replanned(
    state: State,
    answer: Replan,
    kept: list[dict[str, Any]],
    reason: str,
    deps: Deps,
    runtime: Runtime[Context],
) -> dict[str, Any]:
    """The new remaining phases after those kept, and the review of them when it is on."""
    update: dict[str, Any] = {}
    tools = deps.tools_for(context_of(runtime))
    phases, merged = shaped(state, [p.model_dump() for p in answer.phases], tools, deps)
    if merged:
        update["execution_strategy"] = merged
    update |= {
        "checks": assign_checks(list(state.get("checks") or []), kept + phases),
        "phases": kept + phases,
        "phase_round": 0,
        "phase_window_seq": state.get("round_seq", 0),
        "current_plan": None,
    }
    emit(
        runtime,
        "replanned",
        status="replanned",
        phases=[{"id": p["id"], "name": p["name"]} for p in phases],
    )
    if replan_review_on(limits_of(state)):
        update["pending_review"] = {
            "kind": "replan_review",
            "stage": "replan",
            "phases": phases,
            "reason": reason,
            "checks": review_checks(update["checks"], kept + phases),
        }
        update["status"] = "awaiting_review"
        emit(runtime, "awaiting_review", kind="replan_review")
    return update
