"""Stopping local model calls at once when the run is interrupted (SPEC section 8).

Every local model call runs on one thread (`model_thread`), in two parts: reading the prompt
(llama.cpp evaluates it in batches) and writing the answer, a token at a time. Once the run is
interrupted, both end at their next step: the answer at its next token (the sampler asks
`stopped`), the prompt's reading at its graph's next node (llama.cpp's abort callback, set on
a model's context while it reads a prompt, and while calls are stopped: asked between the
nodes of every token's graph, it would cost each token). A stopped call raises `CallStopped`,
never returns a cut answer, so no retry, repair or fallback reads it as the model's. What is
stopped is every call made before `stop_calls`, running or waiting; a call made after it runs
as usual, so a program that catches the interrupt can go on (`phasegraph.resume`) without
clearing anything.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

_lock = threading.RLock()  # the SIGINT handler may take it where the main thread holds it
_stops = 0  # how many times calls were stopped
_running_since = 0  # `_stops` when the call running on the model thread was made
_models: list[tuple[Any, Any, Any]] = []  # (Llama, llama_cpp, its abort callback)
_armed = False  # the models' abort callbacks are set
#: llama-cpp-python's logger, which prints llama.cpp's complaint about a decode it aborted
_LLAMA_LOG = logging.getLogger("llama-cpp-python")
_quieted: int | None = None  # its level before a stop quieted it


class CallStopped(KeyboardInterrupt):
    """A local model call ended unanswered: the run was interrupted while it ran or waited."""


def stopped_call(error: object) -> bool:
    """Whether a node's ``error`` is a stopped call: the exception, or the repr LangGraph keeps.

    A node that raised in a worker thread leaves its error in the checkpoint, as the exception's
    repr once saved; a resumed run is to ask that node again, not to end in its error.
    """
    return isinstance(error, CallStopped) or (
        isinstance(error, str) and error.startswith(f"{CallStopped.__name__}(")
    )


def stop_calls() -> None:
    """Stop every local model call made until now: the one running, and those waiting.

    Each loaded model's context gets its abort callback, and llama.cpp's error line for the
    decode it aborts is not printed: the stop is asked for.
    """
    global _stops, _quieted, _armed
    with _lock:
        _stops += 1
        if _quieted is None:
            _quieted = _LLAMA_LOG.level
            _LLAMA_LOG.setLevel(logging.CRITICAL + 1)
        # a pointer pair read by llama.cpp when a batch's graph starts: the batch running ends
        # as it would have, the next one is aborted at its first node
        for llm, llama_cpp, callback in _models:
            llama_cpp.llama_set_abort_callback(llm.ctx, callback, None)
        _armed = True


def ticket() -> int:
    """The mark of a call made now: it is stopped by any `stop_calls` after this."""
    return _stops


def begin(mark: int) -> None:
    """Say that the call made at ``mark`` (a `ticket`) runs now on the model thread.

    A call made after the last stop runs as usual: no abort callback, llama.cpp's errors shown.
    """
    global _running_since, _quieted, _armed
    _running_since = mark
    if mark != _stops or (_quieted is None and not _armed):
        return
    with _lock:
        if mark != _stops:
            return
        if _quieted is not None:
            _LLAMA_LOG.setLevel(_quieted)
            _quieted = None
        for llm, llama_cpp, _callback in _models:
            llama_cpp.llama_set_abort_callback(llm.ctx, llama_cpp.ggml_abort_callback(), None)
        _armed = False


def stopped() -> bool:
    """Whether the call running on the model thread is to stop."""
    return _stops != _running_since


def check() -> None:
    """Raise `CallStopped` where the call running on the model thread is to stop."""
    if stopped():
        raise CallStopped("the local model's answer was stopped: the run was interrupted")


def install_abort(llm: Any, llama_cpp: Any) -> None:
    """Let a stop end ``llm``'s reading of a prompt at once, and any decode once stopped.

    ``llm.eval`` of more than one token (a prompt, read in batches) runs with the abort
    callback set; a stop (`stop_calls`) sets it until a call made after the stop begins. The
    aborted decode returns an error, which `check` turns into `CallStopped`. A binding without
    the callback reads prompts to their end, as before.
    """
    if not hasattr(llama_cpp, "llama_set_abort_callback"):
        return
    callback = llama_cpp.ggml_abort_callback(lambda _data: stopped())
    reads = llm.eval

    def eval_stoppable(tokens: Any) -> Any:
        if len(tokens) < 2:  # one token of the answer: the sampler stops it
            return reads(tokens)
        llama_cpp.llama_set_abort_callback(llm.ctx, callback, None)
        try:
            return reads(tokens)
        finally:
            with _lock:
                if not _armed:
                    llama_cpp.llama_set_abort_callback(
                        llm.ctx, llama_cpp.ggml_abort_callback(), None
                    )

    llm.eval = eval_stoppable
    with _lock:
        # the C side holds only a pointer to the callback: it lives as long as the model here
        _models.append((llm, llama_cpp, callback))


def forget(llm: Any) -> None:
    """Stop tracking ``llm`` (it is being closed)."""
    with _lock:
        _models[:] = [entry for entry in _models if entry[0] is not llm]
