"""phasegraph as a node of a caller's graph: the parent run's settings reach it, its review's
pause shows in the parent's state and output, and ``Command(resume=...)`` through the parent
answers it (SPEC section 6)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from phasegraph import Context, ScriptedChatModel, build_graph

from scripts import ANALYSIS, SUMMARY, Parent, judgement, phases, round_plan


@dataclass
class Mine:
    """A caller's own context, whose fields happen to share names with phasegraph's."""

    model: str = "anthropic/claude-3-5-sonnet-latest"
    review: str = "plan"


def script() -> dict[str, list[Any]]:
    return {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [round_plan(("w", "write_file", {"path": "out.txt", "content": "hi"}))],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }


def parent_graph(context_schema: Any = Context, nodes: int = 1) -> Any:
    builder = StateGraph(Parent, context_schema=context_schema)
    for n in range(nodes):  # each its own phasegraph; the parent keeps the threads
        builder.add_node(f"agent{n}", build_graph(model=ScriptedChatModel(script=script())))
        builder.add_edge(START, f"agent{n}")
        builder.add_edge(f"agent{n}", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_the_parents_settings_reach_it_and_its_pause_shows_in_the_parent(tmp_path: Path) -> None:
    parent, config = parent_graph(), {"configurable": {"thread_id": "n"}}
    settings = Context(review="plan", workspace=str(tmp_path))
    out = parent.invoke({"request": "write out.txt"}, config, context=settings)
    (asked,) = out["__interrupt__"]
    assert asked.value["kind"] == "plan_review" and asked.value["phases"][0]["id"] == "p1"
    assert "error" not in asked.value  # asked, not answered wrongly
    assert parent.get_state(config).interrupts == (asked,)
    answer = Command(resume={asked.id: {"action": "approve"}})
    done = parent.invoke(answer, config, context=settings)
    assert done["status"] == "completed" and (tmp_path / "out.txt").read_text() == "hi"


def test_a_parent_context_of_another_schema_is_the_parents_own(tmp_path: Path) -> None:
    parent = parent_graph(Mine)
    config = {"configurable": {"thread_id": "m", "workspace": str(tmp_path)}}

    async def run() -> Any:
        return await parent.ainvoke({"request": "write out.txt"}, config, context=Mine())

    # neither its review nor its model is taken for phasegraph's: the run goes on unpaused
    assert asyncio.run(run())["status"] == "completed"
    assert (tmp_path / "out.txt").read_text() == "hi"


def test_two_paused_nodes_are_answered_each_by_its_question_id(tmp_path: Path) -> None:
    parent, config = parent_graph(nodes=2), {"configurable": {"thread_id": "two"}}
    settings = Context(review="plan", workspace=str(tmp_path))
    paused = parent.invoke({"request": "write out.txt"}, config, context=settings)
    ids = [asked.id for asked in paused["__interrupt__"]]
    assert len(set(ids)) == 2
    answers = Command(resume=dict.fromkeys(ids, {"action": "approve"}))
    done = parent.invoke(answers, config, context=settings)
    assert "__interrupt__" not in done and done["status"] == "completed"
    assert not parent.get_state(config).next


def test_settings_given_to_the_node_the_older_way_go_over_the_parents(tmp_path: Path) -> None:
    parent = parent_graph()
    config = {"configurable": {"thread_id": "both", "review": "plan"}}
    settings = Context(workspace=str(tmp_path))
    out = parent.invoke({"request": "write out.txt"}, config, context=settings)
    assert out["__interrupt__"][0].value["kind"] == "plan_review"


def test_resumed_through_the_parent_without_settings_it_goes_on_in_its_folder(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # the parent's resume gives no context: the thread's folder, not the current one
    monkeypatch.delenv("PHASEGRAPH_WORKSPACE", raising=False)
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir(), elsewhere.mkdir()
    parent, config = parent_graph(), {"configurable": {"thread_id": "away"}}
    out = parent.invoke({"request": "write out.txt"}, config,
                        context=Context(review="plan", workspace=str(ws)))  # fmt: skip
    (asked,) = out["__interrupt__"]
    monkeypatch.chdir(elsewhere)
    done = parent.invoke(Command(resume={asked.id: {"action": "approve"}}), config)
    assert done["status"] == "completed" and (ws / "out.txt").read_text() == "hi"
    assert not (elsewhere / "out.txt").exists()
