"""The database beside the checkpoints, where phasegraph keeps its own tables.

Leases (`phasegraph.storage.lease`), the tool journal (`phasegraph.storage.journal`) and the
thread index (`phasegraph.storage.thread_index`) must be shared by every process that shares the
checkpoints, so they are tables in the checkpointer's own database: its SQLite file, or its
PostgreSQL database (SPEC section 8). A checkpointer with no such database keeps leases and the
index in this process, and the journal where `journal.journal_for` says.

The tables' SQL is written once, in the dialect both engines speak (``?`` placeholders,
``ON CONFLICT ... DO UPDATE``, ``RETURNING``, ``DOUBLE PRECISION``); `PostgresDatabase` turns the
placeholders into psycopg's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar, cast

from phasegraph.storage.integrity import sound_sqlite_file

Row = tuple[Any, ...]
T = TypeVar("T")


class Database(Protocol):
    """A database phasegraph's tables live in; each statement commits when it returns."""

    key: str
    """What identifies the database in this process (a file path, a connection string)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run one statement; its rows (none for a statement without a result)."""

    def has_table(self, name: str) -> bool:
        """Whether a table of that name exists (the checkpointer's, say)."""


#: Seconds a SQLite statement waits for another process's write lock before it gives up.
SQLITE_BUSY_S = 30.0
BUSY_TIMEOUT = f"PRAGMA busy_timeout = {int(SQLITE_BUSY_S * 1000)}"
#: Seconds a statement waits for the checkpointer's lock before it runs anyway (see
#: `SqliteDatabase.take_turns_with`).
NEIGHBOUR_WAIT_S = 0.25


class SqliteDatabase:
    """A SQLite file that other processes write too; one connection per thread of this one.

    Opening a connection per statement cost more than the statement: the journal's entries
    (two per tool call) made SQLite's busy handler sleep between concurrent openers, and doubled
    phasegraph's time per tool action (``bench``). A thread's connection is opened on its first
    statement, in autocommit mode (it holds no lock between statements, so other processes are
    never kept out), and closed with its thread.
    """

    def __init__(self, path: str) -> None:
        """Use the database file at ``path``, in WAL mode as LangGraph's SQLite savers want it."""
        sound_sqlite_file(path)  # a damaged file is not written to, WAL switch included
        self.key = path
        self._local = threading.local()
        self._neighbour: Any = None
        # LangGraph's savers switch the file to WAL on their first use, which needs the file to
        # themselves: done lazily while leases and journal entries are being written by other
        # connections, it fails with "database is locked". Switching first makes theirs a no-op.
        self._switch_to_wal()

    def _switch_to_wal(self) -> None:
        """Put the file in WAL mode, waiting up to `SQLITE_BUSY_S` for other connections.

        The switch reads the file, then writes it. A connection that has read while another
        holds the write lock gets SQLITE_BUSY at once, not after the busy timeout (SQLite's guard
        against deadlock): two processes opening a new file together collide so. The switch is
        retried whole, with short pauses, until it succeeds or the wait is spent.
        """
        deadline = time.monotonic() + SQLITE_BUSY_S
        pause = 0.005
        while True:
            try:
                self.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                    raise
                if time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection, opened again when the file at the path was replaced."""
        held = cast(
            "tuple[tuple[int, int, int], sqlite3.Connection] | None",
            getattr(self._local, "held", None),
        )
        if held is not None and held[0] == _identity(self.key):
            return held[1]
        if held is not None and held[0][0] != os.getpid():
            _inherited.append(held[1])  # the parent's, from before a fork: its to close
        elif held is not None:
            _close(held[1])  # the file at the path was replaced
        connection = sqlite3.connect(self.key, timeout=SQLITE_BUSY_S, isolation_level=None)
        # In WAL mode NORMAL still survives a crash of the process, the failure the journal and
        # the leases guard against; only a power loss can undo the latest commits, and the
        # checkpointer's next commit (FULL) flushes them with its own.
        connection.execute("PRAGMA synchronous = NORMAL")
        self._local.held = (_identity(self.key), connection)
        return connection

    def take_turns_with(self, lock: Any) -> None:
        """Run statements under ``lock``, the one a checkpointer's connection works under.

        Two connections of one process that write at once collide inside SQLite, whose busy
        handler then sleeps a millisecond or more: per tool call, the journal's entries collided
        with LangGraph's writes of the task results. Waiting for the saver's lock instead takes
        turns without sleeping. The wait is bounded: a lock held long (a caller iterating the
        saver's `list`, perhaps this very thread) only costs the wait, never a deadlock.
        """
        self._neighbour = lock

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run one statement in autocommit mode, waiting up to 30 s for other writers."""
        lock = self._neighbour
        taken = lock is not None and lock.acquire(timeout=NEIGHBOUR_WAIT_S)
        try:
            return [tuple(r) for r in self._connection().execute(sql, tuple(params)).fetchall()]
        finally:
            if taken:
                lock.release()

    def has_table(self, name: str) -> bool:
        """Whether a table of that name exists."""
        found = self.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        )
        return bool(found)


