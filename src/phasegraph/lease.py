"""Per-thread leases: two runners must never advance one thread at once (SPEC section 8).

LangGraph has no thread lock: two processes resuming one thread would both run and fork its
history. While phasegraph runs a thread it holds a lease on it. With a SQLite checkpointer the
lease is a row in a table of the same database file, so it works across processes; with any other
checkpointer it is a lock inside this process. A lease is renewed while its holder lives; a lease
whose holder died (the same host and a dead process id, or a lapsed renewal) is taken over, so a
crashed thread can be resumed at once.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Protocol

from phasegraph.errors import ThreadBusyError

LEASE_TTL_S = 30.0
_HOST = socket.gethostname()

# Threads whose lease the current context already holds (resume -> invoke must not deadlock).
_held: ContextVar[frozenset[str]] = ContextVar("phasegraph_held_leases", default=frozenset())


class LeaseStore(Protocol):
    """Where leases live."""

    def acquire(self, thread_id: str, owner: str) -> None:
        """Take the lease or raise `ThreadBusyError`."""

    def renew(self, thread_id: str, owner: str) -> None:
        """Extend a lease this owner holds."""

    def release(self, thread_id: str, owner: str) -> None:
        """Give a lease up."""


def _busy(thread_id: str, holder: str) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is busy: another runner ({holder}) is advancing it; "
        "wait for it to finish or pause, then try again"
    )


class LocalLeaseStore:
    """Leases held in this process only (in-memory and other non-file checkpointers)."""

    def __init__(self) -> None:
        """Start with no leases."""
        self._owners: dict[str, str] = {}
        self._lock = threading.Lock()

    def acquire(self, thread_id: str, owner: str) -> None:
        """Take the lease or raise `ThreadBusyError`."""
        with self._lock:
            holder = self._owners.get(thread_id)
            if holder is not None and holder != owner:
                raise _busy(thread_id, f"pid {os.getpid()}")
            self._owners[thread_id] = owner

    def renew(self, thread_id: str, owner: str) -> None:
        """Nothing to renew: the lease lives as long as the process."""

    def release(self, thread_id: str, owner: str) -> None:
        """Give a lease up."""
        with self._lock:
            if self._owners.get(thread_id) == owner:
                del self._owners[thread_id]


class SqliteLeaseStore:
    """Leases as rows of ``phasegraph_leases`` in the checkpointer's own SQLite file."""

    def __init__(self, path: str, ttl_s: float = LEASE_TTL_S) -> None:
        """Use the database at ``path``; create the table on first use."""
        self.path = path
        self.ttl_s = ttl_s
        with contextlib.closing(self._connect()) as conn, conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS phasegraph_leases ("
                "thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, "
                "pid INTEGER NOT NULL, expires_at REAL NOT NULL)"
            )

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE takes the write lock
        # up front, so two acquirers cannot both read "free" and both insert).
        return sqlite3.connect(self.path, timeout=30.0, isolation_level=None)

    def acquire(self, thread_id: str, owner: str) -> None:
        """Take the lease or raise `ThreadBusyError`."""
        with contextlib.closing(self._connect()) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT owner, host, pid, expires_at FROM phasegraph_leases "
                    "WHERE thread_id = ?",
                    (thread_id,),
                ).fetchone()
                if row is not None and row[0] != owner and not _stale(row[1], row[2], row[3]):
                    raise _busy(thread_id, f"pid {row[2]} on {row[1]}")
                conn.execute(
                    "INSERT OR REPLACE INTO phasegraph_leases VALUES (?, ?, ?, ?, ?)",
                    (thread_id, owner, _HOST, os.getpid(), time.time() + self.ttl_s),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def renew(self, thread_id: str, owner: str) -> None:
        """Extend a lease this owner holds."""
        with contextlib.closing(self._connect()) as conn:
            conn.execute(
                "UPDATE phasegraph_leases SET expires_at = ? WHERE thread_id = ? AND owner = ?",
                (time.time() + self.ttl_s, thread_id, owner),
            )

    def release(self, thread_id: str, owner: str) -> None:
        """Give a lease up."""
        with contextlib.closing(self._connect()) as conn:
            conn.execute(
                "DELETE FROM phasegraph_leases WHERE thread_id = ? AND owner = ?",
                (thread_id, owner),
            )


def _stale(host: str, pid: int, expires_at: float) -> bool:
    if expires_at < time.time():
        return True
    if host != _HOST:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


_local_stores: weakref.WeakKeyDictionary[Any, LocalLeaseStore] = weakref.WeakKeyDictionary()
_sqlite_stores: dict[str, SqliteLeaseStore] = {}
_stores_lock = threading.Lock()


def _local_store(checkpointer: Any) -> LeaseStore:
    """Leases of one checkpointer's threads in this process (two savers never share threads)."""
    with _stores_lock:
        try:
            return _local_stores.setdefault(checkpointer, LocalLeaseStore())
        except TypeError:  # not weak-referenceable: one store for all such savers
            return _local_stores.setdefault(LocalLeaseStore, LocalLeaseStore())


def lease_store_for(checkpointer: Any) -> LeaseStore:
    """The lease store that fits a checkpointer: its SQLite file, else this process."""
    return _store_at(sqlite_path_of(checkpointer)) or _local_store(checkpointer)


async def alease_store_for(checkpointer: Any) -> LeaseStore:
    """`lease_store_for` for async savers, whose connection is asked asynchronously."""
    conn = getattr(checkpointer, "conn", None)
    if conn is None or isinstance(conn, sqlite3.Connection) or not hasattr(conn, "execute"):
        return lease_store_for(checkpointer)
    try:
        async with conn.execute("PRAGMA database_list") as cursor:
            rows = await cursor.fetchall()
    except Exception:  # not a SQLite connection after all
        return _local_store(checkpointer)
    return _store_at(_main_file(rows)) or _local_store(checkpointer)


def _store_at(path: str) -> LeaseStore | None:
    if not path:
        return None
    with _stores_lock:
        if path not in _sqlite_stores:
            _sqlite_stores[path] = SqliteLeaseStore(path)
        return _sqlite_stores[path]


def _main_file(rows: Any) -> str:
    return next((str(row[2]) for row in rows if row[1] == "main" and row[2]), "")


def sqlite_path_of(checkpointer: Any) -> str:
    """The file of a SQLite checkpointer ("" for anything else or an in-memory database)."""
    conn = getattr(checkpointer, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return ""
    lock = getattr(checkpointer, "lock", None)
    with lock if isinstance(lock, type(threading.Lock())) else contextlib.nullcontext():
        rows = conn.execute("PRAGMA database_list").fetchall()
    return _main_file(rows)


@contextlib.contextmanager
def hold_lease(store: LeaseStore, thread_id: str) -> Iterator[None]:
    """Hold the thread's lease for the block, renewing it in the background."""
    if thread_id in _held.get():
        yield
        return
    owner = f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex}"
    store.acquire(thread_id, owner)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(LEASE_TTL_S / 3):
            with contextlib.suppress(sqlite3.Error):
                store.renew(thread_id, owner)

    keeper = threading.Thread(target=renew, name=f"lease-{thread_id}", daemon=True)
    keeper.start()
    # set() rather than a reset token: an async generator may be closed in another context.
    previous = _held.get()
    _held.set(previous | {thread_id})
    try:
        yield
    finally:
        _held.set(previous)
        stop.set()
        store.release(thread_id, owner)
