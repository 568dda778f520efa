"""What a judgement becomes once code has read it: the facts imposed, the phase closed or not.

`normalise` imposes the facts of execution on the judge's answer (a task that did not succeed
is never done; ``phase_completed`` implies ``end_phase``), `fallback_judgement` is code's own
judgement where the judge's answers cannot be used, `round_stopped` records a round a task's
error ended, `close_phase` ends a phase however it ended, and `reflect` checks the reflection
triggers of SPEC section 4.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from langgraph.runtime import Runtime

from phasegraph import prompts, reflection
from phasegraph.context import Context
from phasegraph.guards import COMPLETED_RATE
from phasegraph.models.structured import function_spec
from phasegraph.nodes.deps import task_result
from phasegraph.nodes.human_review import person_available
from phasegraph.nodes.step_budget import limits_of
from phasegraph.progress import emit
from phasegraph.state import (
    CheckRecord,
    Judgement,
    PhaseOutcome,
    RoundRecord,
    RunError,
    State,
    TaskResult,
)
from phasegraph.state.reading import current_phase, phase_window, planned_tasks
from phasegraph.state.round_schemas import NEXT_ACTIONS


def normalise(judgement: Judgement, results: list[TaskResult]) -> dict[str, Any]:
    """The judgement with the facts of execution imposed on it."""
    given = {e.task_id: e for e in judgement.task_evaluation}
    evaluations = []
    for result in results:
        evaluation = given.get(result["task_id"])
        status = (
            evaluation.status if evaluation else ("done" if result["status"] == "ok" else "failed")
        )
        quality = evaluation.quality if evaluation else 0
        if result["status"] != "ok":
            status, quality = "failed", 0
        evaluations.append(
            {
                "task_id": result["task_id"],
                "status": status,
                "quality": quality,
                "comment": evaluation.comment if evaluation else "",
            }
        )
    data = judgement.model_dump()
    data["task_evaluation"] = evaluations
    if judgement.phase_completed and judgement.phase_completion_rate < COMPLETED_RATE:
        # A completion the judge's own rate contradicts is not taken (small models end phases
        # that did nothing this way): the phase goes on, within its round limit.
        data["phase_completed"] = False
        data["next_action"] = "continue_phase"
    elif judgement.phase_completed:
        data["next_action"] = "end_phase"
    return data


def fallback_judgement(
    results: list[TaskResult], owned: list[CheckRecord], previous: dict[str, Any] | None
) -> dict[str, Any]:
    """The judgement code makes from the facts when the judge's answers cannot be used.

    The phase completes only when it owns checks and every one passes; otherwise it goes on
    (its round limit and the budget still end it), at the completion it had.
    """
    ok = sum(1 for r in results if r["status"] == "ok")
    passing = bool(owned) and all(c["passed"] for c in owned)
    rate = 1.0 if passing else float((previous or {}).get("phase_completion_rate", 0.0))
    verdict = (
        "every check of the phase passes, so it is complete" if passing else "the phase goes on"
    )
    judgement = Judgement(
        phase_completion_rate=rate,
        phase_completed=passing,
        user_summary=f"Judged by code from the facts: {ok} of {len(results)} tasks succeeded; "
        f"{verdict}.",
        next_action="end_phase" if passing else "continue_phase",
    )
    return normalise(judgement, results)


def round_stopped(state: State, raised: RunError) -> dict[str, Any]:
    """The update that ends the run at a task whose node raised (see `deps.task_error`).

    The round is recorded with what its tasks did, unjudged, so the summary, the report and
    ``phasegraph show`` tell it: one result per task (those a later wave would have run,
    skipped), in the plan's order; the results keep no error (the run's ``error`` has it), and
    no wave waits: the round is clean, and its latest judgement is this one.
    """
    phase = current_phase(state)
    failed = f"{raised['type']} in {raised['node']}: {raised['message']}"
    done = {
        r["task_id"]: cast(TaskResult, {k: v for k, v in r.items() if k != "error"})
        for r in state.get("results", [])
    }
    tasks = planned_tasks(state)
    skipped = f"the run stopped first: {failed}"
    results = [
        done.pop(t["id"]) if t["id"] in done else task_result(t, "skipped", skipped) for t in tasks
    ]
    results += done.values()  # a result of no planned task, should there be one
    previous = state.get("judgement") or {}
    judgement = normalise(
        Judgement(
            # the rate the phase had, if it had one: a new phase starts at none
            phase_completion_rate=float(previous.get("phase_completion_rate", 0))
            if previous.get("phase_id") == phase["id"]
            else 0.0,
            phase_completed=False,
            user_summary=f"Not judged: the run stopped when a task's node raised ({failed}).",
            next_action="continue_phase",
            failed_reason=failed,
        ),
        results,
    )
    judgement |= {
        "phase_id": phase["id"],
        "round": state["phase_round"],
        "phase_ended_by": None,
        "facts": {"changed_files": [], "failing_checks": []},
    }
    return {
        "stop_reason": "error",
        "error": raised,
        "results": results,
        "judgement": judgement,
        "rounds": [round_record(state, results, judgement)],
    }


def round_record(state: State, results: list[TaskResult], judgement: dict[str, Any]) -> RoundRecord:
    """The round under way as the history keeps it: its plan, ``results`` and ``judgement``."""
    record: RoundRecord = {
        "phase_id": current_phase(state)["id"],
        "round": state["phase_round"],
        "round_seq": state["round_seq"],
        "tasks": planned_tasks(state),
        # a value kept for a reference served its round: the history keeps what was shown
        "results": [_shown(result) for result in results],
        "judgement": judgement,
    }
    if asked_again := (state.get("current_plan") or {}).get("asked_again"):
        record["asked_again"] = str(asked_again)
    return record


def _shown(result: TaskResult) -> TaskResult:
    """A result without the value it kept for a reference (``$id``), which served its round."""
    return cast(TaskResult, {k: v for k, v in result.items() if k != "value"})


def judge_schema(can_ask: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The judge's parameters, and the variants a grammar-decoded judge is held to.

    ``ask_user`` is offered only when someone can answer; then a question comes with it.
    """
    parameters: dict[str, Any] = function_spec("judge_tasks", Judgement)["function"]["parameters"]
    properties = parameters["properties"]
    others = [a for a in NEXT_ACTIONS if a != "ask_user"]
    if not can_ask:
        properties["next_action"]["enum"] = others
        properties.pop("question", None)
        return parameters, []
    asks = {"type": "string", "minLength": 1, "description": "The question for the person."}
    return parameters, [
        {"properties": {"next_action": {"type": "string", "enum": others}}},
        {
            "properties": {"next_action": {"const": "ask_user"}, "question": asks},
            "required": ["question"],
        },
    ]


