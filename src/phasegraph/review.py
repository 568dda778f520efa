"""Answering a paused run: checking feedback against the pending review, and resuming a thread.

The check is the `human_review` node's own (`phasegraph.nodes.human_review.parse_feedback`),
made here before anything runs, so an answer that does not fit changes nothing.

SPEC section 6 names the pitfalls this module exists to avoid: a static breakpoint leaves no
``__interrupt__`` in the result (we read ``get_state().next``); ``update_state`` without
``as_node`` re-runs the previous router (we send the answer as ``Command(update=...)``, which
LangGraph applies at the breakpoint and then runs ``human_review``); and new input sent to a
paused thread would drop the review (the compiled graph refuses it, see ``graph.compiled``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from phasegraph.context import Context
from phasegraph.errors import FeedbackError, ThreadStateError
from phasegraph.nodes.human_review import parse_feedback
from phasegraph.storage.integrity import checked_state

if TYPE_CHECKING:
    from phasegraph.graph.compiled import PhaseGraph


def thread_id_of(config: RunnableConfig) -> str:
    """The thread id of a config; a config without one cannot be resumed."""
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if not thread_id:
        raise ThreadStateError('config has no thread id: {"configurable": {"thread_id": ...}}')
    return str(thread_id)


def resume(
    graph: PhaseGraph,
    config: RunnableConfig,
    feedback: Mapping[str, Any] | None = None,
    *,
    context: Context | dict[str, Any] | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Continue a thread: answer its pending review, or go on after an error or a crash.

    ``feedback`` is one of ``{"action": "approve"}``, ``{"action": "reject", "reason": ...}``,
    ``{"action": "edit", "phases": [...]}``, ``{"action": "modify", "feedback": ...}``,
    ``{"action": "answer", "answer": ...}``, ``{"action": "allow"}`` or ``{"action": "deny"}``.
    Feedback that does not fit the pending review raises `FeedbackError` and changes nothing.
    The thread is leased for the whole call, so the check and the run cannot be interleaved
    with another runner's. ``on_progress`` receives each progress event as the run goes on.
    """
    thread_id = thread_id_of(config)
    settings = Context.coerce(context)
    with graph.lease(config):
        snapshot = checked_state(graph, config)
        values = snapshot.values or {}
        if not values:
            raise ThreadStateError(f"unknown thread {thread_id!r}")
        # `snapshot.next` leaves out a node whose writes were saved before a crash cut the run
        # off ahead of the next checkpoint; such a thread has not ended: its `tasks` still list
        # that node, and streaming applies the saved writes and goes on.
        if not snapshot.tasks:
            raise ThreadStateError(
                f"thread {thread_id!r} has ended (status {values.get('status')}); nothing to resume"
            )
        payload: Command[Any] | None = None
        if "human_review" in snapshot.next:
            pending = values.get("pending_review") or {}
            answer = parse_feedback(pending, feedback, values, settings)
            payload = Command(update={"human_feedback": answer.model_dump()})
        elif feedback is not None:
            raise FeedbackError(
                f"thread {thread_id!r} is not waiting for a review; resume it without feedback"
            )
        for chunk in graph.stream(payload, config, context=settings, stream_mode="custom"):
            if on_progress is not None:
                on_progress(chunk)
        return dict(checked_state(graph, config).values)
