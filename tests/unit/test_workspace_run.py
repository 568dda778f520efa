"""Whole runs on the built-in workspace tools, and users' own tools beside them."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, aresume, build_graph
from phasegraph.errors import ConfigurationError
from phasegraph.nodes.deps import Deps
from phasegraph.nodes.holds import failed_before
from phasegraph.tools.builtin import Toolbox

from scripts import ANALYSIS, CONTINUE, SUMMARY, final_state, judgement, phases, round_plan


def results_by_task(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["task_id"]: r for rnd in out["rounds"] for r in rnd["results"]}


def run_in(ws: Path, script: dict[str, list[Any]], **kw: Any) -> dict[str, Any]:
    graph = build_graph(model=ScriptedChatModel(script=script), checkpointer=InMemorySaver(), **kw)
    return final_state(
        graph,
        {"request": "tidy the workspace"},
        {"configurable": {"thread_id": "ws"}},
        context=Context(workspace=str(ws)),
    )


def test_a_run_reads_edits_and_writes_and_the_workspace_ends_as_expected(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "a.md").write_text("# A\nTODO: fix\n")
    (ws / "docs" / "b.md").write_text("# B\nall good\n")
    report = "# Report\n\n- docs/a.md: fixed\n- docs/b.md: fine\n"
    script = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1", rounds=2)],
        "plan_tool_call": [
            round_plan(
                ("ls", "list_files", {"path": "docs"}),
                ("ra", "read_file", {"path": "docs/a.md"}),
                ("todo", "search_text", {"pattern": "TODO"}),
            ),
            round_plan(
                (
                    "fix",
                    "edit_file",
                    {"path": "docs/a.md", "old_text": "TODO: fix", "new_text": "fixed"},
                ),
                ("rep", "write_file", {"path": "report.md", "content": report}),
            ),
        ],
        "judge_tasks": [CONTINUE, judgement()],
        "summarizer": [SUMMARY],
    }
    out = run_in(ws, script)
    assert out["status"] == "completed" and out["summary"]
    results = results_by_task(out)
    assert {k: r["status"] for k, r in results.items()} == dict.fromkeys(
        ["ls", "ra", "todo", "fix", "rep"], "ok"
    )
    assert results["ls"]["output"] == "docs/a.md\ndocs/b.md"
    assert results["ra"]["output"] == "# A\nTODO: fix\n"
    assert results["todo"]["output"] == "docs/a.md:2: TODO: fix\n[1 matching line]"
    files = {str(p.relative_to(ws)): p.read_text() for p in ws.rglob("*") if p.is_file()}
    assert files == {
        "docs/a.md": "# A\nfixed\n",
        "docs/b.md": "# B\nall good\n",
        "report.md": report,
    }


def test_research_work_cannot_reach_the_write_tools(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = {
        "request_analyser": [{**ANALYSIS, "task_type": "research"}],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [round_plan(("w", "write_file", {"path": "x.md", "content": "x"}))],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }
    out = run_in(ws, script)
    assert results_by_task(out)["w"]["status"] == "refused"
    assert list(ws.iterdir()) == []
    assert out["tool_violations"][0]["tool"] == "write_file"


def test_a_symlink_made_during_a_run_is_refused(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "secret.txt"
    ws.mkdir()
    outside.write_text("do not read")

    @tool
    def make_link(name: str) -> str:
        """Make a symlink (the test's stand-in for anything that plants one mid-run)."""
        os.symlink(outside, ws / name)
        return "made"

    script = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1", rounds=3)],
        "plan_tool_call": [
            round_plan(("mk", "make_link", {"name": "notes.txt"})),
            round_plan(("rd", "read_file", {"path": "notes.txt"})),
            round_plan(("wr", "write_file", {"path": "notes.txt", "content": "overwrite"})),
        ],
        "judge_tasks": [CONTINUE, CONTINUE, judgement()],
        "summarizer": [SUMMARY],
    }
    out = run_in(ws, script, tools=[make_link], builtin_tools=True)
    results = results_by_task(out)
    assert results["mk"]["status"] == "ok"
    assert (
        results["rd"]["status"] == "failed" and "outside the workspace" in results["rd"]["output"]
    )
    # the first write failed; the plan repeated after the script is held back (failed_before)
    writes = [r for rnd in out["rounds"] for r in rnd["results"] if r["task_id"] == "wr"]
    assert writes[0]["status"] == "failed"
    assert all(r["status"] == "skipped" for r in writes[1:])
    assert outside.read_text() == "do not read"
    assert "do not read" not in str(out)


