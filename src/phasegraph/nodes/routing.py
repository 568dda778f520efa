"""The conditional edges of SPEC section 2, as pure functions of the state.

Every router first sends a run that has a stop reason (an error, a failed stage, a rejection, a
replan that declared the work done) to ``summarize``: a run always ends there. The budget is
checked before every ``plan`` and ``replan`` (SPEC section 3): once spent, the run summarizes.
Routers read only the state, so ``update_state(..., as_node=...)`` routes exactly as a run does;
all but `route_after_run_task`, which reads the task a `run_task` was sent and is applied by
that node (an update as ``run_task`` goes nowhere: write it as ``execute``, which goes on).
A node that ran the stages after its own in the same super-step (`nodes.round_start`) is routed
where the last of them would be: its state says how far it got.
"""

from __future__ import annotations

from typing import Literal

from langgraph.types import Send

from phasegraph.nodes.step_budget import JUDGE_STEPS, ROUND_MIN_STEPS, budget_left, budget_spent
from phasegraph.state import State, TaskInput


def _must_stop(state: State) -> bool:
    """A stop reason is set: the run goes to summarize."""
    return bool(state.get("stop_reason"))


def _plan_or_summarize(state: State) -> Literal["plan", "summarize"]:
    """The budget check before every plan: a round needs a plan, a tool and its judge."""
    return "summarize" if budget_left(state) < ROUND_MIN_STEPS else "plan"


def _replan_or_summarize(state: State) -> Literal["replan", "summarize"]:
    """The budget check before every replan."""
    return "summarize" if budget_spent(state) else "replan"


def route_after_analyse(
    state: State,
) -> Literal["human_review", "phase_plan", "summarize", "plan", "execute", "judge"] | list[Send]:
    """Clarification needed (and a person to ask) -> human_review; else phase_plan.

    When the graph's analyse node has planned the phases already (`nodes.round_start`), the
    run goes where the phase plan would send it: the analysis alone leaves no phases.
    """
    if _must_stop(state):
        return "summarize"
    if state.get("pending_review"):
        return "human_review"
    if state.get("phases") and not state.get("rounds"):
        return route_after_phase_plan(state)
    return "summarize" if budget_spent(state) else "phase_plan"


def route_after_phase_plan(
    state: State,
) -> Literal["human_review", "plan", "summarize", "execute", "judge"] | list[Send]:
    """Plan review on -> human_review; else plan.

    When the graph's phase_plan node has planned the first round already (`nodes.round_start`),
    the run goes where the plan would send it: only a plan makes a round, or ends a phase.
    """
    if _must_stop(state):
        return "summarize"
    if state.get("pending_review"):
        return "human_review"
    if _first_round_planned(state):
        return route_after_plan(state)
    return _plan_or_summarize(state)


def _first_round_planned(state: State) -> bool:
    """Whether the first plan was made and nothing judged yet: a round, or a phase ended short.

    Only the graph's phase_plan (or analyse) node makes it so in the step that planned the
    phases; a later edit of the state as either node finds judged rounds and goes to plan.
    """
    made = state.get("round_seq", 0) > 0 or bool(state.get("phase_outcomes"))
    return made and not state.get("rounds")


def route_after_plan(
    state: State,
) -> Literal["execute", "plan", "summarize", "human_review", "judge"] | list[Send]:
    """A round was planned -> execute; unless no step is left for a tool besides the judge's.

    A plan that never came ended its phase short (SPEC 1's fallback): the next phase, or the end.
    When the graph's plan node has made the first wave already (`nodes.round_start`), the round
    goes where `execute` would send it.
    """
    if _must_stop(state):
        return "summarize"
    if state.get("current_plan") is None:
        if state["phase_index"] >= len(state["phases"]):
            return "summarize"
        return _plan_or_summarize(state)
    if budget_left(state) <= JUDGE_STEPS:
        return "summarize"
    return route_after_execute(state) if _first_wave_made(state) else "execute"


def _first_wave_made(state: State) -> bool:
    """Whether `execute` has run on the planned round: a wave, a permission asked, all settled."""
    if state.get("dispatch") or (state.get("pending_review") or {}).get("stage") == "execute":
        return True
    tasks = (state.get("current_plan") or {}).get("tasks") or []
    settled = {r["task_id"] for r in state.get("results") or []}
    return bool(tasks) and all(t["id"] in settled for t in tasks)


