"""The graph's plan node makes the round's first wave in the same super-step (`round_start`)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.nodes import execute, plan, round_start

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
        "analyse", "phase_plan",
        "plan", "run_task", "run_task",
        "judge", "run_task",  # the first judge planned round 2 and sent its task
        "judge",
        "summarize",
    ]  # fmt: skip
    # one checkpoint per super-step: the input, 2 stages, the first plan, 2 a round (its
    # tasks, its judge with the next plan), the summary, the end
    assert len(list(graph.get_state_history(config))) == 1 + 2 + 1 + 2 * 2 + 1 + 1
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
    assert nodes[:3] == ["analyse", "phase_plan", "plan"]
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
