"""`judge`: the round's results against the phase goal (one step per attempt).

Facts come from code, not from the model (SPEC sections 1 and 11). Before the judge is asked,
the round's facts record is computed (`facts.record.round_facts`): the checks the phase owns,
evaluated now, and what the files the run changed hold; the judge is shown it. Then a task whose
execution did not succeed is never ``done`` (`judgement.normalise`), the guards may keep a
phase open that the judge called done (`phasegraph.guards`), ``phase_completed`` implies
``end_phase``, and whether the phase ended (completed, end_phase or the round limit) is decided
here as ``phase_ended_by``. When the judge's answers cannot be used after their retries, the
facts and the checks decide instead.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.facts.checks import check_lines, owned_checks
from phasegraph.facts.record import judge_facts, round_facts
from phasegraph.guards import hold
from phasegraph.models.structured import StageCall, call_structured
from phasegraph.nodes.deps import Deps, context_of, task_error
from phasegraph.nodes.fallback import fell_back, stopped
from phasegraph.nodes.human_review import person_available
from phasegraph.nodes.judgement import (
    close_phase,
    fallback_judgement,
    judge_schema,
    normalise,
    reflect,
    round_record,
    round_stopped,
)
from phasegraph.nodes.prompt_render import dump, fit_to_budget, quoted
from phasegraph.nodes.step_budget import budget_left, limits_of, retries_within_budget, round_limit
from phasegraph.progress import emit
from phasegraph.state import CheckRecord, Judgement, State, TaskResult
from phasegraph.state.facts import RoundFacts
from phasegraph.state.reading import current_phase, is_last_phase, planned_tasks
from phasegraph.tools.base import truncate


def judge(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Compute the round's facts, ask `judge_tasks` about it, hold it to the facts and guards."""
    if (raised := task_error(state)) is not None:
        return round_stopped(state, raised)
    context = context_of(runtime)
    phase = current_phase(state)
    results = _in_plan_order(state)
    available = deps.tools_for(context)
    facts, checks = round_facts(state, results, context, available)
    owned_ids = {c["id"] for c in owned_checks(state, phase["id"])}
    owned = [c for c in checks if c["id"] in owned_ids]
    can_ask = person_available(limits_of(state)) and budget_left(state) > 1
    call = _ask(state, runtime, deps, _messages(state, context, results, facts, owned), can_ask)
    update: dict[str, Any] = call.counters(counted=True)
    if (stop := stopped("judge", call, state, runtime)) is not None:
        return update | stop
    round_no = state["phase_round"]
    if call.value is None:
        judgement = fallback_judgement(results, owned, state.get("judgement"))
        action = "judged the round from the facts: " + judgement["user_summary"]
        update |= fell_back("judge", call, state, runtime, action, round_no=round_no)
    else:
        judgement = normalise(call.value, results)
    hold(judgement, facts, deps.guard_list())
    failing = [c["label"] for c in owned if not c["passed"]]
    judgement |= {
        "phase_id": phase["id"],
        "round": round_no,
        "phase_ended_by": None,
        "facts": {"changed_files": facts["changed_files"], "failing_checks": failing},
    }
    update |= {"checks": checks, "facts": facts}
    spent = state.get("step_count", 0) + call.attempts >= limits_of(state)["max_steps"]
    _ask_or_replan(judgement, update, spent, state)
    return _close_round(state, judgement, results, update, spent, runtime)


def _in_plan_order(state: State) -> list[TaskResult]:
    planned = [t["id"] for t in planned_tasks(state)]
    return sorted(
        state.get("results", []),
        key=lambda r: planned.index(r["task_id"]) if r["task_id"] in planned else len(planned),
    )


