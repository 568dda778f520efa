"""MCP tools inside a run: a real stdio server, started by langchain-mcp-adapters."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.errors import ConfigurationError
from phasegraph.tools.mcp import load_mcp_tools

from scripts import ANALYSIS, SUMMARY, final_state, judgement, phases, round_plan

pytestmark = pytest.mark.integration
SERVER = Path(__file__).with_name("mcp_server.py")


def test_an_mcp_tool_works_inside_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-reach-the-server")
    log = tmp_path / "notes.log"
    servers = {
        "notes": {"transport": "stdio", "command": sys.executable, "args": [str(SERVER), str(log)]}
    }
    script = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [
            round_plan(
                ("n", "add_note", {"title": "t1", "body": "hello"}),
                ("s", "secret_seen", {}),
                ("l", "list_files", {}),
            )
        ],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }
    graph = build_graph(model=ScriptedChatModel(script=script), checkpointer=InMemorySaver())
    out = final_state(graph, 
        {"request": "note it"},
        {"configurable": {"thread_id": "m"}},
        context=Context(workspace=str(tmp_path), mcp_servers=servers),
    )
    results = {r["task_id"]: r for rnd in out["rounds"] for r in rnd["results"]}
    assert results["n"]["status"] == "ok" and results["n"]["output"] == "stored note 't1'"
    assert results["s"]["output"] == "no"  # stdio servers get a minimal environment
    assert results["l"]["status"] == "ok"  # built-in tools stay beside the MCP ones
    assert log.read_text() == "t1: hello\n"
    assert out["status"] == "completed"


def test_a_server_that_cannot_start_is_a_clear_error() -> None:
    broken = {"x": {"transport": "stdio", "command": "/nonexistent/mcp-server", "args": []}}
    with pytest.raises(ConfigurationError, match="could not list the tools of MCP servers"):
        load_mcp_tools(__import__("json").dumps(broken))
