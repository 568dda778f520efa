"""Every routing rule of SPEC section 2, on the pure router functions."""

from __future__ import annotations

from typing import Any

import pytest

from phasegraph.nodes import routing


def state(**values: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "limits": {
            "max_steps": 10,
            "review": "none",
            "max_replans": 3,
            "extra_rounds_per_phase": 2,
        },
        "step_count": 3,
        "phases": [{"id": "p1"}, {"id": "p2"}],
        "phase_index": 0,
        "pending_review": None,
        "stop_reason": None,
        "judgement": {"next_action": "continue_phase", "phase_ended_by": None},
        "reflection_note": None,
        "current_plan": {"tasks": [{"id": "t1"}]},
    }
    base.update(values)
    return base


SPENT = {"step_count": 10}


class TestAfterAnalyse:
    def test_clarification_goes_to_review(self) -> None:
        s = state(pending_review={"kind": "clarification"})
        assert routing.route_after_analyse(s) == "human_review"

    def test_no_clarification_goes_to_phase_plan(self) -> None:
        assert routing.route_after_analyse(state(phases=[])) == "phase_plan"

    def test_failed_analysis_summarizes(self) -> None:
        assert routing.route_after_analyse(state(stop_reason="stage_failed")) == "summarize"


class TestAfterPhasePlan:
    def test_plan_review_on(self) -> None:
        s = state(pending_review={"kind": "plan_review"})
        assert routing.route_after_phase_plan(s) == "human_review"

    def test_plan_review_off(self) -> None:
        assert routing.route_after_phase_plan(state()) == "plan"

    def test_budget_checked_before_plan(self) -> None:
        assert routing.route_after_phase_plan(state(**SPENT)) == "summarize"

    def test_error_summarizes(self) -> None:
        assert routing.route_after_phase_plan(state(stop_reason="error")) == "summarize"

class TestAfterPlan:
    def test_plan_goes_to_execute(self) -> None:
        assert routing.route_after_plan(state()) == "execute"

    def test_failed_plan_summarizes(self) -> None:
        assert routing.route_after_plan(state(stop_reason="stage_failed")) == "summarize"

    def test_a_phase_ended_for_want_of_a_plan_goes_to_the_next_phase(self) -> None:
        # the plan's fallback (SPEC 1): no round was planned, the phase ended short
        assert routing.route_after_plan(state(current_plan=None, phase_index=1)) == "plan"

    def test_the_last_phase_ended_for_want_of_a_plan_summarizes(self) -> None:
        assert routing.route_after_plan(state(current_plan=None, phase_index=2)) == "summarize"

    def test_no_room_for_the_next_phase_summarizes(self) -> None:
        s = state(current_plan=None, phase_index=1, step_count=8)
        assert routing.route_after_plan(s) == "summarize"

    # The graph's plan node may have made the first wave already (nodes.round_start): the round
    # then goes where execute would send it.
class TestAfterJudge:
    def test_rule1_budget_spent_wins_over_everything(self) -> None:
        s = state(
            **SPENT,
            pending_review={"kind": "clarification"},
            judgement={"next_action": "replan", "phase_ended_by": None},
            reflection_note="x",
        )
        assert routing.route_after_judge(s) == "summarize"

    def test_rule2_ask_user_goes_to_review(self) -> None:
        s = state(
            pending_review={"kind": "clarification"},
            judgement={"next_action": "ask_user", "phase_ended_by": None},
        )
        assert routing.route_after_judge(s) == "human_review"

    def test_rule3_phase_completed_goes_to_next_phase(self) -> None:
        s = state(
            phase_index=1, judgement={"next_action": "end_phase", "phase_ended_by": "completed"}
        )
        assert routing.route_after_judge(s) == "plan"

    def test_rule3_last_phase_completed_summarizes(self) -> None:
        s = state(
            phase_index=2, judgement={"next_action": "end_phase", "phase_ended_by": "completed"}
        )
        assert routing.route_after_judge(s) == "summarize"

    def test_rule3_wins_over_reflection(self) -> None:
        s = state(
            phase_index=1,
            reflection_note="stalled",
            judgement={"next_action": "end_phase", "phase_ended_by": "end_phase"},
        )
        assert routing.route_after_judge(s) == "plan"

    def test_rule4_round_limit_ends_phase(self) -> None:
        s = state(
            phase_index=1,
            judgement={"next_action": "replan", "phase_ended_by": "round_limit"},
        )
        assert routing.route_after_judge(s) == "plan"

    def test_rule4_round_limit_on_last_phase_summarizes(self) -> None:
        s = state(
            phase_index=2,
            judgement={"next_action": "continue_phase", "phase_ended_by": "round_limit"},
        )
        assert routing.route_after_judge(s) == "summarize"

    def test_rule5_reflection_goes_to_replan(self) -> None:
        assert routing.route_after_judge(state(reflection_note="repeated action")) == "replan"

    def test_rule5_next_action_replan(self) -> None:
        s = state(judgement={"next_action": "replan", "phase_ended_by": None})
        assert routing.route_after_judge(s) == "replan"

    @pytest.mark.parametrize("action", ["continue_phase", "retry_failed"])
    def test_rule6_otherwise_plan(self, action: str) -> None:
        s = state(judgement={"next_action": action, "phase_ended_by": None})
        assert routing.route_after_judge(s) == "plan"


