"""When work a tool started is to stop: its task given up, its run stopped, or the process.

A task's tool runs in a thread of its own (`nodes.run_task`), and nothing stops a thread from
outside. What can stop is told here, and looked at where the work waits: a command between its
looks at its output (`commands`), an async tool between its steps (`base.run_tool`).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

#: The events of the task that runs the work and of the tasks it runs inside (a sub-agent's
#: run in a tool's task), each set once its task is given up on (its time is out, its run was
#: cancelled): the work stops at its next look instead of working on in the workspace.
GIVEN_UP: contextvars.ContextVar[tuple[threading.Event, ...]] = contextvars.ContextVar(
    "phasegraph_given_up", default=()
)

#: Set once this process is stopping (Ctrl-C in the CLI): every command still running stops,
#: so that the process ends now rather than when its slowest command would have.
STOPPING = threading.Event()

#: Set once the caller of a whole run stops waiting for it (`aresume` cancelled): the run's
#: commands stop, and the run goes no further.
RUN_STOPPED: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "phasegraph_run_stopped", default=None
)

#: The event loop of the async run a task belongs to (``ainvoke``, ``astream``, a server's):
#: an async tool is awaited there, as LangGraph's ToolNode awaits it, not on a loop of its own.
RUN_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "phasegraph_run_loop", default=None
)


def stopped_here() -> bool:
    """Whether work started here is to stop: its task or run given up, or the process."""
    run = RUN_STOPPED.get()
    return (
        STOPPING.is_set()
        or (run is not None and run.is_set())
        or any(task.is_set() for task in GIVEN_UP.get())
    )
