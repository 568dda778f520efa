"""When work a tool started is to stop: its task given up, its run stopped, or the process.

A task's tool runs in a thread of its own (`nodes.run_task`), and nothing stops a thread from
outside. What can stop is told here, and looked at where the work waits: a command between its
looks at its output (`commands`), an async tool between its steps (`base.run_tool`).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

#: The events of the task that runs the work and of what it runs inside (the tasks around a
#: sub-agent's run, the run `aresume` drives), each set once that is given up on (its time is
#: out, its run was cancelled): the work stops at its next look instead of working on unseen.
GIVEN_UP: contextvars.ContextVar[tuple[threading.Event, ...]] = contextvars.ContextVar(
    "phasegraph_given_up", default=()
)

#: Set once this process is stopping (Ctrl-C in the CLI): every command still running stops,
#: so that the process ends now rather than when its slowest command would have.
STOPPING = threading.Event()

#: The event loop of the async run a task belongs to (``ainvoke``, ``astream``, a server's):
#: an async tool is awaited there, as LangGraph's ToolNode awaits it, not on a loop of its own.
RUN_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "phasegraph_run_loop", default=None
)


def stopping_too(event: threading.Event) -> contextvars.Context:
    """A copy of this context in which work also stops once ``event`` is set (`GIVEN_UP`)."""
    here = contextvars.copy_context()
    here.run(GIVEN_UP.set, (*GIVEN_UP.get(), event))
    return here


def stopped_here() -> bool:
    """Whether work started here is to stop: what it runs inside given up, or the process."""
    return STOPPING.is_set() or any(given_up.is_set() for given_up in GIVEN_UP.get())


class Deadline:
    """One call's time, from its start: walking, compiling and matching all count against it."""

    def __init__(self, seconds: float, what: str) -> None:
        """A deadline ``seconds`` from now for the work ``what`` names (in the message)."""
        self.seconds = seconds
        self.what = what
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left, at least 0."""
        return max(0.0, self.end - time.monotonic())

    def check(self) -> None:
        """Raise `TimeoutError` once the time is out or the work's task was given up on."""
        if stopped_here():
            raise TimeoutError(
                f"{self.what} was given up on (its task timed out or its run stopped)"
            )
        if time.monotonic() >= self.end:
            raise TimeoutError(f"{self.what} took longer than {self.seconds:g} s and was stopped")
