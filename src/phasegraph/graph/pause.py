"""The review pause as LangGraph's users look for it (SPEC section 6), also as a parent's node.

The graph pauses before ``human_review`` (a static breakpoint), which LangGraph reports with no
question: ``interrupts`` empty, an empty ``__interrupt__`` in a stream (and so none in invoke's
output, which LangGraph reads from the stream), and a ``version="v2"`` values stream whose
last state carries no interrupt. These put the pending review's question there, so that
``Command(resume=answer)`` answers what the person sees. Run as a node of another graph, the
graph asks in ``human_review`` instead (`PhaseGraph._as_run`) and takes the parent run's
`Context` (`parent_context`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph._internal._constants import CONFIG_KEY_RUNTIME
from langgraph.types import Interrupt, StateSnapshot

from phasegraph.context import Context
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


def values_part(chunk: Any) -> dict[str, Any] | None:
    """The chunk if it is a ``version="v2"`` values part of the graph's own state, else None."""
    if isinstance(chunk, dict) and chunk.get("type") == "values" and "interrupts" in chunk:
        return None if chunk.get("ns") else chunk
    return None


def paused_quietly(part: Mapping[str, Any]) -> bool:
    """Whether a v2 values part is a review pause's state and does not carry its question.

    A v2 values stream (which ``invoke(..., version="v2")`` reads its ``interrupts`` from) ends
    at the review's breakpoint with that state, and LangGraph puts no interrupt in it: the
    stream then adds the part again with the question (`with_interrupts`).
    """
    data = part["data"]
    return (
        not part["interrupts"]
        and isinstance(data, Mapping)
        and bool(data.get("pending_review"))
        and data.get("status") == "awaiting_review"
    )


def with_interrupts(part: Mapping[str, Any], interrupts: tuple[Interrupt, ...]) -> dict[str, Any]:
    """A v2 values part with ``interrupts`` in its typed field."""
    return {**part, "interrupts": interrupts}


def parent_context(configurable: Mapping[str, Any]) -> Context | None:
    """The settings of the run this graph is a node of, when they are phasegraph's `Context`.

    A graph run as a node gets its parent run's runtime in its config, and LangGraph hands that
    runtime's context to the nodes unless the run sets one: phasegraph always sets one, so
    without this a parent's `Context` would be dropped for the defaults. A context of another
    schema is the parent's own, whatever its fields are called (a ``model`` field naming the
    parent's model is not phasegraph's), and is not read. None outside a parent run.
    """
    # LangGraph has no public name for the key that carries the parent's runtime
    parent = getattr(configurable.get(CONFIG_KEY_RUNTIME), "context", None)
    return parent if isinstance(parent, Context) else None
