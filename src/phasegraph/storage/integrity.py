"""Reading a thread's state only when every value in its checkpoint came back (SPEC section 8).

With ``LANGGRAPH_STRICT_MSGPACK=true`` LangGraph refuses to rebuild a type its allowlist does not
name, and puts nothing in its place. phasegraph declares every type of its state, so a refusal
means the checkpoint was written by something else or tampered with; running on it would work
on a state with holes. LangGraph reports each refusal as a serde event: `checked_state` watches
for them while it reads, and raises `CheckpointRefusedError` before anything runs.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.types import StateSnapshot

from phasegraph.errors import CheckpointRefusedError

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
        snapshot: StateSnapshot = graph.get_state(config)
    if seen:
        raise _refused(str((config.get("configurable") or {}).get("thread_id")), seen)
    return snapshot


async def achecked_state(graph: Any, config: RunnableConfig) -> StateSnapshot:
    """`checked_state` for async checkpointers."""
    with _refusals() as seen:
        snapshot: StateSnapshot = await graph.aget_state(config)
    if seen:
        raise _refused(str((config.get("configurable") or {}).get("thread_id")), seen)
    return snapshot
