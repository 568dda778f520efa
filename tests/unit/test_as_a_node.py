"""phasegraph as a node of a caller's graph: the parent run's settings reach it, its review's
pause shows in the parent's state and output, and ``Command(resume=...)`` through the parent
answers it (SPEC section 6)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from phasegraph import Context, ScriptedChatModel, build_graph

from scripts import ANALYSIS, SUMMARY, judgement, phases, round_plan


class Parent(TypedDict, total=False):
    request: str
    status: str


@dataclass
class Mine:
    """A caller's own context: a field of its own beside two of phasegraph's."""

    user: str = ""
    review: str = "none"
    workspace: str = ""


def parent_graph(context_schema: Any = Context) -> Any:
    script = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [round_plan(("w", "write_file", {"path": "out.txt", "content": "hi"}))],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }
    inner = build_graph(model=ScriptedChatModel(script=script))  # the parent keeps the threads
    builder = StateGraph(Parent, context_schema=context_schema)
    builder.add_node("agent", inner)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_the_parents_settings_reach_it_and_its_pause_shows_in_the_parent(tmp_path: Path) -> None:
    parent, config = parent_graph(), {"configurable": {"thread_id": "n"}}
    settings = Context(review="plan", workspace=str(tmp_path))
    out = parent.invoke({"request": "write out.txt"}, config, context=settings)
    (asked,) = out["__interrupt__"]
    assert asked.value["kind"] == "plan_review" and asked.value["phases"][0]["id"] == "p1"
    assert parent.get_state(config).interrupts == (asked,)
    answer = Command(resume={asked.id: {"action": "approve"}})
    done = parent.invoke(answer, config, context=settings)
    assert done["status"] == "completed" and (tmp_path / "out.txt").read_text() == "hi"


def test_a_parent_context_of_another_schema_passes_the_settings_it_shares(tmp_path: Path) -> None:
    parent, config = parent_graph(Mine), {"configurable": {"thread_id": "m"}}
    mine = Mine(user="ada", review="plan", workspace=str(tmp_path))

    async def run() -> tuple[Any, Any]:
        paused = await parent.ainvoke({"request": "write out.txt"}, config, context=mine)
        done = await parent.ainvoke(Command(resume="approve"), config, context=mine)
        return paused, done

    paused, done = asyncio.run(run())
    assert paused["__interrupt__"][0].value["kind"] == "plan_review"
    assert done["status"] == "completed" and (tmp_path / "out.txt").read_text() == "hi"
