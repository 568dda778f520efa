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

import asyncio
import functools
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from phasegraph.context import Context
from phasegraph.errors import FeedbackError, ThreadStateError
from phasegraph.nodes.deps import task_error
from phasegraph.nodes.human_review import parse_feedback
from phasegraph.state.state import STAGE_COUNTERS
from phasegraph.storage.integrity import checked_state
from phasegraph.tools.stopping import stopped_here, stopping_too

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
            before = before_the_error(graph, config, values)
            if before is None:
                raise ThreadStateError(
                    f"thread {thread_id!r} has ended (status {values.get('status')}); "
                    "nothing to resume"
                )
            if feedback is not None:
                raise FeedbackError(
                    f"thread {thread_id!r} stopped on an error; resume it without feedback"
                )
            fork = graph.get_state(before)
            spent = spent_since(values, fork.values)
            # the tasks the stopped execute ran run again (or replay), and count again: not twice
            spent["step_count"] = max(0, spent["step_count"] - executed_since(values, fork.values))
            run(graph, before, settings, on_progress, Command(update=spent))
            return dict(checked_state(graph, config).values)
        payload: Command[Any] | None = None
        if "human_review" in snapshot.next:
            pending = values.get("pending_review") or {}
            answer = parse_feedback(pending, feedback, values, settings)
            payload = Command(update={"human_feedback": answer.model_dump()})
        elif feedback is not None:
            raise FeedbackError(
                f"thread {thread_id!r} is not waiting for a review; resume it without feedback"
            )
        run(graph, config, settings, on_progress, payload)
        return dict(checked_state(graph, config).values)


async def aresume(
    graph: PhaseGraph,
    config: RunnableConfig,
    feedback: Mapping[str, Any] | None = None,
    *,
    context: Context | dict[str, Any] | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """`resume` for async callers, with an async checkpointer or a sync one.

    It runs `resume` on a worker thread, so the event loop goes on meanwhile; LangGraph's async
    savers take sync calls from threads other than their loop's. ``on_progress`` is called on
    that thread. Cancelled, it stops the run as a cancelled ``ainvoke`` does: its commands
    stop (`stopping.GIVEN_UP`) and it goes no further than the step it is in.
    """
    stopped = threading.Event()
    here = stopping_too(stopped)
    call = functools.partial(
        resume, graph, config, feedback, context=context, on_progress=on_progress
    )
    running = asyncio.get_running_loop().run_in_executor(None, here.run, call)
    try:
        return await running
    except asyncio.CancelledError:
        stopped.set()
        raise


def can_resume(graph: PhaseGraph, config: RunnableConfig) -> bool:
    """Whether `resume` has something to continue: a pause, a crash's cut, or an error's stop."""
    snapshot = graph.get_state(config)
    values = snapshot.values or {}
    return bool(snapshot.tasks) or before_the_error(graph, config, values) is not None


def run(
    graph: PhaseGraph,
    config: RunnableConfig,
    settings: Context,
    on_progress: Callable[[dict[str, Any]], None] | None,
    payload: Command[Any] | None = None,
) -> None:
    """Run the thread on from ``config``, each progress event to ``on_progress``."""
    for chunk in graph.stream(payload, config, context=settings, stream_mode="custom"):
        if stopped_here():
            break  # its caller stopped waiting (`aresume` cancelled): the run goes no further
        if on_progress is not None:
            on_progress(chunk)


def before_the_error(
    graph: PhaseGraph, config: RunnableConfig, values: Mapping[str, Any]
) -> RunnableConfig | None:
    """Where a thread an error stopped goes on from (SPEC section 8), or None for any other.

    An error stopped it when it ended ``failed`` with an ``error`` recorded: a node raised, or a
    stage's every attempt did. A stage that ran out of budget records its error too, but the
    run ended ``budget_exhausted``: that one has ended.

    That is its last checkpoint from before the error (no ``error`` recorded, no task of the
    round holding one), so resuming runs again the step that raised. LangGraph forks the
    history there: the error, and the summary after it, stay in the history, no longer the
    thread's latest state. What the run spent after that checkpoint is not given back: see
    `spent_since`.
    """
    if values.get("status") != "failed" or not values.get("error"):
        return None  # a budget spent, a rejection, the work done: ended for good
    for snapshot in graph.get_state_history(config):
        earlier = snapshot.values or {}
        if snapshot.next and not earlier.get("error") and task_error(cast(Any, earlier)) is None:
            configurable = {**(config.get("configurable") or {})}
            configurable |= snapshot.config.get("configurable") or {}
            return cast(RunnableConfig, {**config, "configurable": configurable})
    return None


def executed_since(values: Mapping[str, Any], earlier: Mapping[str, Any]) -> int:
    """Tasks of the round in progress that ran (or replayed) after ``earlier``, up to ``values``.

    A task that ran has its wave's number; one settled without running has none (0).
    """

    def ran(state: Mapping[str, Any]) -> int:
        return sum(1 for r in state.get("results") or [] if r.get("wave"))

    return max(0, ran(values) - ran(earlier))


def spent_since(values: Mapping[str, Any], earlier: Mapping[str, Any]) -> dict[str, int]:
    """What the run counted (steps, model calls, tokens) after ``earlier``, up to ``values``.

    Added back to a thread resumed from an earlier checkpoint, so that its step budget and its
    counts go on from where it stopped, the attempts that raised included (SPEC sections 3, 8).
    """
    counters = (*STAGE_COUNTERS, "parse_failures")
    return {k: max(0, int(values.get(k) or 0) - int(earlier.get(k) or 0)) for k in counters}