class TestAfterReplan:
    def test_done_summarizes(self) -> None:
        assert routing.route_after_replan(state(stop_reason="done")) == "summarize"

    def test_replan_review(self) -> None:
        s = state(pending_review={"kind": "replan_review"})
        assert routing.route_after_replan(s) == "human_review"

    def test_replanned_goes_to_plan(self) -> None:
        assert routing.route_after_replan(state()) == "plan"

    def test_budget_checked_before_plan(self) -> None:
        assert routing.route_after_replan(state(**SPENT)) == "summarize"


class TestAfterHumanReview:
    def review(self, kind: str, action: str, stage: str = "", **values: Any) -> dict[str, Any]:
        return state(last_review={"kind": kind, "action": action, "stage": stage}, **values)

    @pytest.mark.parametrize("action", ["approve", "edit"])
    def test_approve_and_edit_go_to_plan(self, action: str) -> None:
        assert routing.route_after_human_review(self.review("plan_review", action)) == "plan"

    def test_modify_goes_to_replan(self) -> None:
        assert routing.route_after_human_review(self.review("plan_review", "modify")) == "replan"

    def test_reject_summarizes(self) -> None:
        s = self.review("plan_review", "reject", stop_reason="rejected")
        assert routing.route_after_human_review(s) == "summarize"

    def test_answer_before_any_plan_goes_to_analyse(self) -> None:
        s = self.review("clarification", "answer", stage="analyse")
        assert routing.route_after_human_review(s) == "analyse"

    def test_answer_during_work_goes_to_replan(self) -> None:
        s = self.review("clarification", "answer", stage="judge")
        assert routing.route_after_human_review(s) == "replan"

    def test_answer_during_work_budget_spent_summarizes(self) -> None:
        s = self.review("clarification", "answer", stage="judge", **SPENT)
        assert routing.route_after_human_review(s) == "summarize"

    def test_replan_review_approve_goes_to_plan(self) -> None:
        assert routing.route_after_human_review(self.review("replan_review", "approve")) == "plan"

    def test_tool_permission_goes_to_execute(self) -> None:
        assert (
            routing.route_after_human_review(self.review("tool_permission", "allow")) == "execute"
        )

    def test_approve_with_budget_spent_summarizes(self) -> None:
        s = self.review("plan_review", "approve", **SPENT)
        assert routing.route_after_human_review(s) == "summarize"


def test_after_plan_budget_spent_runs_no_tool() -> None:
    assert routing.route_after_plan(state(**SPENT)) == "summarize"


def test_each_router_goes_only_where_spec_section_2_says() -> None:
    # the destinations each router's return type names are those of its node's rules, and
    # each has words on the drawn edge
    from typing import get_args, get_type_hints

    def ends(route: object) -> set[str]:
        hint = get_type_hints(route)["return"]
        args = get_args(hint)
        parts = args if args and not isinstance(args[0], str) else [hint]
        return {str(e) for part in parts for e in get_args(part) if isinstance(e, str)}

    expected = {
        "analyse": {"human_review", "phase_plan", "summarize"},
        "phase_plan": {"human_review", "plan", "summarize"},
        "plan": {"execute", "plan", "summarize"},
        "execute": {"summarize", "human_review", "judge"},
        "judge": {"summarize", "human_review", "plan", "replan"},
        "replan": {"summarize", "human_review", "plan"},
        "human_review": {"analyse", "plan", "replan", "execute", "summarize"},
    }
    for node, nodes in expected.items():
        route = getattr(routing, f"route_after_{node}")
        assert ends(route) == nodes, node
        assert set(routing.EXITS[node]) == nodes, node
