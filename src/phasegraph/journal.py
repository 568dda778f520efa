"""The tool journal (SPEC section 5): no finished tool call runs twice, none silently re-runs.

LangGraph keeps a finished task's result once its writes reach the checkpointer, but it re-runs a
task that was in flight at a crash, and can re-run one that finished just before it (its writes
are saved in the background). So every execution is also journalled under (thread, phase, round,
task): ``started`` before the tool runs, ``finished`` with its result after. On a re-run, a
finished entry is replayed; a started-but-unfinished one is re-run only when its tool is
idempotent, and otherwise reported as "interrupted, outcome unknown".

With a SQLite checkpointer the journal is a table in the same file, committed before and after
each execution; with any other checkpointer it lives in this process.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
import weakref
from typing import Any, Protocol

from phasegraph.lease import sqlite_path_of


class ToolJournal(Protocol):
    """Where executions are journalled."""

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry for ``key``: {"state": "started"|"finished", "result": ...}, or None."""

    def start(self, key: str, tool: str, arguments: dict[str, Any]) -> None:
        """Record that an execution begins."""

    def finish(self, key: str, result: dict[str, Any]) -> None:
        """Record an execution's result."""


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
            self._entries[key] = {"state": "started", "result": None}

    def finish(self, key: str, result: dict[str, Any]) -> None:
        """Record an execution's result."""
        with self._lock:
            self._entries[key] = {"state": "finished", "result": result}


class SqliteJournal:
    """The journal as table ``phasegraph_tool_journal`` of the checkpointer's SQLite file."""

    def __init__(self, path: str) -> None:
        """Use the database at ``path``; create the table on first use."""
        self.path = path
        with contextlib.closing(self._connect()) as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS phasegraph_tool_journal ("
                "key TEXT PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL, "
                "state TEXT NOT NULL, result TEXT, started_at REAL NOT NULL, finished_at REAL)"
            )

    def _connect(self) -> sqlite3.Connection:
        # Autocommit: each statement is durable when it returns, which is the point.
        return sqlite3.connect(self.path, timeout=30.0, isolation_level=None)

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry for ``key``, or None."""
        with contextlib.closing(self._connect()) as conn:
            row = conn.execute(
                "SELECT state, result FROM phasegraph_tool_journal WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return {"state": row[0], "result": json.loads(row[1]) if row[1] else None}

    def start(self, key: str, tool: str, arguments: dict[str, Any]) -> None:
        """Record that an execution begins."""
        with contextlib.closing(self._connect()) as conn:
            conn.execute(
                "INSERT OR REPLACE INTO phasegraph_tool_journal "
                "(key, tool, arguments, state, result, started_at) "
                "VALUES (?, ?, ?, 'started', NULL, ?)",
                (key, tool, json.dumps(arguments, default=str), time.time()),
            )

    def finish(self, key: str, result: dict[str, Any]) -> None:
        """Record an execution's result."""
        with contextlib.closing(self._connect()) as conn:
            conn.execute(
                "UPDATE phasegraph_tool_journal SET state = 'finished', result = ?, "
                "finished_at = ? WHERE key = ?",
                (json.dumps(result, default=str), time.time(), key),
            )


# A process journal lives exactly as long as its checkpointer: keyed by the object itself, never
# by id(), which a new checkpointer may reuse after the old one is gone.
_memory_journals: weakref.WeakKeyDictionary[Any, MemoryJournal] = weakref.WeakKeyDictionary()
_sqlite_journals: dict[str, SqliteJournal] = {}
_lock = threading.Lock()


def journal_for(checkpointer: Any) -> ToolJournal:
    """The journal that fits a checkpointer: its SQLite file, else one in this process."""
    path = sqlite_path_of(checkpointer)
    with _lock:
        if path:
            if path not in _sqlite_journals:
                _sqlite_journals[path] = SqliteJournal(path)
            return _sqlite_journals[path]
        if checkpointer is None:
            return MemoryJournal()  # no checkpointer: nothing to resume, nothing to share
        try:
            return _memory_journals.setdefault(checkpointer, MemoryJournal())
        except TypeError:  # not weak-referenceable: a journal for this graph alone
            return MemoryJournal()


def journal_key(thread_id: str, phase_id: str, round_seq: int, task_id: str) -> str:
    """The journal key of one task execution."""
    return json.dumps([thread_id, phase_id, round_seq, task_id])
