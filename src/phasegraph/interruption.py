"""Ctrl-C during a run: the work in flight stops now, then Python's interrupt follows (SPEC 8).

LangGraph waits for a step's running nodes before an interrupt leaves the step, and a node
waits for its command or its model's answer: without this, Ctrl-C took effect only when the
slowest of them ended. Here the interrupt first tells the commands (`tools.stopping.STOPPING`)
and the local model's calls (`models.stop.stop_calls`) to stop, then raises
`KeyboardInterrupt` as Python's own handler does.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from phasegraph.models import stop
from phasegraph.tools.stopping import STOPPING


def _interrupted(signum: int, frame: FrameType | None) -> None:
    STOPPING.set()
    stop.stop_calls()
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_work_on_interrupt() -> Iterator[None]:
    """While the block runs, Ctrl-C stops the commands and model answers in flight, then raises.

    Only Python's default handler in the main thread is replaced (a program's own handler,
    asyncio's, a test runner's are left alone), and only by the outermost block; afterwards it
    is as it was, and the commands of a later run are not stopped. Async runs are left to
    their event loop's own handling (asyncio cancels the run's task).
    """
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    signal.signal(signal.SIGINT, _interrupted)
    try:
        yield
    finally:
        STOPPING.clear()
        # a stream's generator may be closed from another thread, where no handler can be set
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.default_int_handler)
