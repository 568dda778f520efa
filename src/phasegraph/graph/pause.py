"""The review pause as LangGraph's users look for it (SPEC section 6), also as a parent's node.

The graph pauses before ``human_review`` (a static breakpoint), which LangGraph reports with no
question: ``interrupts`` empty, an empty ``__interrupt__`` in a stream (and so none in invoke's
output, which LangGraph reads from the stream), a values stream whose last state carries no
interrupt, and a paused checkpoint (``debug``, ``checkpoints`` streams: a LangGraph server's
thread ``interrupts``) whose task has none. These put the pending review's question there, so
that ``Command(resume=answer)`` answers what the person sees. Run as a node of another graph, the
graph asks in ``human_review`` instead (`PhaseGraph._as_run`) and takes the parent run's
`Context` (`parent_context`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.runtime import get_runtime
from langgraph.types import Command, Interrupt, StateSnapshot

from phasegraph.context import Context
from phasegraph.errors import FeedbackError
from phasegraph.nodes.human_review import QUESTION_ID_PREFIX, review_question


def pause_question(
    values: Any, next_nodes: Sequence[str], config: Mapping[str, Any] | None
) -> Interrupt | None:
    """The question of a state paused before ``human_review`` (SPEC section 6); else None.

    Its id names the paused checkpoint (``config``), so every view of one pause shows one id.
    """
    pending = values.get("pending_review") if isinstance(values, Mapping) else None
    if not pending or "human_review" not in next_nodes:
        return None
    checkpoint = str(((config or {}).get("configurable") or {}).get("checkpoint_id", ""))
    return Interrupt(value=review_question(pending), id=f"{QUESTION_ID_PREFIX}{checkpoint}")


def with_review_question(snapshot: StateSnapshot) -> StateSnapshot:
    """The snapshot of a run paused before ``human_review``, its question in ``interrupts``.

    LangGraph leaves a static breakpoint's ``interrupts`` empty; the review's question is put
    where LangGraph's users look for it (SPEC section 6). Answered with ``Command(resume=...)``
    it reaches the node, which asks for it (`nodes.human_review.answer_of`).
    """
    asked = None
    if not snapshot.interrupts:
        asked = pause_question(snapshot.values, snapshot.next, snapshot.config)
    if asked is None:
        return snapshot
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


def _rebuilt(chunk: Any, part: Any) -> Any:
    """``chunk`` in its stream format (see `_payload`), carrying ``part`` instead."""
    if isinstance(chunk, tuple):
        return (*chunk[:-1], part)
    if isinstance(chunk, dict) and "data" in chunk and "type" in chunk:
        return {**chunk, "data": part}
    return part


def with_question(chunk: Any, interrupts: tuple[Interrupt, ...]) -> Any:
    """The pause's chunk (see `asks_quietly`) with ``interrupts`` as its ``__interrupt__``.

    Any stream format (see `_payload`); every other chunk is returned as it is.
    """
    if not asks_quietly(chunk) or not interrupts:
        return chunk
    return _rebuilt(chunk, {"__interrupt__": interrupts})


def with_checkpoint_question(chunk: Any) -> Any:
    """A checkpoint's chunk of a run paused before ``human_review``, its question in its task.

    LangGraph's ``debug`` and ``checkpoints`` streams describe each checkpoint with its next
    tasks and their interrupts, which a static breakpoint leaves empty; a LangGraph server reads
    a thread's ``interrupts`` (what Studio shows of a paused thread) from them. Any stream
    format (see `_payload`); every other chunk is returned as it is.
    """
    part = _payload(chunk)
    if not isinstance(part, dict):
        return chunk
    checkpoint = part.get("payload") if part.get("type") == "checkpoint" else part
    if not isinstance(checkpoint, dict) or not _CHECKPOINT_KEYS <= checkpoint.keys():
        return chunk
    tasks = checkpoint["tasks"]
    asked = None
    if not any(isinstance(t, Mapping) and t.get("interrupts") for t in tasks):
        asked = pause_question(checkpoint["values"], checkpoint["next"], checkpoint["config"])
    if asked is None:
        return chunk
    shown = (dataclasses.asdict(asked),)
    patched = {
        **checkpoint,
        "tasks": [
            {**t, "interrupts": shown} if t.get("name") == "human_review" else t for t in tasks
        ],
    }
    return _rebuilt(chunk, patched if checkpoint is part else {**part, "payload": patched})


_CHECKPOINT_KEYS = frozenset({"config", "values", "next", "tasks"})


def root_values(chunk: Any, options: Mapping[str, Any], default_mode: Any) -> bool:
    """Whether ``chunk`` is a ``values`` chunk of the graph's own state, in any stream format.

    ``options`` are the stream's (``stream_mode``, ``subgraphs``, ``version``); ``default_mode``
    is the graph's stream mode.
    """
    if options.get("version", "v1") == "v2":
        return _values_part(chunk) and not chunk.get("ns")
    mode = options.get("stream_mode") or default_mode
    subgraphs = bool(options.get("subgraphs"))
    if isinstance(mode, str):
        return mode == "values" and (not subgraphs or isinstance(chunk, tuple) and not chunk[0])
    return (
        "values" in mode
        and isinstance(chunk, tuple)
        and chunk[-2] == "values"
        and (not subgraphs or not chunk[0])
    )


def _values_part(chunk: Any) -> bool:
    """Whether ``chunk`` is a ``version="v2"`` values part, whose interrupts have a field."""
    return isinstance(chunk, dict) and chunk.get("type") == "values" and "interrupts" in chunk


def paused_quietly(chunk: Any) -> bool:
    """Whether a values chunk (see `root_values`) is a review pause's state, with no question.

    A values stream ends at the review's breakpoint with that state, and LangGraph puts no
    interrupt in it (it does for an ``interrupt()`` in a node): ``invoke(..., version="v2")``
    reads its ``interrupts`` from it, and a LangGraph server's ``runs.wait`` its output. The
    stream then adds the chunk again with the question (`with_interrupts`).
    """
    data = _payload(chunk)
    if not isinstance(data, Mapping):
        return False
    asked = chunk["interrupts"] if _values_part(chunk) else data.get("__interrupt__")
    return (
        not asked and bool(data.get("pending_review")) and data.get("status") == "awaiting_review"
    )


def with_interrupts(chunk: Any, interrupts: tuple[Interrupt, ...]) -> Any:
    """A values chunk with ``interrupts``: a v2 part's typed field, or v1's ``__interrupt__``."""
    if _values_part(chunk):
        return {**chunk, "interrupts": interrupts}
    return _rebuilt(chunk, {**_payload(chunk), "__interrupt__": interrupts})


def refused_answer(input: Command[Any], snapshot: StateSnapshot) -> FeedbackError | None:
    """Why the review refused the answer ``input`` gave, where it did; None otherwise.

    The review asks again with the reason beside its question and the thread stays paused as
    it was (`human_review.answer_of`); the caller (code, the SDK, Studio) gets that reason as
    the run's error, not a pause that reads as success.
    """
    if input.resume is None:
        return None
    for asked in snapshot.interrupts:
        if isinstance(asked.value, Mapping) and asked.value.get("error"):
            return FeedbackError(
                f"{asked.value['error']} (the answer given does not fit the pending review; "
                "the thread is still paused)"
            )
    return None


def parent_context() -> Context | None:
    """The settings of the run this graph is a node of, when they are phasegraph's `Context`.

    A graph run as a node runs within its parent run, whose runtime LangGraph gives
    (``get_runtime``), and LangGraph hands that runtime's context to the nodes unless the run
    sets one: phasegraph always sets one, so without this a parent's `Context` would be
    dropped for the defaults. A context of another schema is the parent's own, whatever its
    fields are called (a ``model`` field naming the parent's model is not phasegraph's), and
    is not read. None outside a parent run.
    """
    try:
        parent = getattr(get_runtime(), "context", None)
    except RuntimeError:  # not within a run: called from the caller's own code
        return None
    return parent if isinstance(parent, Context) else None
