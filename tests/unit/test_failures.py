"""A run always ends with a summary: failed stages, raising nodes, failing tools and summarizers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException
from langchain_core.tools import tool as as_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.nodes.prompt_render import tokens
from phasegraph.tools import describe_tools, run_tool

from scripts import (
    ANALYSIS,
    CONTINUE,
    ToolLog,
    distinct_plans,
    final_state,
    judgement,
    make_script,
    make_tools,
    phases,
    rising_judgements,
    round_plan,
)

BAD = {
    "request_analyser": {"core_goal": "x"},
    "phase_planner": {"phases": []},
    "plan_tool_call": {"tasks": [], "reasoning": "nothing to do"},
    "judge_tasks": {"phase_completion_rate": 7},
    "replanner": {"status": "replanned", "phases": []},
}


@pytest.mark.parametrize(
    ("function", "node", "calls", "status", "steps"),
    [
        # analyse is not counted; the request itself becomes the goal, the run goes on
        ("request_analyser", "analyse", 3, "completed", 7),
        # three attempts of phase_plan, then one phase with the goal: plan 1 + tool 1 + judge 1
        ("phase_planner", "phase_plan", 3, "completed", 6),
        # phase_plan 1, then three plan attempts in each phase: each phase ends short
        ("plan_tool_call", "plan", 6, "incomplete", 7),
    ],
)
def test_a_stage_that_never_parses_falls_back_and_the_run_goes_on(
    run, function, node, calls, status, steps
) -> None:
    out, _, model = run(make_script(**{function: [BAD[function]]}), max_parse_retries=2)
    assert len(model.calls_of(function)) == calls
    assert out["status"] == status
    assert out["step_count"] == steps  # every failed attempt of a counted stage is a step
    assert out["parse_failures"] == calls
    assert out["error"] is None and out["stop_reason"] == "done"
    assert {f["stage"] for f in out["fallbacks"]} == {node}
    assert all("no valid result after 3 attempt(s)" in f["reason"] for f in out["fallbacks"])
    assert f"Decided by code after unusable answers: {node}" in out["final_summary"]
    assert out["final_summary"].startswith("## Report")  # the summarizer still wrote it


def test_the_analysis_falls_back_to_the_request_as_the_goal(run) -> None:
    out, _, model = run(make_script(request_analyser=[BAD["request_analyser"]]))
    assert out["structured_request"]["core_goal"] == "Report on the workspace files"
    assert out["fallbacks"][0]["action"] == "took the request itself as the goal, in one phase"
    # later prompts are built from the structured request, as after any analysis
    assert "Report on the workspace files" in model.calls_of("phase_planner")[0][-1].content


def test_the_phase_plan_falls_back_to_one_phase_with_the_goal(run) -> None:
    out, _, _ = run(make_script(phase_planner=[BAD["phase_planner"]]))
    assert [p["id"] for p in out["phases"]] == ["p1"]
    assert out["phases"][0]["goal"].startswith(ANALYSIS["core_goal"])
    assert out["phase_outcomes"][0]["completed"] is True


@pytest.mark.parametrize("extra", [13, 40])
def test_one_phase_is_named_by_the_goal_on_one_line_cut_only_past_the_names_bound(
    run, extra: int
) -> None:
    # a goal of 83 characters was cut at 80, with a tool output's note of the 3 left out
    goal = "Find the file that defines the function parse_date and write its path " + "x" * extra
    analysis = make_script()["request_analyser"][0] | {"core_goal": goal}
    out, _, model = run(
        make_script(request_analyser=[analysis], phase_planner=[BAD["phase_planner"]])
    )
    name = out["phases"][0]["name"]
    assert "\n" not in name and "truncated" not in name
    assert name == (goal if len(goal) <= 100 else goal[:97].rstrip() + "...")
    assert (
        f"Current phase 1 of 1: {name} (id p1)" in model.calls_of("plan_tool_call")[0][-1].content
    )


def test_a_plan_that_never_parses_ends_its_phase_short(run) -> None:
    out, _, _ = run(make_script(plan_tool_call=[BAD["plan_tool_call"]]))
    assert [(o["phase_id"], o["ended_by"], o["rounds"]) for o in out["phase_outcomes"]] == [
        ("p1", "no_plan", 0),
        ("p2", "no_plan", 0),
    ]
    assert "phase phase p1 (p1) ended short: no usable round plan came, at 0%" in out["shortfalls"]


def test_a_judge_that_never_parses_lets_the_facts_decide(run) -> None:
    script = make_script(
        phase_planner=[phases("p1")],
        plan_tool_call=[distinct_plans()],
        judge_tasks=[BAD["judge_tasks"]],
    )
    out, _, model = run(script, max_parse_retries=2, max_steps=100)
    # no check to decide by: the phase goes on, round after round, until its round limit
    # (1 estimated + 2 extra); each round is a plan, a tool and three judge attempts
    assert [(o["ended_by"], o["completed"]) for o in out["phase_outcomes"]] == [
        ("round_limit", False)
    ]
    assert out["step_count"] == 1 + 3 * (1 + 1 + 3)
    assert [f["stage"] for f in out["fallbacks"]] == ["judge"] * 3
    assert all(r["judgement"]["next_action"] == "continue_phase" for r in out["rounds"])
    assert out["rounds"][0]["judgement"]["user_summary"].startswith(
        "Judged by code from the facts: 1 of 1 tasks succeeded; the phase goes on"
    )
    assert out["status"] == "incomplete"


def test_a_judge_that_never_parses_completes_a_phase_whose_checks_pass(run, tmp_path) -> None:
    (tmp_path / "done.txt").write_text("ok")
    script = make_script(phase_planner=[phases("p1")], judge_tasks=[BAD["judge_tasks"]])
    model = ScriptedChatModel(script=script)
    graph = build_graph(model=model, tools=make_tools(ToolLog()), checkpointer=InMemorySaver())
    out = final_state(graph, 
        {"request": "finish", "checks": ["exists:done.txt"]},
        {"configurable": {"thread_id": "j"}},
        context=Context(workspace=str(tmp_path)),
    )
    assert out["phase_outcomes"][0]["completed"] is True
    assert out["fallbacks"][0]["stage"] == "judge"
    assert out["status"] == "completed"


def test_a_replan_that_never_parses_keeps_the_remaining_phases(run) -> None:
    script = make_script(
        phase_planner=[phases("p1", rounds=3)],
        plan_tool_call=[distinct_plans()],
        judge_tasks=[judgement("replan", completed=False, rate=0.1)],
        replanner=[BAD["replanner"]],
    )
    out, _, model = run(script, max_parse_retries=1, max_steps=100)
    # each replan: two attempts, then the phases stay; the phase goes on until the cap
    assert out["error"] is None
    assert [p["id"] for p in out["phases"]] == ["p1"]
    assert out["replan_count"] == 3
    assert len(model.calls_of("replanner")) == 6
    assert [f["stage"] for f in out["fallbacks"]] == ["replan"] * 3
    assert out["phase_outcomes"][0]["ended_by"] == "replan_cap"
    assert out["status"] == "incomplete"


@pytest.mark.parametrize(("function", "node"), [("request_analyser", "analyse"),
                                                ("phase_planner", "phase_plan")])  # fmt: skip
def test_a_model_that_never_answers_ends_the_run_failed(run, function, node) -> None:
    # an error, not a bad answer: every attempt raised, as a dead endpoint does
    script = make_script(**{function: [ConnectionError("connection refused")]})
    out, _, model = run(script, max_parse_retries=2)
    assert len(model.calls_of(function)) == 3
    assert out["status"] == "failed"
    assert out["error"]["node"] == node and out["error"]["type"] == "StageFailed"
    assert "connection refused" in out["error"]["message"]
    assert out["fallbacks"] == []
    assert out["final_summary"]


def test_repair_prompt_carries_the_validation_error(run) -> None:
    unknown_tool = {"tasks": [{"id": "t1", "tool": "no_such_tool", "arguments": {}}]}
    script = make_script(plan_tool_call=[unknown_tool, round_plan(("t1", "echo", {"text": "a"}))])
    out, _, model = run(script)
    retry_prompt = model.calls_of("plan_tool_call")[1]
    assert "no_such_tool" in retry_prompt[-1].content or "no_such_tool" in retry_prompt[-2].content
    assert "use one of ['echo', 'fail']" in " ".join(str(m.content) for m in retry_prompt)
    assert out["status"] == "completed"


class ExplodingModel(ScriptedChatModel):
    """A model whose binding for one function raises: the node itself fails."""

    explode_on: str = ""

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        if tool_choice == self.explode_on:
            raise RuntimeError(f"{self.explode_on} exploded")
        return super().bind_tools(tools, tool_choice=tool_choice, **kwargs)


@pytest.mark.parametrize(
    ("function", "node"),
    [
        ("request_analyser", "analyse"),
        ("phase_planner", "phase_plan"),
        ("plan_tool_call", "plan"),
        ("judge_tasks", "judge"),
    ],
)
def test_node_that_raises_ends_in_summarize(tools, function, node) -> None:
    model = ExplodingModel(script=make_script(), explode_on=function)
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "x"}})
    assert out["status"] == "failed"
    assert out["error"] == {"node": node, "type": "RuntimeError", "message": f"{function} exploded"}
    assert f"RuntimeError in {node}: {function} exploded" in out["final_summary"]
    assert out["final_summary"].startswith("## Report")
    assert out["workspace"]  # also a run that stopped before it started names its folder


def break_tasks(monkeypatch: pytest.MonkeyPatch, broken: set[str]) -> None:
    """The node of each task whose id is in ``broken`` raises (its journal's database, say).

    Emptying the set mends them.
    """
    from phasegraph.nodes import run_task

    run = run_task._run_with_timeout

    def breaks(tool, task, *args):  # type: ignore[no-untyped-def]
        if task["id"] in broken:
            raise RuntimeError(f"journal unavailable for {task['id']}")
        return run(tool, task, *args)

    monkeypatch.setattr(run_task, "_run_with_timeout", breaks)


@pytest.mark.parametrize(
    ("raising", "waits"),
    [
        ({"t1"}, False),  # one task of the wave raised, the other finished: judge and summary
        ({"t0", "t1"}, False),  # both raised: two errors in one step
        ({"t1"}, True),  # a task waits for the wave: execute, then the summary
    ],
)
def test_a_task_whose_node_raises_ends_the_run_in_one_summary(
    tools, tool_log, monkeypatch: pytest.MonkeyPatch, raising: set[str], waits: bool
) -> None:
    break_tasks(monkeypatch, raising)
    plan = round_plan(("t0", "echo", {"text": "a"}), ("t1", "echo", {"text": "b"}))
    if waits:
        plan["tasks"].append({"id": "t2", "tool": "echo", "arguments": {"text": "c"}})
        plan["tasks"][2]["depends_on"] = ["t0"]
    model = ScriptedChatModel(script=make_script(plan_tool_call=[plan]))
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    out = final_state(graph, {"request": "go"}, config)
    assert out["status"] == "failed" and out["stop_reason"] == "error"
    assert out["error"]["node"] == "run_task" and out["error"]["type"] == "RuntimeError"
    assert "journal unavailable" in out["final_summary"] and out["summary"]
    failed = {r["task_id"]: r for r in out["results"] if r["status"] == "failed"}
    assert set(failed) == raising
    assert all("RuntimeError: journal unavailable" in r["output"] for r in failed.values())
    # the wave's other task ran; nothing after the wave: no task waiting for it, no judgement
    texts = {"t0": "a", "t1": "b"}
    assert sorted(c[1]["text"] for c in tool_log.calls) == [
        text for task, text in texts.items() if task not in raising
    ]
    # the round is on record, unjudged, with what its tasks did (summary, report, show)
    # (one result a task, in the plan's order: the one that waited for the wave skipped)
    (record,) = out["rounds"]
    planned = ["t0", "t1", "t2"] if waits else ["t0", "t1"]
    assert [r["task_id"] for r in record["results"]] == planned
    assert [r["status"] for r in record["results"]][2:] == (["skipped"] if waits else [])
    assert record["judgement"]["user_summary"].startswith("Not judged: the run stopped")
    assert out["judgement"] == record["judgement"] and record["judgement"]["phase_id"] == "p1"
    assert f"tasks {2 - len(raising)}/{len(planned)} ok" in out["final_summary"]
    # the error is the run's; no result keeps it, so a thread given more steps goes on
    assert not any("error" in r for r in out["results"])


def test_a_thread_a_task_error_ended_goes_on_when_given_more_steps(
    tools, tool_log, monkeypatch: pytest.MonkeyPatch
) -> None:
    raising = {"t1"}
    break_tasks(monkeypatch, raising)
    plan = round_plan(("t0", "echo", {"text": "a"}), ("t1", "echo", {"text": "b"}))
    again = round_plan(("t5", "echo", {"text": "z"}))
    model = ScriptedChatModel(script=make_script(plan_tool_call=[plan, again]))
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "m"}}
    assert final_state(graph, {"request": "go"}, config)["status"] == "failed"
    raising.clear()  # the database is back
    more = {"stop_reason": None, "error": None, "status": "running"}
    graph.update_state(config, more, as_node="judge")
    out = final_state(graph, None, config)
    assert out["status"] == "completed", out["error"]
    # new rounds: the stopped one's tasks are neither sent again nor taken for errors
    texts = [c[1]["text"] for c in tool_log.calls]
    assert texts[0] == "a" and set(texts[1:]) == {"z"}
    rounds = [[r["task_id"] for r in record["results"]] for record in out["rounds"]]
    assert rounds[0] == ["t0", "t1"] and all(r == ["t5"] for r in rounds[1:])


def test_node_that_raises_without_checkpointer_still_summarizes(tools) -> None:
    model = ExplodingModel(script=make_script(), explode_on="judge_tasks")
    out = build_graph(model=model, tools=tools).invoke({"request": "go"})
    assert out["status"] == "failed"
    assert out["final_summary"]


def test_summarizer_failing_falls_back_to_plain_text(run) -> None:
    script = make_script(summarizer=[None], text=["Plain **Markdown** summary."])
    out, _, _ = run(script)
    assert out["final_summary"].startswith("Plain **Markdown** summary.")
    assert out["summary"]["source"] == "plain_text"
    assert out["status"] == "completed"


def test_the_plain_text_fallback_is_counted_with_its_tokens(tools) -> None:
    # the run's totals count every call the model answered, the fallback's tokens too
    usage: list[dict[str, int]] = []

    class Usage(BaseCallbackHandler):
        def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
            for generation in response.generations[0]:
                usage.append(generation.message.usage_metadata)  # type: ignore[attr-defined]

    script = make_script(summarizer=[None], text=["Plain **Markdown** summary."])
    model = ScriptedChatModel(script=script, callbacks=[Usage()])
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "usage"}})
    assert out["summary"]["source"] == "plain_text"
    assert out["llm_calls"] == len(usage)
    assert out["prompt_tokens"] == sum(u["input_tokens"] for u in usage)
    assert out["completion_tokens"] == sum(u["output_tokens"] for u in usage)


def test_summarizer_and_plain_text_failing_fall_back_to_code(run) -> None:
    script = make_script(summarizer=[RuntimeError("down")], text=[RuntimeError("still down")])
    out, _, _ = run(script)
    assert out["summary"]["source"] == "code"
    assert "still down" in out["summary"]["model_error"]
    summary = out["final_summary"]
    assert summary.startswith("# Summary")
    assert "Write a short report about the files in the workspace" in summary
    assert "phase p1 (p1): completed" in summary
    assert "## Not completed\n\nNothing.\n" in summary  # a section with nothing says so
    assert "Status: completed" in summary


def test_code_summary_after_budget_says_what_is_left_and_what_to_do(run) -> None:
    script = make_script(
        phase_planner=[phases("p1", "p2", rounds=3)],
        judge_tasks=[CONTINUE],
        summarizer=[None],
        text=[""],
    )
    script["plan_tool_call"] = [distinct_plans()]
    out, _, _ = run(script, max_steps=9)
    summary = out["final_summary"]
    assert out["status"] == "budget_exhausted"
    # phase_plan, plan, tool, judge (1/3 check-point) -> replan, plan, tool, judge (2/3) ->
    # replan: the budget of 9 is spent
    assert "the step budget of 9 steps was spent (9 counted)" in summary
    assert "## Not completed" in summary and "phase p9 (p9)" in summary
    assert "larger step budget" in summary


def test_failing_tool_is_a_failed_result_and_never_done(run, tool_log) -> None:
    script = make_script(
        phase_planner=[phases("p1")],
        plan_tool_call=[
            round_plan(("t1", "fail", {"reason": "disk full"}), ("t2", "echo", {"text": "a"}))
        ],
        judge_tasks=[
            dict(
                judgement(),
                task_evaluation=[
                    {"task_id": "t1", "status": "done", "quality": 9},
                    {"task_id": "t2", "status": "done", "quality": 8},
                ],
            )
        ],
    )
    out, _, _ = run(script)
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t1"]["status"] == "failed"
    assert "disk full" in results["t1"]["output"]
    evaluation = {e["task_id"]: e for e in out["rounds"][0]["judgement"]["task_evaluation"]}
    assert evaluation["t1"]["status"] == "failed" and evaluation["t1"]["quality"] == 0
    assert evaluation["t2"]["status"] == "done"


def test_phase_completed_implies_end_phase(run) -> None:
    script = make_script(
        phase_planner=[phases("p1", "p2")],
        judge_tasks=[judgement("continue_phase", completed=True)],
    )
    out, _, _ = run(script)
    assert [r["judgement"]["next_action"] for r in out["rounds"]] == ["end_phase", "end_phase"]
    assert len(out["rounds"]) == 2


def test_dependent_task_is_skipped_when_its_dependency_failed(run, tool_log) -> None:
    plan = round_plan(("t1", "fail", {}), ("t2", "echo", {"text": "after"}))
    plan["tasks"][1]["depends_on"] = ["t1"]
    out, _, _ = run(make_script(phase_planner=[phases("p1")], plan_tool_call=[plan]))
    statuses = [r["status"] for r in out["rounds"][0]["results"]]
    assert statuses == ["failed", "skipped"]
    assert ("echo", {"text": "after"}) not in tool_log.calls
    # no task of the phase succeeded, so the judge's "done" is overruled round after round
    assert out["status"] in ("incomplete", "budget_exhausted") and len(out["rounds"]) > 1
    first = out["rounds"][0]["judgement"]
    assert first["overridden"].startswith("no task of the phase") and not first["phase_completed"]


def test_long_run_never_hits_the_recursion_limit(run) -> None:
    script = make_script(
        phase_planner=[phases("p1", "p2", "p3", rounds=4)],
        plan_tool_call=[distinct_plans()],
        judge_tasks=[rising_judgements()],
    )
    # 18 rounds of 4 super-steps each are far past LangGraph's default limit of 25
    out, graph, _ = run(script, max_steps=200, max_replans=0)
    assert len(out["rounds"]) >= 9
    # the judge never completes a phase: each ends at its round limit
    assert out["status"] == "incomplete" and out["stop_reason"] == "done"
    # a caller's own low limit does not cut a run short either: the budget rules
    out2 = final_state(graph, 
        {"request": "again"},
        {"configurable": {"thread_id": "other"}, "recursion_limit": 5},
        context=Context(max_steps=200),
    )
    assert len(out2["rounds"]) >= 5  # 5 super-steps a round: far past the limit of 5 given
    assert out2["status"] == "incomplete" and out2["stop_reason"] == "done"


def test_bad_input_is_refused_before_anything_is_written(run) -> None:
    _, graph, _ = run(make_script())
    config = {"configurable": {"thread_id": "fresh"}}
    for bad in [{}, {"request": "   "}, {"request": 3}, "just a string"]:
        with pytest.raises(ValueError, match="request"):
            final_state(graph, bad, config)
    assert graph.get_state(config).values == {}


def test_bad_settings_name_the_field() -> None:
    with pytest.raises(ValueError, match="max_steps must be between"):
        Context(max_steps=0)
    with pytest.raises(ValueError, match="review must be one of"):
        Context(review="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown settings"):
        Context.coerce({"max_stepz": 3})
    # a value of the wrong kind (a Studio form, a JSON context) is named, not a TypeError
    # from deep inside: a string of digits, a fraction where a count goes, a number for text
    wrong = {"max_steps": "5", "task_timeout_s": "10", "max_parallel": 2.5, "max_phases": True,
             "workspace": 5, "model": 5, "base_url": None}  # fmt: skip
    for name, value in wrong.items():
        with pytest.raises(ValueError, match=rf"^{name} must be (text|a whole number|a number)"):
            Context.coerce({name: value})
    assert Context(task_timeout_s=10).task_timeout_s == 10.0
    assert Context(workspace=Path("/tmp")).workspace == "/tmp"  # a folder given as a Path


def test_settings_fall_back_to_environment(monkeypatch) -> None:
    monkeypatch.setenv("PHASEGRAPH_MAX_STEPS", "17")
    monkeypatch.setenv("PHASEGRAPH_REVIEW", "all")
    assert Context().max_steps == 17
    assert Context().review == "all"
    monkeypatch.setenv("PHASEGRAPH_MAX_STEPS", "lots")
    with pytest.raises(ValueError, match="PHASEGRAPH_MAX_STEPS"):
        Context()


def test_a_completion_rate_given_as_a_percentage_is_read_as_a_fraction() -> None:
    from phasegraph.state import Judgement

    from scripts import judgement

    assert (
        Judgement.model_validate({**judgement(), "phase_completion_rate": 80}).phase_completion_rate
        == 0.8
    )
    assert (
        Judgement.model_validate({**judgement(), "phase_completion_rate": 1}).phase_completion_rate
        == 1.0
    )
    with pytest.raises(ValueError, match="less than or equal to 1"):
        Judgement.model_validate({**judgement(), "phase_completion_rate": 250})


def _numbered_judgements() -> Any:
    count = {"n": 0}

    def item(_messages: Any) -> dict[str, Any]:
        count["n"] += 1
        ends = count["n"] % 2 == 0  # two rounds per phase
        found = judgement(
            "end_phase" if ends else "continue_phase", completed=ends, rate=1.0 if ends else 0.5
        )
        found["user_summary"] = f"Round found fact F{count['n']:02d}. " + "detail " * 25
        return found

    return item


@pytest.mark.parametrize("budget", [3000, 800])
def test_summary_prompt_names_every_round_the_budget_holds(run, budget: int) -> None:
    script = make_script(
        phase_planner=[phases("p1", "p2", "p3", "p4", "p5", rounds=2)],
        plan_tool_call=[distinct_plans()],
        judge_tasks=[_numbered_judgements()],
    )
    out, _, model = run(script, max_steps=200, prompt_token_budget=budget)
    rounds = len(out["rounds"])
    assert rounds >= 10
    prompt = model.calls_of("summarizer")[0][-1].content
    section = prompt.split("Rounds, by their judges' summaries:")[1].split("Statistics:")[0]
    shown = [n for n in range(1, rounds + 1) if f"F{n:02d}" in section]
    if budget == 3000:  # room for all: the report can name what every round found
        assert shown == list(range(1, rounds + 1))
    else:  # the newest kept, the oldest dropped, and the prompt stays in its budget
        assert shown == list(range(rounds - len(shown) + 1, rounds + 1)) and len(shown) < rounds
        assert f"({rounds - len(shown)} earlier rounds not shown)" in section
        assert tokens(section) <= budget


def test_a_thread_an_error_stopped_goes_on_from_where_it_stopped(tools, tool_log) -> None:
    """SPEC section 8: resumed after an error, a thread runs the step that raised again."""
    from phasegraph import ThreadStateError, resume

    down = [ConnectionError("connection refused")] * 3  # every attempt of one plan
    plans = [*down, round_plan(("t1", "echo", {"text": "a"}))]
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=plans)
    model = ScriptedChatModel(script=script)
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "down"}}
    stopped = final_state(graph, {"request": "go"}, config, context=Context(max_parse_retries=2))
    assert stopped["status"] == "failed" and stopped["error"]["node"] == "plan"
    out = resume(graph, config)  # the endpoint is back
    assert out["status"] == "completed" and out["error"] is None, out["error"]
    assert [c[1]["text"] for c in tool_log.calls] == ["a"]
    assert len(model.calls_of("request_analyser")) == 1  # analysis and phase plan kept
    assert len(model.calls_of("plan_tool_call")) == 4
    # the budget goes on from the stop, the attempts that raised counted: plan, tool, judge
    assert out["step_count"] == stopped["step_count"] + 3
    assert out["llm_calls"] == stopped["llm_calls"] + 3  # plan, judge, summary
    with pytest.raises(ThreadStateError, match="has ended"):
        resume(graph, config)  # the thread is done now


def test_a_thread_the_budget_stopped_is_not_run_again_though_a_stage_failed(tools) -> None:
    """A stage that runs out of budget records its error, but the run ended budget_exhausted."""
    from phasegraph import ThreadStateError, resume

    invalid = {"phase_completion_rate": 7}
    script = make_script(phase_planner=[phases("p1")], judge_tasks=[invalid] * 20)
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=tools, checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "spent"}}
    out = final_state(graph, {"request": "go"}, config,
                      context=Context(max_steps=5, max_parse_retries=2))  # fmt: skip
    assert out["status"] == "budget_exhausted" and out["error"]
    with pytest.raises(ThreadStateError, match="has ended"):
        resume(graph, config)


def test_the_thread_list_shows_a_thread_resumed_after_an_error_as_it_ended(
    tools, tmp_path
) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from phasegraph import resume
    from phasegraph.storage.database import database_of
    from phasegraph.storage.thread_index import index_for

    plans = [*[ConnectionError("down")] * 3, round_plan(("t1", "echo", {"text": "a"}))]
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=plans)
    with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
        graph = build_graph(
            model=ScriptedChatModel(script=script), tools=tools, checkpointer=saver
        )
        config: Any = {"configurable": {"thread_id": "down"}}
        final_state(graph, {"request": "go"}, config, context=Context(max_parse_retries=2))
        out = resume(graph, config)
        (row,) = index_for(database_of(saver)).rows()
    assert (row.status, row.steps) == ("completed", out["step_count"])


def test_a_thread_that_ended_otherwise_is_not_run_again(tools) -> None:
    from phasegraph import ThreadStateError, resume

    graph = build_graph(
        model=ScriptedChatModel(script=make_script()), tools=tools, checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "done"}}
    assert final_state(graph, {"request": "go"}, config)["status"] == "completed"
    with pytest.raises(ThreadStateError, match="has ended"):
        resume(graph, config)


def test_an_async_caller_resumes_a_thread_an_error_stopped(tools, tool_log, tmp_path) -> None:
    """With an async checkpointer, which a sync resume cannot use from the event loop."""
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from phasegraph import aresume

    plans = [*[ConnectionError("down")] * 3, round_plan(("t1", "echo", {"text": "a"}))]
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=plans)

    async def go() -> tuple[str, str]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
            model = ScriptedChatModel(script=script)
            graph = build_graph(model=model, tools=tools, checkpointer=saver)
            config: Any = {"configurable": {"thread_id": "a"}}
            out = await graph.ainvoke({"request": "go"}, config,
                                      context=Context(max_parse_retries=2))  # fmt: skip
            return out["status"], (await aresume(graph, config))["status"]

    assert asyncio.run(go()) == ("failed", "completed")
    assert [c[1]["text"] for c in tool_log.calls] == ["a"]


def test_a_thread_a_task_error_stopped_resumes_without_counting_its_wave_twice(
    tools, tool_log, monkeypatch: pytest.MonkeyPatch
) -> None:
    from phasegraph import resume

    broken = {"t1"}
    plan = round_plan(("t0", "echo", {"text": "a"}), ("t1", "echo", {"text": "b"}))
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])

    def one_run(name: str, resumed: bool) -> dict[str, Any]:
        graph = build_graph(
            model=ScriptedChatModel(script=script), tools=tools, checkpointer=InMemorySaver()
        )
        config: Any = {"configurable": {"thread_id": name}}
        out = final_state(graph, {"request": "go"}, config)
        if resumed:
            assert out["status"] == "failed"
            broken.clear()  # the database is back
            out = resume(graph, config)
        return out

    break_tasks(monkeypatch, broken)
    stopped = one_run("stopped", resumed=True)
    plain = one_run("plain", resumed=False)
    assert stopped["status"] == plain["status"] == "completed"
    assert stopped["step_count"] == plain["step_count"]


def test_a_tool_is_called_as_toolnode_calls_one_and_its_own_error_status_fails_the_task() -> None:
    """A tool that handles its errors (MCP tools do) answers with an error status: failed."""
    def refuse(key: str) -> str:
        raise ToolException(f"store unavailable for {key}")

    handled = StructuredTool.from_function(
        refuse, name="lookup", description="Look a key up.", handle_tool_error=True
    )
    assert run_tool(handled, {"key": "alpha"}, 500)[:2] == (False, "store unavailable for alpha")

    @as_tool
    def with_id(text: str, call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Echo with the call's id."""
        return f"{text} ({call_id})"

    ok, out, *_ = run_tool(with_id, {"text": "hi"}, 500)
    assert ok and out.startswith("hi (call_")
    # a plan cannot forge the injected id: it is not offered, and what it gives is replaced
    assert "call_id" not in describe_tools([with_id])
    ok, out, *_ = run_tool(with_id, {"text": "hi", "call_id": "forged"}, 500)
    assert ok and out.startswith("hi (call_") and "forged" not in out

    @as_tool
    def as_dict(text: str) -> dict[str, Any]:
        """A dict back."""
        return {"text": text, "ok": True, "n": None}

    outcome = run_tool(as_dict, {"text": "hi"}, 500)
    assert outcome[:2] == (True, '{"text": "hi", "ok": true, "n": null}')

    class AsyncOnly(BaseTool):
        name: str = "async_only"
        description: str = "Written for async code."

        def _run(self, text: str) -> str:
            raise NotImplementedError("use the async version")

        async def _arun(self, text: str) -> str:
            return f"async says {text}"

    assert run_tool(AsyncOnly(), {"text": "hi"}, 500)[:2] == (True, "async says hi")

    @as_tool
    def steer(text: str) -> Command[Any]:
        """Try to steer the run."""
        return Command(goto="summarize")

    ok, out, *_ = run_tool(steer, {"text": "x"}, 500)
    assert not ok and "cannot do" in out

    @as_tool
    def steer_twice(text: str) -> list[Any]:
        """Try to steer the run twice."""
        return [Command(goto="summarize"), Command(goto="plan")]

    assert run_tool(steer_twice, {"text": "x"}, 500)[:2] == (False, out)

    calls: list[str] = []

    @as_tool
    def unfinished(text: str) -> str:
        """Not written yet."""
        calls.append(text)
        raise NotImplementedError("not yet")

    ok, out, *_ = run_tool(unfinished, {"text": "once"}, 500)
    assert not ok and out == "NotImplementedError: not yet" and calls == ["once"]

    @as_tool
    def picture(text: str) -> list[dict[str, Any]]:
        """A caption and an image."""
        return [{"type": "text", "text": text}, {"type": "image", "base64": "AAAA" * 100}]

    assert run_tool(picture, {"text": "a cat"}, 500)[:2] == (True, "a cat\n[image content]")


def test_a_run_whose_only_tool_reports_its_own_error_is_not_completed() -> None:
    def refuse(key: str) -> str:
        raise ToolException(f"store unavailable for {key}")

    lookup = StructuredTool.from_function(
        refuse, name="lookup", description="Look a key up.", handle_tool_error=True
    )
    script = make_script(
        phase_planner=[phases("p1")],
        plan_tool_call=[round_plan(("t1", "lookup", {"key": "alpha"}))],
    )
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=[lookup], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "own-error"}}
    out = graph.invoke({"request": "look alpha up"}, config, context=Context(max_steps=12))
    assert out["status"] != "completed"
    rounds = graph.get_state(config).values["rounds"]
    assert [r["status"] for r in rounds[0]["results"]] == ["failed"]
