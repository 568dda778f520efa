"""The tool journal (SPEC section 5) decides whether a task runs, replays or is reported."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver, PersistentDict
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph

from phasegraph import ScriptedChatModel, build_graph
from phasegraph.storage.database import sqlite_database
from phasegraph.storage.journal import (
    TableJournal,
    ends_with_process,
    journal_file,
    journal_for,
    journal_key,
)

from scripts import Parent, final_state, make_script, phases, round_plan


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


def key_of(values: dict, task: str = "t1") -> str:
    """The journal key of a task of the run's first round, in phase p1 of thread j."""
    return journal_key("j", values["run_id"], "p1", 1, task)


def one_call(tools, tool_name: str = "append", **build: Any) -> Any:
    """A graph whose run has one task, t1, calling ``tool_name`` with text x."""
    script = make_script(
        phase_planner=[phases("p1")], plan_tool_call=[round_plan(("t1", tool_name, {"text": "x"}))]
    )
    return build_graph(model=ScriptedChatModel(script=script), tools=tools, **build)


def run_once(db: Path, tools, tool_name: str, before_tasks=None):
    """A run of one task; ``before_tasks(key)`` is called when its round is about to run it.

    That is where a crash leaves a thread: its round planned, its task's journal entry (if the
    crash came after the call began) written, its result not.
    """
    config = {"configurable": {"thread_id": "j"}}
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = one_call(tools, tool_name, checkpointer=saver)
        if before_tasks is None:
            return final_state(graph, {"request": "go"}, config)
        final_state(graph, {"request": "go"}, config, interrupt_before=["execute"])
        before_tasks(key_of(graph.get_state(config).values))
        return final_state(graph, None, config)


def test_a_fresh_task_runs_and_is_journalled(setup) -> None:
    calls, tools, db, journal = setup
    out = run_once(db, tools, "append")
    assert calls == ["x"]
    entry = journal.get(key_of(out))
    assert entry["state"] == "finished" and entry["result"]["output"] == "appended x"
    assert out["rounds"][0]["results"][0]["replayed"] is False


def test_a_finished_entry_is_replayed_not_rerun(setup) -> None:
    calls, tools, db, journal = setup

    def finished_earlier(key: str) -> None:
        journal.start(key, "append", {"text": "x"})
        journal.finish(key, RESULT)

    out = run_once(db, tools, "append", finished_earlier)
    assert calls == []
    result = out["rounds"][0]["results"][0]
    assert result["replayed"] is True and result["output"] == "appended x earlier"
    assert out["step_count"] == 4  # the execution still counts once


RESULT = {
    "task_id": "t1",
    "tool": "append",
    "arguments": {"text": "x"},
    "status": "ok",
    "output": "appended x earlier",
    "duration_s": 0.1,
    "wave": 1,
    "replayed": False,
}


def test_a_started_non_idempotent_call_is_reported_not_rerun(setup) -> None:
    calls, tools, db, journal = setup
    out = run_once(db, tools, "append", lambda key: journal.start(key, "append", {"text": "x"}))
    result = out["rounds"][0]["results"][0]
    assert result["status"] == "interrupted"
    # not run again as that task: a later round, which the phase needs since none of its tasks
    # is known to have succeeded, runs its own call once
    assert calls == ["x"] * (len(out["rounds"]) - 1) and len(out["rounds"]) > 1
    assert "outcome unknown" in result["output"]
    assert journal.get(key_of(out))["state"] == "finished"


def test_a_started_idempotent_call_is_run_again(setup) -> None:
    calls, tools, db, journal = setup
    out = run_once(db, tools, "fetch", lambda key: journal.start(key, "fetch", {"text": "x"}))
    assert calls == ["x"]
    assert out["rounds"][0]["results"][0]["status"] == "ok"


def test_a_new_in_memory_checkpointer_never_inherits_an_old_journal(tools, tool_log) -> None:
    """Journals once keyed by id(): a new saver at a reused address replayed old results."""
    import gc

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
    assert journal.get(key_of(out)) is None
    assert journal_rows(db) == []


def test_an_idempotent_tool_never_replays_an_old_entry(setup) -> None:
    """A finished entry (written before this rule) is not read: the idempotent call runs again."""
    calls, tools, db, journal = setup

    def finished_earlier(key: str) -> None:
        journal.start(key, "fetch", {"text": "x"})
        journal.finish(key, {"task_id": "t1", "status": "ok", "output": "fetched earlier"})

    out = run_once(db, tools, "fetch", finished_earlier)
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
    assert journal_rows(db) == [(key_of(out, "a"), "finished")]


