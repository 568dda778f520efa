"""Reading a thread only from sound storage, and only when its checkpoint came back whole.

A SQLite file that fails ``PRAGMA quick_check`` is not opened for writing (`sound_sqlite_file`):
whatever a run wrote into a damaged database could be lost with it. A checkpoint that cannot be
decoded (damaged bytes, another program's data) stops the command before anything runs on it.
With ``LANGGRAPH_STRICT_MSGPACK=true`` LangGraph refuses to rebuild a type its allowlist does not
name, and puts nothing in its place. phasegraph declares every type of its state, so a refusal
means the checkpoint was written by something else or tampered with; running on it would work
on a state with holes. LangGraph reports each refusal as a serde event: `checked_state` watches
for them while it reads, and raises `CheckpointRefusedError` before anything runs.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any
from urllib.parse import quote

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.types import StateSnapshot

from phasegraph.errors import CheckpointRefusedError, DatabaseDamagedError

_REFUSALS = frozenset({"msgpack_blocked", "msgpack_method_blocked"})
_watching: ContextVar[list[SerdeEvent] | None] = ContextVar("phasegraph_serde", default=None)
_registered = False
_register_lock = threading.Lock()


def _listen(event: SerdeEvent) -> None:
    seen = _watching.get()
    if seen is not None and event.get("kind") in _REFUSALS:
        seen.append(event)


@contextlib.contextmanager
def _refusals() -> Iterator[list[SerdeEvent]]:
    global _registered
    with _register_lock:
        if not _registered:
            register_serde_event_listener(_listen)
            _registered = True
    seen: list[SerdeEvent] = []
    token = _watching.set(seen)
    try:
        yield seen
    finally:
        _watching.reset(token)


def _refused(thread_id: str, seen: list[SerdeEvent]) -> CheckpointRefusedError:
    names = ", ".join(sorted({f"{e['module']}.{e['name']}" for e in seen}))
    return CheckpointRefusedError(
        f"thread {thread_id!r}: its checkpoint holds {names}, a type the strict loader "
        "(LANGGRAPH_STRICT_MSGPACK) refused; it was not written by phasegraph or was tampered "
        "with, so nothing was run on it"
    )


def checked_state(graph: Any, config: RunnableConfig) -> StateSnapshot:
    """``graph.get_state(config)``; `CheckpointRefusedError` if a value did not come back."""
    with _refusals() as seen:
        try:
            snapshot: StateSnapshot = graph.get_state(config)
        except Exception as exc:
            if _undecodable(graph, config):
                raise _damaged(config) from exc
            raise
    if seen:
        raise _refused(_thread(config), seen)
    return snapshot


async def achecked_state(graph: Any, config: RunnableConfig) -> StateSnapshot:
    """`checked_state` for async checkpointers."""
    with _refusals() as seen:
        try:
            snapshot: StateSnapshot = await graph.aget_state(config)
        except Exception as exc:
            saver = getattr(graph, "checkpointer", None)
            if saver is not None and _shapeless(await _aread(saver, config)):
                raise _damaged(config) from exc
            raise
    if seen:
        raise _refused(_thread(config), seen)
    return snapshot


def _thread(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {}).get("thread_id"))


#: What decoding stored bytes raises (msgpack's errors are ValueErrors): a damaged checkpoint.
#: A database that cannot be read (locked, gone) raises otherwise, and stays that error.
_DECODING = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def _undecodable(graph: Any, config: RunnableConfig) -> bool:
    """Whether the thread's latest checkpoint fails to decode into a checkpoint's shape."""
    saver = getattr(graph, "checkpointer", None)
    if saver is None or not hasattr(saver, "get_tuple"):
        return False
    try:
        found = saver.get_tuple(config)
    except NotImplementedError:
        return False  # an async-only saver: the error stands as it is
    except _DECODING:
        return True
    except Exception:
        return False
    return _shapeless(found)


async def _aread(saver: Any, config: RunnableConfig) -> Any:
    """The saver's latest checkpoint tuple, `_DAMAGED` when it cannot be decoded."""
    try:
        return await saver.aget_tuple(config)
    except _DECODING:
        return _DAMAGED
    except Exception:
        return None


_DAMAGED = object()


def _shapeless(found: Any) -> bool:
    """Whether a saver's answer is no checkpoint's shape (None: no checkpoint, which is fine)."""
    if found is _DAMAGED:
        return True
    if found is None:
        return False
    checkpoint = found.checkpoint
    return not (
        isinstance(checkpoint, dict)
        and all(
            isinstance(checkpoint.get(key), dict)
            for key in ("channel_values", "channel_versions", "versions_seen")
        )
    )


def _damaged(config: RunnableConfig) -> CheckpointRefusedError:
    return CheckpointRefusedError(
        f"thread {_thread(config)!r}: its latest checkpoint cannot be decoded; it was damaged or "
        "written by another program, so nothing was run on it"
    )


def sound_sqlite_file(path: str) -> None:
    """Raise `DatabaseDamagedError` when the SQLite file at ``path`` fails ``quick_check``.

    Read-only, before anything writes to the file. A file that is not there yet is sound; one
    that cannot be opened raises sqlite3's own error (the caller says it cannot be used).
    """
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return
    uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=30)) as connection:
        rows = connection.execute("PRAGMA quick_check(3)").fetchall()
    problems = [
        " ".join(str(row[0]).replace("*** in database main ***", "").split())
        for row in rows
        if row and row[0] != "ok"
    ]
    if problems:
        raise DatabaseDamagedError(
            f"the database {path} fails SQLite's integrity check ({'; '.join(problems)}); "
            "nothing was written to it: restore it from a copy, or use another (--db)"
        )
