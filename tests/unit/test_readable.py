"""A write may not leave a readable file unreadable as its format (`nodes.readable`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.nodes.deps import workspace_settings
from phasegraph.nodes.readable import put_back_if_broken, readable_before
from phasegraph.tools.builtin import workspace_tools
from phasegraph.tools.workspace import Workspace

from scripts import CONTINUE, final_state, judgement, make_script, phases, round_plan

PACKAGE = '{\n  "name": "app",\n  "version": "1.2.0"\n}\n'


def written_after_a_read(ws: Path, task: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """The result of ``task``, planned in the round after one that read its file."""
    read = round_plan(("r", "read_file", {"path": task[2]["path"]}))
    script = make_script(
        phase_planner=[phases("p1", rounds=2)],
        plan_tool_call=[read, round_plan(task)],
        judge_tasks=[CONTINUE, judgement()],
    )
    graph = build_graph(model=ScriptedChatModel(script=script), checkpointer=InMemorySaver())
    out = final_state(
        graph,
        {"request": "change the file"},
        {"configurable": {"thread_id": "r"}},
        context=Context(workspace=str(ws)),
    )
    return dict(out["rounds"][1]["results"][0])


def test_a_fragment_written_over_a_json_file_is_put_back_and_fails(tmp_path: Path) -> None:
    # the 1.5B model wrote one setting as the whole package.json; the file stayed broken, the
    # next rounds read the fragment back and the budget ran out
    (tmp_path / "package.json").write_text(PACKAGE)
    fragment = {"path": "package.json", "content": '  "version": "1.2.1"'}
    result = written_after_a_read(tmp_path, ("w", "write_file", fragment))
    assert result["status"] == "failed"
    assert result["output"].startswith("refused: after this call package.json does not read as")
    assert (tmp_path / "package.json").read_text() == PACKAGE
    # the same change kept whole, or made by an edit, runs
    whole = {"path": "package.json", "content": PACKAGE.replace("1.2.0", "1.2.1")}
    result = written_after_a_read(tmp_path, ("w", "write_file", whole))
    assert result["status"] == "ok" and json.loads((tmp_path / "package.json").read_text())
    edit = {"path": "package.json", "old_text": '"1.2.1"', "new_text": '"1.3.0"'}
    result = written_after_a_read(tmp_path, ("e", "edit_file", edit))
    assert result["status"] == "ok" and '"1.3.0"' in (tmp_path / "package.json").read_text()


def test_an_edit_that_breaks_python_is_put_back(tmp_path: Path) -> None:
    source = "def average(values):\n    return sum(values) / len(values)\n"
    (tmp_path / "stats.py").write_text(source)
    broken = {"path": "stats.py", "old_text": "len(values)", "new_text": "len(values"}
    result = written_after_a_read(tmp_path, ("e", "edit_file", broken))
    assert result["status"] == "failed" and "Python" in result["output"]
    assert (tmp_path / "stats.py").read_text() == source


def test_files_that_did_not_read_before_are_left_to_the_checks(tmp_path: Path) -> None:
    settings = workspace_settings(Context(workspace=str(tmp_path)))
    tools = {t.name: t for t in workspace_tools(settings)}
    space = Workspace(str(tmp_path))
    (tmp_path / "bad.json").write_text("{")
    new = {"tool": "write_file", "arguments": {"path": "new.json", "content": "{"}}
    old = {"tool": "write_file", "arguments": {"path": "bad.json", "content": "{"}}
    text = {"tool": "write_file", "arguments": {"path": "notes.txt", "content": "x"}}
    assert readable_before(new, tools, space) is None  # not there yet: a new file
    assert readable_before(old, tools, space) is None  # already unreadable
    assert readable_before(text, tools, space) is None  # no format code knows
    # a file the task removed is left removed
    (tmp_path / "ok.json").write_text("{}")
    kept = readable_before({**old, "arguments": {"path": "ok.json"}}, tools, space)
    assert kept is not None
    (tmp_path / "ok.json").unlink()
    assert put_back_if_broken(kept, space) is None and not (tmp_path / "ok.json").exists()
