"""LangGraph's checkpointer for a SQLite file or a PostgreSQL database, set up before first use.

LangGraph's savers otherwise set themselves up lazily, inside the first run, which fails when
several processes start on a new database at once (SPEC section 8).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from phasegraph.storage.database import BUSY_TIMEOUT, SqliteDatabase

#: In WAL mode, a commit survives the process's crash (the durability SPEC section 5 asks of a
#: finished task) without a flush of the disk each; only a power loss may undo the latest
#: commits. A step then costs no fsync: every stage is its own step (bench: overhead rows).
SYNC_NORMAL = "PRAGMA synchronous = NORMAL"

# Any constant works: it names the one lock all phasegraph processes take around schema set-up.
_SETUP_LOCK = 0x70686772


@contextlib.contextmanager
def _setup_lock(conninfo: str) -> Iterator[None]:
    """Hold a PostgreSQL advisory lock, so one process at a time creates the tables.

    LangGraph's ``PostgresSaver.setup()`` runs its migrations without a lock: two processes
    setting up a new database at once fail on a duplicate migration row.
    """
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        # Polled, not waited for: a session blocked in pg_advisory_lock is a transaction in
        # progress, and the holder's CREATE INDEX CONCURRENTLY waits for every such transaction
        # to end, so the two would wait for each other for ever.
        while not (
            conn.execute("SELECT pg_try_advisory_lock(%s)", (_SETUP_LOCK,)).fetchone() or [0]
        )[0]:
            time.sleep(0.05)
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))


def is_database_url(db: str) -> bool:
    """Whether ``db`` names a PostgreSQL database rather than a SQLite file."""
    return db.split("://", 1)[0] in ("postgres", "postgresql") and "://" in db


@contextlib.contextmanager
def open_checkpointer(db: str | Path) -> Iterator[Any]:
    """LangGraph's checkpointer for a SQLite file or a ``postgresql://`` URL, set up for use.

    The SQLite file and its folder are created when missing; an existing file that fails its
    integrity check raises `DatabaseDamagedError` before anything is written to it. The
    PostgreSQL saver needs the ``postgres`` extra (``pip install "phasegraph[postgres]"``).
    """
    if not is_database_url(str(db)):
        from langgraph.checkpoint.sqlite import SqliteSaver

        Path(db).parent.mkdir(parents=True, exist_ok=True)
        SqliteDatabase(str(db))  # WAL first, waiting for other writers (see there)
        with SqliteSaver.from_conn_string(str(db)) as saver:
            # LangGraph's connection waits 5 s for a lock; processes sharing the file (runs
            # resumed while others write) get the wait the rest of phasegraph's SQLite use has.
            saver.conn.execute(BUSY_TIMEOUT)
            saver.conn.execute(SYNC_NORMAL)
            saver.setup()  # now, not lazily inside the first run (see SqliteDatabase)
            yield saver
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(str(db)) as saver:
        with _setup_lock(str(db)):
            saver.setup()
        yield saver


@contextlib.asynccontextmanager
async def aopen_checkpointer(db: str | Path) -> AsyncIterator[Any]:
    """`open_checkpointer` for asyncio: LangGraph's async savers."""
    if not is_database_url(str(db)):
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        Path(db).parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(SqliteDatabase, str(db))
        async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
            await saver.conn.execute(BUSY_TIMEOUT)
            await saver.conn.execute(SYNC_NORMAL)
            await saver.setup()
            yield saver
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(str(db)) as saver:
        lock = _setup_lock(str(db))
        await asyncio.to_thread(lock.__enter__)
        try:
            await saver.setup()
        finally:
            await asyncio.to_thread(lock.__exit__, None, None, None)
        yield saver
