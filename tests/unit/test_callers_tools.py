"""What a run says is done holds for the caller's own tools (SPEC sections 1 and 5).

Each tool here is the caller's: policy reads what it declares of itself (``metadata``), never
its name, and a judge's or a replanner's "done" is not a way past the facts.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph, resume
from phasegraph.errors import ConfigurationError
from phasegraph.guards import default_guards

from scripts import final_state, judgement, make_script, phases, round_plan

DONE = judgement("end_phase", completed=True, rate=1.0)


@tool
def http_get(url: str) -> str:
    """Fetch a URL."""
    raise ConnectionError(f"{url} is unreachable")


@tool
def calc(expression: str) -> str:
    """Work out an arithmetic expression."""
    return "42"


def run(
    tools: list[BaseTool],
    plans: list[dict[str, Any]],
    judges: list[dict[str, Any]],
    ws: Path,
    **options: Any,
) -> dict[str, Any]:
    """A one-phase run of the caller's tools alone, its plans and judgements scripted."""
    steps = make_script(
        phase_planner=[phases("p1", rounds=3)],
        plan_tool_call=plans,
        judge_tasks=judges,
        replanner=options.pop("replanner", [{"status": "done", "response": "all done"}]),
    )
    graph = build_graph(
        model=ScriptedChatModel(script=steps),
        tools=tools,
        checkpointer=InMemorySaver(),
        **{k: options.pop(k) for k in ("guards",) if k in options},
    )
    config = {"configurable": {"thread_id": "own-tools"}}
    given: dict[str, Any] = {"request": "fetch the page and work out the answer"}
    if "checks" in options:
        given["checks"] = options.pop("checks")
    context = Context(workspace=str(ws), review="none", max_replans=1, **options)
    return final_state(graph, given, config, context=context)


def test_a_replan_that_calls_the_work_done_does_not_complete_a_phase_that_did_not(
    tmp_path: Path,
) -> None:
    """Nothing replaced the phase: it ended short, and the run says so."""
    fetch = round_plan(("t1", "http_get", {"url": "u"}))
    out = run([http_get], [fetch], [judgement("replan", completed=False, rate=0.2)], tmp_path)
    (outcome,) = out["phase_outcomes"]
    assert outcome["ended_by"] == "replan_done" and not outcome["completed"]
    assert out["status"] == "incomplete"
    assert any("a replan called the work done" in s for s in out["shortfalls"])
    # a judge held by a guard each round, until the stalled phase is replanned, and done
    out = run([http_get], [fetch], [DONE], tmp_path)
    assert all(r["judgement"]["overridden"] for r in out["rounds"])
    assert [o["ended_by"] for o in out["phase_outcomes"]] == ["replan_done"]
    assert out["status"] == "incomplete"


def test_a_replan_that_calls_the_work_done_ends_the_phases_it_leaves_unrun_short(
    tmp_path: Path,
) -> None:
    """Phases a replan put in place, or a plan's own, that never ran: not completed either."""
    fetch = round_plan(("t1", "http_get", {"url": "u"}))
    replans = [{"status": "replanned", "phases": [phases("p9")["phases"][0]]},
               {"status": "done", "response": "all done"}]  # fmt: skip
    asks = [judgement("replan", False, 0.2)]
    steps = make_script(phase_planner=[phases("p1", rounds=3)], plan_tool_call=[fetch],
                        judge_tasks=asks, replanner=replans)  # fmt: skip
    graph = build_graph(model=ScriptedChatModel(script=steps), tools=[http_get],
                        checkpointer=InMemorySaver())  # fmt: skip
    config = {"configurable": {"thread_id": "unrun"}}
    context = Context(workspace=str(tmp_path), review="plan+replan")
    final_state(graph, {"request": "fetch the page"}, config, context=context)
    resume(graph, config, {"action": "approve"}, context=context)  # the plan
    out = resume(graph, config, {"action": "modify", "feedback": "rethink"}, context=context)
    assert [(o["phase_id"], o["ended_by"]) for o in out["phase_outcomes"]] == [
        ("p1", "replanned"),  # replaced by p9, which carries its work
        ("p9", "replan_done"),
    ]
    assert out["status"] == "incomplete"
    assert out["shortfalls"] == [
        "phase phase p9 (p9) ended short: a replan called the work done before it completed, "
        "before any round of it ran"
    ]
    # each phase is told once: ended, not also still to do
    assert out["phase_index"] == len(out["phases"])
    from phasegraph.nodes.summarize import _phase_lines

    ended, todo = _phase_lines(out)  # type: ignore[arg-type]
    assert len(ended) == 2 and todo == []


