"""The step budget of SPEC section 3, counted on whole runs with the scripted model.

The checklist is seed 002's test plan (section 10): plan once per input, what counts and what
does not, failed parses count, the budget stop still gives a summary, the check happens before
every plan and replan and no plan, replan or tool runs once it is spent.
"""

from __future__ import annotations

from scripts import (
    ANALYSIS,
    CONTINUE,
    ECHO_ROUND,
    SUMMARY,
    distinct_plans,
    judgement,
    make_script,
    phase,
    phases,
    round_plan,
)


def test_two_phase_run_counts_phase_plan_plans_tools_and_judges(run, tool_log) -> None:
    out, _, model = run(make_script())
    # phase_plan 1 + two phases x (plan 1 + one tool 1 + judge 1)
    assert out["step_count"] == 7
    assert out["status"] == "completed"
    assert len(tool_log.calls) == 2
    assert len(model.calls_of("phase_planner")) == 1  # the first input plans once


def test_analyse_and_summarize_attempts_are_not_counted(run) -> None:
    script = make_script(
        request_analyser=[{"core_goal": ""}, ANALYSIS],  # first attempt invalid
        summarizer=[None, SUMMARY],  # first attempt prose
    )
    out, _, model = run(script)
    assert out["step_count"] == 7
    assert len(model.calls_of("request_analyser")) == 2
    assert len(model.calls_of("summarizer")) == 2
    assert out["parse_failures"] == 2


def test_failed_plan_parse_counts_a_step(run) -> None:
    script = make_script(plan_tool_call=[{"tasks": [], "reasoning": "empty plan"}, ECHO_ROUND])
    out, _, _ = run(script)
    assert out["step_count"] == 8
    assert out["parse_failures"] == 1
    assert out["status"] == "completed"


def test_invalid_json_and_none_count_as_failed_attempts(run) -> None:
    script = make_script(
        phase_planner=['{"phases": [{"id": "p1", "na', phases("p1")],
        judge_tasks=[None, judgement()],
    )
    out, _, _ = run(script)
    # phase_plan 2 attempts + plan 1 + tool 1 + judge 2 attempts
    assert out["step_count"] == 6
    assert out["parse_failures"] == 2


def test_replan_is_counted(run) -> None:
    script = make_script(
        phase_planner=[phases("p1")],
        judge_tasks=[
            judgement("replan", completed=False, rate=0.2, failed_reason="wrong way"),
            judgement(),
        ],
        replanner=[{"status": "replanned", "phases": [phase("p2")]}],
    )
    out, _, model = run(script)
    # phase_plan 1 + round (3) + replan 1 + round (3)
    assert out["step_count"] == 8
    assert out["replan_count"] == 1
    # the replaced phase ran a round: it stays in the plan, ended by the replan
    assert [p["id"] for p in out["phases"]] == ["p1", "p2"]
    assert [(o["phase_id"], o["ended_by"]) for o in out["phase_outcomes"]] == [
        ("p1", "replanned"),
        ("p2", "completed"),
    ]
    assert "wrong way" in model.calls_of("replanner")[0][-1].content


def test_budget_stop_still_summarizes_and_plans_no_more(run, tool_log) -> None:
    script = make_script(phase_planner=[phases("p1", rounds=4)], judge_tasks=[CONTINUE])
    out, _, model = run(script, max_steps=5)
    # phase_plan(1) plan(2) tool(3) judge(4): the 1/3 check-point fires -> replan(5) ->
    # budget spent: no plan, no tool, no judge after it
    assert out["step_count"] == 5
    assert out["status"] == "budget_exhausted"
    assert [r["trigger"] for r in out["reflections"]] == ["long_task"]
    assert len(model.calls_of("replanner")) == 1
    assert len(model.calls_of("plan_tool_call")) == 1
    assert len(tool_log.calls) == 1
    assert len(model.calls_of("judge_tasks")) == 1
    assert out["final_summary"].strip()
    assert "budget_exhausted" in out["final_summary"]
    # its shortfalls say what the stop left undone, not nothing
    (short,) = out["shortfalls"]
    assert "the step budget of 5 steps was spent" in short
    assert "phases not finished: " in short and "(p9)" in short


