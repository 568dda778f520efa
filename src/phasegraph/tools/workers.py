"""The threads tool calls run on: one per call at a time, kept for the next call once it ends.

A task's tool runs in a thread of its own so that its timeout holds even for a tool that ignores
it (`nodes.run_task`). Starting a thread for every call cost more than the call itself of a
fast tool (a third of a millisecond, while the run's other threads hold the interpreter), so a
thread whose call has ended waits for the next one, and ends after `KEEP_IDLE_S` without one.
A call whose time ran out keeps its thread until it ends, and the next call gets another.
The threads are daemons: a tool that never ends does not hold up the interpreter's exit.

As on the threads of any pool (LangGraph's own, which run the nodes), what a tool keeps in a
``threading.local`` may be seen by a later call on the same thread. A thread's asyncio event
loop is not: it is unset after each call, as a new thread has none.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
from collections.abc import Callable

#: How long a thread with no call waits for one before it ends, in seconds.
KEEP_IDLE_S = 30.0

#: The name of a thread that waits for a call (one that runs a call is named by the caller).
IDLE_NAME = "phasegraph-tools-idle"

_Job = tuple[Callable[[], object], str]
_Jobs = queue.SimpleQueue[_Job]

#: The queues of the threads that wait for a call, the one that waited least last.
_idle: list[_Jobs] = []
_lock = threading.Lock()
_log = logging.getLogger(__name__)


def _after_fork_in_child() -> None:
    global _lock  # the parent's threads do not exist in a forked child; its lock may be held
    _lock = threading.Lock()
    _idle.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def run_on_tool_thread(call: Callable[[], object], name: str) -> None:
    """Start ``call()`` on a thread of its own, named ``name`` while it runs; does not wait.

    The thread is one whose earlier call has ended, or a new one when none is free; it runs
    nothing else until ``call`` returns. ``call`` hands its result on itself (a queue, say):
    what it raises is logged, and the thread goes on to serve the next call.
    """
    job: _Job = (call, name)
    with _lock:
        # taken and handed its call at once, under the lock a thread that stops waiting takes
        if _idle:
            _idle.pop().put(job)
            return
    jobs: _Jobs = queue.SimpleQueue()
    jobs.put(job)
    threading.Thread(target=_serve, args=(jobs,), name=name, daemon=True).start()


def _serve(jobs: _Jobs) -> None:
    me = threading.current_thread()
    try:
        while (job := _next_job(jobs)) is not None:
            call, me.name = job
            try:
                call()
            except BaseException:  # the thread serves on; the call's caller times out waiting
                _log.exception("a tool call raised outside its tool: %s", me.name)
            finally:
                asyncio.set_event_loop(None)
                me.name = IDLE_NAME
                with _lock:
                    _idle.append(jobs)
    finally:  # should the thread end otherwise (it raised), no call is handed to it after
        with _lock:
            _take_off(jobs)


def _next_job(jobs: _Jobs) -> _Job | None:
    """The thread's next call; None once it has waited `KEEP_IDLE_S` for one."""
    try:
        return jobs.get(timeout=KEEP_IDLE_S)
    except queue.Empty:
        with _lock:
            if _take_off(jobs):
                return None
    # taken off the list as the wait ended, so handed a call then, under the lock
    try:
        return jobs.get_nowait()
    except queue.Empty:  # its caller was interrupted between the two
        return None


def _take_off(jobs: _Jobs) -> bool:
    """Take a thread's queue off the idle list (the lock held); whether it was on it."""
    kept = [idle for idle in _idle if idle is not jobs]
    found = len(kept) < len(_idle)
    _idle[:] = kept
    return found
