"""Workspaces as an attacker or an odd tree leaves them: FIFOs, deep trees, long names.

A path that is not a regular file is refused without blocking wherever a file is read (the
tools, the request analysis, the checks, the facts of a round); a tree of any depth is walked;
a name as long as the file system allows is written.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.facts.files import workspace_files
from phasegraph.nodes.deps import workspace_settings
from phasegraph.tools import run_tool
from phasegraph.tools.builtin import workspace_tools
from phasegraph.tools.workspace import Workspace

from scripts import ANALYSIS, SUMMARY, final_state, judgement, phases, round_plan

#: Far above what any of these calls takes; a call still running then is waiting on a FIFO.
STUCK_S = 20.0


def finishes(call: Callable[[], Any]) -> Any:
    """``call()``'s value, failing the test (not hanging it) if the call never returns."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(STUCK_S)
    assert not worker.is_alive(), "the call blocked (a FIFO opened to read?)"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n")
    os.mkfifo(root / "pipe.txt")
    return root


def tools_of(root: Path) -> dict[str, Any]:
    context = Context(workspace=str(root))
    return {t.name: t for t in workspace_tools(workspace_settings(context))}


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"path": "pipe.txt"}),
        ("search_text", {"pattern": "x", "path": "pipe.txt"}),
        ("list_files", {"path": "pipe.txt"}),
        ("edit_file", {"path": "pipe.txt", "old_text": "a", "new_text": "b"}),
        ("write_file", {"path": "pipe.txt/x", "content": "b"}),
    ],
)
def test_a_fifo_is_refused_by_the_file_tools_without_blocking(
    ws: Path, tool: str, args: dict[str, Any]
) -> None:
    ok, text, *_ = finishes(lambda: run_tool(tools_of(ws)[tool], args, 2000))
    assert not ok and ("not a regular file" in text or "not a directory" in text), text


def test_a_search_of_a_folder_skips_a_fifo(ws: Path) -> None:
    search = tools_of(ws)["search_text"]
    ok, text, *_ = finishes(lambda: run_tool(search, {"pattern": "alpha"}, 2000))
    assert ok and "notes.txt:1: alpha" in text and "1 binary, unreadable" in text


def test_a_run_whose_request_and_checks_name_a_fifo_ends(ws: Path) -> None:
    # the analysis reads files the request names, the checks read theirs, the facts read what
    # the round touched: none of them may wait on the FIFO
    script = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [round_plan(("r", "read_file", {"path": "pipe.txt"}))],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }
    graph = build_graph(model=ScriptedChatModel(script=script), checkpointer=InMemorySaver())
    out = finishes(
        lambda: final_state(graph, 
            {"request": "Copy pipe.txt to copy.txt", "checks": ["contains:pipe.txt:x"]},
            {"configurable": {"thread_id": "fifo"}},
            context=Context(workspace=str(ws)),
        )
    )
    assert out["status"] != "completed" and out["summary"]
    check = out["checks"][0]
    assert check["passed"] is False and "not a regular file" in check["detail"]


def _deep(root: Path, levels: int) -> str:
    """A chain of ``levels`` one-letter folders with a file at the bottom; its relative path."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("deep\n")
    finally:
        os.close(fd)
    return "/".join(["d"] * levels + ["leaf.txt"])


def _remove_deep(root: Path, levels: int) -> None:
    """Remove the chain `_deep` made, bottom up (shutil.rmtree recurses and would fail)."""
    fds = [os.open(root, os.O_RDONLY)]
    for _ in range(levels):
        fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
    os.unlink("leaf.txt", dir_fd=fds[-1])
    for parent in reversed(fds[:-1]):
        os.close(fds.pop())
        os.rmdir("d", dir_fd=parent)
    os.close(fds.pop())


@pytest.fixture
def deep(ws: Path) -> Any:
    leaf = _deep(ws, 1100)
    yield leaf
    _remove_deep(ws, 1100)


def test_a_tree_deeper_than_pythons_recursion_limit_is_walked(ws: Path, deep: str) -> None:
    leaf = deep
    tools = tools_of(ws)
    ok, listing, *_ = run_tool(tools["list_files"], {}, 10_000_000)
    assert ok and listing.endswith("[... 603 more entries not listed ...]"), listing[-200:]
    ok, found, *_ = run_tool(tools["search_text"], {"pattern": "deep"}, 10_000_000)
    assert ok and found.startswith(f"{leaf}:1: deep")
    # what the judge and the plan are shown of the workspace, as a round's facts compute it
    assert "Files in the workspace" in workspace_files(Context(workspace=str(ws)), tools)


def test_a_name_at_the_file_systems_limit_is_written_and_replaced(ws: Path) -> None:
    name = "n" * 251 + ".txt"  # 255 bytes, the limit of ext4 and most others
    space = Workspace(str(ws))
    assert space.write_file(name, "one") == f"wrote 3 bytes to {name}"
    assert space.write_file(name, "two") == f"wrote 3 bytes to {name}"
    assert (ws / name).read_text() == "two"
    assert sorted(p.name for p in ws.iterdir() if p.name.startswith(".")) == []


def test_a_symlink_named_git_is_never_written_through(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "elsewhere").mkdir(parents=True)
    os.symlink("elsewhere", root / ".git")
    tools = tools_of(root)
    ok, out, *_ = run_tool(tools["write_file"], {"path": ".git/config", "content": "[core]"}, 500)
    assert not ok and "never written" in out and not (root / "elsewhere" / "config").exists()
    ok, out, *_ = run_tool(tools["write_file"], {"path": "elsewhere/notes", "content": "fine"}, 500)
    assert ok and (root / "elsewhere" / "notes").read_text() == "fine", out
