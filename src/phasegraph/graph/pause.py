"""The review pause as LangGraph's users look for it (SPEC section 6).

The graph pauses before ``human_review`` (a static breakpoint), which LangGraph reports with no
question: ``interrupts`` empty, an empty ``__interrupt__`` in a stream (and so none in invoke's
output, which LangGraph reads from the stream). These put the pending review's question there,
so that ``Command(resume=answer)`` answers what the person sees.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import Interrupt, StateSnapshot

from phasegraph.nodes.human_review import QUESTION_ID_PREFIX, review_question


def with_review_question(snapshot: StateSnapshot) -> StateSnapshot:
    """The snapshot of a run paused before ``human_review``, its question in ``interrupts``.

    LangGraph leaves a static breakpoint's ``interrupts`` empty; the review's question is put
    where LangGraph's users look for it (SPEC section 6). Answered with ``Command(resume=...)``
    it reaches the node, which asks for it (`nodes.human_review.answer_of`).
    """
    pending = snapshot.values.get("pending_review") if isinstance(snapshot.values, dict) else None
    if snapshot.interrupts or not pending or "human_review" not in snapshot.next:
        return snapshot
    checkpoint = str((snapshot.config.get("configurable") or {}).get("checkpoint_id", ""))
    asked = Interrupt(value=review_question(pending), id=f"{QUESTION_ID_PREFIX}{checkpoint}")
    tasks = tuple(
        task._replace(interrupts=(asked,)) if task.name == "human_review" else task
        for task in snapshot.tasks
    )
    return snapshot._replace(tasks=tasks, interrupts=(asked,))


def asker(snapshot: StateSnapshot) -> str | None:
    """The node whose pending review a paused thread waits on, if it waits on one."""
    pending = snapshot.values.get("pending_review") if isinstance(snapshot.values, dict) else None
    if pending and "human_review" in snapshot.next:
        return str(pending.get("stage") or "") or None
    return None


def _payload(chunk: Any) -> Any:
    """What a stream chunk carries.

    Itself (one mode), its tuple's last item (several modes, subgraphs), or its ``data``
    (``version="v2"``).
    """
    if isinstance(chunk, tuple) and chunk:
        return chunk[-1]
    if isinstance(chunk, dict) and "type" in chunk and "data" in chunk:
        return chunk["data"]
    return chunk


def asks_quietly(chunk: Any) -> bool:
    """Whether a stream chunk is the review pause's, with no question in its ``__interrupt__``."""
    part = _payload(chunk)
    return isinstance(part, dict) and part.keys() == {"__interrupt__"} and not part["__interrupt__"]


def with_question(chunk: Any, interrupts: tuple[Interrupt, ...]) -> Any:
    """The pause's chunk (see `asks_quietly`) with ``interrupts`` as its ``__interrupt__``.

    Any stream format (see `_payload`); every other chunk is returned as it is.
    """
    if not asks_quietly(chunk) or not interrupts:
        return chunk
    asked = {"__interrupt__": interrupts}
    if isinstance(chunk, tuple):
        return (*chunk[:-1], asked)
    if "data" in chunk and "type" in chunk:
        return {**chunk, "data": asked}
    return asked