def test_a_users_async_tool_works_in_a_run(tmp_path: Path) -> None:
    calls: list[str] = []

    @tool
    async def fetch_note(key: str) -> str:
        """Fetch a note by key (async)."""
        await asyncio.sleep(0.01)
        calls.append(key)
        return f"note {key}"

    script = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [
            round_plan(("n1", "fetch_note", {"key": "k1"}), ("n2", "fetch_note", {"key": "k2"}))
        ],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }
    out = run_in(tmp_path, script, tools=[fetch_note])
    results = results_by_task(out)
    assert results["n1"] == {**results["n1"], "status": "ok", "output": "note k1"}
    assert results["n2"]["output"] == "note k2" and sorted(calls) == ["k1", "k2"]


def test_the_async_tool_also_works_when_the_graph_runs_async(tmp_path: Path) -> None:
    @tool
    async def shout(text: str) -> str:
        """Upper-case the text (async)."""
        return text.upper()

    script = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [round_plan(("s", "shout", {"text": "hi"}))],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=[shout], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "a"}}
    asyncio.run(graph.ainvoke({"request": "x"}, config, context=Context()))
    out = asyncio.run(graph.aget_state(config)).values
    assert results_by_task(out)["s"]["output"] == "HI"


def test_no_tools_given_means_the_builtin_tools_and_tools_given_means_only_those(
    tmp_path: Path,
) -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    def prompt_tools(**kw: Any) -> str:
        model = ScriptedChatModel(
            script={
                "request_analyser": [ANALYSIS],
                "phase_planner": [phases("p1")],
                "plan_tool_call": [round_plan(("p", "list_files", {}))],
                "judge_tasks": [judgement()],
                "summarizer": [SUMMARY],
            }
        )
        graph = build_graph(model=model, checkpointer=InMemorySaver(), **kw)
        final_state(
            graph,
            {"request": "x"},
            {"configurable": {"thread_id": "p"}},
            context=Context(workspace=str(tmp_path)),
        )
        return str(model.calls_of("plan_tool_call")[0])

    builtin = prompt_tools()
    assert "read_file(" in builtin and "ping(" not in builtin
    own = prompt_tools(tools=[ping])
    assert "ping(" in own and "read_file(" not in own
    both = prompt_tools(tools=[ping], builtin_tools=True)
    assert "ping(" in both and "read_file(" in both


def test_a_user_tool_named_like_a_builtin_is_a_clear_error() -> None:
    @tool
    def read_file(path: str) -> str:
        """Shadow the built-in."""
        return path

    with pytest.raises(ConfigurationError, match="names of built-in tools"):
        build_graph(tools=[read_file], builtin_tools=True)


def test_a_write_that_failed_is_not_run_again_until_something_has_changed(tmp_path: Path) -> None:
    # the 1.5B model planned an edit whose old text was gone three rounds running, each a step
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "config.ini").write_text("name = demo\n")
    edit = ("e", "edit_file", {"path": "config.ini", "old_text": "debug", "new_text": "x"})
    script = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1", rounds=4)],
        "plan_tool_call": [
            round_plan(edit),
            round_plan(edit),
            round_plan(edit),  # asked again (`plan_gate.adds_nothing`), planned the same
            round_plan(
                ("w", "edit_file", {"path": "config.ini", "old_text": "name", "new_text": "debug"})
            ),
            round_plan(edit),
        ],
        "judge_tasks": [CONTINUE] * 3 + [judgement()],
        "summarizer": [SUMMARY],
    }
    out = run_in(ws, script)
    first, again, write, after = (r["results"][0] for r in out["rounds"][:4])
    assert first["status"] == "failed" and "was not found" in first["output"]
    assert again["status"] == "skipped"
    assert again["output"].startswith("not run: the same call failed before (WorkspaceError:")
    assert "nothing has changed since" in again["output"]
    assert write["status"] == "ok"
    # the other edit changed the file: the same edit may succeed now, and it runs
    assert after["status"] == "ok" and (ws / "config.ini").read_text() == "x = demo\n"


