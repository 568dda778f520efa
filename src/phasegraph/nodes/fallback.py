"""What happens when a stage cannot answer (SPEC section 1).

A stage whose answers still fail validation after its retries does not end the run: code
decides in its place, from the facts, and the decision is recorded (`Fallback`) for the state,
the summary and the reports. Each stage's node builds its own decision; this module records it
and says it (`fell_back`), or stops the run (`stopped`): one path for every stage.
Only an error stops the run: no attempt got an answer at all (the model call raised every time,
as with a dead endpoint), or the budget left no room to go on.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from phasegraph.errors import redact
from phasegraph.models.structured import StageCall
from phasegraph.nodes.step_budget import limits_of
from phasegraph.progress import emit
from phasegraph.state import Fallback, RunError, State


def out_of_budget(node: str, call: StageCall[Any], state: State, *, keep: int = 0) -> bool:
    """Whether the budget, not the model, ended a stage's attempts: no room for another was left.

    ``keep``: the steps the stage leaves for what follows it, as in `retries_within_budget`.
    """
    spent_by = state.get("step_count", 0) + call.counters(counted=True)["step_count"]
    return node != "analyse" and spent_by >= limits_of(state)["max_steps"] - keep


def stops_run(node: str, call: StageCall[Any], state: State, *, keep: int = 0) -> bool:
    """Whether a stage without a usable answer stops the run instead of falling back.

    It does when no attempt got an answer at all, or the budget left no room for another.
    """
    return call.value is None and (call.unreachable or out_of_budget(node, call, state, keep=keep))


def stage_failure(
    node: str, call: StageCall[Any], state: State, *, keep: int = 0
) -> dict[str, Any]:
    """The update that stops the run after a stage got no usable answer (see `stops_run`).

    When the budget left no room for another attempt, the budget stopped the run, not the stage.
    """
    budget = out_of_budget(node, call, state, keep=keep)
    error: RunError = {"node": node, "type": "StageFailed", "message": redact(call.failure)}
    return {"stop_reason": "budget" if budget else "stage_failed", "error": error}


def fallback(
    node: str, call: StageCall[Any], state: State, action: str, *, round_no: int = 0
) -> Fallback:
    """The record of a stage whose answers could not be used, and of what code did instead."""
    phases, index = state.get("phases") or [], state.get("phase_index", 0)
    return {
        "stage": node,
        "phase_id": str(phases[index]["id"]) if index < len(phases) else "",
        "round": round_no,
        "reason": redact(call.failure),
        "action": action,
    }


def stopped(
    node: str, call: StageCall[Any], state: State, runtime: Runtime[Any], *, keep: int = 0
) -> dict[str, Any] | None:
    """The update that stops the run where the stage's failure stops it, said as an event.

    None when the stage falls back instead (`stops_run`); otherwise a ``stage_failed``
    progress event is sent and the update is `stage_failure`'s.
    """
    if not stops_run(node, call, state, keep=keep):
        return None
    emit(runtime, "stage_failed", node=node, reason=call.failure)
    return stage_failure(node, call, state, keep=keep)


def fell_back(
    node: str,
    call: StageCall[Any],
    state: State,
    runtime: Runtime[Any],
    action: str,
    *,
    round_no: int = 0,
) -> dict[str, list[Fallback]]:
    """Code decided in a stage's place: a ``stage_fallback`` event, and the record as an update."""
    emit(runtime, "stage_fallback", node=node, action=action)
    return {"fallbacks": [fallback(node, call, state, action, round_no=round_no)]}
