"""The tool journal (SPEC section 5): no finished tool call runs twice, none silently re-runs.

LangGraph keeps a finished task's result once its writes reach the checkpointer, but it re-runs a
task that was in flight at a crash, and can re-run one that finished just before it (its writes
are saved in the background). For a tool declared idempotent (``metadata={"idempotent": True}``)
that is harmless, and its calls are not journalled at all. Every execution of any other tool is
journalled under (thread, run, phase, round, task): ``started`` before the tool runs, with the
call (tool and arguments), ``finished`` with its result after. On a re-run of the same call, a
finished entry is replayed; a started-but-unfinished one is reported as "interrupted, outcome
unknown", never run again. A different call under the same key (`same_call`: a run forked from an
earlier checkpoint that planned the round anew, a plan edited before it ran) is a new execution.

Where the journal lies follows the checkpointer that keeps the run's thread (`journal_for`):
with a SQLite or PostgreSQL checkpointer it is a table in the same database, committed before and
after each such execution; with none, or one whose threads end with the process, it lives in
this process; with any other (a LangGraph server's, which keeps its threads across restarts; a
saver of the caller's own) it is a SQLite file kept with phasegraph's state (`journal_file`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
import weakref
from collections import defaultdict
from pathlib import Path
from typing import Any, Protocol

from langgraph.checkpoint.memory import InMemorySaver

from phasegraph.cache import state_dir
from phasegraph.storage.database import (
    Database,
    SqliteDatabase,
    async_sqlite_file,
    create_tables,
    database_of,
    in_memory,
    known_file,
    per_database,
    sqlite_database,
)


class ToolJournal(Protocol):
    """Where executions are journalled."""

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry for ``key``: {"state": "started"|"finished", "result", "tool", "arguments"}.

        None when there is none.
        """

    def start(self, key: str, tool: str, arguments: dict[str, Any]) -> None:
        """Record that an execution begins."""

    def finish(self, key: str, result: dict[str, Any]) -> None:
        """Record an execution's result, unless one is recorded already.

        The first word stays: an execution that ends after its task was reported interrupted
        (its run cancelled, and continued meanwhile) does not change what the thread was told,
        nor does one whose key a new call has taken since (a fork, an edited plan): a result
        is recorded over the started entry of its own call only.
        """


class MemoryJournal:
    """A journal in this process (in-memory and other non-file checkpointers)."""

    def __init__(self) -> None:
        """Start empty."""
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry for ``key``, or None."""
        with self._lock:
            entry = self._entries.get(key)
            return dict(entry) if entry else None

    def start(self, key: str, tool: str, arguments: dict[str, Any]) -> None:
        """Record that an execution begins."""
        with self._lock:
            self._entries[key] = {
                "state": "started",
                "result": None,
                "tool": tool,
                "arguments": _as_stored(arguments),
            }

    def finish(self, key: str, result: dict[str, Any]) -> None:
        """Record an execution's result, unless one is recorded already (`ToolJournal.finish`)."""
        with self._lock:
            entry = self._entries.get(key, {})
            if entry.get("state") == "started" and _its_call(entry, result):
                self._entries[key] = {**entry, "state": "finished", "result": result}


_JOURNAL_TABLE = (
    "CREATE TABLE IF NOT EXISTS phasegraph_tool_journal ("
    "key TEXT PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL, state TEXT NOT NULL, "
    "result TEXT, started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION)",
)


