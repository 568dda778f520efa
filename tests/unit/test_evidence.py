"""The last phase can write what the work needs, and programs compute what it reports.

Facts by code (SPEC sections 1 and 11): the last phase keeps the tools the work needs, and its
plan is told which files the request changes are still unwritten; a program computes a number
for the work to write (expr), its operands not taken for paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.nodes.deps import workspace_settings
from phasegraph.state import TaskResult
from phasegraph.tools.builtin import workspace_tools
from phasegraph.tools.workspace import WorkspaceError

from scripts import ANALYSIS, SUMMARY, final_state, judgement, phase, round_plan

DONE = judgement()
SUM_REQUEST = "Read numbers.txt (one integer per line) and write their sum to sum.txt."


def run(
    ws: Path, steps: dict[str, list[Any]], request: str, checks: list[str] | None = None
) -> tuple[dict[str, Any], ScriptedChatModel]:
    model = ScriptedChatModel(script={"summarizer": [SUMMARY], **steps})
    graph = build_graph(model=model, checkpointer=InMemorySaver())
    given: dict[str, Any] = {"request": request}
    if checks is not None:
        given["checks"] = checks
    out = final_state(graph, 
        given, {"configurable": {"thread_id": "e"}}, context=Context(workspace=str(ws))
    )
    return out, model


def builtin(ws: Path) -> dict[str, Any]:
    return {t.name: t for t in workspace_tools(workspace_settings(Context(workspace=str(ws))))}


def result(tool: str, arguments: dict[str, Any], output: str) -> TaskResult:
    return {
        "task_id": "t",
        "tool": tool,
        "arguments": arguments,
        "status": "ok",
        "output": output,
        "duration_s": 0.0,
        "wave": 0,
        "replayed": False,
    }


def sum_script(*plans: dict[str, Any], judges: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {
        "request_analyser": [{**ANALYSIS, "task_type": "data", "files_to_write": ["sum.txt"]}],
        "phase_planner": [{"phases": [phase("p1", rounds=3)], "execution_strategy": "one"}],
        "plan_tool_call": list(plans),
        "judge_tasks": judges,
    }


def test_the_last_phase_keeps_the_tools_the_work_needs_and_is_told_what_is_unwritten(
    tmp_path: Path,
) -> None:
    # the 1.5B model's one phase, "Read app.ini", allowed read_file alone, and every plan read
    # the file: the run ended with app.ini unchanged
    (tmp_path / "app.ini").write_text("[server]\nport = 80\n")
    reading = {**phase("p1", rounds=2, tools=["read_file"]), "name": "Read app.ini"}
    edit = round_plan(
        ("e", "edit_file", {"path": "app.ini", "old_text": "port = 80", "new_text": "port = 80\n"
                            "timeout = 30"})
    )  # fmt: skip
    steps = {
        "request_analyser": [{**ANALYSIS, "files_to_write": ["app.ini"]}],
        "phase_planner": [{"phases": [phase("p0", 3, ["list_files"]), reading],
                           "execution_strategy": "in order"}],  # fmt: skip
        "plan_tool_call": [round_plan(("l", "list_files", {"path": "."})), edit],
        "judge_tasks": [DONE],
    }
    out, model = run(tmp_path, steps, "In app.ini, add timeout = 30 to [server].")
    first, last = (str(call[-1].content) for call in model.calls_of("plan_tool_call"))
    assert "change app.ini" not in first  # an earlier phase may only read
    assert "edit_file" not in first.split("Tools you may use:")[1].split("\n\n")[0]
    assert "- change app.ini as the request asks (this run has not written it yet)" in last
    assert "edit_file" in last.split("Tools you may use:")[1]
    assert out["rounds"][-1]["results"][0]["status"] == "ok"
    assert "timeout = 30" in (tmp_path / "app.ini").read_text()
    assert out["status"] == "completed"


def test_expr_computes_and_its_operands_are_not_paths(tmp_path: Path) -> None:
    tools = builtin(tmp_path)
    assert tools["run_command"].invoke({"argv": ["expr", "17", "+", "25", "+", "8"]}).endswith(
        "\n50\n"
    )
    assert tools["run_command"].invoke({"argv": ["expr", "6", "/", "2"]}).endswith("\n3\n")
    with pytest.raises(WorkspaceError, match="absolute path"):  # where it is a path, it is one
        tools["run_command"].invoke({"argv": ["ls", "/"]})
