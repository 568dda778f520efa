"""Per-thread leases: two runners must never advance one thread at once (SPEC section 8).

LangGraph has no thread lock: two processes resuming one thread would both run and fork its
history. While phasegraph runs a thread it holds a lease on it. With a SQLite checkpointer the
lease is a row in a table of the same database file, so it works across processes; with PostgreSQL
it is a row in the same database, so it works across machines; with any other checkpointer it is a
lock inside this process. A lease is renewed while its holder lives; a lease whose holder died
(the same host and a dead process id, or a lapsed renewal) is taken over, so a crashed thread can
be resumed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Protocol

from phasegraph.errors import ThreadBusyError
from phasegraph.storage.database import (
    Database,
    adatabase_of,
    create_tables,
    database_of,
    per_database,
)

LEASE_TTL_S = 30.0
_HOST = socket.gethostname()

# Threads whose lease the current context already holds (resume -> invoke must not deadlock).
_held: ContextVar[Mapping[str, Lease]] = ContextVar(
    "phasegraph_held_leases", default=MappingProxyType({})
)


class LeaseStore(Protocol):
    """Where leases live."""

    def acquire(self, thread_id: str, owner: str) -> None:
        """Take the lease or raise `ThreadBusyError`."""

    def renew(self, thread_id: str, owner: str) -> bool:
        """Extend a lease this owner holds; False if it holds it no longer."""

    def release(self, thread_id: str, owner: str) -> None:
        """Give a lease up."""


def _busy(thread_id: str, holder: str) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is busy: another runner ({holder}) is advancing it; "
        "wait for it to finish or pause, then try again"
    )


def _in_process(pid: object, host: object) -> str:
    """Who holds a lease, as a person reads it: another run of this process, or a process."""
    if pid == os.getpid() and host == _HOST:
        return f"a run in this process, pid {pid}"
    return f"pid {pid} on {host}"


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
                raise _busy(thread_id, f"a run in this process, pid {os.getpid()}")
            self._owners[thread_id] = owner

    def renew(self, thread_id: str, owner: str) -> bool:
        """Nothing to renew: the lease lives as long as the process."""
        return True

    def release(self, thread_id: str, owner: str) -> None:
        """Give a lease up."""
        with self._lock:
            if self._owners.get(thread_id) == owner:
                del self._owners[thread_id]


_LEASE_TABLE = (
    "CREATE TABLE IF NOT EXISTS phasegraph_leases ("
    "thread_id TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, "
    "pid INTEGER NOT NULL, expires_at DOUBLE PRECISION NOT NULL)",
)


class TableLeaseStore:
    """Leases as rows of ``phasegraph_leases`` in the checkpointer's own database.

    Taking a lease is one compare-and-set statement (an upsert that only overwrites a lease of
    the same owner or a lapsed one), so two acquirers in different processes, or on different
    machines sharing a PostgreSQL server, can never both win.
    """

    def __init__(self, db: Database, ttl_s: float | None = None) -> None:
        """Use the database ``db``; create the table on first use. ``ttl_s``: LEASE_TTL_S."""
        self.db = db
        self.ttl_s = LEASE_TTL_S if ttl_s is None else ttl_s
        create_tables(db, _LEASE_TABLE)

    def _take(self, thread_id: str, owner: str, *, over: str | None = None) -> bool:
        """Write the lease if it is free, ours, lapsed, or (``over``) still held by ``over``."""
        now = time.time()
        condition = "phasegraph_leases.owner = ?" if over else "phasegraph_leases.expires_at < ?"
        taken = self.db.execute(
            "INSERT INTO phasegraph_leases (thread_id, owner, host, pid, expires_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET "
            "owner = excluded.owner, host = excluded.host, pid = excluded.pid, "
            "expires_at = excluded.expires_at "
            f"WHERE phasegraph_leases.owner = excluded.owner OR {condition} RETURNING owner",
            (thread_id, owner, _HOST, os.getpid(), now + self.ttl_s, over or now),
        )
        return bool(taken)

    def acquire(self, thread_id: str, owner: str) -> None:
        """Take the lease or raise `ThreadBusyError`."""
        for _ in range(3):
            if self._take(thread_id, owner):
                return
            rows = self.db.execute(
                "SELECT owner, host, pid, expires_at FROM phasegraph_leases WHERE thread_id = ?",
                (thread_id,),
            )
            if not rows:
                continue  # released in between: try again
            holder, host, pid, expires_at = rows[0]
            if not _stale(host, pid, expires_at):
                raise _busy(thread_id, _in_process(pid, host))
            # A dead holder's lease is taken over only if it is still that holder's.
            if self._take(thread_id, owner, over=holder):
                return
        raise _busy(thread_id, "another runner")

    def renew(self, thread_id: str, owner: str) -> bool:
        """Extend a lease this owner holds; False if another runner has taken it over."""
        kept = self.db.execute(
            "UPDATE phasegraph_leases SET expires_at = ? WHERE thread_id = ? AND owner = ? "
            "RETURNING owner",
            (time.time() + self.ttl_s, thread_id, owner),
        )
        return bool(kept)

    def release(self, thread_id: str, owner: str) -> None:
        """Give a lease up."""
        self.db.execute(
            "DELETE FROM phasegraph_leases WHERE thread_id = ? AND owner = ?", (thread_id, owner)
        )

    def held(self, thread_id: str) -> bool:
        """Whether a live runner holds the thread's lease now (a dead one's does not count)."""
        rows = self.db.execute(
            "SELECT host, pid, expires_at FROM phasegraph_leases WHERE thread_id = ?", (thread_id,)
        )
        return bool(rows) and not _stale(*rows[0])


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
_stores_lock = threading.Lock()


def _local_store(checkpointer: Any) -> LeaseStore:
    """Leases of one checkpointer's threads in this process (two savers never share threads)."""
    with _stores_lock:
        try:
            return _local_stores.setdefault(checkpointer, LocalLeaseStore())
        except TypeError:  # not weak-referenceable: one store for all such savers
            return _local_stores.setdefault(LocalLeaseStore, LocalLeaseStore())


