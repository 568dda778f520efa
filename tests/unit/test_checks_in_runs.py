"""Checks in whole runs (SPEC sections 1 and 11), on the built-in tools and a real workspace:
code decides what done means, the judge cannot contradict it, and the run says truthfully how
it ended."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph, resume
from phasegraph.errors import CheckError
from phasegraph.facts.checks import to_do
from phasegraph.facts.files import describe_files, file_originals, fully_shown_files
from phasegraph.nodes.deps import workspace_settings
from phasegraph.nodes.plan import plan_checks
from phasegraph.nodes.typed_writes import typed_copies
from phasegraph.report import render
from phasegraph.tools.builtin import workspace_tools
from phasegraph.tools.workspace import Workspace

from scripts import (
    ANALYSIS,
    SUMMARY,
    ToolLog,
    final_state,
    judgement,
    make_tools,
    phase,
    phases,
    round_plan,
)

WRITE_NOPE = round_plan(("w1", "write_file", {"path": "out.txt", "content": "nope"}))
WRITE_HELLO = round_plan(("w2", "write_file", {"path": "out.txt", "content": "hello world"}))
DONE = judgement()  # phase_completed, rate 1.0, end_phase
#: The step to write full.txt whole (`facts.checks.write_whole`).
WHOLE = "write full.txt with what the request asks it to hold"


def script(**overrides: list[Any]) -> dict[str, list[Any]]:
    base: dict[str, list[Any]] = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1", rounds=2)],
        "plan_tool_call": [WRITE_NOPE, WRITE_HELLO],
        "judge_tasks": [DONE],
        "summarizer": [SUMMARY],
    }
    base.update(overrides)
    return base


def start(
    ws: Path,
    steps: dict[str, list[Any]],
    checks: list[Any] | None = None,
    request: str = "write out.txt",
    **settings: Any,
) -> tuple[dict[str, Any], Any, ScriptedChatModel]:
    model = ScriptedChatModel(script=steps)
    graph = build_graph(model=model, checkpointer=InMemorySaver())
    given: dict[str, Any] = {"request": request}
    if checks is not None:
        given["checks"] = checks
    out = final_state(
        graph,
        given,
        {"configurable": {"thread_id": "c"}},
        context=Context(workspace=str(ws), **settings),
    )
    return out, graph, model


def test_a_failing_check_keeps_the_phase_open_and_its_detail_reaches_the_next_plan(
    tmp_path: Path,
) -> None:
    out, _, model = start(tmp_path, script(), ["contains:out.txt:hello"])
    first, second = out["rounds"]
    # round 1: the judge said done, but the check fails: code overrides it
    assert first["judgement"]["phase_completed"] is False
    assert first["judgement"]["next_action"] == "continue_phase"
    assert "out.txt holds 'nope', not 'hello'" in first["judgement"]["overridden"]
    plans = model.calls_of("plan_tool_call")
    assert "FAILS: out.txt holds 'nope', not 'hello'" in plans[1][-1].content
    # the run made out.txt: the step is to write it whole again, not to add the checked text
    assert (
        "\nStill to do, so plan it now:\n- out.txt was made by this run, and what it holds "
        "falls short of its checks, so write out.txt with what the request asks it to hold\n"
        in plans[1][-1].content
    )
    assert "make out.txt contain" not in plans[1][-1].content
    # round 2 made it true: the judge's completion stands
    assert second["judgement"]["phase_completed"] is True
    assert out["status"] == "completed" and out["shortfalls"] == []
    assert [(c["label"], c["passed"], c["source"]) for c in out["checks"]] == [
        ("contains:out.txt:hello", True, "caller")
    ]
    assert (tmp_path / "out.txt").read_text() == "hello world"


def test_the_judge_is_shown_what_changed_and_which_checks_fail(tmp_path: Path) -> None:
    _, _, model = start(tmp_path, script(), ["contains:out.txt:hello"])
    judged = model.calls_of("judge_tasks")[0][-1].content
    assert "Files this phase has changed so far: out.txt (4 bytes, now 'nope')" in judged
    assert "c1: out.txt must contain 'hello': FAILS: out.txt holds 'nope', not 'hello'" in judged
    # and nobody can be asked in this run: the judge is not offered ask_user
    [tools] = model.tools_of("judge_tasks")[0:1]
    parameters = tools[0]["function"]["parameters"]
    assert "ask_user" not in parameters["properties"]["next_action"]["enum"]
    assert "question" not in parameters["properties"]


def test_the_last_judge_is_shown_the_work_goal_and_the_lines_the_run_changed(
    tmp_path: Path,
) -> None:
    # the 1.5B model's one phase of "add timeout = 30 to the [server] section of app.ini" was
    # to read the file; it wrote a new [timeout] section at the end, and its judge, shown that
    # phase goal and the file's first characters now, called the setting added
    (tmp_path / "app.ini").write_text("[server]\nport = 80\n\n[log]\nlevel = info\n")
    appended = "[server]\nport = 80\n\n[log]\nlevel = info\n\n[timeout]\ntimeout = 30\n"
    steps = script(
        request_analyser=[{**ANALYSIS, "core_goal": "Add timeout = 30 to [server] in app.ini"}],
        phase_planner=[phases("p1", "p2", rounds=3)],
        plan_tool_call=[
            round_plan(("r", "read_file", {"path": "app.ini"})),
            round_plan(("w", "write_file", {"path": "app.ini", "content": appended})),
        ],
        judge_tasks=[DONE, DONE],
    )
    out, _, model = start(tmp_path, steps, request="In app.ini, add timeout = 30 to [server].")
    assert out["originals"] == {"app.ini": "[server]\nport = 80\n\n[log]\nlevel = info"}
    first, last = (str(call[-1].content) for call in model.calls_of("judge_tasks"))
    assert "Goal of the whole work" not in first  # an earlier phase is judged by its own goal
    assert last.startswith(
        "Goal of the whole work, which this last phase finishes: Add timeout = 30 to [server] "
        "in app.ini\nWhat the request requires: "
    )
    assert "The work is done only when the files hold what these ask" in last
    assert (
        "since the run began: added lines '', '[timeout]', 'timeout = 30' after 'level = info'"
        in last
    )


def test_a_later_judge_is_shown_the_facts_of_now_not_the_verdict_before(tmp_path: Path) -> None:
    # a small model's judge, shown its first round's "not found", repeated it over a file
    # the second round wrote: the facts carry what earlier rounds did
    wrong = {**judgement("continue_phase", completed=False, rate=0.0),
             "user_summary": "out.txt was not found, the phase must be retried"}  # fmt: skip
    _, _, model = start(tmp_path, script(judge_tasks=[wrong, DONE]), ["contains:out.txt:hello"])
    first, second = (str(call[-1].content) for call in model.calls_of("judge_tasks"))
    assert "Files this phase has changed so far: out.txt (11 bytes, now 'hello world')" in second
    assert "c1: out.txt must contain 'hello': passes" in second
    assert "not found" not in second and "round 2 of at most 4." in second
    assert first.split("Results of this round")[0].endswith("at most 4.\n\n")


def test_a_check_that_never_passes_ends_the_run_incomplete(tmp_path: Path) -> None:
    steps = script(plan_tool_call=[WRITE_NOPE])
    out, _, model = start(tmp_path, steps, ["contains:out.txt:hello"], extra_rounds_per_phase=0)
    assert [o["ended_by"] for o in out["phase_outcomes"]] == ["round_limit"]
    assert out["status"] == "incomplete" and out["stop_reason"] == "done"
    assert out["shortfalls"] == [
        "phase phase p1 (p1) ended short: it reached its round limit, its judge's 100% overruled: "
        "checks fail: c1: out.txt must contain 'hello' (out.txt holds 'nope', not 'hello')",
        "check contains:out.txt:hello fails: out.txt holds 'nope', not 'hello'",
    ]
    assert "Checks 0/1 pass" in out["final_summary"]
    summarizer = model.calls_of("summarizer")[0][-1].content
    assert "FAILS: out.txt holds 'nope', not 'hello'" in summarizer


def test_a_check_its_phase_left_behind_falls_to_the_last_phase(tmp_path: Path) -> None:
    first = {**phase("p1", rounds=3), "checks": ["c1"]}
    steps = script(
        phase_planner=[{"phases": [first, phase("p2", rounds=3)], "execution_strategy": "x"}],
        plan_tool_call=[
            round_plan(("w", "write_file", {"path": "out.txt", "content": "hello"})),
            round_plan(("x", "write_file", {"path": "out.txt", "content": "gone"})),
        ],
    )
    out, _, _ = start(tmp_path, steps, ["contains:out.txt:hello"], extra_rounds_per_phase=0)
    assert out["checks"][0]["phase_id"] == "p1"
    # p1 made it true; p2 undid it, and as the last phase it answers for it: no completion
    assert [(o["phase_id"], o["completed"]) for o in out["phase_outcomes"]] == [
        ("p1", True),
        ("p2", False),
    ]
    assert (
        "checks fail: c1: out.txt must contain 'hello'"
        in out["rounds"][1]["judgement"]["overridden"]
    )
    assert out["status"] == "incomplete"
    assert out["shortfalls"][-1] == (
        "check contains:out.txt:hello fails: out.txt holds 'gone', not 'hello'"
    )


def test_checks_are_evaluated_before_the_summary_however_the_run_stopped(tmp_path: Path) -> None:
    # the budget ends the run before any judge: the checks still get their results
    (tmp_path / "out.txt").write_text("there before")
    out, _, _ = start(tmp_path, script(), ["exists:out.txt", "exists:never.txt"], max_steps=3)
    assert out["status"] == "budget_exhausted" and out["rounds"] == []
    assert [(c["label"], c["passed"]) for c in out["checks"]] == [
        ("exists:out.txt", True),
        ("exists:never.txt", False),
    ]
    assert "check exists:never.txt fails: never.txt does not exist" in out["shortfalls"]


def test_end_phase_below_completion_ends_the_run_incomplete(tmp_path: Path) -> None:
    steps = script(judge_tasks=[judgement("end_phase", completed=False, rate=0.2)])
    out, _, _ = start(tmp_path, steps)
    assert out["phase_outcomes"][0]["ended_by"] == "end_phase"
    assert out["status"] == "incomplete"
    assert out["shortfalls"] == [
        "phase phase p1 (p1) ended short: the judge ended it short of its goal, at 20%"
    ]


def test_the_analysis_proposes_checks_for_what_the_request_names(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("n")
    proposed = [
        {"kind": "exists", "path": "report.md"},  # named, not there yet: kept
        {"kind": "contains", "path": "report.md", "text": "42"},  # a text the request never gives
        {"kind": "exists", "path": "notes.txt"},  # already true: it shows nothing
        {"kind": "exists", "path": "../elsewhere.md"},  # outside the workspace
        {"kind": "cmd", "command": "rm report.md"},  # not an allowed command
        {"kind": "size", "path": "report.md"},  # no such kind: dropped, not a failed analysis
    ]
    steps = script(
        request_analyser=[{**ANALYSIS, "checks": proposed}],
        plan_tool_call=[round_plan(("w", "write_file", {"path": "report.md", "content": "r"}))],
    )
    request = "Read notes.txt and write report.md"
    out, _, model = start(tmp_path, steps, request=request)
    assert len(model.calls_of("request_analyser")) == 1
    # a file to write must hold something: "exists" becomes "has some text"
    assert [(c["id"], c["label"], c["source"]) for c in out["checks"]] == [
        ("c1", "matches:report.md:\\S", "analysis")
    ]
    notes = out["structured_request"]["check_notes"]
    assert any("size" in n for n in notes)
    assert any("contains:report.md:42: a text the file must hold is a guess" in n for n in notes)
    assert any("exists:notes.txt: notes.txt is there before any work: an input" in n for n in notes)
    assert any("exists:../elsewhere.md" in n and "outside the workspace" in n for n in notes)
    assert any("'rm' is not an allowed command" in n for n in notes)
    assert out["status"] == "completed"
    # the phase planner saw the kept check, and was asked to give it to a phase
    prompt = model.calls_of("phase_planner")[0][-1].content
    assert "c1: report.md must exist and not be blank (code does not check" in prompt
    assert "some text" not in prompt  # a small model wrote it to the file


def test_a_pattern_reaches_no_model_and_reports_still_name_it(tmp_path: Path) -> None:
    # told package.json "must match the pattern" '"version"\s*:\s*"1\.2\.0"', the 1.5B
    # model wrote that expression, escapes and all, into the file and into its edits
    pattern = r'"version"\s*:\s*"1\.2\.0"'
    (tmp_path / "package.json").write_text('{"name": "a", "version": "1.1.4"}\n')

    def edit(old: str, new: str) -> dict[str, Any]:
        arguments = {"path": "package.json", "old_text": old, "new_text": new}
        return round_plan(("e", "edit_file", arguments))

    steps = script(plan_tool_call=[edit("1.1.4", "1.1.5"), edit("1.1.5", "1.2.0")])
    steps["phase_planner"] = [phases("p1", rounds=2)]
    out, _, model = start(tmp_path, steps, [f"matches:package.json:{pattern}"], "set version")
    prompts = [
        str(message.content)
        for stage in ("phase_planner", "plan_tool_call", "judge_tasks")
        for call in model.calls_of(stage)
        for message in call
    ]
    assert len(prompts) == 2 * (1 + 2 + 2)
    assert not [p for p in prompts if "\\s*" in p or "\\." in p]  # quoted or escaped
    said = "c1: package.json must be as the request asks (code checks it with a regular expression)"
    assert said in prompts[1]  # the phase planner's
    plan_two = str(model.calls_of("plan_tool_call")[1][-1].content)
    assert "change package.json as the request asks (package.json holds" in plan_two
    assert "not text the check's expression finds" in plan_two
    # the judge's first "done" was overruled, in words, and the next plan read why
    assert out["rounds"][0]["judgement"]["overridden"].startswith(f"checks fail: {said}")
    assert f"not complete: checks fail: {said}" in plan_two
    assert out["status"] == "completed"
    assert out["checks"][0]["detail"] == "package.json holds text the check's expression finds"
    assert f"| `matches:package.json:{pattern}` | passes |" in render("c", out, "md")


def test_a_file_still_to_write_is_one_step_that_names_no_checked_text() -> None:
    # told "make full.txt contain 'alpha'" and the same of 'delta' for a join of two files, or
    # to write it with them "among the rest", the 1.5B model wrote those two lines alone
    def failing(kind: str, path: str, detail: str, **check: str) -> Any:
        return {"kind": kind, "path": path, "text": "", "pattern": "", "passed": False,
                "detail": detail, **check}  # fmt: skip

    gone = "full.txt does not exist"
    checks = [
        failing("contains", "full.txt", gone, text="alpha"),
        failing("contains", "full.txt", gone, text="delta"),
        failing("matches", "full.txt", gone, pattern=r"\S"),
        failing("contains", "notes.txt", "notes.txt holds 'x', not 'y'", text="y"),
        {**failing("exists", "full.txt", gone), "passed": True},  # passing: not a step
    ]
    absent = {"full.txt"}.__contains__
    assert to_do(checks, absent) == [
        f"full.txt does not exist, so {WHOLE}",
        "make notes.txt contain 'y' (notes.txt holds 'x', not 'y')",
    ]
    # a file an earlier phase wrote since its checks were last evaluated is edited, not rewritten
    assert to_do(checks[:2], lambda path: False) == [
        "make full.txt contain 'alpha' (full.txt does not exist)",
        "make full.txt contain 'delta' (full.txt does not exist)",
    ]
    # unless this run made it: then it is written whole again, naming no text, and a file
    # the run did not make is still edited
    made = {"full.txt"}.__contains__
    assert to_do(checks[:2] + checks[3:4], lambda path: False, made) == [
        f"full.txt was made by this run, and what it holds falls short of its checks, so {WHOLE}",
        "make notes.txt contain 'y' (notes.txt holds 'x', not 'y')",
    ]
    # a file that must hold some text is one step too
    assert to_do(checks[2:3], absent) == [f"full.txt does not exist, so {WHOLE}"]
    # so is one that is there but blank; neither step says "whole content", which made the
    # model copy a whole input where the request asked for one value of it
    blank = failing("matches", "full.txt", "full.txt is blank", pattern=r"\S")
    assert to_do([blank], lambda path: False) == [f"full.txt is blank, so {WHOLE}"]
    # a path that must only exist may be a folder: it is only to be created
    dist = failing("exists", "dist", "dist does not exist")
    assert to_do([dist], {"dist"}.__contains__) == ["create dist (dist does not exist)"]


def test_the_steps_still_to_do_open_a_line_of_their_own(tmp_path: Path) -> None:
    # the plan prompt puts them right after the history, whose last output ends no line
    context = Context(workspace=str(tmp_path))
    steps = plan_checks([], context, unwritten=["out.txt"])
    assert steps.startswith("\nStill to do, so plan it now:\n- out.txt does not exist, so write")
    check = {"kind": "exists", "path": "out.txt", "text": "", "pattern": "", "passed": False,
             "detail": "out.txt does not exist", "id": "c1", "label": "exists:out.txt"}  # fmt: skip
    shown = plan_checks([check], context)
    assert "\nChecks this phase must make true" in shown
    after = ": FAILS: out.txt does not exist\nStill to do, so plan it now:\n- create out.txt"
    assert after in shown


def test_caller_checks_come_first_and_an_analysis_copy_is_not_added(tmp_path: Path) -> None:
    steps = script(
        request_analyser=[{**ANALYSIS, "checks": [{"kind": "exists", "path": "out.txt"}]}]
    )
    out, _, _ = start(tmp_path, steps, ["exists:out.txt", {"kind": "contains", "path": "out.txt",
                                                            "text": "hello"}])  # fmt: skip
    assert [(c["id"], c["label"], c["source"]) for c in out["checks"]] == [
        ("c1", "exists:out.txt", "caller"),
        ("c2", "contains:out.txt:hello", "caller"),
    ]


@pytest.mark.parametrize(
    "bad",
    [["size:out.txt"], ["exists:../x.txt"], ["cmd:rm -rf out"], "exists:out.txt", [42]],
)
def test_a_bad_caller_check_is_refused_before_anything_runs(tmp_path: Path, bad: Any) -> None:
    model = ScriptedChatModel(script=script())
    graph = build_graph(model=model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "bad"}}
    with pytest.raises((CheckError, ValueError)):
        final_state(
            graph, {"request": "x", "checks": bad}, config, context=Context(workspace=str(tmp_path))
        )
    assert model.calls == []
    assert not graph.get_state(config).values
    assert list(tmp_path.iterdir()) == []


def test_plan_review_shows_the_checks_and_an_edit_replaces_them(tmp_path: Path) -> None:
    two = {"phases": [phase("p1"), {**phase("p2"), "checks": ["c1"]}], "execution_strategy": "x"}
    steps = script(
        phase_planner=[two],
        plan_tool_call=[
            round_plan(("w", "write_file", {"path": "out.txt", "content": "hello"})),
            round_plan(("b", "write_file", {"path": "b.txt", "content": "b"})),
        ],
    )
    out, graph, _ = start(tmp_path, steps, ["exists:out.txt"], review="plan")
    assert out["pending_review"]["checks"] == [
        {"id": "c1", "check": "exists:out.txt", "phase": "p2"}
    ]
    config = {"configurable": {"thread_id": "c"}}
    context = Context(workspace=str(tmp_path), review="plan")
    bad_edit = {"action": "edit", "phases": [phase("q1")], "checks": ["exists:/etc/passwd"]}
    with pytest.raises(Exception, match="absolute path"):
        resume(graph, config, bad_edit, context=context)
    edit = {
        "action": "edit",
        "phases": [{**phase("q1"), "checks": ["c2"]}, phase("q2")],
        "checks": ["exists:out.txt", "exists:b.txt"],
    }
    out = resume(graph, config, edit, context=context)
    assert [(c["id"], c["label"], c["source"], c["phase_id"]) for c in out["checks"]] == [
        ("c1", "exists:out.txt", "review", ""),
        ("c2", "exists:b.txt", "review", "q1"),
    ]
    assert out["status"] == "completed" and all(c["passed"] for c in out["checks"])


def test_checks_are_listed_in_the_summary_and_every_report(tmp_path: Path) -> None:
    steps = script(plan_tool_call=[WRITE_NOPE])
    out, _, _ = start(tmp_path, steps, ["contains:out.txt:hello", "exists:out.txt"])
    assert "Checks 1/2 pass" in out["final_summary"]
    md = render("c", out, "md")
    assert "## Checks" in md and "| `contains:out.txt:hello` | **fails** |" in md
    assert "out.txt holds 'nope', not 'hello'" in md and "## What fell short" in md
    html = render("c", out, "html")
    assert "<code>contains:out.txt:hello</code>" in html and "<strong>fails</strong>" in html
    data = json.loads(render("c", out, "json"))
    assert [(c["label"], c["passed"]) for c in data["checks"]] == [
        ("contains:out.txt:hello", False),
        ("exists:out.txt", True),
    ]
    assert data["status"] == "incomplete" and data["shortfalls"]


def test_reading_tools_stay_in_every_phase_and_unknown_names_narrow_nothing(
    tmp_path: Path,
) -> None:
    # three rounds each: not the split of a small job, so the phases stay as planned
    narrowed = {**phase("p1", rounds=3), "allowed_tools": ["write_file"]}
    invented = {**phase("p2", rounds=3), "allowed_tools": ["check_file", "append_to_file"]}
    steps = script(
        phase_planner=[{"phases": [narrowed, invented], "execution_strategy": "x"}],
        plan_tool_call=[WRITE_HELLO],
    )
    _, _, model = start(tmp_path, steps, extra_rounds_per_phase=0)
    # each call's prompt (a re-ask adds messages after it)
    first, *_, second = (call[1].content for call in model.calls_of("plan_tool_call"))
    tools_of = [line.split("(")[0] for line in first.splitlines() if line.startswith("- ")]
    assert {"- list_files", "- read_file", "- search_text", "- write_file"} <= set(tools_of)
    assert "- edit_file" not in tools_of and "- run_command" not in tools_of
    # a phase that names only tools that do not exist is not left with nothing
    assert all(f"- {t}(" in second for t in ("list_files", "write_file", "edit_file"))


def test_a_failing_file_check_keeps_the_writing_tools_for_any_task_type(tmp_path: Path) -> None:
    # the 1.5B analysis called "write their names to files.md" analysis work, which may not write
    steps = script(
        request_analyser=[{**ANALYSIS, "task_type": "analysis"}], plan_tool_call=[WRITE_HELLO]
    )
    out, _, _ = start(tmp_path, steps, ["exists:out.txt"])
    assert out["rounds"][0]["results"][0]["status"] == "ok"
    (tmp_path / "none").mkdir()
    out2, _, _ = start(tmp_path / "none", steps)
    assert out2["rounds"][0]["results"][0]["status"] == "refused"  # no check: the rule stands


def test_a_file_the_analysis_says_the_request_changes_keeps_the_writing_tools(
    tmp_path: Path,
) -> None:
    # the 1.5B analysis called "in config.ini, change debug = true to debug = false" analysis
    # work, which may not write, and the run tried sed until its budget ran out
    (tmp_path / "config.ini").write_text("debug = true\n")
    edit = round_plan(
        ("e", "edit_file", {"path": "config.ini", "old_text": "true", "new_text": "false"})
    )
    analysis = {**ANALYSIS, "task_type": "analysis", "files_to_write": ["config.ini"]}
    steps = script(request_analyser=[analysis], plan_tool_call=[edit])
    request = "In config.ini, change debug = true to debug = false."
    out, _, _ = start(tmp_path, steps, request=request)
    assert out["rounds"][0]["results"][0]["status"] == "ok"
    assert (tmp_path / "config.ini").read_text() == "debug = false\n"
    assert out["checks"] == []  # a file that is there is changed, not checked for some text
    steps = script(request_analyser=[{**analysis, "files_to_write": []}], plan_tool_call=[edit])
    (tmp_path / "config.ini").write_text("debug = true\n")
    out, _, _ = start(tmp_path, steps, request=request)
    assert out["rounds"][0]["results"][0]["status"] == "refused"  # named nothing: the rule stands
    # a user's own rules stand even when the analysis names the file
    steps = script(request_analyser=[analysis], plan_tool_call=[edit])
    rules = {"analysis": {"forbidden": ["edit_file", "write_file", "run_command"]}}
    out, _, _ = start(tmp_path, steps, request=request, tool_rules=rules)
    assert out["rounds"][0]["results"][0]["status"] == "refused"


def test_the_analysis_is_told_which_named_files_are_not_there_yet(tmp_path: Path) -> None:
    (tmp_path / "numbers.txt").write_text("1\n")
    request = "Read numbers.txt and write their sum to sum.txt (see https://example.org/a.html)."
    _, _, model = start(tmp_path, script(), request=request)
    prompt = model.calls_of("request_analyser")[0][-1].content
    assert "Files the request names that are not in the workspace yet: sum.txt\n" in prompt


def test_the_files_the_analysis_says_a_request_writes_become_checks(tmp_path: Path) -> None:
    # A small model left `checks` empty for such a request, and the run was judged done with
    # no file written; naming the files to write, from the names the request gives, it managed.
    (tmp_path / "numbers.txt").write_text("1\n")
    steps = script(
        request_analyser=[{**ANALYSIS, "files_to_write": ["sum.txt"]}],
        plan_tool_call=[round_plan(("w", "write_file", {"path": "sum.txt", "content": "1"}))],
    )
    request = "Read numbers.txt and write their sum to sum.txt."
    out, _, model = start(tmp_path, steps, request=request)
    assert [(c["label"], c["source"], c["passed"]) for c in out["checks"]] == [
        ("matches:sum.txt:\\S", "analysis", True)
    ]
    # the schema offers the files the request names, and asks for them first; only a new one
    # becomes a check (an input to change is not a deliverable to check for text)
    (spec,) = model.tools_of("request_analyser")[0]
    parameters = spec["function"]["parameters"]
    assert parameters["properties"]["files_to_write"]["items"] == {
        "enum": ["numbers.txt", "sum.txt"]
    }
    assert parameters["required"][:2] == ["core_goal", "files_to_write"]


def test_plans_and_judges_are_shown_the_workspace_files_as_code_lists_them(
    tmp_path: Path,
) -> None:
    # the 1.5B planner wrote "file1" ... "file173" into files.md without listing anything
    for name in ("notes.txt", "todo.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / ".phasegraph").mkdir()
    out, _, model = start(tmp_path, script(plan_tool_call=[WRITE_HELLO]))
    plan_prompt = model.calls_of("plan_tool_call")[0][-1].content
    judge_prompt = model.calls_of("judge_tasks")[0][-1].content
    assert "Files in the workspace now (listed by code): notes.txt, todo.txt\n" in plan_prompt
    # the judge sees the workspace after the round: the file it wrote is there
    line = "Files in the workspace now (listed by code): notes.txt, out.txt, todo.txt\n"
    assert line in judge_prompt
    # a run without the workspace tools is not shown the folder it happens to run in
    steps = script(plan_tool_call=[round_plan(("e", "echo", {"text": "hi"}))])
    model = ScriptedChatModel(script=steps)
    graph = build_graph(model=model, tools=make_tools(ToolLog()), builtin_tools=False)
    graph.invoke({"request": "echo"}, context=Context(workspace=str(tmp_path)))
    assert "Files in the workspace" not in model.calls_of("plan_tool_call")[0][-1].content


def test_plans_and_judges_are_shown_the_files_the_request_names_as_they_are(
    tmp_path: Path,
) -> None:
    # the 1.5B planner wrote 1234567890 to sum.txt without reading numbers.txt
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n")
    request = "Read numbers.txt and write their sum to sum.txt (not ../secret.txt)."
    write = round_plan(("w", "write_file", {"path": "sum.txt", "content": "50"}))
    steps = script(plan_tool_call=[write])
    _, _, model = start(tmp_path, steps, request=request)
    plan_prompt = model.calls_of("plan_tool_call")[0][-1].content
    judge_prompt = model.calls_of("judge_tasks")[0][-1].content
    before = "numbers.txt (8 bytes, now '17\\n25\\n8\\n'); sum.txt (not there)\n"
    after = "numbers.txt (8 bytes, now '17\\n25\\n8\\n'); sum.txt (2 bytes, now '50')\n"
    assert "Files the request names, as they are now (read by code): " + before in plan_prompt
    assert "Files the request names, as they are now (read by code): " + after in judge_prompt
    assert "secret" not in plan_prompt.split("Files the request names")[1]


def test_a_judge_that_calls_a_phase_done_when_its_writes_never_ran_is_overruled(
    tmp_path: Path,
) -> None:
    # the 1.5B model planned its edit after a read that failed; the edit was skipped, no file
    # changed, and its judge gave 1.0, "the phase goal was met"
    (tmp_path / "app.ini").write_text("[server]\nport = 80\n")
    blind = round_plan(
        ("r", "read_file", {"path": "app.cfg"}),
        ("w", "write_file", {"path": "app.ini", "content": "[server]\nport = 80\ntimeout = 30\n"}),
    )
    blind["tasks"][1]["depends_on"] = ["r"]
    edit = round_plan(
        (
            "w2",
            "edit_file",
            {"path": "app.ini", "old_text": "port = 80", "new_text": "port = 80\ntimeout = 30"},
        )
    )
    steps = script(plan_tool_call=[blind, edit], judge_tasks=[DONE, DONE])
    out, _, _ = start(tmp_path, steps, request="In app.ini, add timeout = 30 to [server].")
    first, second = (r["judgement"] for r in out["rounds"])
    assert first["phase_completed"] is False
    assert first["overridden"] == "no file changed: the writes planned (w skipped) did not run"
    assert second["phase_completed"] is True and "overridden" not in second
    assert "timeout = 30" in (tmp_path / "app.ini").read_text()
    assert out["status"] == "completed"


def test_a_file_this_run_has_not_read_is_not_written_over_whole(tmp_path: Path) -> None:
    # the 1.5B model wrote a stub over src/util/dates.py, the file its answer was to name
    source = "def parse_date(text):\n    return text.split('-')\n"
    (tmp_path / "src" / "util").mkdir(parents=True)
    (tmp_path / "src" / "util" / "dates.py").write_text(source)
    stub = {"path": "./src/util/dates.py", "content": "def parse_date(d):\n    pass  # code here\n"}
    first = round_plan(
        ("w", "write_file", stub),
        ("a", "write_file", {"path": "answer.txt", "content": "src/util/dates.py"}),
    )
    read = round_plan(("r", "read_file", {"path": "src/util/dates.py"}))
    after_read = round_plan(("w2", "write_file", stub))
    go_on = judgement("continue_phase", completed=False, rate=0.5)
    steps = script(
        phase_planner=[phases("p1", rounds=3)],
        plan_tool_call=[first, read, after_read],
        judge_tasks=[go_on, go_on, DONE],
    )
    request = "Find the file that defines parse_date and write its path to answer.txt."
    out, _, model = start(tmp_path, steps, request=request)
    skipped, answered = out["rounds"][0]["results"]
    assert skipped["status"] == "skipped" and "has not read it" in skipped["output"]
    assert answered["status"] == "ok"  # a new file is written as planned
    assert "has not read it" in model.calls_of("plan_tool_call")[1][-1].content
    # once read, the file may be written whole: the plan knows what it replaces
    assert out["rounds"][2]["results"][0]["status"] == "ok"
    assert (tmp_path / "src/util/dates.py").read_text() == stub["content"]
    # a file the request names and the prompts showed whole counts as read
    (tmp_path / "n.txt").write_text("1\n")
    over = round_plan(("w", "write_file", {"path": "n.txt", "content": "2\n"}))
    out, _, _ = start(tmp_path, script(plan_tool_call=[over]), request="Set n.txt to 2.")
    assert out["rounds"][0]["results"][0]["status"] == "ok"


def test_a_last_phase_that_wrote_none_of_the_files_the_request_changes_is_not_done(
    tmp_path: Path,
) -> None:
    # the 1.5B model read greet.py, planned no edit, and its judge called the rename done
    (tmp_path / "greet.py").write_text("def hello():\n    pass\n")
    read = round_plan(("r", "read_file", {"path": "greet.py"}))
    edit = round_plan(
        ("e", "edit_file", {"path": "greet.py", "old_text": "hello", "new_text": "greet"})
    )
    analysis = {**ANALYSIS, "files_to_write": ["greet.py"]}
    steps = script(request_analyser=[analysis], plan_tool_call=[read, edit], judge_tasks=[DONE] * 2)
    out, _, model = start(tmp_path, steps, request="In greet.py, rename hello to greet.")
    first, second = (r["judgement"] for r in out["rounds"])
    assert first["phase_completed"] is False
    assert "no file the request writes or changes was written (greet.py)" in first["overridden"]
    next_plan = model.calls_of("plan_tool_call")[1][-1].content
    assert "no file the request writes or changes" in next_plan
    assert second["phase_completed"] is True and out["status"] == "completed"
    assert "def greet()" in (tmp_path / "greet.py").read_text()


def test_a_named_file_written_under_another_spelling_counts_as_written(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "greet.py").write_text("def hello():\n    pass\n")
    edit = round_plan(
        ("e", "edit_file", {"path": "lib/../greet.py", "old_text": "hello", "new_text": "greet"})
    )
    analysis = {**ANALYSIS, "files_to_write": ["./greet.py"]}
    steps = script(request_analyser=[analysis], plan_tool_call=[edit], judge_tasks=[DONE])
    out, _, _ = start(tmp_path, steps, request="In greet.py, rename hello to greet.")
    judged = out["rounds"][0]["judgement"]
    assert judged["phase_completed"] is True and not judged.get("overridden")
    assert out["status"] == "completed"


def test_writing_a_file_the_very_text_it_holds_is_not_held_for_a_read(tmp_path: Path) -> None:
    # a round run again after a crash: its write had landed, its result was not saved
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "p1.txt").write_text("p1\n" * 200)  # larger than a prompt shows
    again = round_plan(("w", "write_file", {"path": "out/p1.txt", "content": "p1\n" * 200}))
    out, _, _ = start(tmp_path, script(plan_tool_call=[again]), request="Write the notes.")
    assert out["rounds"][0]["results"][0]["status"] == "ok"


def test_the_lines_a_run_changed_are_cut_so_the_judge_prompt_stays_bounded(
    tmp_path: Path,
) -> None:
    # a one-line JSON file is one long line: quoted whole, before and after, it filled the prompt
    original = json.dumps({f"key{i}": "v" * 40 for i in range(60)})
    (tmp_path / "config.json").write_text(original)
    context = Context(workspace=str(tmp_path))
    originals = file_originals("Set key0 in config.json to w.", context)
    assert originals == {"config.json": original}
    (tmp_path / "config.json").write_text(
        original.replace('"key0": "v', '"key0": "w') + "\n" + "z" * 60_000
    )
    said = describe_files(["config.json"], context, originals=originals)
    assert len(said) < 1_000, said
    assert f'({len(original)} characters) with lines \'{{"key0": "wvvv' in said


def test_the_judge_is_told_a_file_holds_the_very_text_an_input_held(tmp_path: Path) -> None:
    # the 1.5B model typed numbers.txt's lines into the file that was to hold their sum, and
    # its judge said the sum was written: the two equal texts stood far apart in its prompt
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n")
    context = Context(workspace=str(tmp_path))
    originals = file_originals("Read numbers.txt and write their sum to sum.txt.", context)
    (tmp_path / "sum.txt").write_text("17\n25\n8\n")
    said = describe_files(["sum.txt"], context, originals=originals)
    assert said == (
        "sum.txt (8 bytes, now '17\\n25\\n8\\n'), the very text numbers.txt held when the run "
        "began"
    )
    (tmp_path / "sum.txt").write_text("50\n")
    now = describe_files(["sum.txt"], context, originals=originals)
    assert now == "sum.txt (3 bytes, now '50\\n')"
    # a file changed in place is not a copy of itself
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n9\n")
    assert "the very text" not in describe_files(["numbers.txt"], context, originals=originals)


def test_a_typed_copy_of_a_named_file_waits_and_a_program_writes_instead(tmp_path: Path) -> None:
    # the 1.5B model typed the whole of settings.json (shown in its prompt) into the file that
    # was to hold one value of it, and its judge called that done
    settings = '{"retries": 5, "timeout": 45}\n'
    (tmp_path / "settings.json").write_text(settings)
    copy = round_plan(("w", "write_file", {"path": "timeout.txt", "content": settings}))
    program = round_plan(
        ("c", "run_command", {"command": "grep -o '[0-9][0-9]*}' settings.json > timeout.txt"})
    )
    steps = script(
        request_analyser=[{**ANALYSIS, "task_type": "data"}],
        plan_tool_call=[copy, program],
        judge_tasks=[DONE, DONE],
    )
    request = "Read settings.json and write the value of timeout to timeout.txt."
    out, _, model = start(tmp_path, steps, request=request)
    held = out["rounds"][0]["results"][0]
    assert held["status"] == "skipped"
    assert held["output"].startswith("not run: its text is the whole text of settings.json")
    assert "not run: its text is the whole text of settings.json" in str(
        model.calls_of("plan_tool_call")[1][-1].content
    )
    assert (tmp_path / "timeout.txt").read_text() == "45}\n"  # the program's own output
    # a reference passes the same text exactly, and an edit writes only where its text is
    settings_of = workspace_settings(Context(workspace=str(tmp_path)))
    tools = {t.name: t for t in workspace_tools(settings_of)}
    space = Workspace(str(tmp_path))
    tasks = [
        {"id": "r", "tool": "write_file", "arguments": {"path": "b.json", "content": "$t1"}},
        {"id": "e", "tool": "edit_file",
         "arguments": {"path": "b.json", "old_text": "x", "new_text": settings}},
        {"id": "s", "tool": "write_file", "arguments": {"path": "settings.json",
                                                        "content": settings}},
    ]  # fmt: skip
    assert typed_copies(tasks, tools, space, {"settings.json": settings}) == {}
    # one word another file holds may be the answer itself: the sum of a file of one number
    one = [{"id": "w", "tool": "write_file", "arguments": {"path": "sum.txt", "content": "7"}}]
    assert typed_copies(one, tools, space, {"numbers.txt": "7\n"}) == {}
    assert typed_copies(one, tools, space, {"numbers.txt": "7 8\n"}) == {}


def test_a_write_planned_beside_a_read_waits_for_the_next_round(tmp_path: Path) -> None:
    # its arguments were fixed before the read returned: small models wrote "0" to sum.txt
    (tmp_path / "numbers.txt").write_text("1\n2\n")
    (tmp_path / "greet.py").write_text("def hello():\n    pass\n")
    blind = round_plan(
        ("r", "read_file", {"path": "numbers.txt"}),
        ("w", "write_file", {"path": "sum.txt", "content": "0"}),
        ("e", "run_command", {"argv": ["true"]}),
        # an edit writes only where its old text is found: it puts no guess of the file in
        ("x", "edit_file", {"path": "greet.py", "old_text": "hello", "new_text": "greet"}),
    )
    # once the phase has read, a write beside another read runs: its plan had the output
    seen = round_plan(
        ("r2", "read_file", {"path": "numbers.txt"}),
        ("w2", "write_file", {"path": "sum.txt", "content": "3"}),
    )
    steps = script(
        request_analyser=[{**ANALYSIS, "task_type": "coding"}],  # may run commands
        plan_tool_call=[blind, seen],
        judge_tasks=[judgement("continue_phase", completed=False, rate=0.5), DONE],
    )
    out, _, model = start(tmp_path, steps, ["contains:sum.txt:3"])
    first = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert first["r"]["status"] == "ok"
    assert first["w"]["status"] == "skipped"
    assert first["w"]["output"].startswith("not run: it was planned beside reads (r)")
    assert first["e"]["status"] == "ok"  # a call that declares neither runs as planned
    assert first["x"]["status"] == "ok"
    assert (tmp_path / "greet.py").read_text() == "def greet():\n    pass\n"
    assert [r["status"] for r in out["rounds"][1]["results"]] == ["ok", "ok"]
    assert (tmp_path / "sum.txt").read_text() == "3"
    assert out["status"] == "completed"
    # the next plan saw why, beside the read's output
    later = model.calls_of("plan_tool_call")[1][-1].content
    assert "not run: it was planned beside reads (r)" in later
    assert 'w write_file({"path": "sum.txt"})' in later  # not its content: small models copy it


def test_a_new_phase_holds_a_write_beside_a_read_the_run_made_before(tmp_path: Path) -> None:
    # its plan's history is its own phase's: the earlier phase's output is not in it. Let
    # through, such a write ended a held-back run `completed` over a failed checker (H8)
    (tmp_path / "numbers.txt").write_text("1\n2\n")
    read = round_plan(("r", "read_file", {"path": "numbers.txt"}))
    both = round_plan(
        ("r2", "read_file", {"path": "numbers.txt"}),
        ("w", "write_file", {"path": "sum.txt", "content": "3"}),
    )
    steps = script(
        request_analyser=[{**ANALYSIS, "task_type": "coding"}],
        phase_planner=[phases("p1", "p2")],
        plan_tool_call=[read, both],
        judge_tasks=[DONE, DONE],
    )
    out, _, _ = start(tmp_path, steps)
    assert [r["phase_id"] for r in out["rounds"]][:2] == ["p1", "p2"]
    assert [r["status"] for r in out["rounds"][1]["results"]] == ["ok", "skipped"]


def test_a_write_beside_a_read_waits_even_when_the_prompt_showed_the_file_whole(
    tmp_path: Path,
) -> None:
    # let through, the 1.5B model wrote 100 as the sum of 17, 25 and 8 beside reading them,
    # though its prompt had shown numbers.txt whole, and its judge called it done
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n")
    guess = round_plan(
        ("r", "read_file", {"path": "numbers.txt"}),
        ("w", "write_file", {"path": "sum.txt", "content": "100"}),
    )
    steps = script(plan_tool_call=[guess], judge_tasks=[DONE])
    request = "Read numbers.txt and write their sum to sum.txt."
    out, _, model = start(tmp_path, steps, request=request)
    assert "numbers.txt (8 bytes, now '17\\n25\\n8\\n')" in (
        model.calls_of("plan_tool_call")[0][-1].content
    )
    assert [r["status"] for r in out["rounds"][0]["results"]] == ["ok", "skipped"]
    # without read_file no prompt shows a file's text, so none counts as shown
    assert fully_shown_files(request, Context(workspace=str(tmp_path)), {}) == []


def test_a_typed_write_beside_a_listing_is_held_and_names_the_reference(tmp_path: Path) -> None:
    # the 1.5B model planned list_files beside write_file(files.md, "ls\n"): the typed text
    # ran and was judged done; held, the reason names the form that passes the listing
    for name in ("notes.txt", "todo.txt", "plan.md"):
        (tmp_path / name).write_text("x\n")
    typed = round_plan(
        ("l", "list_files", {"path": "."}),
        ("w", "write_file", {"path": "files.md", "content": "ls\n"}),
    )
    steps = script(plan_tool_call=[typed], judge_tasks=[DONE])
    request = "List the files in this folder and write their names to files.md."
    out, _, _ = start(tmp_path, steps, request=request)
    first = out["rounds"][0]["results"]
    assert [r["status"] for r in first] == ["ok", "skipped"]
    assert '"$l"' in first[1]["output"] and "give the write a command" in first[1]["output"]
    (tmp_path / "files.md").unlink(missing_ok=True)  # a later round wrote it, its reads seen
    # the same write by reference runs beside the listing, and the file holds what it listed
    passed = round_plan(
        ("l", "list_files", {"path": "."}),
        ("w", "write_file", {"path": "files.md", "content": "$l"}),
    )
    steps = script(plan_tool_call=[passed], judge_tasks=[DONE])
    out, _, _ = start(tmp_path, steps, request=request)
    assert [r["status"] for r in out["rounds"][0]["results"]] == ["ok", "ok"]
    written = (tmp_path / "files.md").read_text()
    assert all(name in written for name in ("notes.txt", "todo.txt", "plan.md"))


def test_a_read_of_the_file_a_write_makes_holds_nothing_back(tmp_path: Path) -> None:
    # with caller checks, the 1.5B model planned a read of files.md (not there yet) beside the
    # listing and its write, the write depending on that read: held, then skipped for the
    # read's failure round after round, files.md was never written
    for name in ("notes.txt", "todo.txt"):
        (tmp_path / name).write_text("x\n")
    names = {"path": "files.md", "content": "notes.txt\ntodo.txt"}
    planned = round_plan(("r", "read_file", {"path": "files.md"}), ("w", "write_file", names))
    planned["tasks"][1]["depends_on"] = ["r"]
    steps = script(plan_tool_call=[planned], judge_tasks=[DONE])
    request = "List the files in this folder and write their names to files.md."
    out, _, _ = start(tmp_path, steps, request=request)
    assert [r["status"] for r in out["rounds"][0]["results"]] == ["failed", "ok"]
    assert (tmp_path / "files.md").read_text() == "notes.txt\ntodo.txt"
    # a failed read of another missing file still stops the write that needs it
    (tmp_path / "files.md").unlink()
    planned["tasks"][0]["arguments"] = {"path": "names.txt"}
    steps = script(plan_tool_call=[planned], judge_tasks=[DONE])
    out, _, _ = start(tmp_path, steps, request=request)
    assert [r["status"] for r in out["rounds"][0]["results"]] == ["failed", "skipped"]
    # and a read of a file that is there holds the write back, as before
    (tmp_path / "names.txt").write_text("x\n")
    out, _, _ = start(tmp_path, steps, request=request)
    assert out["rounds"][0]["results"][1]["output"].startswith("not run: it was planned beside")
