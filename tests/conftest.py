"""Fixtures shared by unit and integration tests: the scripted model, tools and processes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph

from scripts import ToolLog, final_state, make_script, make_tools


@pytest.fixture
def tool_log() -> ToolLog:
    return ToolLog()


@pytest.fixture
def tools(tool_log: ToolLog) -> list[BaseTool]:
    return make_tools(tool_log)


@pytest.fixture
def run(tools: list[BaseTool]) -> Callable[..., tuple[dict[str, Any], Any, ScriptedChatModel]]:
    """Run a request with a scripted model; returns (output, graph, model)."""

    def _run(
        script: dict[str, list[Any]] | None = None,
        *,
        request: str = "Report on the workspace files",
        thread: str = "t1",
        **settings: Any,
    ) -> tuple[dict[str, Any], Any, ScriptedChatModel]:
        model = ScriptedChatModel(script=script or make_script())
        graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": thread}}
        out = final_state(graph, {"request": request}, config, context=Context(**settings))
        return out, graph, model

    return _run


@pytest.fixture(autouse=True)
def _no_call_stopped() -> None:
    """Each test starts as a process does: no local model call stopped (`models.stop`).

    A test that stops calls (as Ctrl-C does) leaves the last call marked stopped until the
    next one begins; a test that calls the sampler directly would read that mark.
    """
    from phasegraph.models import stop

    stop.begin(stop.ticket())
