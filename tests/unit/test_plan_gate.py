"""A plan that would add nothing is asked again once (`nodes.plan_gate`), and a gate never costs
the plan: the stage's call (`call_structured(gate=...)`) and whole runs on a real workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.cli.render import describe_event, show_text
from phasegraph.models.structured import call_structured
from phasegraph.nodes.deps import workspace_settings
from phasegraph.nodes.plan_gate import QUOTED_CHARS, adds_nothing
from phasegraph.state import RoundPlan, TaskResult
from phasegraph.tools.builtin import workspace_tools

from scripts import (
    ANALYSIS,
    CONTINUE,
    ECHO_ROUND,
    SUMMARY,
    final_state,
    judgement,
    phases,
    round_plan,
)

READ = ("read_file", {"path": "notes.txt"})
WRITE = ("write_file", {"path": "out.txt", "content": "hello"})
EDIT = ("edit_file", {"path": "out.txt", "old_text": "a", "new_text": "b"})


def tools(ws: Path) -> dict[str, BaseTool]:
    return {t.name: t for t in workspace_tools(workspace_settings(Context(workspace=str(ws))))}


def ran(
    call: tuple[str, dict[str, Any]], status: str = "ok", output: str = "hi", wave: int = 0
) -> TaskResult:
    return {
        "task_id": "t",
        "tool": call[0],
        "arguments": call[1],
        "status": status,  # type: ignore[typeddict-item]
        "output": output,
        "duration_s": 0.0,
        "wave": wave,
        "replayed": False,
    }


def plan_of(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"tool": name, "arguments": dict(arguments)} for name, arguments in calls]


def rounds(*results: TaskResult) -> list[list[TaskResult]]:
    """Each result a round of its own."""
    return [[r] for r in results]


def test_a_plan_of_reads_that_returned_and_nothing_changed_adds_nothing(tmp_path: Path) -> None:
    earlier = rounds(ran(READ, output="line one\nline two\n"))
    why = adds_nothing(plan_of(READ), tools(tmp_path), earlier)
    assert why is not None
    # the reason names the call and quotes, whole, what it returned
    assert "- read_file(path='notes.txt') returned:\nline one\nline two\nPlan the calls" in why
    # the same read twice in a plan is named once
    twice = adds_nothing(plan_of(READ, READ), tools(tmp_path), rounds(ran(READ)))
    assert twice is not None and twice.count("read_file(") == 1
    # an output the reason could not quote whole: the plan runs, the prompt may need it
    long = rounds(ran(READ, output="x" * QUOTED_CHARS))
    assert adds_nothing(plan_of(READ), tools(tmp_path), long) is None


def test_a_whole_file_write_of_the_same_bytes_with_nothing_since_adds_nothing(
    tmp_path: Path,
) -> None:
    assert adds_nothing(plan_of(WRITE), tools(tmp_path), rounds(ran(READ), ran(WRITE)))
    # another change since: the same write may now do something
    other = ("write_file", {"path": "out.txt", "content": "bye"})
    assert adds_nothing(plan_of(WRITE), tools(tmp_path), rounds(ran(WRITE), ran(other))) is None


def test_a_plan_adds_something_when_any_call_may(tmp_path: Path) -> None:
    ts = tools(tmp_path)
    # a new call beside the repeat
    assert adds_nothing(plan_of(READ, WRITE), ts, rounds(ran(READ))) is None
    # a write ran after the read (or may have: timed out, interrupted)
    for status in ("ok", "timeout", "interrupted"):
        assert adds_nothing(plan_of(READ), ts, rounds(ran(READ), ran(EDIT, status))) is None
    # the workspace refused a write: nothing changed; a command that failed may have changed
    # anything
    refused = ran(EDIT, "failed", "WorkspaceError: old_text was not found")
    assert adds_nothing(plan_of(READ), ts, rounds(ran(READ), refused)) is not None
    command = ran(("run_command", {"argv": ["make"]}), "failed", "exit code 2")
    assert adds_nothing(plan_of(READ), ts, rounds(ran(READ), command)) is None
    # the read failed before: it may succeed now (the execute holds judge failed calls)
    assert adds_nothing(plan_of(READ), ts, rounds(ran(READ, "failed"))) is None
    # an edit is not idempotent: the same edit again may change the file again
    assert adds_nothing(plan_of(EDIT), ts, rounds(ran(EDIT))) is None
    # the same tool, other arguments
    other = ("read_file", {"path": "notes.txt", "start_line": 2})
    assert adds_nothing(plan_of(other), ts, rounds(ran(READ))) is None
    assert adds_nothing([], ts, rounds(ran(READ))) is None


def test_calls_of_one_wave_ran_in_no_known_order(tmp_path: Path) -> None:
    ts = tools(tmp_path)
    command = ran(("run_command", {"argv": ["make"]}))
    # the read ran beside the command: it may have read the file before the command wrote it
    assert adds_nothing(plan_of(READ), ts, [[command, ran(READ)]]) is None
    assert adds_nothing(plan_of(READ), ts, [[ran(READ), command]]) is None
    # a wave after the command's: what it read is what the command left
    assert adds_nothing(plan_of(READ), ts, [[command, ran(READ, wave=1)]]) is not None


def test_a_callers_tool_counts_only_by_what_it_declares() -> None:
    @tool
    def job_status(job: str) -> str:
        """Where a job stands."""
        return "running"

    @tool
    def read_doc(name: str) -> str:
        """A document of the workspace."""
        return name

    # read-only and idempotent (a second call does no more), but not bound to the workspace:
    # the same call may answer otherwise, with nothing of the run changed
    job_status.metadata = {"read_only": True, "idempotent": True}
    read_doc.metadata = {"read_only": True, "idempotent": True, "workspace": True}
    ts: dict[str, BaseTool] = {"job_status": job_status, "read_doc": read_doc}
    status = ("job_status", {"job": "1"})
    assert adds_nothing(plan_of(status), ts, rounds(ran(status))) is None
    doc = ("read_doc", {"name": "a"})
    assert adds_nothing(plan_of(doc), ts, rounds(ran(doc))) is not None
    # a call of a tool that declares nothing may have changed anything
    @tool
    def deploy() -> str:
        """Deploy."""
        return "done"

    ts["deploy"] = deploy
    failed = ran(("deploy", {}), "failed", "RuntimeError: half done")
    assert adds_nothing(plan_of(doc), ts, rounds(ran(doc), failed)) is None


# -- the gate of a stage's call ---------------------------------------------------------------

OTHER_ROUND = round_plan(("t1", "echo", {"text": "other"}))


def gated_call(answers: list[Any], retries: int = 2) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(script={"plan": answers})

    def gate(plan: RoundPlan) -> str | None:
        return "it repeats hello" if plan.tasks[0].arguments == {"text": "hello"} else None

    result = call_structured(
        model, "plan", RoundPlan, [HumanMessage("go")], retries=retries, gate=gate
    )
    return result, model


def test_a_gated_result_is_asked_again_with_the_reason() -> None:
    result, model = gated_call([ECHO_ROUND, OTHER_ROUND])
    assert result.value.tasks[0].arguments == {"text": "other"}
    prompt, asked = model.calls[1][1]  # the reason alone, not the answer it refused
    assert prompt.content == "go"
    assert asked.content == "Your plan was not used: it repeats hello\nCall plan again, once."
    assert result.gated == "it repeats hello"
    # a refusal is not a parse failure; both calls are steps of a counted stage
    counters = result.counters(counted=True)
    assert counters["parse_failures"] == 0 and counters["step_count"] == 2


def test_a_gate_never_costs_the_result() -> None:
    # asked again, the model gives nothing usable: its first result stands
    result, model = gated_call([ECHO_ROUND, None, None])
    assert result.value.tasks[0].arguments == {"text": "hello"} and len(model.calls) == 3
    assert result.counters(counted=True)["parse_failures"] == 2
    # it plans the same again: that stands, and the gate is asked once only
    result, model = gated_call([ECHO_ROUND, ECHO_ROUND])
    assert result.value.tasks[0].arguments == {"text": "hello"} and len(model.calls) == 2
    # no re-ask left: the gate is not asked
    result, model = gated_call([ECHO_ROUND], retries=0)
    assert result.value is not None and not result.gated and len(model.calls) == 1


# -- in a run ----------------------------------------------------------------------------------

READ_ROUND = round_plan(("r1", *READ))
WRITE_ROUND = round_plan(("w1", *WRITE))


def graph_of(ws: Path, plans: list[Any]) -> tuple[Any, ScriptedChatModel]:
    ws.mkdir(exist_ok=True)
    (ws / "notes.txt").write_text("hello\n")
    model = ScriptedChatModel(
        script={
            "request_analyser": [ANALYSIS],
            "phase_planner": [phases("p1", rounds=3)],
            "plan_tool_call": plans,
            "judge_tasks": [CONTINUE, judgement()],
            "summarizer": [SUMMARY],
        }
    )
    return build_graph(model=model, checkpointer=InMemorySaver()), model


REQUEST = {"request": "copy what notes.txt says into out.txt"}


def run(ws: Path, plans: list[Any], **settings: Any) -> tuple[dict[str, Any], ScriptedChatModel]:
    graph, model = graph_of(ws, plans)
    config = {"configurable": {"thread_id": "g"}}
    out = final_state(graph, REQUEST, config, context=Context(workspace=str(ws), **settings))
    return out, model


def test_a_repeated_read_is_asked_again_and_the_next_plan_runs(tmp_path: Path) -> None:
    out, model = run(tmp_path, [READ_ROUND, READ_ROUND, WRITE_ROUND])
    first, second = out["rounds"]
    assert [r["tool"] for r in second["results"]] == ["write_file"]
    assert (tmp_path / "out.txt").read_text() == "hello"
    asked = model.calls_of("plan_tool_call")[2][-1].content
    assert "read_file(path='notes.txt') returned:\nhello\n" in asked
    # the thread says so, and shows it
    assert "read_file" in second["asked_again"] and "asked_again" not in first
    assert "- plan asked again: every call of this plan ran before" in show_text("g", out)
    assert out["parse_failures"] == 0


def test_a_plan_repeated_when_asked_again_runs(tmp_path: Path) -> None:
    out, model = run(tmp_path, [READ_ROUND])
    assert [r["tool"] for r in out["rounds"][1]["results"]] == ["read_file"]
    assert len(model.calls_of("plan_tool_call")) == 3  # round 1; round 2 and its re-ask
    # no re-ask allowed: none is made
    out, model = run(tmp_path / "none", [READ_ROUND], max_parse_retries=0)
    assert len(model.calls_of("plan_tool_call")) == 2
    assert "asked_again" not in out["rounds"][1]


def test_a_call_that_failed_with_nothing_changed_since_adds_nothing_either(tmp_path: Path) -> None:
    refused = "WorkspaceError: old_text occurs 2 times in out.txt"
    earlier = rounds(ran(READ), ran(EDIT, "failed", refused))
    why = adds_nothing(plan_of(READ, EDIT), tools(tmp_path), earlier)
    assert why is not None and "read_file(path='notes.txt') returned:\nhi" in why
    assert "- edit_file(path='out.txt', old_text='a', new_text='b'): not run: the same call " in why
    assert "occurs 2 times" in why
    # a failure that is not the workspace's refusal may go otherwise: it runs again
    other = rounds(ran(EDIT, "failed", "OSError"))
    assert adds_nothing(plan_of(EDIT), tools(tmp_path), other) is None


def test_the_progress_says_a_plan_was_asked_again(tmp_path: Path) -> None:
    graph, _ = graph_of(tmp_path, [READ_ROUND, READ_ROUND, WRITE_ROUND])
    events = graph.stream(
        REQUEST,
        {"configurable": {"thread_id": "g"}},
        context=Context(workspace=str(tmp_path)),
        stream_mode="custom",
    )
    planned = [e for e in events if e["event"] == "round_planned"]
    assert [e["asked_again"] for e in planned] == [False, True]
    assert describe_event(planned[1]) == (
        "  round 2: 1 task(s) planned (asked again: its first plan added nothing)"
    )