def test_no_tool_runs_once_the_budget_is_spent(run, tool_log) -> None:
    three = round_plan(*[(f"t{i}", "echo", {"text": str(i)}) for i in range(3)])
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[three])
    out, _, _ = run(script, max_steps=4)
    # phase_plan(1) plan(2) one tool (3), the judge's step kept (4): the rest are skipped
    assert len(tool_log.calls) == 1
    statuses = [r["status"] for r in out["rounds"][0]["results"]]
    assert statuses == ["ok", "skipped", "skipped"]
    # the judge declared the only phase complete: the work is done, and within the budget
    assert out["status"] == "completed"
    assert out["step_count"] == 4
    assert out["final_summary"]


def test_budget_checked_before_replan(run) -> None:
    script = make_script(
        phase_planner=[phases("p1", rounds=3)],
        judge_tasks=[judgement("replan", completed=False, rate=0.1)],
    )
    out, _, model = run(script, max_steps=4)
    assert out["step_count"] == 4
    assert model.calls_of("replanner") == []
    assert out["status"] == "budget_exhausted"


def test_plan_retries_stop_at_the_budget(run) -> None:
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[{"tasks": []}])
    out, _, model = run(script, max_steps=6, max_parse_retries=5)
    # phase_plan(1) then three plan attempts (4): two steps stay for a tool and the judge, and
    # with no valid plan the budget has ended the run
    assert len(model.calls_of("plan_tool_call")) == 3
    assert out["step_count"] == 4
    assert out["status"] == "budget_exhausted"
    assert out["final_summary"]


def test_round_limit_ends_phase_as_incomplete(run, tool_log) -> None:
    script = make_script(phase_planner=[phases("p1", "p2")], judge_tasks=[CONTINUE])
    script["plan_tool_call"] = [distinct_plans()]
    out, _, model = run(script, max_steps=100, extra_rounds_per_phase=1)
    # each phase: estimated 1 + 1 extra = 2 rounds, then it ends incomplete
    assert [o["ended_by"] for o in out["phase_outcomes"]] == ["round_limit", "round_limit"]
    assert [o["completed"] for o in out["phase_outcomes"]] == [False, False]
    assert len(out["rounds"]) == 4
    # every phase ran, but none was completed: the run says so (SPEC section 1)
    assert out["status"] == "incomplete" and out["stop_reason"] == "done"
    assert out["shortfalls"] == [
        "phase phase p1 (p1) ended short: it reached its round limit, at 30%",
        "phase phase p2 (p2) ended short: it reached its round limit, at 30%",
    ]
    assert "Status: incomplete" in out["final_summary"]
    assert "Fell short: phase phase p1 (p1) ended short" in out["final_summary"]
    # the count says how many were completed, as the report's statistics do
    assert "Phases 0/2 completed (2 ended), rounds 4" in out["final_summary"]
    summarizer_prompt = model.calls_of("summarizer")[0][-1].content
    assert summarizer_prompt.count("ended incomplete (round_limit)") == 2


def test_a_budget_too_small_for_another_round_ends_as_budget_exhausted(run) -> None:
    out, _, model = run(make_script(), max_steps=6)
    # phase_plan(1) plan(2) tool(3) judge(4): two steps left cannot hold a plan, a tool and a
    # judge, so phase 2 is not started, and the run says the budget stopped it
    assert out["step_count"] == 4
    assert len(model.calls_of("plan_tool_call")) == 1
    assert out["status"] == "budget_exhausted" and out["stop_reason"] == "budget"
    assert out["error"] is None
    assert "spent but for 2 (a round needs 3" in out["final_summary"]


def test_plan_retries_leave_room_for_the_round(run) -> None:
    bad = {"tasks": []}
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[bad, bad, ECHO_ROUND])
    out, _, model = run(script, max_steps=5, max_parse_retries=5)
    # phase_plan(1), then at most 2 plan attempts (3): a tool and a judge must still fit; the
    # second bad answer ends the run by budget, not as a failed stage
    assert len(model.calls_of("plan_tool_call")) == 2
    assert out["status"] == "budget_exhausted" and out["stop_reason"] == "budget"