def _table_store(db: Database) -> LeaseStore:
    return per_database(db, TableLeaseStore)


def lease_store_for(checkpointer: Any) -> LeaseStore:
    """The lease store that fits a checkpointer: its database, else this process."""
    db = database_of(checkpointer)
    return _table_store(db) if db else _local_store(checkpointer)


async def alease_store_for(checkpointer: Any) -> LeaseStore:
    """`lease_store_for` for async savers, whose connection is asked asynchronously."""
    db = await adatabase_of(checkpointer)
    if db is None:
        return _local_store(checkpointer)
    return await asyncio.to_thread(_table_store, db)  # may create the table: I/O off the loop


class Lease:
    """One holding of a thread's lease, with a thread that renews it until it is given back.

    A holder stalled past the lease's lifetime (a suspended machine, a partition from the
    PostgreSQL server) can find it taken over by another runner: the renewal then says so, and
    `check` stops this run before it advances the thread again.
    """

    def __init__(self, store: LeaseStore, thread_id: str) -> None:
        """A lease of ``thread_id`` in ``store``, not taken yet."""
        self.store = store
        self.thread_id = thread_id
        self.owner = f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex}"
        self.stop = threading.Event()
        self.lost = False
        self.interval = float(getattr(store, "ttl_s", LEASE_TTL_S)) / 3

    def check(self) -> None:
        """Raise `ThreadBusyError` if another runner has taken the lease over."""
        if self.lost:
            raise ThreadBusyError(
                f"thread {self.thread_id!r} was taken over by another runner while this one "
                "stalled past its lease; this run stopped before advancing it again"
            )

    def take(self) -> None:
        """Acquire the lease and start renewing it."""
        self.store.acquire(self.thread_id, self.owner)
        threading.Thread(target=self._renew, name=f"lease-{self.thread_id}", daemon=True).start()

    def _renew(self) -> None:
        while not self.stop.wait(self.interval):
            try:
                held = self.store.renew(self.thread_id, self.owner)
            except Exception:  # the database did not answer: the next renewal tries again
                continue
            if not held:
                self.lost = True
                return

    def give_back(self) -> None:
        """Stop renewing and release the lease."""
        self.stop.set()
        self.store.release(self.thread_id, self.owner)


@contextlib.contextmanager
def _marked_held(lease: Lease) -> Iterator[Lease]:
    # set() rather than a reset token: an async generator may be closed in another context.
    previous = _held.get()
    _held.set({**previous, lease.thread_id: lease})
    try:
        yield lease
    finally:
        _held.set(previous)


@contextlib.contextmanager
def handed_out(thread_id: str) -> Iterator[None]:
    """While a run's stream hands a chunk to its consumer: the lease not marked held there.

    A generator runs in its consumer's context, so its mark would reach the consumer's own
    calls: one made between chunks, or after the consumer stopped reading and left the stream
    unfinished, is another run of the thread, which must take the lease itself (and find it
    busy), not share the one the stream holds. Calls the run's own nodes make keep the mark.
    """
    marks = _held.get()
    if thread_id not in marks:
        yield
        return
    _held.set({k: v for k, v in marks.items() if k != thread_id})
    try:
        yield
    finally:
        _held.set(marks)


@contextlib.contextmanager
def hold_lease(store: LeaseStore, thread_id: str) -> Iterator[Lease]:
    """Hold the thread's lease for the block (the one already held, inside another block)."""
    held = _held.get().get(thread_id)
    if held is not None:
        yield held
        return
    lease = Lease(store, thread_id)
    lease.take()
    try:
        with _marked_held(lease):
            yield lease
    finally:
        lease.give_back()


@contextlib.asynccontextmanager
async def ahold_lease(store: LeaseStore, thread_id: str) -> AsyncIterator[Lease]:
    """`hold_lease` for asyncio: the lease is taken and given back off the event loop.

    On the loop, a lease write waiting for SQLite's write lock would block the async saver
    whose open transaction holds that lock and needs the loop to commit: a deadlock.
    """
    held = _held.get().get(thread_id)
    if held is not None:
        yield held
        return
    lease = Lease(store, thread_id)
    taking = asyncio.ensure_future(asyncio.to_thread(lease.take))
    try:
        await asyncio.shield(taking)
    except asyncio.CancelledError:
        # The worker thread goes on and may still win the lease: give it back when it does,
        # or nobody would, and the thread would stay busy until this process exits.
        taking.add_done_callback(_give_back_if_taken(lease))
        raise
    try:
        with _marked_held(lease):
            yield lease
    finally:
        await asyncio.to_thread(lease.give_back)


def _give_back_if_taken(lease: Lease) -> Callable[[asyncio.Future[None]], None]:
    def done(taking: asyncio.Future[None]) -> None:
        if not taking.cancelled() and taking.exception() is None:
            threading.Thread(target=lease.give_back, daemon=True).start()  # I/O off the loop

    return done
