"""Stages that wait for nothing between them share a super-step (`round_start`): a plan and its
first wave, a judge and the next plan or the summary, the analysis and the phase plan."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.nodes import execute, phase_plan, plan, round_start, summarize

from scripts import judgement, make_script, phases, round_plan

TWO_ROUNDS = make_script(
    phase_planner=[phases("p1", rounds=2)],
    plan_tool_call=[
        round_plan(("t1", "echo", {"text": "a"}), ("t2", "echo", {"text": "b"})),
        round_plan(("t1", "echo", {"text": "c"})),
    ],
    judge_tasks=[judgement("continue_phase", completed=False, rate=0.5), judgement()],
)


def run(tools, script: dict[str, list[Any]], **settings: Any):
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=tools, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "r"}}
    nodes = [
        name
        for chunk in graph.stream(
            {"request": "go"}, config, context=Context(**settings), stream_mode="updates"
        )
        for name in chunk
    ]
    return graph.get_state(config).values, nodes, graph, config


def test_a_round_after_the_first_is_its_tasks_then_judge_and_next_plan(tools, tool_log) -> None:
    out, nodes, graph, config = run(tools, TWO_ROUNDS)
    assert out["status"] == "completed"
    assert nodes == [
        "analyse", "run_task", "run_task",  # the analysis planned the phases, round 1, its wave
        "judge", "run_task",  # the first judge planned round 2 and sent its task
        "judge",  # the last judge wrote the summary
    ]  # fmt: skip
    # one checkpoint per super-step: the input, the analysis with the first plan, 2 a round
    # (its tasks, its judge with the next plan or the summary), the end
    assert len(list(graph.get_state_history(config))) == 1 + 1 + 2 * 2 + 1
    assert out["final_summary"] and out["summary"]["source"] == "summarizer"
    # the judge's plan is the plan the plan node would have made
    assert [r["tasks"][0]["arguments"]["text"] for r in out["rounds"]] == ["a", "c"]
    assert [r["round_seq"] for r in out["rounds"]] == [1, 2]
    # a and b run at once (in either order), c in the next round
    texts = [c[1]["text"] for c in tool_log.calls]
    assert sorted(texts[:2]) == ["a", "b"] and texts[2:] == ["c"]
    # the round's results and its wave are what execute would have made
    assert [[r["wave"] for r in record["results"]] for record in out["rounds"]] == [[1, 1], [1]]
    assert out["step_count"] == 1 + 2 * 2 + 3  # phase plan, plans and judges, three tools


def test_a_first_wave_that_fails_is_made_again_by_the_execute_node(
    tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan is kept, and the error is recorded under execute's name, as before the merge."""

    def failing(state, runtime, deps):
        raise RuntimeError("execute broke")

    monkeypatch.setattr(execute, "execute", failing)
    out, nodes, _, _ = run(tools, TWO_ROUNDS)
    # the analysis kept the phases and the plan; the execute node raised
    assert nodes[:3] == ["analyse", "__default_error_handler__", "summarize"]
    assert out["error"]["node"] == "execute" and "execute broke" in out["error"]["message"]
    assert out["status"] == "failed"
    assert out["current_plan"]["tasks"][0]["id"] == "t1"
    assert out["llm_calls"] >= 3  # analyse, phase plan and the plan that was kept