def test_a_replan_with_new_phases_leaves_the_phase_it_replaced_out_of_the_shortfalls(
    tmp_path: Path,
) -> None:
    fetch, work = round_plan(("t1", "http_get", {"url": "u"})), round_plan(("t2", "calc", {}))
    replaced = [{"status": "replanned", "phases": [phases("p2")["phases"][0]]}]
    out = run(
        [http_get, calc],
        [fetch, work | {"tasks": [{**work["tasks"][0], "arguments": {"expression": "6*7"}}]}],
        [judgement("replan", False, 0.2), DONE],
        tmp_path,
        replanner=replaced,
    )
    assert [o["ended_by"] for o in out["phase_outcomes"]] == ["replanned", "completed"]
    assert out["status"] == "completed" and out["shortfalls"] == []


def test_a_phase_in_which_nothing_succeeded_cannot_complete_whatever_the_guards(
    tmp_path: Path,
) -> None:
    fetch = round_plan(("t1", "http_get", {"url": "u"}))
    for guards in ([], [default_guards(False)[0]]):  # replaced, without `nothing_succeeded`
        out = run([http_get], [fetch], [DONE], tmp_path, guards=guards)
        (outcome,) = out["phase_outcomes"]
        assert outcome["completed"]  # no guard held the judge, as the caller chose
        assert out["status"] == "incomplete"
        (short,) = out["shortfalls"]
        assert short.startswith("phase phase p1 (p1) completed, but none of its tasks succeeded")


@pytest.mark.parametrize(
    "declared", [{"read_only": False}, {"destructiveHint": True}, {"readOnlyHint": False}]
)
def test_a_change_that_never_ran_keeps_the_phase_open_for_any_tool_that_declares_changes(
    tmp_path: Path, declared: dict[str, Any]
) -> None:
    @tool
    def kv_put(key: str, value: str) -> str:
        """Store a value under a key."""
        raise PermissionError("the store is read-only")

    kv_put.metadata = declared
    both = round_plan(("t1", "kv_put", {"key": "k", "value": "v"}), ("t2", "calc", {}))
    both["tasks"][1]["arguments"] = {"expression": "6*7"}
    out = run([kv_put, calc], [both], [DONE], tmp_path)
    first = out["rounds"][0]["judgement"]
    assert first["overridden"] == "no file changed: the writes planned (t1 failed) did not run"
    assert out["status"] != "completed"


def _document_tools(ws: Path, reads: dict[str, Any]) -> list[BaseTool]:
    @tool
    def read_doc(filename: str) -> str:
        """Read a document."""
        return (ws / filename).read_text()

    @tool
    def save_doc(filename: str, text: str) -> str:
        """Replace a document's text."""
        (ws / filename).write_text(text)
        return f"saved {filename}"

    read_doc.metadata = {"read_only": True, "idempotent": True, **reads}
    save_doc.metadata = {"writes": "filename", "idempotent": True}
    return [read_doc, save_doc]