def route_after_execute(
    state: State,
) -> Literal["summarize", "human_review", "judge"] | list[Send]:
    """Permission question -> human_review; a wave -> a `run_task` per task; else judge."""
    if _must_stop(state):
        return "summarize"  # a task of the last wave raised (`deps.task_error`)
    if state.get("pending_review"):
        return "human_review"
    if state.get("dispatch"):
        return [Send("run_task", item) for item in state["dispatch"]]
    return "judge"


def route_after_run_task(task: TaskInput) -> Literal["execute", "judge"]:
    """After a wave: the next wave, or the judge when no task waits for this one.

    It reads the task the node was sent, and the node goes where it says (a `Command`): as a
    conditional edge, LangGraph would copy every channel of the state for each task to read
    it (0.2 ms a task, 7 % of bench's short-phase run). A task sent before its dispatch said
    so goes to execute, which finds nothing left to send and goes on to the judge.
    """
    return "judge" if task.get("last_wave") else "execute"


#: Statuses of a run that has not ended: a summary left from an earlier end is not this run's.
_UNDER_WAY = ("running", "awaiting_review")


def route_after_judge(
    state: State,
) -> (
    Literal["summarize", "human_review", "plan", "replan", "execute", "judge", "__end__"]
    | list[Send]
):
    """SPEC section 2, after judge: the first rule that holds wins.

    When the graph's judge node has planned the next round already (`nodes.round_start`), the
    run goes where the plan would send it; when it has written the summary, the run has ended.
    """
    if state.get("final_summary") is not None and state.get("status") not in _UNDER_WAY:
        return "__end__"  # LangGraph's END: the judge's step wrote the summary
    if _must_stop(state):
        return "summarize"
    # a pause the next round's first wave asked for goes by rules 1 and 2, as after execute
    if _planned_after_judge(state) and not state.get("pending_review"):
        return route_after_plan(state)
    # 1. the step budget is spent
    if budget_spent(state):
        return "summarize"
    # 2. the judge asked the person (the judge only asks when someone can answer)
    if state.get("pending_review"):
        return "human_review"
    judgement = state.get("judgement") or {}
    # 3. and 4. the phase ended (completed, end_phase, round limit): next phase or the end
    if judgement.get("phase_ended_by"):
        if state["phase_index"] >= len(state["phases"]):
            return "summarize"
        return _plan_or_summarize(state)
    # 5. a reflection trigger fired, or the judge asked for a new plan
    if state.get("reflection_note") or judgement.get("next_action") == "replan":
        return "replan"
    # 6. continue_phase, retry_failed
    return _plan_or_summarize(state)


def _planned_after_judge(state: State) -> bool:
    """Whether a plan was made since the last round was judged: a new round, or none at all.

    The judge keeps the plan it judged; only a plan makes the next round (a new ``round_seq``)
    or, when no usable plan came, drops it (``current_plan`` None, its phase ended short).
    """
    rounds = state.get("rounds") or []
    if not rounds:
        return False
    return state.get("current_plan") is None or state.get("round_seq", 0) > rounds[-1]["round_seq"]


def route_after_replan(state: State) -> Literal["summarize", "human_review", "plan"]:
    """Done -> summarize; replan review on -> human_review; else plan."""
    if _must_stop(state):
        return "summarize"
    if state.get("pending_review"):
        return "human_review"
    return _plan_or_summarize(state)


def route_after_human_review(
    state: State,
) -> Literal["human_review", "analyse", "plan", "replan", "execute", "summarize"]:
    """Where the person's answer leads (SPEC section 6).

    Feedback that did not fit leaves the review pending: back to human_review, which pauses again.
    """
    if state.get("pending_review"):
        return "human_review"
    if _must_stop(state):
        return "summarize"
    review = state.get("last_review") or {}
    kind, action = review.get("kind"), review.get("action")
    if kind == "clarification":
        # Before any plan the answer goes back to analyse; during the work, to replan.
        return "analyse" if review.get("stage") == "analyse" else _replan_or_summarize(state)
    if kind == "tool_permission":
        return "execute"
    if action == "modify":
        return _replan_or_summarize(state)
    return _plan_or_summarize(state)