def test_after_a_crash_mid_round_only_the_idempotent_call_runs_again(setup) -> None:
    """The thread as a process killed mid-round leaves it: both calls started, no task written.

    The non-idempotent call's journal entry says it started: it is reported "interrupted,
    outcome unknown" and never run again; the idempotent one, which left no entry, runs again.
    """
    calls, tools, db, journal = setup
    config = {"configurable": {"thread_id": "j"}}
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=ScriptedChatModel(script=MIXED), tools=tools, checkpointer=saver)
        final_state(graph, {"request": "go"}, config, interrupt_before=["execute"])
        assert graph.get_state(config).next == ("execute",)
        key = key_of(graph.get_state(config).values, "a")
        journal.start(key, "append", {"text": "a"})  # then killed
        out = final_state(graph, None, config)
    assert calls == ["f"]
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["a"]["status"] == "interrupted"
    assert "outcome unknown" in results["a"]["output"]
    assert results["f"]["status"] == "ok" and results["f"]["replayed"] is False
    assert journal_rows(db) == [(key, "finished")]


def test_a_new_run_on_a_reused_thread_id_runs_its_calls(setup) -> None:
    """Keys once held no run: a deleted thread's id, used again, replayed the old run's call."""
    calls, tools, db, journal = setup
    first = run_once(db, tools, "append")
    with SqliteSaver.from_conn_string(str(db)) as saver:
        saver.delete_thread("j")
    second = run_once(db, tools, "append")
    assert calls == ["x", "x"]
    assert second["run_id"] != first["run_id"]
    assert second["rounds"][0]["results"][0]["replayed"] is False


def test_runs_of_a_graph_without_a_checkpointer_each_run_their_calls(tools, tool_log) -> None:
    """Without a checkpointer every run is a new one, under the same (empty) thread id."""
    script = make_script(phase_planner=[phases("p1")] * 2)
    graph = build_graph(model=ScriptedChatModel(script=script), tools=tools)
    outs = [graph.invoke({"request": "go"}) for _ in range(2)]
    assert [o["status"] for o in outs] == ["completed", "completed"]
    assert len(tool_log.calls) == 2


def test_a_different_call_under_a_journalled_key_runs_as_a_new_one(setup) -> None:
    calls, tools, db, journal = setup

    def other_call_finished(key: str) -> None:
        journal.start(key, "append", {"text": "an earlier plan's text"})
        journal.finish(key, {**RESULT, "output": "appended an earlier plan's text"})

    out = run_once(db, tools, "append", other_call_finished)
    result = out["rounds"][0]["results"][0]
    assert calls == ["x"] and result["replayed"] is False and result["output"] == "appended x"
    entry = journal.get(key_of(out))
    assert entry["arguments"] == {"text": "x"} and entry["result"]["output"] == "appended x"