def test_what_holds_a_failed_write_back_and_what_releases_it(tmp_path: Path) -> None:
    tools = Deps(toolbox=Toolbox(None, builtin=True)).tools_for(Context(workspace=str(tmp_path)))

    def call(tool: str, **arguments: Any) -> dict[str, Any]:
        return {"id": tool, "task_id": tool, "tool": tool, "arguments": arguments}

    def ran(task: dict[str, Any], status: str, output: str = "done") -> dict[str, Any]:
        return {**task, "status": status, "output": output}

    edit = call("edit_file", path="a", old_text="b", new_text="c")
    read = call("read_file", path="later.txt")
    command = call("run_command", argv=["cat", "x"])
    refused = "WorkspaceError: old_text was not found in a; nothing was changed"

    def held(*earlier: dict[str, Any]) -> list[str]:
        return list(failed_before([edit, read, command], tools, list(earlier)))  # type: ignore[arg-type]

    assert held(ran(edit, "failed", refused)) == ["edit_file"]
    # a tool that writes no file may fail for a while (a service, a command's timing)
    assert held(ran(read, "failed", refused), ran(command, "failed", "exit code: 1")) == []
    # a failure a person may fix (a permission) is not the workspace's refusal
    assert held(ran(edit, "failed", "PermissionError: [Errno 13] denied")) == []
    # a read changes nothing; a call that may change things, and ran or may have, releases
    assert held(ran(edit, "failed", refused), ran(read, "ok")) == ["edit_file"]
    for status in ("ok", "timeout", "interrupted"):
        assert held(ran(edit, "failed", refused), ran(command, status)) == []
    other = call("write_file", path="b", content="x")
    assert held(ran(edit, "failed", refused), ran(other, "ok")) == []


def _running(argument: str) -> bool:
    """Whether a process of this machine runs with ``argument`` on its command line."""
    for entry in Path("/proc").iterdir():
        try:
            if argument.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                return True
        except OSError:
            continue
    return False


@pytest.mark.parametrize("how", ["astream", "aresume"])
def test_a_cancelled_async_run_stops_the_command_its_task_runs(tmp_path: Path, how: str) -> None:
    # a server cancels a run by cancelling its asyncio task, as asyncio.wait_for does: a
    # command still running must not go on working in the workspace, unseen
    seconds = f"{7 + int.from_bytes(os.urandom(2), 'big') / 1e5:.5f}"  # this test's own process
    script = {
        "request_analyser": [{**ANALYSIS, "task_type": "data"}],  # work that may run programs
        "phase_planner": [phases("p1")],
        "plan_tool_call": [round_plan(("nap", "run_command", {"argv": ["sleep", seconds]}))],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }
    graph = build_graph(model=ScriptedChatModel(script=script), checkpointer=InMemorySaver())
    review = "plan" if how == "aresume" else "none"
    context = Context(workspace=str(tmp_path), command_sandbox="checks", task_timeout_s=30,
                      allowed_commands=["sleep"], review=review)  # fmt: skip
    config: Any = {"configurable": {"thread_id": how}}

    async def cancel_once_started() -> None:
        if how == "aresume":
            await graph.ainvoke({"request": "nap"}, config, context=context)  # the plan's pause
            work = aresume(graph, config, {"action": "approve"}, context=context)
        else:
            work = graph.ainvoke({"request": "nap"}, config, context=context)
        running = asyncio.ensure_future(work)
        for _ in range(500):  # until the command runs
            if _running(seconds):
                break
            await asyncio.sleep(0.02)
        assert _running(seconds)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        for _ in range(40):  # it is stopped at the command's next look, 50 ms apart
            if not _running(seconds):
                break
            await asyncio.sleep(0.05)
        assert not _running(seconds)

    asyncio.run(cancel_once_started())


def test_callbacks_see_each_task_once_in_sync_and_async_runs(tmp_path: Path) -> None:
    from langchain_core.callbacks import BaseCallbackHandler

    class Starts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.names: list[str] = []

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            self.names.append(str(kwargs.get("name")))

    script = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [
            round_plan(
                ("w", "write_file", {"path": "a.txt", "content": "a"}),
                ("b", "write_file", {"path": "b.txt", "content": "b"}),
            )
        ],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }
    for runs in ("sync", "async"):
        graph = build_graph(model=ScriptedChatModel(script=script), checkpointer=InMemorySaver())
        seen = Starts()
        config: Any = {"configurable": {"thread_id": runs}, "callbacks": [seen]}
        context = Context(workspace=str(tmp_path / runs))
        (tmp_path / runs).mkdir()
        if runs == "sync":
            graph.invoke({"request": "write a.txt"}, config, context=context)
        else:
            asyncio.run(graph.ainvoke({"request": "write a.txt"}, config, context=context))
        assert seen.names.count("run_task") == 2, (runs, seen.names)