def phase_outcome(
    phase: Mapping[str, Any],
    ended_by: str,
    *,
    completed: bool = False,
    rate: float = 0.0,
    rounds: int = 0,
    summary: str = "",
) -> PhaseOutcome:
    """How ``phase`` ended: the record `close_phase` and a replan keep of it."""
    return {
        "phase_id": phase["id"],
        "name": phase["name"],
        "completed": completed,
        "ended_by": ended_by,
        "completion_rate": rate,
        "rounds": rounds,
        "summary": summary,
    }


def close_phase(
    state: State,
    *,
    ended_by: str,
    completed: bool,
    rate: float,
    rounds: int,
    summary: str,
    runtime: Runtime[Context],
) -> dict[str, Any]:
    """The update that ends the current phase, however it ended, and moves to the next."""
    phase = current_phase(state)
    outcome = phase_outcome(
        phase, ended_by, completed=completed, rate=rate, rounds=rounds, summary=summary
    )
    emit(runtime, "phase_ended", phase_id=phase["id"], ended_by=ended_by)
    return {
        "phase_outcomes": [outcome],
        "phase_index": state["phase_index"] + 1,
        "phase_round": 0,
        "phase_window_seq": state["round_seq"],
        "replan_reason": None,
        "reflection_note": None,
    }


def _ask(update: dict[str, Any], question: str) -> None:
    """Pause for the person's answer to ``question``; said after the judgement (`judge`)."""
    update["pending_review"] = {"kind": "clarification", "stage": "judge", "questions": [question]}
    update["status"] = "awaiting_review"


def reflect(
    state: State,
    record: RoundRecord,
    update: dict[str, Any],
    spent: bool,
    runtime: Runtime[Context],
) -> str | None:
    """Check the reflection triggers (SPEC section 4); returns how the phase ends, if it does.

    A trigger routes to replan with a reflection note. Consecutive failures ask the person
    instead (or end the phase when nobody answers); past the replan cap any trigger does the
    same. The judge's own request for a replan obeys the cap too.
    """
    limits = limits_of(state)
    window = [*phase_window(state), record]
    long_fired = sum(1 for r in state.get("reflections", []) if r["trigger"] == "long_task")
    steps = state.get("step_count", 0) + update.get("step_count", 0)
    fired = reflection.check_all(window, steps, limits["max_steps"], long_fired)
    update["reflections"] = [
        {
            "trigger": f.trigger,
            "phase_id": record["phase_id"],
            "round": record["round"],
            "reason": f.reason,
        }
        for f in fired
    ]
    for f in fired:
        emit(runtime, "reflection_triggered", trigger=f.trigger, reason=f.reason)
    can_ask = person_available(limits) and not spent
    failures = next((f for f in fired if f.trigger == "consecutive_failures"), None)
    if failures is not None:
        if can_ask:
            _ask(update, prompts.FAILURES_QUESTION.format(reason=failures.reason))
            return None
        return "consecutive_failures"
    wants_replan = bool(fired) or record["judgement"]["next_action"] == "replan"
    if not wants_replan:
        return None
    if state.get("replan_count", 0) >= limits["max_replans"]:
        reason = "; ".join(f.reason for f in fired) or update.get("replan_reason", "")
        if can_ask:
            question = prompts.REPLAN_CAP_QUESTION.format(
                reason=reason, max_replans=limits["max_replans"]
            )
            _ask(update, question)
            return None
        return "replan_cap"
    if fired:
        update["reflection_note"] = " ".join(f.note for f in fired)
        update["replan_reason"] = "reflection: " + "; ".join(f.trigger for f in fired)
    return None