def test_a_run_forked_before_its_plan_runs_the_new_plans_call(tmp_path: Path) -> None:
    calls: list[str] = []

    @tool
    def append(text: str) -> str:
        """Append text somewhere (not idempotent)."""
        calls.append(text)
        return f"appended {text}"

    plans = iter(["first", "second"])
    script = make_script(
        phase_planner=[phases("p1")],
        plan_tool_call=[lambda _m: round_plan(("t1", "append", {"text": next(plans)}))],
    )
    config = {"configurable": {"thread_id": "f"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
        model = ScriptedChatModel(script=script)
        graph = build_graph(model=model, tools=[append], checkpointer=saver)
        graph.invoke({"request": "go"}, config)
        before_plan = next(s for s in graph.get_state_history(config) if s.next == ("plan",))
        graph.invoke(None, before_plan.config)
        result = graph.get_state(config).values["rounds"][0]["results"][0]
    assert calls == ["first", "second"]
    assert result["arguments"] == {"text": "second"} and result["output"] == "appended second"


def test_the_first_result_a_journal_records_stays(tmp_path: Path) -> None:
    # a call that ends after its task was reported interrupted (its run cancelled, then
    # continued) must not turn the journal's word into another than the thread was told
    from phasegraph.storage.journal import MemoryJournal

    for journal in (TableJournal(sqlite_database(str(tmp_path / "j.sqlite"))), MemoryJournal()):
        journal.start("k", "append", {"text": "x"})
        journal.finish("k", {"status": "interrupted"})
        journal.finish("k", {"status": "ok"})
        entry = journal.get("k")
        assert entry is not None and entry["result"] == {"status": "interrupted"}
        journal.start("k", "append", {"text": "y"})  # a new execution under the key records anew
        journal.finish("k", {"status": "ok"})
        assert journal.get("k")["result"] == {"status": "ok"}  # type: ignore[index]


def test_a_result_is_recorded_over_its_own_calls_entry_only(tmp_path: Path) -> None:
    # a call left behind (a fork, an edited plan took its key meanwhile) ends late: its result
    # must not be filed under the new call, nor keep the new call's from being recorded
    from phasegraph.storage.journal import MemoryJournal

    for journal in (TableJournal(sqlite_database(str(tmp_path / "k.sqlite"))), MemoryJournal()):
        journal.start("k", "append", {"text": "a"})
        journal.start("k", "append", {"text": "b"})
        journal.finish("k", {"tool": "append", "arguments": {"text": "a"}, "output": "did a"})
        assert journal.get("k")["state"] == "started"  # type: ignore[index]
        journal.finish("k", {"tool": "append", "arguments": {"text": "b"}, "output": "did b"})
        assert journal.get("k")["result"]["output"] == "did b"  # type: ignore[index]


def test_a_result_is_filed_under_its_own_tool_even_if_its_key_is_taken_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another process starts a new call under the key between the read and the write of finish
    journal = TableJournal(sqlite_database(str(tmp_path / "r.sqlite")))
    journal.start("k", "delete_file", {"path": "x"})
    stale = journal.get("k")
    journal.start("k", "write_file", {"path": "x"})  # the same arguments, another tool
    monkeypatch.setattr(journal, "get", lambda key: stale)
    journal.finish("k", {"tool": "delete_file", "arguments": {"path": "x"}, "output": "gone"})
    monkeypatch.undo()
    assert journal.get("k")["state"] == "started"  # type: ignore[index]


class ServerSaver(InMemorySaver):
    """A checkpointer a server hands each run, whose threads outlast its process (as
    ``langgraph dev``'s, an InMemorySaver kept in files)."""

    def restarted(self) -> ServerSaver:
        """The saver of the server started again: a new object, reading the same threads."""
        new = ServerSaver()
        new.storage, new.writes, new.blobs = self.storage, self.writes, self.blobs
        return new


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """phasegraph's state folder, where a journal without a database of its own lies."""
    folder = tmp_path / "state"
    monkeypatch.setenv("PHASEGRAPH_STATE_DIR", str(folder))
    return folder


def served_run(saver, tools, before_tasks=None, built_with=None):
    """A run as a LangGraph server makes it: of a copy of the graph given the server's saver.

    The graph is built with ``built_with`` (none, as `phasegraph.graph` is); after
    ``before_tasks``, the run goes on as a restarted server's: a new graph, a new saver object.
    """

    def served(saver: Any) -> Any:
        return one_call(tools, checkpointer=built_with).copy(update={"checkpointer": saver})

    config = {"configurable": {"thread_id": "j"}}
    if before_tasks is None:
        return final_state(served(saver), {"request": "go"}, config)
    graph = served(saver)
    final_state(graph, {"request": "go"}, config, interrupt_before=["execute"])
    before_tasks(key_of(graph.get_state(config).values))
    return final_state(served(saver.restarted()), None, config)


def test_a_served_run_journals_in_the_state_folder(setup, state: Path) -> None:
    calls, tools, _, _ = setup
    out = served_run(ServerSaver(), tools)
    assert calls == ["x"]
    journal = TableJournal(sqlite_database(str(journal_file())))
    assert journal_file() == state / ".phasegraph" / "journal.sqlite"
    assert journal.get(key_of(out))["result"]["output"] == "appended x"


def test_a_served_copy_of_a_graph_built_with_a_saver_journals_as_the_server_keeps(
    setup, state: Path
) -> None:
    """The run's saver is the one LangGraph runs it on, not the one the graph was built with."""
    calls, tools, _, _ = setup
    out = served_run(ServerSaver(), tools, built_with=InMemorySaver())
    assert calls == ["x"] and journal_file().exists()
    assert TableJournal(sqlite_database(str(journal_file()))).get(key_of(out))


def test_a_restarted_server_reports_a_started_call_instead_of_running_it(
    setup, state: Path
) -> None:
    """The journal once lived in the server's process: after a restart the call ran again."""
    calls, tools, _, _ = setup
    saver = ServerSaver()
    out = served_run(
        saver, tools, lambda key: journal_for(saver).start(key, "append", {"text": "x"})
    )
    result = out["rounds"][0]["results"][0]
    assert result["status"] == "interrupted" and "outcome unknown" in result["output"]
    assert calls == ["x"] * (len(out["rounds"]) - 1)


@pytest.mark.parametrize(
    "saver",
    [InMemorySaver, lambda: SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))],
)
def test_a_saver_whose_threads_end_with_the_process_writes_no_journal_file(
    setup, state: Path, saver
) -> None:
    calls, tools, _, _ = setup
    graph = one_call(tools, checkpointer=saver())
    out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "j"}})
    assert out["status"] == "completed" and calls == ["x"]
    assert not state.exists()