class TableJournal:
    """The journal as table ``phasegraph_tool_journal`` of the checkpointer's database.

    Each statement commits when it returns: an entry is durable before the tool runs (started)
    and before its result is handed to LangGraph (finished).
    """

    def __init__(self, db: Database) -> None:
        """Use the database ``db``; create the table on first use."""
        self.db = db
        create_tables(db, _JOURNAL_TABLE)

    def _execute(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """Run a statement; a table gone with its file (deleted meanwhile) is made again first."""
        try:
            return self.db.execute(sql, params)
        except Exception:
            if self.db.has_table("phasegraph_tool_journal"):
                raise
            if isinstance(self.db, SqliteDatabase):  # a new file, as the first one was made
                self.db.execute("PRAGMA journal_mode=WAL")
            create_tables(self.db, _JOURNAL_TABLE)
            return self.db.execute(sql, params)

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry for ``key``, or None."""
        rows = self._execute(
            "SELECT state, result, tool, arguments FROM phasegraph_tool_journal WHERE key = ?",
            (key,),
        )
        if not rows:
            return None
        state, result, tool, arguments = rows[0]
        return {
            "state": state,
            "result": json.loads(result) if result else None,
            "tool": tool,
            "arguments": json.loads(arguments),
        }

    def start(self, key: str, tool: str, arguments: dict[str, Any]) -> None:
        """Record that an execution begins."""
        self._execute(
            "INSERT INTO phasegraph_tool_journal (key, tool, arguments, state, started_at) "
            "VALUES (?, ?, ?, 'started', ?) ON CONFLICT (key) DO UPDATE SET tool = excluded.tool, "
            "arguments = excluded.arguments, state = 'started', result = NULL, "
            "started_at = excluded.started_at, finished_at = NULL",
            (key, tool, json.dumps(_as_stored(arguments)), time.time()),
        )

    def finish(self, key: str, result: dict[str, Any]) -> None:
        """Record an execution's result, unless one is recorded already (`ToolJournal.finish`)."""
        entry = self.get(key)
        if entry is None or entry["state"] != "started" or not _its_call(entry, result):
            return
        self._execute(
            "UPDATE phasegraph_tool_journal SET state = 'finished', result = ?, finished_at = ? "
            "WHERE key = ? AND state = 'started' AND tool = ? AND arguments = ?",
            (
                json.dumps(result, default=str),
                time.time(),
                key,
                entry["tool"],
                json.dumps(entry["arguments"]),
            ),
        )


# A process journal lives exactly as long as its checkpointer: keyed by the object itself, never
# by id(), which a new checkpointer may reuse after the old one is gone.
_memory_journals: weakref.WeakKeyDictionary[Any, MemoryJournal] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_log = logging.getLogger(__name__)


def _as_stored(arguments: dict[str, Any]) -> Any:
    """The arguments as a journal keeps them: JSON, anything else by its text."""
    return json.loads(json.dumps(arguments, default=str))


def _its_call(entry: dict[str, Any], result: dict[str, Any]) -> bool:
    """Whether ``result`` (a task's, naming its tool and arguments) is of the entry's call."""
    if "tool" not in result:
        return True  # a result that names no call: the key's own
    return same_call(entry, result["tool"], result.get("arguments") or {})


def same_call(entry: dict[str, Any], tool: str, arguments: dict[str, Any]) -> bool:
    """Whether a journal entry records this call: the same tool with the same arguments."""
    return entry.get("tool") == tool and entry.get("arguments") == _as_stored(arguments)


# Asking a SQLite checkpointer for its file is a query under its lock: once per checkpointer.
_databases: weakref.WeakKeyDictionary[Any, Database | None] = weakref.WeakKeyDictionary()


def _database_of(checkpointer: Any) -> Database | None:
    """`database_of`, asked once per checkpointer that can answer now.

    An async SQLite saver's file is known once `adatabase_of` has asked it: here, on the
    saver's own loop, from this worker thread (as LangGraph's sync methods of the saver do).
    """
    if checkpointer is None:
        return None
    try:
        return _databases[checkpointer]
    except KeyError:
        pass
    except TypeError:  # not weak-referenceable: asked each time
        return database_of(checkpointer)
    db = database_of(checkpointer)
    conn = getattr(checkpointer, "conn", None)
    asked_async = conn is not None and not isinstance(conn, sqlite3.Connection)
    if db is None and asked_async:
        db = _asked_on_its_loop(checkpointer)
    if db is not None or not asked_async:
        _databases[checkpointer] = db
    return db


def _asked_on_its_loop(checkpointer: Any) -> Database | None:
    """An async saver's database, its file asked on the loop it runs on (None: none to ask on).

    Only the question goes to the loop: opening the file is done here, in this worker thread,
    since the loop's own worker threads may all be running sync code that waits, as this does.
    """
    loop = getattr(checkpointer, "loop", None)
    if not isinstance(loop, asyncio.AbstractEventLoop) or loop.is_closed():
        return None
    try:
        if asyncio.get_running_loop() is loop:
            return None  # on that loop itself: waiting for it would stop it
    except RuntimeError:
        pass  # no loop runs in this thread
    conn = checkpointer.conn
    try:
        path = asyncio.run_coroutine_threadsafe(async_sqlite_file(conn), loop).result(30)
    except Exception as exc:  # the loop did not answer: said, not silently another journal
        _log.warning("could not ask an async saver for its file: %r", exc)
        return None
    return None if path is None else known_file(conn, path)


def ends_with_process(checkpointer: Any) -> bool:
    """Whether a checkpointer's threads end with this process.

    True for LangGraph's ``InMemorySaver`` itself keeping them in its default dicts (not a
    subclass, nor one given a ``factory`` that keeps them in files, as the LangGraph server's
    does) and for a SQLite saver on ``:memory:``.
    """
    if type(checkpointer) is InMemorySaver:
        return type(checkpointer.storage) is defaultdict
    return in_memory(checkpointer)


def journal_file() -> Path:
    """The journal of checkpointers with no database of their own: one per user.

    It is kept with phasegraph's state (`cache.state_dir`), in a folder named ``.phasegraph``,
    which the built-in tools never write, should a workspace hold it.
    """
    return state_dir() / ".phasegraph" / "journal.sqlite"


def journal_for(checkpointer: Any) -> ToolJournal:
    """The journal that lasts as long as a checkpointer's threads do (SPEC section 5).

    Its database's table for a SQLite or PostgreSQL checkpointer; one in this process for none
    or one whose threads end with the process (`ends_with_process`); for any other, the table in
    `journal_file`, so that an execution a restarted server finds started or finished is never
    silently run again. Where that file cannot be made, one in this process, with a warning.
    """
    db = _database_of(checkpointer)
    if db is not None:
        return per_database(db, TableJournal)
    if checkpointer is not None and not ends_with_process(checkpointer):
        try:
            return _journal_in_file()
        except (OSError, sqlite3.Error) as exc:
            _log.warning("tool journal kept in memory, %s unusable: %s", journal_file(), exc)
    with _lock:
        if checkpointer is None:
            return MemoryJournal()  # no checkpointer: nothing to resume, nothing to share
        try:
            return _memory_journals.setdefault(checkpointer, MemoryJournal())
        except TypeError:  # not weak-referenceable: a journal for this graph alone
            return MemoryJournal()


def _journal_in_file() -> ToolJournal:
    path = journal_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    return per_database(sqlite_database(str(path)), TableJournal)


def journal_key(thread_id: str, run_id: str, phase_id: str, round_seq: int, task_id: str) -> str:
    """The journal key of one task execution of one run of a thread.

    A new run on a thread id used before (no checkpointer, a deleted thread) has a new
    ``run_id``, so no execution of an earlier run is replayed as its own. A thread begun before
    runs had ids (``run_id`` empty) keeps the keys it was journalled under.
    """
    if not run_id:
        return json.dumps([thread_id, phase_id, round_seq, task_id])
    return json.dumps([thread_id, run_id, phase_id, round_seq, task_id])
