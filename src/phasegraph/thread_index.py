"""The thread index: one row per thread in the checkpointer's SQLite file, for fast listing.

Listing threads from checkpoints alone means decoding every thread's latest state, which takes
seconds on a file with thousands of threads. The compiled graph (`PhaseGraph`) records each
thread's status, request, steps and last update here when a run call returns, whatever ended it;
`phasegraph threads` reads this table and indexes any thread it does not hold yet (a database
written by other code) from its checkpoints, once.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS phasegraph_threads ("
    "thread_id TEXT PRIMARY KEY, status TEXT NOT NULL, request TEXT NOT NULL, "
    "steps INTEGER NOT NULL, model TEXT NOT NULL DEFAULT '', workspace TEXT NOT NULL DEFAULT '', "
    "created_at REAL NOT NULL, updated_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS phasegraph_threads_updated ON phasegraph_threads (updated_at)",
)


@dataclass(frozen=True)
class ThreadRow:
    """One thread as `phasegraph threads` lists it."""

    thread_id: str
    status: str
    request: str
    steps: int
    model: str
    workspace: str
    created_at: float
    updated_at: float

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict (for JSON output)."""
        return asdict(self)


class ThreadIndex:
    """Table ``phasegraph_threads`` of a SQLite database file."""

    def __init__(self, path: str) -> None:
        """Use the database at ``path``; create the table on first use."""
        self.path = path
        with self._connection() as conn:
            for statement in _SCHEMA:
                conn.execute(statement)

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        # Autocommit and a long busy timeout: other processes write the same file.
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            yield conn
        finally:
            conn.close()

    def record(
        self, thread_id: str, values: Mapping[str, Any], *, model: str = "", workspace: str = ""
    ) -> None:
        """Write a thread's row from its state values (status, request, steps)."""
        now = time.time()
        row = (
            thread_id,
            str(values.get("status") or "running"),
            str(values.get("request") or ""),
            int(values.get("step_count") or 0),
            model,
            workspace,
            now,
            now,
        )
        with self._connection() as conn:
            conn.execute(
                "INSERT INTO phasegraph_threads VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(thread_id) DO UPDATE SET status=excluded.status, "
                "request=excluded.request, steps=excluded.steps, updated_at=excluded.updated_at, "
                "model=CASE WHEN excluded.model != '' THEN excluded.model ELSE model END, "
                "workspace=CASE WHEN excluded.workspace != '' THEN excluded.workspace "
                "ELSE workspace END",
                row,
            )

    def get(self, thread_id: str) -> ThreadRow | None:
        """The row of one thread, or None."""
        with self._connection() as conn:
            found = conn.execute(
                "SELECT * FROM phasegraph_threads WHERE thread_id = ?", (thread_id,)
            ).fetchone()
        return ThreadRow(*found) if found else None

    def rows(self, status: str | None = None, limit: int | None = None) -> list[ThreadRow]:
        """Threads, most recently updated first, optionally of one status."""
        query = "SELECT * FROM phasegraph_threads"
        params: list[Any] = []
        if status:
            query += " WHERE status = ?"
            params.append(status)
        query += " ORDER BY updated_at DESC"
        if limit:
            query += " LIMIT ?"
            params.append(limit)
        with self._connection() as conn:
            return [ThreadRow(*r) for r in conn.execute(query, params).fetchall()]

    def unindexed(self) -> list[str]:
        """Threads that have checkpoints but no row yet."""
        with self._connection() as conn:
            has_checkpoints = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'"
            ).fetchone()
            if not has_checkpoints:
                return []
            return [
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id NOT IN "
                    "(SELECT thread_id FROM phasegraph_threads)"
                ).fetchall()
            ]


_indexes: dict[str, ThreadIndex] = {}
_indexes_lock = threading.Lock()


def index_for(path: str) -> ThreadIndex:
    """The index of the database at ``path``, made once per process."""
    with _indexes_lock:
        if path not in _indexes:
            _indexes[path] = ThreadIndex(path)
        return _indexes[path]