def _messages(
    state: State,
    context: Context,
    results: list[TaskResult],
    facts: RoundFacts,
    owned: list[CheckRecord],
) -> list[BaseMessage]:
    """The judge's prompt: the round's calls and outputs within the token budget, the facts.

    No earlier judgement of the phase is shown: the facts carry what earlier rounds did. The
    last phase's judge decides whether the work is done, so it is shown what was asked (the
    work's goal and requirements), to which its phase goal answers: a goal that drifted into
    its own check ("the file exists") does not make the work done.
    """
    phase = current_phase(state)
    request = state.get("structured_request") or {}
    core_goal = str(request.get("core_goal") or "")
    asked = "; ".join(str(r) for r in request.get("requirements") or [])
    last = is_last_phase(state, phase) and core_goal
    work_goal = (
        prompts.JUDGE_WORK_GOAL.format(core_goal=core_goal, requirements=asked or "(none listed)")
        if last
        else ""
    )
    shown_facts = judge_facts(facts, owned, check_lines(owned))

    def render(limit: int) -> str:
        shown = [
            {
                "task_id": r["task_id"],
                "tool": r["tool"],
                "arguments": truncate(dump(r["arguments"]), limit),
                "status": r["status"],
                "output": quoted(truncate(r["output"], limit)),
            }
            for r in results
        ]
        return prompts.JUDGE_USER.format(
            work_goal=work_goal,
            phase_goal=phase["goal"],
            phase_name=phase["name"],
            phase_id=phase["id"],
            round=state["phase_round"],
            round_limit=round_limit(phase, limits_of(state)),
            results=dump(shown),
            facts=shown_facts,
        )

    return [
        SystemMessage(prompts.JUDGE_SYSTEM),
        HumanMessage(fit_to_budget(render, context.prompt_token_budget)),
    ]


def _ask(
    state: State,
    runtime: Runtime[Context],
    deps: Deps,
    messages: list[BaseMessage],
    can_ask: bool,
) -> StageCall[Judgement]:
    """The `judge_tasks` call; ``ask_user`` is offered only when someone can answer."""
    context = context_of(runtime)
    parameters, variants = judge_schema(can_ask)
    return call_structured(
        deps.chat_model(runtime, state.get("run_id", "")),
        "judge_tasks",
        Judgement,
        messages,
        retries=retries_within_budget(state, context.max_parse_retries),
        validation_context={"can_ask": can_ask},
        parameters=parameters,
        variants=variants,
    )


def _ask_or_replan(
    judgement: dict[str, Any],
    update: dict[str, Any],
    spent: bool,
    state: State,
) -> None:
    """A judge's question pauses for the person if one answers; else it is a replan's reason."""
    asks = judgement["next_action"] == "ask_user"
    if asks and person_available(limits_of(state)) and not spent:
        update["pending_review"] = {
            "kind": "clarification",
            "stage": "judge",
            "questions": [judgement["question"]],
        }
        update["status"] = "awaiting_review"  # said once the judgement is (`_close_round`)
    elif asks:
        judgement["next_action"] = "replan"
        update["replan_reason"] = f"the judge would have asked: {judgement['question']}"
    elif judgement["next_action"] == "replan":
        update["replan_reason"] = judgement.get("failed_reason") or "the judge asked for a new plan"


def _close_round(
    state: State,
    judgement: dict[str, Any],
    results: list[TaskResult],
    update: dict[str, Any],
    spent: bool,
    runtime: Runtime[Context],
) -> dict[str, Any]:
    """Record the round and end its phase when it ended: completed, end_phase, round limit."""
    phase = current_phase(state)
    round_no = state["phase_round"]
    record = round_record(state, results, judgement)
    ended_by = None
    if "pending_review" not in update:
        if judgement["phase_completed"]:
            ended_by = "completed"
        elif judgement["next_action"] == "end_phase":
            ended_by = "end_phase"
        elif round_no >= round_limit(phase, limits_of(state)):
            ended_by = "round_limit"
        else:
            ended_by = reflect(state, record, update, spent, runtime)
    judgement["phase_ended_by"] = ended_by
    update |= {"judgement": judgement, "rounds": [record]}
    emit(
        runtime,
        "judged",
        phase_id=phase["id"],
        round=round_no,
        completion_rate=judgement["phase_completion_rate"],
        next_action=judgement["next_action"],
    )
    if update.get("pending_review"):
        emit(runtime, "awaiting_review", kind="clarification")
    if ended_by:
        update |= close_phase(
            state,
            ended_by=ended_by,
            completed=bool(judgement["phase_completed"]),
            rate=float(judgement["phase_completion_rate"]),
            rounds=round_no,
            summary=judgement["user_summary"],
            runtime=runtime,
        )
    return update
