"""The tool journal (SPEC section 5) decides whether a task runs, replays or is reported."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from phasegraph import ScriptedChatModel, build_graph
from phasegraph.storage.database import sqlite_database
from phasegraph.storage.journal import TableJournal, journal_key

from scripts import final_state, make_script, phases, round_plan


@pytest.fixture
def setup(tmp_path: Path):
    calls: list[str] = []

    @tool
    def append(text: str) -> str:
        """Append text somewhere (not idempotent)."""
        calls.append(text)
        return f"appended {text}"

    @tool
    def fetch(text: str) -> str:
        """Read something (idempotent)."""
        calls.append(text)
        return f"fetched {text}"

    fetch.metadata = {"idempotent": True}
    db = tmp_path / "threads.sqlite"
    journal = TableJournal(sqlite_database(str(db)))
    return calls, [append, fetch], db, journal


def run_once(db: Path, tools, tool_name: str):
    script = make_script(
        phase_planner=[phases("p1")], plan_tool_call=[round_plan(("t1", tool_name, {"text": "x"}))]
    )
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=ScriptedChatModel(script=script), tools=tools, checkpointer=saver)
        return final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "j"}})


KEY = journal_key("j", "p1", 1, "t1")


def test_a_fresh_task_runs_and_is_journalled(setup) -> None:
    calls, tools, db, journal = setup
    out = run_once(db, tools, "append")
    assert calls == ["x"]
    entry = journal.get(KEY)
    assert entry["state"] == "finished" and entry["result"]["output"] == "appended x"
    assert out["rounds"][0]["results"][0]["replayed"] is False


def test_a_finished_entry_is_replayed_not_rerun(setup) -> None:
    calls, tools, db, journal = setup
    journal.start(KEY, "append", {"text": "x"})
    journal.finish(
        KEY,
        {
            "task_id": "t1",
            "tool": "append",
            "arguments": {"text": "x"},
            "status": "ok",
            "output": "appended x earlier",
            "duration_s": 0.1,
            "wave": 1,
            "replayed": False,
        },
    )
    out = run_once(db, tools, "append")
    assert calls == []
    result = out["rounds"][0]["results"][0]
    assert result["replayed"] is True and result["output"] == "appended x earlier"
    assert out["step_count"] == 4  # the execution still counts once


def test_a_started_non_idempotent_call_is_reported_not_rerun(setup) -> None:
    calls, tools, db, journal = setup
    journal.start(KEY, "append", {"text": "x"})
    out = run_once(db, tools, "append")
    result = out["rounds"][0]["results"][0]
    assert result["status"] == "interrupted"
    # not run again as that task: a later round, which the phase needs since none of its tasks
    # is known to have succeeded, runs its own call once
    assert calls == ["x"] * (len(out["rounds"]) - 1) and len(out["rounds"]) > 1
    assert "outcome unknown" in result["output"]
    assert journal.get(KEY)["state"] == "finished"


def test_a_started_idempotent_call_is_run_again(setup) -> None:
    calls, tools, db, journal = setup
    journal.start(KEY, "fetch", {"text": "x"})
    out = run_once(db, tools, "fetch")
    assert calls == ["x"]
    assert out["rounds"][0]["results"][0]["status"] == "ok"


def test_a_new_in_memory_checkpointer_never_inherits_an_old_journal(tools, tool_log) -> None:
    """Journals once keyed by id(): a new saver at a reused address replayed old results."""
    import gc

    from langgraph.checkpoint.memory import InMemorySaver

    script = make_script(phase_planner=[phases("p1")])
    for _ in range(20):
        graph = build_graph(
            model=ScriptedChatModel(script=script), tools=tools, checkpointer=InMemorySaver()
        )
        out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "same"}})
        assert out["rounds"][0]["results"][0]["replayed"] is False
        del graph, out
        gc.collect()
    assert len(tool_log.calls) == 20


def journal_rows(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT key, state FROM phasegraph_tool_journal ORDER BY key")
        return rows.fetchall()


def test_an_idempotent_call_leaves_no_journal_entry(setup) -> None:
    """Only calls that must not run twice are journalled (SPEC 5): a read needs no entry."""
    calls, tools, db, journal = setup
    out = run_once(db, tools, "fetch")
    assert calls == ["x"]
    assert out["rounds"][0]["results"][0]["status"] == "ok"
    assert journal.get(KEY) is None
    assert journal_rows(db) == []


def test_an_idempotent_tool_never_replays_an_old_entry(setup) -> None:
    """A finished entry (written before this rule) is not read: the idempotent call runs again."""
    calls, tools, db, journal = setup
    journal.start(KEY, "fetch", {"text": "x"})
    journal.finish(KEY, {"task_id": "t1", "status": "ok", "output": "fetched earlier"})
    out = run_once(db, tools, "fetch")
    assert calls == ["x"]
    assert out["rounds"][0]["results"][0]["output"] == "fetched x"


MIXED = make_script(
    phase_planner=[phases("p1")],
    plan_tool_call=[round_plan(("a", "append", {"text": "a"}), ("f", "fetch", {"text": "f"}))],
)


def test_a_round_journals_its_non_idempotent_call_only(setup) -> None:
    calls, tools, db, _ = setup
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=ScriptedChatModel(script=MIXED), tools=tools, checkpointer=saver)
        out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "j"}})
    assert sorted(calls) == ["a", "f"]
    statuses = {r["task_id"]: r["status"] for r in out["rounds"][0]["results"]}
    assert statuses == {"a": "ok", "f": "ok"}
    assert journal_rows(db) == [(journal_key("j", "p1", 1, "a"), "finished")]


def test_after_a_crash_mid_round_only_the_idempotent_call_runs_again(setup) -> None:
    """The thread as a process killed mid-round leaves it: both calls started, no task written.

    The non-idempotent call's journal entry says it started: it is reported "interrupted,
    outcome unknown" and never run again; the idempotent one, which left no entry, runs again.
    """
    calls, tools, db, journal = setup
    config = {"configurable": {"thread_id": "j"}}
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=ScriptedChatModel(script=MIXED), tools=tools, checkpointer=saver)
        final_state(graph, {"request": "go"}, config, interrupt_before=["run_task"])
        assert graph.get_state(config).next == ("run_task", "run_task")
        journal.start(journal_key("j", "p1", 1, "a"), "append", {"text": "a"})  # then killed
        out = final_state(graph, None, config)
    assert calls == ["f"]
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["a"]["status"] == "interrupted"
    assert "outcome unknown" in results["a"]["output"]
    assert results["f"]["status"] == "ok" and results["f"]["replayed"] is False
    assert journal_rows(db) == [(journal_key("j", "p1", 1, "a"), "finished")]