def test_a_read_is_known_by_the_argument_its_tool_declares_it_reads(tmp_path: Path) -> None:
    read = round_plan(("t1", "read_doc", {"filename": "doc.txt"}))
    save = round_plan(("t2", "save_doc", {"filename": "doc.txt", "text": "new"}))
    plans, judges = [read, save], [judgement("continue_phase", False, 0.5), DONE]
    (tmp_path / "doc.txt").write_text("old")
    tools = _document_tools(tmp_path, {"reads": "filename"})
    out = run(tools, plans, judges, tmp_path)
    assert [r["status"] for r in out["rounds"][1]["results"]] == ["ok"]
    assert (tmp_path / "doc.txt").read_text() == "new" and out["status"] == "completed"
    # undeclared, the read is not known as one of doc.txt: the save over it is held
    (tmp_path / "doc.txt").write_text("old")
    out = run(_document_tools(tmp_path, {}), plans, judges, tmp_path)
    assert "has not read it" in out["rounds"][1]["results"][0]["output"]
    assert (tmp_path / "doc.txt").read_text() == "old"


def test_a_tool_that_declares_it_writes_is_no_reader_whatever_else_it_declares(
    tmp_path: Path,
) -> None:
    @tool
    def put_note(path: str, text: str) -> str:
        """Write a note."""
        (tmp_path / path).write_text(text)
        return "written"

    put_note.metadata = {"read_only": True, "writes": "path"}
    (tmp_path / "note.txt").write_text("old")  # a reader of it would hold the write beside it
    note = round_plan(("t1", "put_note", {"path": "note.txt", "text": "hi"}))
    out = run([put_note], [note], [DONE], tmp_path)
    assert [r["status"] for r in out["rounds"][0]["results"]] == ["ok"]
    assert out["status"] == "completed" and (tmp_path / "note.txt").read_text() == "hi"


class Halted(BaseException):
    """An exception outside ``Exception``, as some libraries raise (gevent's Timeout)."""


@tool
async def async_cancelled(x: str) -> str:
    """An async client that was cancelled on its side."""
    raise asyncio.CancelledError("upstream cancelled")


@tool
def halted(x: str) -> str:
    """A library that raises outside Exception."""
    raise Halted("halted")


@tool
def interrupted(x: str) -> str:
    """A library that raises KeyboardInterrupt in its own thread."""
    raise KeyboardInterrupt("from the tool")


@pytest.mark.parametrize(("name", "error"), [("async_cancelled", "CancelledError"),
                                             ("halted", "Halted"),
                                             ("interrupted", "KeyboardInterrupt")])  # fmt: skip
def test_a_tool_that_raises_outside_exception_fails_at_once_naming_it(
    tmp_path: Path, name: str, error: str
) -> None:
    started = time.monotonic()
    call = round_plan(("t1", name, {"x": "a"}))
    out = run([async_cancelled, halted, interrupted], [call], [DONE], tmp_path, task_timeout_s=20)
    (result,) = out["rounds"][0]["results"]
    assert result["status"] == "failed" and result["output"].startswith(error)
    assert time.monotonic() - started < 10  # not the task's timeout of 20 s


def test_a_command_check_that_passed_before_the_work_verifies_nothing(tmp_path: Path) -> None:
    work = round_plan(("t1", "calc", {"expression": "6*7"}))
    out = run([calc], [work], [DONE], tmp_path, checks=["cmd:expr 6 * 7 => 42"])
    (check,) = out["checks"]
    assert check["passed"] is True and check["held_before"] is True
    assert out["status"] == "completed" and out["evidence"]["verified"] is False


def test_build_graph_refuses_guards_that_are_not_functions_and_a_lone_tool() -> None:
    with pytest.raises(ConfigurationError, match="guards are functions.*'checks_fail'"):
        build_graph(model=ScriptedChatModel(script={}), guards=["checks_fail"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="takes a list of functions"):
        build_graph(model=ScriptedChatModel(script={}), guards="checks_fail")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"the tool 'calc' alone: give \[calc\]"):
        build_graph(model=ScriptedChatModel(script={}), tools=calc)  # type: ignore[arg-type]
