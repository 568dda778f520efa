"""What vouches for each deliverable (SPEC section 1): a check of code, or the judge's word.

A run says, in its state, its output and its summary, which files it delivered and whether a
check of code reads each; the tools may be the built-in ones or a caller's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.facts.deliverables import deliverable_evidence
from phasegraph.nodes.deps import workspace_settings
from phasegraph.tools.builtin import workspace_tools
from phasegraph.tools.workspace import Workspace

from scripts import SUMMARY, judgement, phases, round_plan

WRITE = round_plan(("w", "write_file", {"path": "out.txt", "content": "hello"}))
GOAL = {"core_goal": "write the greeting", "requirements": [], "complexity": "simple"}


def invoke(tmp_path: Path, request: str, checks: list[str], **kw: Any) -> Any:
    script = {
        "request_analyser": [GOAL],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [kw.pop("plan", WRITE)],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }
    graph = build_graph(model=ScriptedChatModel(script=script), checkpointer=InMemorySaver(), **kw)
    return graph.invoke({"request": request, "checks": checks},
                        {"configurable": {"thread_id": "t"}},
                        context=Context(workspace=str(tmp_path)))  # fmt: skip


def test_a_file_no_check_reads_is_delivered_on_the_judges_word(tmp_path: Path) -> None:
    out = invoke(tmp_path, "greet the reader", [])
    assert out["status"] == "completed" and (tmp_path / "out.txt").read_text() == "hello"
    assert out["evidence"] == {
        "verified": False,
        "files": [{"path": "out.txt", "vouched_by": "judge", "checks": [], "failing": [],
                   "exists": True}],
    }  # fmt: skip
    assert "out.txt rests on the judge's word alone" in out["final_summary"]


def test_a_check_that_pins_the_whole_content_vouches_for_it(tmp_path: Path) -> None:
    out = invoke(tmp_path, "greet the reader", ["equals:out.txt:hello"])
    assert out["status"] == "completed" and out["evidence"]["verified"] is True
    (only,) = out["evidence"]["files"]
    assert only["vouched_by"] == "checks" and only["checks"] == ["equals:out.txt:hello"]
    assert "out.txt checked by code (equals:out.txt:hello)" in out["final_summary"]


def test_a_check_that_the_file_is_there_vouches_only_for_its_presence(tmp_path: Path) -> None:
    out = invoke(tmp_path, "greet the reader", ["exists:out.txt"])
    assert out["status"] == "completed" and out["evidence"]["verified"] is False
    assert out["evidence"]["files"][0]["vouched_by"] == "presence"
    assert "its content rests on the judge's word alone" in out["final_summary"]


def test_a_file_the_request_names_and_the_run_never_wrote_is_said_missing(tmp_path: Path) -> None:
    out = invoke(tmp_path, "write the greeting to greeting.md", [])
    files = {f["path"]: f for f in out["evidence"]["files"]}
    assert files["greeting.md"]["exists"] is False and out["evidence"]["verified"] is False
    assert "greeting.md is not there" in out["final_summary"]
    # an input the request names, there before the run and left alone, is not a deliverable
    (tmp_path / "names.txt").write_text("ann\n")
    out = invoke(tmp_path, "greet everyone in names.txt", [])
    assert [f["path"] for f in out["evidence"]["files"]] == ["out.txt"]


def test_a_callers_tool_that_declares_its_file_is_held_to_the_same_evidence(
    tmp_path: Path,
) -> None:
    @tool
    def save_note(name: str, body: str) -> str:
        """Save a note under the workspace."""
        (tmp_path / name).write_text(body)
        return f"saved {name}"

    save_note.metadata = {"writes": "name"}
    plan = round_plan(("s", "save_note", {"name": "note.txt", "body": "remember"}))
    out = invoke(tmp_path, "keep a note", [], plan=plan, tools=[save_note])
    assert [(f["path"], f["vouched_by"]) for f in out["evidence"]["files"]] == [
        ("note.txt", "judge")
    ]
    (tmp_path / "note.txt").unlink()  # a check that held before the work vouches for nothing
    out = invoke(tmp_path, "keep a note", ["equals:note.txt:remember"], plan=plan,
                 tools=[save_note])  # fmt: skip
    assert out["evidence"]["verified"] is True


def test_a_run_without_a_deliverable_file_rests_on_its_checks_or_the_judge(
    tmp_path: Path,
) -> None:
    @tool
    def ping(host: str) -> str:
        """Say whether a host answers."""
        return f"{host} answers"

    ping.metadata = {"read_only": True}
    plan = round_plan(("p", "ping", {"host": "db"}))
    out = invoke(tmp_path, "see whether db answers", [], plan=plan, tools=[ping])
    assert out["evidence"] == {"verified": False, "files": []}
    assert "no check reads a result of the work: the judge's word" in out["final_summary"]


def test_a_command_check_reads_a_file_in_part_at_most(tmp_path: Path) -> None:
    out = invoke(tmp_path, "greet the reader", ["cmd:cat out.txt"])  # cat succeeds on any file
    assert out["status"] == "completed" and out["evidence"]["verified"] is False
    assert out["evidence"]["files"][0]["vouched_by"] == "presence"
    (tmp_path / "out.txt").unlink()  # else the check holds before the work (see below)
    # its output holding a text says no more of the file than contains: does
    out = invoke(tmp_path, "greet the reader", ["cmd:cat out.txt => hello"])
    assert out["evidence"]["files"][0]["vouched_by"] == "partial"
    assert out["evidence"]["verified"] is False


def test_a_failing_check_beside_a_passing_one_is_not_verified(tmp_path: Path) -> None:
    out = invoke(tmp_path, "greet the reader", ["contains:out.txt:hello", "contains:out.txt:bye"])
    assert out["status"] == "incomplete" and out["evidence"]["verified"] is False
    assert out["evidence"]["files"][0]["failing"] == ["contains:out.txt:bye"]


def test_a_check_on_an_input_makes_it_a_deliverable_not_a_proof(tmp_path: Path) -> None:
    (tmp_path / "input.txt").write_text("")
    plan = round_plan(("r", "list_files", {"path": "."}))
    out = invoke(tmp_path, "look at the folder", ["exists:input.txt"], plan=plan)
    assert out["evidence"]["verified"] is False
    assert [(f["path"], f["vouched_by"]) for f in out["evidence"]["files"]] == [
        ("input.txt", "presence")
    ]


def facts_state(tmp_path: Path, **values: Any) -> Any:
    result = {"id": "w", "tool": "write_file", "status": "ok", "output": "wrote",
              "arguments": {"path": "out.txt", "content": "hello"}}  # fmt: skip
    state: dict[str, Any] = {
        "request": "greet",
        "structured_request": GOAL,
        "new_files": [],
        "rounds": [{"results": [result]}],
        "checks": [{"id": "c1", "kind": "equals", "path": "out.txt", "text": "hello",
                    "label": "equals:out.txt:hello", "passed": True, "source": "caller"}],
    }  # fmt: skip
    state.update(values)
    (tmp_path / "out.txt").write_text("hello")
    space = Workspace(str(tmp_path))
    settings = workspace_settings(Context(workspace=str(tmp_path)))
    tools = {t.name: t for t in workspace_tools(settings)}
    return state, tools, space


def test_verified_needs_what_the_run_knew_at_its_start_and_writes_inside(tmp_path: Path) -> None:
    state, tools, space = facts_state(tmp_path)
    assert deliverable_evidence(state, tools, space)["verified"] is True
    # a thread analysed before new_files was recorded cannot say which named files are new
    assert deliverable_evidence({**state, "new_files": None}, tools, space)["verified"] is False
    outside = {"id": "x", "tool": "write_file", "status": "ok", "output": "wrote",
               "arguments": {"path": "../elsewhere.txt", "content": "x"}}  # fmt: skip
    rounds = [{"results": [*state["rounds"][0]["results"], outside]}]
    assert deliverable_evidence({**state, "rounds": rounds}, tools, space)["verified"] is False


def test_a_scratch_file_written_and_removed_is_not_a_deliverable(tmp_path: Path) -> None:
    state, tools, space = facts_state(tmp_path)
    scratch = {"id": "s", "tool": "write_file", "status": "ok", "output": "wrote",
               "arguments": {"path": "scratch.txt", "content": "x"}}  # fmt: skip
    rounds = [{"results": [*state["rounds"][0]["results"], scratch]}]
    found = deliverable_evidence({**state, "rounds": rounds}, tools, space)
    assert [f["path"] for f in found["files"]] == ["out.txt"] and found["verified"] is True
    # unless the request names it: then its absence is news
    named = deliverable_evidence({**state, "rounds": rounds, "new_files": ["scratch.txt"]},
                                 tools, space)  # fmt: skip
    assert {f["path"]: f["exists"] for f in named["files"]} == {"out.txt": True,
                                                               "scratch.txt": False}  # fmt: skip
    assert named["verified"] is False


def test_a_check_that_held_before_the_work_does_not_vouch_for_it(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("hello and a line to delete\n")
    # the caller's check holds before any work, so it shows nothing of what the work did
    out = invoke(tmp_path, "greet the reader", ["contains:in.txt:hello"])
    assert out["status"] == "completed" and out["checks"][0]["held_before"] is True
    vouched = {f["path"]: f["vouched_by"] for f in out["evidence"]["files"]}
    assert vouched == {"out.txt": "judge", "in.txt": "presence"}
    assert out["evidence"]["verified"] is False
    assert "its content rests on the judge's word alone" in out["final_summary"]


def _check(kind: str, **fields: Any) -> dict[str, Any]:
    return {"id": "c", "kind": kind, "path": "out.txt", "text": "", "pattern": "", "argv": [],
            "expect": "", "label": f"{kind}:out.txt", "passed": True, "source": "caller",
            **fields}  # fmt: skip


def _vouched(tmp_path: Path, text: str, *checks: dict[str, Any]) -> tuple[str, bool]:
    state, tools, space = facts_state(tmp_path, checks=list(checks))
    (tmp_path / "out.txt").write_text(text)
    found = deliverable_evidence(state, tools, space)
    return found["files"][0]["vouched_by"], found["verified"]


def test_a_text_found_in_a_file_vouches_for_it_only_in_part(tmp_path: Path) -> None:
    # one value of several asked for, written alone: every check of a text in it passes
    one = _check("contains", text="ann@example.net")
    assert _vouched(tmp_path, "ann@example.net\n", one) == ("partial", False)
    minutes = "# Minutes\n\nThe budget passed.\n- for: 7\n"
    assert _vouched(tmp_path, minutes, _check("contains", text="budget")) == ("partial", False)
    lines = _check("matches", pattern=r"^\w+ = \d+$")
    assert _vouched(tmp_path, "x = 1\ny = 2\n", lines) == ("partial", False)
    # the lines a file kept and a line added: an edit in the wrong place passes them too
    kept = _check("keeps", text="oak\nelm\n", held_before=True)
    added = _check("contains", text="ash")
    assert _vouched(tmp_path, "ash\noak\nelm\n", kept, added) == ("partial", False)
    # a kept line alone says nothing of the change asked
    assert _vouched(tmp_path, "oak\nelm\n", kept) == ("presence", False)


def test_a_check_that_pins_the_whole_text_vouches_for_the_file(tmp_path: Path) -> None:
    whole = _check("equals", text="oak\nelm\nash")
    assert _vouched(tmp_path, "oak\nelm\nash\n", whole) == ("checks", True)
    # beside checks of a text, the whole text is what vouches
    added = _check("contains", text="ash")
    assert _vouched(tmp_path, "oak\nelm\nash\n", added, whole) == ("checks", True)
    minutes = "# Minutes\n\nThe budget passed.\n"
    assert _vouched(tmp_path, minutes, _check("copy", of="minutes.md")) == ("checks", True)
    # a whole text the file held before the work says nothing of the work
    held = _check("equals", text="oak", held_before=True)
    assert _vouched(tmp_path, "oak\n", held) == ("presence", False)


def test_a_partly_checked_file_is_said_so_in_the_summary(tmp_path: Path) -> None:
    plan = round_plan(("w", "write_file", {"path": "out.txt", "content": "hello\nworld\n"}))
    out = invoke(tmp_path, "greet the reader", ["contains:out.txt:hello"], plan=plan)
    assert out["status"] == "completed" and out["evidence"]["verified"] is False
    assert out["evidence"]["files"][0]["vouched_by"] == "partial"
    assert "out.txt partly checked by code (contains:out.txt:hello)" in out["final_summary"]
