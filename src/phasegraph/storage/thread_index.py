"""The thread index: one row per thread in the checkpointer's database, for fast listing.

Listing threads from checkpoints alone means decoding every thread's latest state, which takes
seconds on a file with thousands of threads. The compiled graph (`PhaseGraph`) records each
thread's status, request, steps and last update here when a run call returns, whatever ended it;
`phasegraph threads` reads this table and indexes any thread it does not hold yet (a database
written by other code) from its checkpoints, once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from phasegraph.state.reading import shown_status
from phasegraph.storage.database import Database, create_tables, per_database

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS phasegraph_threads ("
    "thread_id TEXT PRIMARY KEY, status TEXT NOT NULL, request TEXT NOT NULL, "
    "steps INTEGER NOT NULL, model TEXT NOT NULL DEFAULT '', workspace TEXT NOT NULL DEFAULT '', "
    "created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL)",
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
    """Table ``phasegraph_threads`` of the checkpointer's database (SQLite or PostgreSQL)."""

    def __init__(self, db: Database) -> None:
        """Use the database ``db``; create the table on first use."""
        self.db = db
        create_tables(db, _SCHEMA)

    def record(
        self, thread_id: str, values: Mapping[str, Any], *, model: str = "", workspace: str = ""
    ) -> None:
        """Write a thread's row from its state values (status, request, steps)."""
        now = time.time()
        row = (
            thread_id,
            shown_status(values),
            str(values.get("request") or ""),
            int(values.get("step_count") or 0),
            model,
            workspace,
            now,
            now,
        )
        self.db.execute(
            "INSERT INTO phasegraph_threads (thread_id, status, request, steps, model, workspace, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (thread_id) DO UPDATE SET status = excluded.status, "
            "request = excluded.request, steps = excluded.steps, "
            "updated_at = excluded.updated_at, "
            "model = CASE WHEN excluded.model != '' THEN excluded.model "
            "ELSE phasegraph_threads.model END, "
            "workspace = CASE WHEN excluded.workspace != '' THEN excluded.workspace "
            "ELSE phasegraph_threads.workspace END",
            row,
        )

    def get(self, thread_id: str) -> ThreadRow | None:
        """The row of one thread, or None."""
        found = self.db.execute(
            f"SELECT {_COLUMNS} FROM phasegraph_threads WHERE thread_id = ?", (thread_id,)
        )
        return ThreadRow(*found[0]) if found else None

    def rows(self, status: str | None = None, limit: int | None = None) -> list[ThreadRow]:
        """Threads, most recently updated first, optionally of one status."""
        query = f"SELECT {_COLUMNS} FROM phasegraph_threads"
        params: list[Any] = []
        if status:
            query += " WHERE status = ?"
            params.append(status)
        query += " ORDER BY updated_at DESC"
        if limit:
            query += " LIMIT ?"
            params.append(limit)
        return [ThreadRow(*r) for r in self.db.execute(query, params)]

    def unindexed(self) -> list[str]:
        """Threads that have checkpoints but no row yet."""
        if not self.db.has_table("checkpoints"):
            return []
        rows = self.db.execute(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id NOT IN "
            "(SELECT thread_id FROM phasegraph_threads)"
        )
        return [r[0] for r in rows]


_COLUMNS = "thread_id, status, request, steps, model, workspace, created_at, updated_at"


def index_for(db: Database) -> ThreadIndex:
    """The index of the database ``db``, made once per process."""
    return per_database(db, ThreadIndex)
