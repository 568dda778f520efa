"""What a person looks at after a run (issue 22): its history from the checkpoints, the HTML
report's glance, timeline and chart, and the tree `phasegraph show` prints."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from rich.console import Console

from phasegraph import Context, ScriptedChatModel, build_graph, resume
from phasegraph.cli.render import show_text
from phasegraph.cli.tree import run_tree
from phasegraph.report import build_report, render
from phasegraph.report.history import _split, run_history

from scripts import (
    MULTI_PHASE_CHECKS,
    ToolLog,
    final_state,
    make_script,
    make_slow_tools,
    multi_phase_script,
)

CONFIG: Any = {"configurable": {"thread_id": "multi"}}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """Three phases, a failed task, a slow round, a replan, a plan review, a failing check."""
    workspace = tmp_path_factory.mktemp("ws")
    # the tests read which round took longest: the earlier tests' garbage, collected in the
    # middle of a round, would be counted as that round's time
    gc.collect()
    graph = build_graph(
        model=ScriptedChatModel(script=multi_phase_script()),
        tools=make_slow_tools(ToolLog()),
        builtin_tools=True,
        checkpointer=InMemorySaver(),
    )
    context = Context(workspace=str(workspace), review="plan", extra_rounds_per_phase=0)
    start = {"request": "Write a short report", "checks": MULTI_PHASE_CHECKS}
    final_state(graph, start, CONFIG, context=context)
    values = resume(graph, CONFIG, {"action": "approve"}, context=context)
    return values, run_history(graph, CONFIG)


def test_the_history_tells_each_stage_its_use_and_where_reviews_and_replans_were(
    run: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    values, history = run
    stages = {row["stage"]: row for row in history["stages"]}
    assert list(stages)[:3] == ["analyse", "phase_plan", "plan"]
    # every step, call and token of the run is some stage's
    for key, total in (("steps", "step_count"), ("llm_calls", "llm_calls")):
        assert sum(row[key] for row in stages.values()) == values[total]
    assert sum(r["prompt_tokens"] for r in stages.values()) == values["prompt_tokens"]
    assert stages["judge"]["llm_calls"] == 4 and stages["replan"]["llm_calls"] == 1
    # the tasks' steps are execute's, whose step runs them
    assert stages["execute"]["llm_calls"] == 0 and stages["execute"]["steps"] >= 5
    # the round with the 0.4 s tool took longest, model calls included
    seconds = history["round_seconds"]
    assert sorted(seconds) == ["1", "2", "3", "4"] and max(seconds, key=seconds.get) == "2"
    review, replan = history["events"]
    assert review["kind"] == "review" and review["review"] == "plan_review"
    assert review["action"] == "approve" and review["after_round_seq"] == 0
    assert replan == {
        "kind": "replan",
        "after_round_seq": 3,
        "phase_id": "p2",
        "reason": "the draft misses the notes",
        "outcome": "new phases: p3 Finish",
    }


def test_the_report_puts_the_failed_task_and_the_longest_round_first(
    run: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    values, history = run
    report = build_report("multi", values, history)
    (failed,) = report["glance"]["failed_tasks"]
    assert (failed["phase_id"], failed["round"], failed["tool"]) == ("p1", 1, "fail")
    assert "disk is read-only" in failed["output"]
    longest = report["glance"]["longest_round"]
    assert (longest["phase_id"], longest["round"]) == ("p1", 2) and longest["seconds"] >= 0.4
    p2 = report["phases"][1]
    assert p2["ended_by"] == "replanned"
    assert [e["kind"] for e in p2["rounds"][0]["events_after"]] == ["replan"]
    assert [e["kind"] for e in report["before_rounds"]] == ["review"]
    p3_notes = report["phases"][2]["rounds"][0]["notes"]
    assert any("code overrode the judge" in note for note in p3_notes)
    # the JSON carries the same, for other programs
    data = json.loads(render("multi", values, "json", history))
    assert data["glance"] == json.loads(json.dumps(report["glance"]))
    assert [s["stage"] for s in data["stages"]] == [s["stage"] for s in history["stages"]]


def test_the_html_page_has_the_glance_timeline_and_chart_and_stays_self_contained(
    run: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    values, history = run
    page = render("multi", values, "html", history)
    assert "<script" not in page and "http" not in page and "@import" not in page
    assert "At a glance: incomplete" in page and "<h2>Timeline</h2>" in page
    assert "<h2>Model use by stage</h2>" in page and "@media print" in page
    assert page.count('<tr id="round-p1-1-t2" class=failed>') == 1  # the failed task
    assert page.count('class="round longest"') == 1 and 'id="round-p1-2"' in page
    assert '<a href="#round-p1-1-t2">' in page and '<a href="#round-p1-2">' in page
    assert "↻ replan</b> after p2: the draft misses the notes → new phases: p3 Finish" in page
    assert "<b>review</b> (plan_review): approve" in page
    # what existing readers rely on is still there
    assert "<code>contains:out.txt:goodbye</code>" in page and "<strong>fails</strong>" in page
    assert "<h2>Statistics</h2>" in page and "<h2>Summary</h2>" in page
    md = render("multi", values, "md", history)
    assert "## Model use by stage" in md and "*replan: the draft misses the notes" in md


def test_without_history_rounds_are_timed_by_their_tools(
    run: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    values, _ = run
    report = build_report("multi", values)
    assert report["stages"] == [] and report["before_rounds"] == []
    rnd = report["phases"][0]["rounds"][1]
    assert rnd["seconds"] is None and rnd["tool_seconds"] >= 0.4
    assert report["glance"]["longest_round"]["round"] == 2
    assert "the judge asked for a replan" in report["phases"][1]["rounds"][0]["notes"]
    page = render("multi", values, "html")
    assert "(tools)" in page and "Model use by stage" not in page


def test_show_draws_the_run_as_a_tree_with_failures_marked(
    run: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    values, history = run
    console = Console(record=True, width=140, color_system=None)
    console.print(run_tree(build_report("multi", values, history), values["request"]))
    text = console.export_text()
    lines = text.splitlines()
    assert lines[0].startswith("Thread multi  incomplete")
    assert lines[2].startswith("├── ✗ p1 round 1, t2 fail: failed: RuntimeError: disk is read-only")
    assert lines[3].startswith("├── ◷ longest round: p1 round 2")
    assert "│   ├── round 1  " in text and "✗ 1 failed" in text
    assert '│   │   ├── ✗ t2 fail {"reason": "disk is read-only"}  FAILED  ' in text
    assert "round 2  " in text and "◷ longest" in text
    assert "↻ replan: the draft misses the notes: new phases: p3 Finish" in text
    assert "» review (plan_review): approve" in text
    assert "└── checks: 1/2 pass" in text and "✗ contains:out.txt:goodbye: FAILS" in text


def test_a_paused_run_shows_what_it_waits_for(tmp_path: Path) -> None:
    graph = build_graph(
        model=ScriptedChatModel(script=make_script()),
        tools=make_slow_tools(ToolLog()),
        checkpointer=InMemorySaver(),
    )
    values = final_state(graph, {"request": "go"}, CONFIG, context=Context(review="plan"))
    history = run_history(graph, CONFIG)
    console = Console(record=True, width=120, color_system=None)
    console.print(run_tree(build_report("multi", values, history), "go"))
    text = console.export_text()
    assert "waiting for a person: plan_review" in text and "p1. phase p1: finish p1" in text
    assert "waiting for a person: plan_review" in render("multi", values, "html", history)


NEW = {"cached_tokens": 0, "prompt_ms": 0, "answer_ms": 0}  # counters threads of then lacked


def test_a_judge_step_that_also_planned_is_split_between_judge_and_plan() -> None:
    # a thread of the versions whose judge node planned the next round in its step; a plan
    # that came to nothing leaves the round number as it was, and is still the plan's
    use = {"step_count": 1, "llm_calls": 1, "prompt_tokens": 10, "completion_tokens": 5} | NEW
    judged = {"round_seq": 1, "judge_use": use | {"seconds": 0.5}}
    before = {"round_seq": 1, "step_count": 4, "llm_calls": 4, "prompt_tokens": 100}
    before["completion_tokens"] = 50
    after = {"round_seq": 1, "rounds": [judged], "step_count": 8, "llm_calls": 8}
    after |= {"prompt_tokens": 140, "completion_tokens": 70}
    grown = {"step_count": 4, "llm_calls": 4, "prompt_tokens": 40, "completion_tokens": 20}
    (judge, jused, jsec, jround), (plan, pused, psec, pround) = _split(
        ["judge"], before, after, grown, 2.0
    )
    assert (judge, jused, jsec, jround) == ("judge", use, 0.5, 1)
    assert (plan, pused, psec, pround) == (
        "plan",
        {"step_count": 3, "llm_calls": 3, "prompt_tokens": 30, "completion_tokens": 15} | NEW,
        1.5,
        1,
    )
    # a judge step that planned nothing is the judge's alone
    assert _split(["judge"], before, after, use, 0.6) == [("judge", use, 0.6, 1)]
    # a judge step that wrote the summary: the rest is the summary's, in no round
    summed = after | {"final_summary": "# Summary", "round_seq": 1}
    (_, jused, _, _), (stage, sused, ssec, sround) = _split(
        ["judge"], before | {"final_summary": None}, summed, grown, 2.0
    )
    assert jused == use and (stage, ssec, sround) == ("summarize", 1.5, None)
    assert sused == {"step_count": 3, "llm_calls": 3, "prompt_tokens": 30} | {
        "completion_tokens": 15
    } | NEW


def test_an_analysis_step_that_also_planned_is_split_by_stage() -> None:
    # a thread of the versions whose analyse node planned the phases and the first round in
    # its step, and said what each stage but the last spent
    zero = {"step_count": 0, "llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    analysed = {"stage": "analyse", **zero, "llm_calls": 1, "prompt_tokens": 7, "seconds": 0.2}
    planned = {"stage": "phase_plan", **zero, "step_count": 1, "llm_calls": 1, "seconds": 0.3}
    after = {"round_seq": 1, "chained_use": [analysed, planned, {"stage": "plan"}]}
    grown = {"step_count": 2, "llm_calls": 3, "prompt_tokens": 20, "completion_tokens": 0}
    parts = _split(["analyse"], {}, after, grown, 1.0)
    assert [(name, use["llm_calls"], round_seq) for name, use, _, round_seq in parts] == [
        ("analyse", 1, None),
        ("phase_plan", 1, None),
        ("plan", 1, 1),
    ]
    assert [round(took, 3) for _, _, took, _ in parts] == [0.2, 0.3, 0.5]
    assert parts[2][1] == {"step_count": 1, "llm_calls": 1, "prompt_tokens": 13} | {
        "completion_tokens": 0
    } | NEW
    # a later step (a review answered, say) keeps the value but did not write it
    assert _split(["human_review"], after, after, zero, 1.0)[0][0] == "human_review"


def test_show_says_how_each_phase_ended_not_done_for_one_that_fell_short() -> None:
    phases = [{"id": f"p{i}", "name": f"Phase {i}", "goal": f"goal {i}"} for i in range(1, 5)]

    def outcome(phase_id: str, completed: bool, ended_by: str) -> dict[str, Any]:
        ended = {"completed": completed, "ended_by": ended_by, "completion_rate": 1.0}
        return {"phase_id": phase_id, "name": phase_id, "rounds": 1, "summary": "", **ended}

    values = {
        "status": "running",
        "request": "r",
        "phases": phases,
        "phase_index": 2,
        "phase_outcomes": [outcome("p1", True, "completed"), outcome("p2", False, "round_limit")],
    }
    text = show_text("t", values)
    assert "**Phase 1** (p1, completed)" in text
    assert "**Phase 2** (p2, ended short: round_limit)" in text
    assert "**Phase 3** (p3, current)" in text and "**Phase 4** (p4, to do)" in text


def test_a_report_masks_secrets_and_its_page_loads_nothing_from_elsewhere(
    run: tuple[dict[str, Any], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    values, history = run
    monkeypatch.setenv("PHASEGRAPH_API_KEY", "ZZSECRETVALUE123")
    leaky = {
        **values,
        "final_summary": "notes.txt holds token=ZZSECRETVALUE123 ![p](http://127.0.0.1:9/x.png)",
        "checks": [{**c, "detail": "holds 'ZZSECRETVALUE123'"} for c in values["checks"]],
    }
    for fmt in ("md", "html", "json"):
        assert "ZZSECRETVALUE123" not in render("multi", leaky, fmt, history), fmt
    page = render("multi", leaky, "html", history)
    assert "<img" not in page and "127.0.0.1:9" in page  # the image's Markdown, as text


def test_a_phase_that_ran_but_did_not_end_is_not_reported_as_not_run(
    run: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    values, history = run
    last = values["phases"][-1]["id"]
    cut = {
        **values,
        "status": "budget_exhausted",
        "phase_outcomes": [o for o in values["phase_outcomes"] if o["phase_id"] != last],
    }
    phases = {p["id"]: p for p in build_report("multi", cut, history)["phases"]}
    rounds = [r for r in values["rounds"] if r["phase_id"] == last]
    assert rounds and phases[last]["ended_by"] == "stopped (budget_exhausted)"
    assert phases[last]["completion_rate"] == rounds[-1]["judgement"]["phase_completion_rate"]
    first = values["phases"][0]["id"]
    asking = {  # paused in the first round of the first phase, before any round is recorded
        **values,
        "status": "awaiting_review",
        "phase_outcomes": [],
        "rounds": [],
        "phase_index": 0,
        "current_plan": {"tasks": [{"id": "t1", "tool": "run_command", "arguments": {}}]},
    }
    phases = {p["id"]: p for p in build_report("multi", asking, history)["phases"]}
    assert phases[first]["ended_by"] == "in progress"
    assert [p["ended_by"] for p in phases.values()][1:] == ["not run"] * (len(phases) - 1)
    paused = {**cut, "status": "awaiting_review"}
    assert build_report("multi", paused, history)["phases"][-1]["ended_by"] == (
        "in progress"
    )


def test_a_thread_stopped_before_its_analysis_is_running_in_every_view() -> None:
    """Killed before its run set a status: the list, the report and show all say running."""
    from phasegraph.storage.database import sqlite_database
    from phasegraph.storage.thread_index import index_for

    values: dict[str, Any] = {"request": "go", "status": None, "step_count": 0}
    assert "**Status:** running" in show_text("k", values)
    report = build_report("k", values, None)
    assert report["status"] == "running"
    assert "**Status:** running" in render("k", values, "md")
    index = index_for(sqlite_database(":memory:"))
    index.record("k", values)
    (row,) = index.rows()
    assert row.status == "running"