# Connections a forked child found in its parent's thread: never closed by the child, whose close
# would touch the parent's locks on the file.
_inherited: list[sqlite3.Connection] = []


def _identity(path: str) -> tuple[int, int, int]:
    """(process, device, inode) of a file: a connection serves only the file it opened."""
    try:
        stat = os.stat(path)
    except OSError:
        return (os.getpid(), -1, -1)
    return (os.getpid(), stat.st_dev, stat.st_ino)


def _close(connection: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        connection.close()


class PostgresDatabase:
    """A PostgreSQL database, through one autocommit connection of this process."""

    def __init__(self, conninfo: str) -> None:
        """Use the database ``conninfo`` names (a URL or key=value string, password included)."""
        self.key = conninfo
        self._conn: Any = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        import psycopg

        with self._lock:
            if self._conn is None or self._conn.closed:
                # Bounded waits: a server out of reach must fail a statement, not hang every
                # caller behind this lock (lease renewals among them).
                self._conn = psycopg.connect(
                    self.key,
                    autocommit=True,
                    connect_timeout=10,
                    keepalives=1,
                    keepalives_idle=30,
                    options="-c statement_timeout=60000",
                )
            try:
                yield self._conn
            except psycopg.OperationalError:
                # A dropped connection is opened anew by the next statement.
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None
                raise

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run one statement in autocommit mode."""
        with self._connection() as conn, conn.cursor() as cursor:
            cursor.execute(sql.replace("?", "%s"), tuple(params))
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []

    def has_table(self, name: str) -> bool:
        """Whether a table of that name exists on the search path."""
        return bool(self.execute("SELECT to_regclass(?) IS NOT NULL", (name,))[0][0])


def create_tables(db: Database, statements: Sequence[str]) -> None:
    """Run ``CREATE ... IF NOT EXISTS`` statements that other processes may run at once."""
    for statement in statements:
        try:
            db.execute(statement)
        except Exception:
            # PostgreSQL's IF NOT EXISTS is not atomic: two creators can both pass the check
            # and one fails on the catalog's unique index. The table exists then; a second
            # try says so, and a real fault fails again.
            db.execute(statement)


_databases: dict[str, Database] = {}
_databases_lock = threading.Lock()


def _shared(key: str, make: type[SqliteDatabase] | type[PostgresDatabase]) -> Database:
    with _databases_lock:
        if key not in _databases:
            _databases[key] = make(key)
        return _databases[key]


_per_database: dict[tuple[Callable[[Database], Any], str], Any] = {}
_per_database_lock = threading.Lock()


def per_database(db: Database, make: Callable[[Database], T]) -> T:
    """The one ``make(db)`` of this process: a table's accessor, its table set up once."""
    with _per_database_lock:
        key = (make, db.key)
        if key not in _per_database:
            _per_database[key] = make(db)
        return cast(T, _per_database[key])


def sqlite_database(path: str) -> Database:
    """The SQLite file at ``path`` (one object per process)."""
    return _shared(path, SqliteDatabase)


def postgres_database(conninfo: str) -> Database:
    """The PostgreSQL database ``conninfo`` names (one object and connection per process)."""
    return _shared(conninfo, PostgresDatabase)


def _main_file(rows: Any) -> str:
    return next((str(row[2]) for row in rows if row[1] == "main" and row[2]), "")


def _postgres_conninfo(conn: Any) -> str:
    """The connection string of a psycopg connection or pool, password included."""
    conninfo = getattr(conn, "conninfo", None)  # a pool keeps the string it was given
    if isinstance(conninfo, str):
        return conninfo
    from psycopg.conninfo import make_conninfo

    # A connection's dsn leaves the password out; it is kept apart in its info.
    info = conn.info
    return make_conninfo(info.dsn, password=info.password) if info.password else str(info.dsn)


def _is_psycopg(conn: Any) -> bool:
    return type(conn).__module__.split(".")[0] in {"psycopg", "psycopg_pool"}


_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def sqlite_path_of(checkpointer: Any) -> str:
    """The file of a SQLite checkpointer ("" for anything else or an in-memory database)."""
    conn = getattr(checkpointer, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return ""
    lock = getattr(checkpointer, "lock", None)
    with lock if isinstance(lock, _LOCK_TYPES) else contextlib.nullcontext():
        rows = conn.execute("PRAGMA database_list").fetchall()
    return _main_file(rows)


# Connections whose database could only be asked asynchronously (aiosqlite), as `adatabase_of`
# found it, so that sync code of the same run (the tool journal in a node) finds it too. Keyed
# by the connection, not the saver: under LANGGRAPH_STRICT_MSGPACK the compiled graph holds a
# copy of the saver (with its allowlist) that shares the connection. Keyed by id, each entry
# dropped when its connection is collected.
_resolved: dict[int, Database] = {}


# Those that adatabase_of found on no file (":memory:"), by id, each dropped with its connection.
_in_memory: set[int] = set()


def in_memory(checkpointer: Any) -> bool:
    """Whether a SQLite checkpointer's database is ``:memory:``: its threads end with the process.

    An async saver's is known once `adatabase_of` has asked it.
    """
    conn = getattr(checkpointer, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        return not sqlite_path_of(checkpointer)
    return conn is not None and id(conn) in _in_memory


def _remember(conn: Any, db: Database) -> None:
    key = id(conn)
    if key not in _resolved:
        weakref.finalize(conn, _resolved.pop, key, None)
    _resolved[key] = db


def database_of(checkpointer: Any) -> Database | None:
    """The database of a SQLite or PostgreSQL checkpointer; None for any other."""
    conn = getattr(checkpointer, "conn", None)
    if conn is not None and id(conn) in _resolved:
        return _resolved[id(conn)]
    if conn is not None and _is_psycopg(conn):
        return postgres_database(_postgres_conninfo(conn))
    path = sqlite_path_of(checkpointer)
    if not path:
        return None
    db = sqlite_database(path)
    lock = getattr(checkpointer, "lock", None)
    if isinstance(db, SqliteDatabase) and isinstance(lock, _LOCK_TYPES):
        db.take_turns_with(lock)
    return db


async def adatabase_of(checkpointer: Any) -> Database | None:
    """`database_of` for async savers, whose SQLite connection is asked asynchronously."""
    conn = getattr(checkpointer, "conn", None)
    if conn is None or isinstance(conn, sqlite3.Connection) or _is_psycopg(conn):
        return database_of(checkpointer)
    path = await async_sqlite_file(conn)
    if not path:
        return None if path is None else known_file(conn, path)
    # The first use of a file writes to it (see SqliteDatabase): off the event loop.
    return await asyncio.to_thread(known_file, conn, path)


async def async_sqlite_file(conn: Any) -> str | None:
    """The file of an async SQLite connection: "" for ``:memory:``, None for no SQLite one.

    It needs the connection's loop alone, no worker thread of that loop's.
    """
    if not hasattr(conn, "execute"):
        return None
    try:
        async with conn.execute("PRAGMA database_list") as cursor:
            rows = await cursor.fetchall()
    except Exception:  # not a SQLite connection after all (or not started yet)
        return None
    return _main_file(rows)


def known_file(conn: Any, path: str) -> Database | None:
    """The database of an async connection found on ``path``, kept for sync code to find.

    ``path`` "" is ``:memory:``: no database, and the connection's threads end with the process
    (`in_memory`).
    """
    if path:
        db = sqlite_database(path)
        _remember(conn, db)
        return db
    if id(conn) not in _in_memory:
        _in_memory.add(id(conn))
        weakref.finalize(conn, _in_memory.discard, id(conn))
    return None