def test_a_state_folder_that_cannot_be_made_keeps_the_journal_in_memory(
    setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    calls, tools, _, _ = setup
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("PHASEGRAPH_STATE_DIR", str(blocked / "state"))
    out = served_run(ServerSaver(), tools)
    assert out["status"] == "completed" and calls == ["x"]
    assert "tool journal kept in memory" in caplog.text


def test_a_node_of_a_parent_on_an_async_sqlite_saver_journals_in_the_parents_file(
    setup, tmp_path: Path, state: Path
) -> None:
    """An async SQLite saver names its file only when asked asynchronously: asked first."""
    calls, tools, _, _ = setup

    async def run() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "parent.sqlite")) as saver:
            builder = StateGraph(Parent)
            builder.add_node("agent", one_call(tools))
            builder.add_edge(START, "agent")
            builder.add_edge("agent", END)
            parent = builder.compile(checkpointer=saver)
            out = await parent.ainvoke({"request": "go"}, {"configurable": {"thread_id": "p"}})
            assert out["status"] == "completed"

    asyncio.run(run())
    assert calls == ["x"] and not state.exists()
    assert [state for _, state in journal_rows(tmp_path / "parent.sqlite")] == ["finished"]


def test_a_journal_whose_file_was_deleted_makes_its_table_again(state: Path) -> None:
    """Its table was made once per process: every call after the file went failed."""
    journal = journal_for(ServerSaver())
    journal.start("k1", "append", {"text": "x"})
    for path in journal_file().parent.glob("journal.sqlite*"):
        path.unlink()
    journal.start("k2", "append", {"text": "y"})
    assert journal.get("k2")["state"] == "started" and journal.get("k1") is None


def test_which_savers_keep_their_threads_in_this_process_alone(tmp_path: Path) -> None:
    kept = functools.partial(PersistentDict, filename=str(tmp_path / "threads"))
    assert ends_with_process(InMemorySaver())
    assert not ends_with_process(InMemorySaver(factory=kept))  # type: ignore[arg-type]
    assert not ends_with_process(ServerSaver())
    with sqlite3.connect(":memory:") as conn:
        assert ends_with_process(SqliteSaver(conn))
    with sqlite3.connect(tmp_path / "threads.sqlite") as conn:
        assert not ends_with_process(SqliteSaver(conn))


def test_an_async_sqlite_saver_run_from_sync_code_journals_in_its_file(
    setup, tmp_path: Path, state: Path
) -> None:
    """Sync code (invoke, in a worker thread) cannot ask an async saver its file itself."""
    calls, tools, _, _ = setup
    db = tmp_path / "threads.sqlite"

    async def run() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            graph = one_call(tools, checkpointer=saver)
            config = {"configurable": {"thread_id": "j"}}
            out = await asyncio.to_thread(graph.invoke, {"request": "go"}, config)
            assert out["status"] == "completed"

    asyncio.run(run())
    assert calls == ["x"] and not state.exists()
    assert [row_state for _, row_state in journal_rows(db)] == ["finished"]


def test_an_async_sqlite_saver_on_memory_writes_no_journal_file(setup, state: Path) -> None:
    calls, tools, _, _ = setup

    async def run() -> None:
        async with AsyncSqliteSaver.from_conn_string(":memory:") as saver:
            graph = one_call(tools, checkpointer=saver)
            out = await graph.ainvoke({"request": "go"}, {"configurable": {"thread_id": "j"}})
            assert out["status"] == "completed"

    asyncio.run(run())
    assert calls == ["x"] and not state.exists()


def test_an_async_saver_is_asked_its_file_with_the_loops_workers_all_busy(
    setup, tmp_path: Path, state: Path
) -> None:
    """Opening the file on the loop's workers waited for the very worker that asked, then gave
    up after 30 s and journalled in the per-user file instead."""
    calls, tools, _, _ = setup
    db = tmp_path / "threads.sqlite"

    async def run() -> None:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=1))
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            graph = one_call(tools, checkpointer=saver)
            config = {"configurable": {"thread_id": "j"}}
            out = await asyncio.wait_for(
                asyncio.to_thread(graph.invoke, {"request": "go"}, config), timeout=20
            )
            assert out["status"] == "completed"

    asyncio.run(run())
    assert calls == ["x"] and not state.exists()
    assert [row_state for _, row_state in journal_rows(db)] == ["finished"]