def test_a_next_plan_that_fails_in_the_judges_step_is_made_again_by_the_plan_node(
    tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judgement is kept, and the error is recorded under plan's name, as before the merge."""
    real = plan.plan
    calls: list[int] = []

    def second_fails(state, runtime, deps):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("plan broke")
        return real(state, runtime, deps)

    monkeypatch.setattr(plan, "plan", second_fails)
    out, nodes, _, _ = run(tools, TWO_ROUNDS)
    assert nodes[-2:] == ["__default_error_handler__", "summarize"]  # the plan node's error
    assert nodes.count("judge") == 1
    assert out["error"]["node"] == "plan" and "plan broke" in out["error"]["message"]
    assert [r["judgement"]["next_action"] for r in out["rounds"]] == ["continue_phase"]
    assert len(calls) == 3  # the first plan, the judge's try, the plan node's


def test_a_phase_plan_that_fails_in_the_analysis_step_is_made_again_by_its_node(
    tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The analysis is kept, and the error is recorded under phase_plan's name."""

    def failing(state, runtime, deps):
        raise RuntimeError("phase plan broke")

    monkeypatch.setattr(phase_plan, "phase_plan", failing)
    out, nodes, _, _ = run(tools, TWO_ROUNDS)
    assert nodes == ["analyse", "__default_error_handler__", "summarize"]
    assert out["error"]["node"] == "phase_plan" and "phase plan broke" in out["error"]["message"]
    assert out["structured_request"]["core_goal"] and out["status"] == "failed"


def test_a_summary_that_fails_in_the_judges_step_is_written_by_the_summarize_node(
    tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = summarize.summarize
    calls: list[int] = []

    def first_fails(state, runtime, deps):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("summary broke")
        return real(state, runtime, deps)

    monkeypatch.setattr(summarize, "summarize", first_fails)
    out, nodes, _, _ = run(tools, TWO_ROUNDS)
    assert nodes[-2:] == ["judge", "summarize"] and len(calls) == 2
    assert out["status"] == "completed" and out["final_summary"]


def test_a_plan_review_stops_the_analysis_step_at_the_phase_plan(tools) -> None:
    out, nodes, graph, config = run(tools, TWO_ROUNDS, review="plan")
    assert nodes == ["analyse", "__interrupt__"]
    assert out["pending_review"]["kind"] == "plan_review" and out["round_seq"] == 0
    assert graph.get_state(config).next == ("human_review",)
    assert [s["stage"] for s in out["chained_use"]] == ["analyse", "phase_plan"]
    assert out["chained_use"][0]["llm_calls"] == 1


def test_the_planned_state_is_the_state_langgraph_applies() -> None:
    state: dict[str, Any] = {
        "results": [{"task_id": "old"}],
        "step_count": 4,
        "fallbacks": [{"stage": "judge"}],
        "wave": 2,
    }
    update = {"results": [], "step_count": 1, "fallbacks": [{"stage": "plan"}], "wave": 0}
    after = round_start.advanced(state, update)  # type: ignore[arg-type]
    assert after["results"] == []  # a new round clears the last one's results
    assert after["step_count"] == 5
    assert after["fallbacks"] == [{"stage": "judge"}, {"stage": "plan"}]
    assert after["wave"] == 0
    assert state["step_count"] == 4  # the node's own state is left alone


def test_an_answer_written_as_the_phase_plan_still_goes_to_the_pending_review(tools) -> None:
    # the routers of a chained node must not route past a review: paused at a replan review,
    # an answer written with update_state(as_node="phase_plan") is read by human_review
    from phasegraph import resume

    script = make_script(
        phase_planner=[phases("p1", "p2")],
        judge_tasks=[judgement("replan", completed=False, rate=0.1), judgement()],
    )
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=tools, checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "a"}}
    context = Context(review="plan+replan")
    graph.invoke({"request": "go"}, config, context=context)
    resume(graph, config, {"action": "approve"}, context=context)
    assert graph.get_state(config).values["pending_review"]["kind"] == "replan_review"
    for node in ("phase_plan", "analyse"):
        graph.update_state(config, {"human_feedback": {"action": "approve"}}, as_node=node)
        assert graph.get_state(config).next == ("human_review",)
    out = graph.invoke(None, config, context=context)
    assert out["status"] == "completed" and out["human_feedback"] is None


@pytest.mark.parametrize("node", ["judge", "replan"])
def test_a_thread_that_ended_and_is_given_more_steps_ends_with_a_new_summary(
    tools, node: str
) -> None:
    # a summary left from the earlier end is not this run's: the judge's router goes on
    model = ScriptedChatModel(script=make_script())
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "e"}}
    out = graph.invoke({"request": "go"}, config, context=Context(max_steps=4))
    assert out["status"] == "budget_exhausted" and len(model.calls_of("summarizer")) == 1
    more = {"limits": {**out["limits"], "max_steps": 40}, "stop_reason": None, "status": "running"}
    graph.update_state(config, more, as_node=node)
    out = graph.invoke(None, config, context=Context(max_steps=40))
    assert out["status"] == "completed" and len(model.calls_of("summarizer")) == 2
    assert graph.get_state(config).next == ()


def test_a_failed_judge_and_the_summary_in_its_step_are_reported_apart(tools) -> None:
    from phasegraph.report.history import run_history

    graph = build_graph(
        model=ScriptedChatModel(script=make_script(judge_tasks=[{"bad": 1}])),
        tools=tools,
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "h"}}
    graph.invoke({"request": "go"}, config, context=Context(max_steps=4))
    stages = {s["stage"]: s for s in run_history(graph, config)["stages"]}
    assert stages["summarize"]["llm_calls"] == 1 and stages["summarize"]["steps"] == 0
    assert stages["judge"]["llm_calls"] == stages["judge"]["steps"] >= 1


def test_a_write_that_leaves_the_state_as_it_was_is_not_written() -> None:
    state: dict[str, Any] = {
        "results": [{"task_id": "t1"}],
        "step_count": 4,
        "llm_calls": 2,
        "fallbacks": [],
        "wave": 1,
    }
    parts = [
        Command(update={"results": [], "step_count": 0, "fallbacks": [], "wave": 1}),
        # the same list as before the first part cleared it: a change, written
        Command(update={"results": [{"task_id": "t1"}], "llm_calls": 1, "status": "running"}),
    ]
    kept = round_start.changes_only(state, parts)
    assert [c.update for c in kept] == [
        {"results": []},
        {"results": [{"task_id": "t1"}], "llm_calls": 1, "status": "running"},
    ]
    assert round_start.changes_only(state, {"wave": 2, "step_count": 0}) == {"wave": 2}


class WriteLog(InMemorySaver):
    """An in-memory saver that keeps every write it was given, by channel."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, Any]] = []

    def put_writes(self, config, writes, task_id, task_path="") -> None:  # type: ignore[no-untyped-def]
        self.log.extend(writes)
        super().put_writes(config, writes, task_id, task_path)


def test_a_run_saves_no_write_of_a_counter_that_grew_by_nothing_or_of_an_empty_history(
    tools,
) -> None:
    saver = WriteLog()
    graph = build_graph(model=ScriptedChatModel(script=TWO_ROUNDS), tools=tools, checkpointer=saver)
    config = {"configurable": {"thread_id": "w"}}
    out = graph.invoke({"request": "go"}, config)
    assert out["status"] == "completed"
    # every answer parsed, and the run neither reflected nor fell back
    assert out["parse_failures"] == 0 and out["reflections"] == [] and out["fallbacks"] == []
    counters = {"step_count", "llm_calls", "prompt_tokens", "completion_tokens", "parse_failures"}
    histories = {"rounds", "phase_outcomes", "reflections", "fallbacks", "tool_violations"}
    assert [c for c, v in saver.log if c in counters and v == 0] == []
    assert [c for c, v in saver.log if c in histories and v == []] == []
    # what did change is written: a step per stage and tool, a round record per round
    assert sum(v for c, v in saver.log if c == "step_count") == out["step_count"] == 8
    assert sum(len(v) for c, v in saver.log if c == "rounds") == 2
