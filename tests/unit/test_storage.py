"""phasegraph's own tables in a SQLite file: one connection per thread, turns with the saver."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from phasegraph.storage import database as storage
from phasegraph.storage.database import SqliteDatabase, database_of
from phasegraph.storage.journal import TableJournal


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files `sqlite3.connect` opens while the test runs."""
    opened: list[str] = []
    real = sqlite3.connect

    def counting(path: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", counting)
    return opened


def test_a_thread_keeps_one_connection_for_all_its_statements(
    tmp_path: Path, connects: list[str]
) -> None:
    # One connection per statement made the journal's two entries per tool call cost more than
    # the framework's own work per call (bench: 7.3 ms per action against ReAct's 3.2).
    journal = TableJournal(SqliteDatabase(str(tmp_path / "j.sqlite")))
    for i in range(30):
        journal.start(f"k{i}", "tool", {"i": i})
        journal.finish(f"k{i}", {"output": str(i)})
    assert len(connects) == 1

    other = threading.Thread(target=lambda: journal.get("k1"))
    other.start()
    other.join()
    assert len(connects) == 2  # sqlite3 connections stay with the thread that opened them


def test_a_file_replaced_at_the_same_path_is_opened_anew(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    db = SqliteDatabase(str(path))
    db.execute("CREATE TABLE old_file (x)")
    for leftover in tmp_path.iterdir():
        leftover.unlink()
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE new_file (x)")
    other.close()
    names = [row[0] for row in db.execute("SELECT name FROM sqlite_master")]
    assert names == ["new_file"]


def test_commits_survive_the_process_without_waiting_for_the_disk(tmp_path: Path) -> None:
    db = SqliteDatabase(str(tmp_path / "t.sqlite"))
    assert db.execute("PRAGMA journal_mode")[0][0] == "wal"
    assert db.execute("PRAGMA synchronous")[0][0] == 1  # NORMAL: safe in WAL mode


def test_statements_wait_for_the_lock_of_the_savers_connection(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
        db = database_of(saver)
        assert db is not None
        db.execute("CREATE TABLE t (x)")
        done = threading.Event()

        def insert() -> None:
            db.execute("INSERT INTO t VALUES (1)")
            done.set()

        with saver.lock:  # the saver is writing
            worker = threading.Thread(target=insert)
            worker.start()
            assert not done.wait(0.1)
        assert done.wait(5)
        worker.join()
        assert db.execute("SELECT count(*) FROM t") == [(1,)]


def test_a_lock_held_by_the_same_thread_delays_a_statement_but_never_deadlocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A caller iterating the saver's list() holds its lock; a lease or journal statement made
    # meanwhile on the same thread must still run.
    monkeypatch.setattr(storage, "NEIGHBOUR_WAIT_S", 0.05)
    with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
        db = database_of(saver)
        assert db is not None
        with saver.lock:
            assert db.execute("SELECT 1") == [(1,)]


def _insert_in_child(db: SqliteDatabase) -> None:
    db.execute("INSERT INTO t VALUES ('child')")


def test_a_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    db = SqliteDatabase(str(tmp_path / "t.sqlite"))
    db.execute("CREATE TABLE t (x)")
    child = multiprocessing.get_context("fork").Process(target=_insert_in_child, args=(db,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    db.execute("INSERT INTO t VALUES ('parent')")
    assert sorted(db.execute("SELECT x FROM t")) == [("child",), ("parent",)]


def test_the_thread_index_holds_the_state_a_run_ended_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written from the values the stream carried (no read back), or read when it carried none."""
    from phasegraph import Context, ScriptedChatModel, build_graph, resume
    from phasegraph.graph.builder import PhaseGraph
    from phasegraph.storage.thread_index import index_for

    from scripts import ToolLog, make_script, make_tools

    reads: list[str] = []
    real = PhaseGraph.get_state

    def get_state(self: PhaseGraph, config: Any, **kwargs: Any) -> Any:
        reads.append(config["configurable"]["thread_id"])
        return real(self, config, **kwargs)

    monkeypatch.setattr(PhaseGraph, "get_state", get_state)
    with SqliteSaver.from_conn_string(str(tmp_path / "threads.sqlite")) as saver:
        graph = build_graph(
            model=ScriptedChatModel(script=make_script()),
            tools=make_tools(ToolLog()),
            checkpointer=saver,
        )
        runs: dict[str, Any] = {
            "invoked": lambda c: graph.invoke({"request": "go"}, c),
            "streamed": lambda c: list(graph.stream({"request": "go"}, c, stream_mode="updates")),
            "paused": lambda c: graph.invoke({"request": "go"}, c, context=Context(review="plan")),
        }
        for thread_id, run in runs.items():
            config: Any = {"configurable": {"thread_id": thread_id}}
            reads.clear()
            run(config)
            values = real(graph, config).values
            row = index_for(database_of(saver)).get(thread_id)  # type: ignore[arg-type]
            assert row is not None and row.status == values["status"]
            assert row.steps == values["step_count"] and row.request == "go"
            # the start's check reads the thread; only the updates stream reads it at the end,
            # and a pause, for its question (`__interrupt__`)
            assert len(reads) == (1 if thread_id == "invoked" else 2)
        resume(graph, {"configurable": {"thread_id": "paused"}}, {"action": "approve"})
        row = index_for(database_of(saver)).get("paused")  # type: ignore[arg-type]
        assert row is not None and row.status == "completed"


def test_an_async_saver_s_undecodable_checkpoint_is_refused_and_a_sound_one_read(
    tmp_path: Path,
) -> None:
    import asyncio
    import os

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from phasegraph import ScriptedChatModel, build_graph
    from phasegraph.errors import CheckpointRefusedError
    from phasegraph.storage.integrity import achecked_state

    from scripts import ANALYSIS, phases

    db = tmp_path / "a.sqlite"
    config: Any = {"configurable": {"thread_id": "t"}}
    script = {"request_analyser": [ANALYSIS], "phase_planner": [phases("p1")]}

    async def read(*, run: bool = False, locked: bool = False) -> Any:
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            graph = build_graph(model=ScriptedChatModel(script=script), checkpointer=saver)
            if run:
                context = {"workspace": str(tmp_path), "review": "plan"}
                await graph.ainvoke({"request": "x"}, config, context=context)
            if locked:

                async def busy(*_: Any) -> Any:
                    raise sqlite3.OperationalError("database is locked")

                saver.aget_tuple = busy  # type: ignore[method-assign]
            return await achecked_state(graph, config)

    assert asyncio.run(read(run=True)).next == ("human_review",)
    # a database that cannot be read now is that error, not a damaged checkpoint
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        asyncio.run(read(locked=True))
    with sqlite3.connect(db) as conn:
        (latest,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
                     (os.urandom(300), latest))  # fmt: skip
    with pytest.raises(CheckpointRefusedError, match="cannot be decoded"):
        asyncio.run(read())


def test_a_fresh_file_switches_to_wal_while_another_connection_holds_its_write_lock(
    tmp_path: Path,
) -> None:
    # Two processes opening a new file at once: the one that reads first and must then write
    # gets SQLITE_BUSY at once (no busy wait, it could deadlock), not after the busy timeout.
    path = tmp_path / "fresh.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE t (x)")
    releaser = threading.Timer(0.5, other.execute, args=("COMMIT",))
    releaser.start()
    try:
        db = SqliteDatabase(str(path))
    finally:
        releaser.join()
        other.close()
    assert db.execute("PRAGMA journal_mode") == [("wal",)]
    assert db.has_table("t")
