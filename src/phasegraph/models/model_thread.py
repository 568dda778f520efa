"""The one thread every call of a local model runs on.

llama.cpp's CPU backend keeps a team of worker threads (OpenMP) for each thread that calls it;
a graph runs its nodes on whichever of its worker threads is free, and calls spread over
several teams ran slower than calls from one (docs/benchmarks.md, 2026-11-26).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from phasegraph.models import stop
from phasegraph.tools.stopping import STOPPING

_T = TypeVar("_T")
_NAME = "phasegraph-model"


def _new_model_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=_NAME)


#: The one thread every call of a local model runs on (see `on_model_thread`).
_model_thread = _new_model_thread()


def _after_fork_in_child() -> None:
    global _model_thread  # the parent's thread does not exist in a forked child
    _model_thread = _new_model_thread()


os.register_at_fork(after_in_child=_after_fork_in_child)


def on_model_thread(call: Callable[[], _T]) -> _T:
    """``call()`` run on the one thread that runs every local model call, its result returned.

    llama.cpp's CPU backend keeps a team of worker threads (OpenMP) for each thread that calls
    it; a graph runs its nodes on whichever of its worker threads is free, and calls spread over
    several teams ran slower than calls from one. The thread also makes calls from parallel
    branches take turns, as the one context they share needs. A call made on that thread, or
    once the interpreter is shutting down, runs where it is made. A caller interrupted while
    it waits (Ctrl-C) stops it (`stop.stop_calls`): the call raises `stop.CallStopped` within a
    step of llama.cpp's, so the interrupt is not held up by the rest of the answer; a call
    made while the process stops (`STOPPING`: a model that was loading, a retry) raises at once.
    """
    if threading.current_thread().name.startswith(_NAME):
        return call()
    if STOPPING.is_set():  # the run is being interrupted: a call made now is not waited for
        raise stop.CallStopped("the run was interrupted before the local model's call began")
    mark = stop.ticket()

    def marked() -> _T:
        stop.begin(mark)
        stop.check()  # stopped while it waited its turn
        return call()

    try:
        future = _model_thread.submit(marked)
    except RuntimeError:  # the interpreter is shutting down: no new thread
        return call()
    try:
        return future.result()
    except BaseException:
        if not future.done():
            stop.stop_calls()
        raise
