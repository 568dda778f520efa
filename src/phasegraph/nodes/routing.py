"""The conditional edges of SPEC section 2, as pure functions of the state.

Each router returns only the nodes SPEC section 2 names after its node. Every router first sends
a run that has a stop reason (an error, a failed stage, a rejection, a replan that declared the
work done) to ``summarize``: a run always ends there. The budget is checked before every
``plan`` and ``replan`` (SPEC section 3): once spent, the run summarizes. Routers read only the
state, so ``update_state(..., as_node=...)`` routes exactly as a run does.

`EXITS` says each router's ways out in words: the graph is drawn with them on its edges.
"""

from __future__ import annotations

from typing import Literal

from phasegraph.nodes.step_budget import JUDGE_STEPS, ROUND_MIN_STEPS, budget_left, budget_spent
from phasegraph.state import State


def _must_stop(state: State) -> bool:
    """A stop reason is set: the run goes to summarize."""
    return bool(state.get("stop_reason"))


def _plan_or_summarize(state: State) -> Literal["plan", "summarize"]:
    """The budget check before every plan: a round needs a plan, a tool and its judge."""
    return "summarize" if budget_left(state) < ROUND_MIN_STEPS else "plan"


def _replan_or_summarize(state: State) -> Literal["replan", "summarize"]:
    """The budget check before every replan."""
    return "summarize" if budget_spent(state) else "replan"


def route_after_analyse(state: State) -> Literal["human_review", "phase_plan", "summarize"]:
    """Clarification needed (and a person to ask) -> human_review; else phase_plan."""
    if _must_stop(state):
        return "summarize"
    if state.get("pending_review"):
        return "human_review"
    return "summarize" if budget_spent(state) else "phase_plan"


def route_after_phase_plan(state: State) -> Literal["human_review", "plan", "summarize"]:
    """Plan review on -> human_review; else plan."""
    if _must_stop(state):
        return "summarize"
    if state.get("pending_review"):
        return "human_review"
    return _plan_or_summarize(state)


def route_after_plan(state: State) -> Literal["execute", "plan", "summarize"]:
    """A round was planned -> execute; unless no step is left for a tool besides the judge's.

    A plan that never came ended its phase short (SPEC 1's fallback): the next phase's plan, or
    the summary after the last.
    """
    if _must_stop(state):
        return "summarize"
    if state.get("current_plan") is None:
        if state["phase_index"] >= len(state["phases"]):
            return "summarize"
        return _plan_or_summarize(state)
    return "summarize" if budget_left(state) <= JUDGE_STEPS else "execute"


def route_after_execute(state: State) -> Literal["summarize", "human_review", "judge"]:
    """Permission question -> human_review; else judge."""
    if _must_stop(state):
        return "summarize"
    if state.get("pending_review"):
        return "human_review"
    return "judge"


def route_after_judge(state: State) -> Literal["summarize", "human_review", "plan", "replan"]:
    """SPEC section 2, after judge: the first rule that holds wins."""
    if _must_stop(state):
        return "summarize"
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


def route_after_replan(state: State) -> Literal["summarize", "human_review", "plan"]:
    """Done -> summarize; replan review on -> human_review; else plan."""
    if _must_stop(state):
        return "summarize"
    if state.get("pending_review"):
        return "human_review"
    return _plan_or_summarize(state)


def route_after_human_review(
    state: State,
) -> Literal["analyse", "plan", "replan", "execute", "summarize"]:
    """Where the person's answer leads (SPEC section 6)."""
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


#: Each router's ways out, in words, by the node they lead to (the drawn graph's edge labels).
EXITS: dict[str, dict[str, str]] = {
    "analyse": {
        "phase_plan": "goal set",
        "human_review": "a question to ask",
        "summarize": "stopped",
    },
    "phase_plan": {
        "plan": "phases set",
        "human_review": "plan review",
        "summarize": "stopped or no budget",
    },
    "plan": {
        "execute": "round planned",
        "plan": "no usable plan: next phase",
        "summarize": "stopped or no budget",
    },
    "execute": {
        "judge": "round done",
        "human_review": "tool permission",
        "summarize": "a task raised",
    },
    "judge": {
        "plan": "next round or phase",
        "replan": "stalled or asked to replan",
        "human_review": "a question to ask",
        "summarize": "done, stopped or no budget",
    },
    "replan": {
        "plan": "new phases",
        "human_review": "replan review",
        "summarize": "work done or stopped",
    },
    "human_review": {
        "analyse": "clarified before planning",
        "plan": "approved or edited",
        "replan": "changes asked, or a question answered",
        "execute": "tool allowed or denied",
        "summarize": "rejected",
    },
}
