"""`run_task`: one tool execution, a LangGraph task `execute` calls (SPEC sections 3 and 5).

Each is a task of its own inside `execute`'s step (`langgraph.func.task`), so the tasks of a
wave run at the same time and a finished one's result is saved as it ends: if the process
dies, `execute` runs again on resume and is handed that result, not a new execution. A tool
declared idempotent (``metadata={"idempotent": True}``) needs nothing more: if LangGraph runs
its task again, it simply runs again. Every other tool's execution is journalled, which covers
the gap LangGraph leaves (see ``phasegraph.storage.journal``): a finished execution is
replayed, an interrupted one is reported as "interrupted, outcome unknown", never silently
re-run. The tool runs in its own thread so the per-task timeout holds even for a tool that
ignores it (but for an async tool that shares the run's event loop,
`tools.base.shares_event_loop`).
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypedDict, cast

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.errors import NodeError
from langgraph.runtime import Runtime, get_runtime

from phasegraph.context import Context
from phasegraph.facts.tools import given_command
from phasegraph.nodes.deps import Deps, context_of, run_error, task_result, thread_id
from phasegraph.nodes.readable import put_back_if_broken, readable_before
from phasegraph.progress import emit
from phasegraph.state import TaskInput, TaskOutcome, TaskResult
from phasegraph.storage.journal import journal_key, same_call
from phasegraph.tools import is_idempotent, run_tool
from phasegraph.tools.base import ToolOutcome
from phasegraph.tools.stopping import RUN_LOOP, stopping_too
from phasegraph.tools.workers import run_on_tool_thread
from phasegraph.tools.workspace import Workspace

INTERRUPTED = (
    "interrupted, outcome unknown: the run stopped (its process, or its caller) while this call "
    "ran, and the tool is not idempotent, so it was not run again"
)


def _run_with_timeout(
    tool: BaseTool,
    task: dict[str, Any],
    timeout_s: float,
    max_chars: int,
    arguments: dict[str, Any] | None = None,
) -> tuple[str, ToolOutcome, float]:
    """Run the task's tool with ``arguments`` (its own by default): status, what it gave, time.

    A late tool is given up on (`stopping.GIVEN_UP`: a command it runs is stopped; any other
    tool is left to finish alone). The tool's thread runs in a copy of this node's context, and
    the tool is given the node's config: it sees the run as a tool LangGraph's ToolNode runs
    does (see `tools.run_tool`). The thread is one a call before has ended on, or a new one
    (`workers.run_on_tool_thread`).
    """
    outcome: queue.SimpleQueue[ToolOutcome] = queue.SimpleQueue()
    given = task["arguments"] if arguments is None else arguments
    given_up = threading.Event()  # this task's; what it runs inside stops it too
    here, config = stopping_too(given_up), get_config()
    start = time.monotonic()
    run_on_tool_thread(
        lambda: outcome.put(here.run(run_tool, tool, given, max_chars, config)),
        name=f"phasegraph-{tool.name}",
    )
    try:
        got = outcome.get(timeout=timeout_s)
    except queue.Empty:
        given_up.set()
        late = ToolOutcome(False, f"no result within {timeout_s:.1f} s")
        return "timeout", late, time.monotonic() - start
    except BaseException:  # the wait was interrupted (Ctrl-C): the work is not waited for
        given_up.set()
        raise
    return ("ok" if got.ok else "failed"), got, time.monotonic() - start


def cancellable(node: Callable[..., Any]) -> Runnable[Any, Any]:
    """``node`` (the bound `execute`) as LangGraph runs it, sync or async.

    An async run (a server's, ``astream``) that is cancelled gives its running tasks up
    (`stopping.GIVEN_UP`, which the `run_task`s it calls inherit): a command still running is
    stopped at once, and the task's journal records it stopped, instead of the command working
    on in the workspace unseen. LangGraph runs a plain function's async form in a thread
    nothing cancels; its own wrapper is given both forms here, untraced as every node is (a
    traced wrapper would report each step twice to callbacks and ``astream_events``).
    """

    def call(state: Any, runtime: Runtime[Context]) -> Any:
        return node(state, runtime=runtime)

    def sync(state: Any, runtime: Runtime[Context]) -> Any:
        # a sync run inside an async run's tool (a sub-agent) may be holding up that run's loop
        here = contextvars.copy_context()
        here.run(RUN_LOOP.set, None)
        return here.run(call, state, runtime)

    async def in_thread(state: Any, runtime: Runtime[Context]) -> Any:
        given_up = threading.Event()
        here = stopping_too(given_up)
        loop = asyncio.get_running_loop()
        here.run(RUN_LOOP.set, loop)  # where a tool that shares the run's loop is awaited
        done: asyncio.Future[Any] = loop.create_future()

        def work() -> None:
            result: Any = None
            error: BaseException | None = None
            try:
                result = here.run(call, state, runtime)
            except BaseException as exc:  # handed to the awaiting run, raised there
                error = exc
            try:
                loop.call_soon_threadsafe(_settle, done, result, error)
            except RuntimeError:  # the loop has closed: the run is over, nobody waits
                pass

        # Not the loop's default executor: the tasks the node calls run there, and a node
        # waiting on them in it would, with as many runs at once as it has threads, wait forever.
        run_on_tool_thread(work, name=f"phasegraph-{node.__name__}")
        try:
            return await done
        except asyncio.CancelledError:
            given_up.set()
            raise

    return _BothForms(sync, in_thread, node.__name__)


class _BothForms(Runnable[Any, Any]):
    """A node with a sync and an async form, each given the run's `Runtime`; it reports nothing.

    LangGraph runs a node's runnable in the context of the node's config, where
    ``get_runtime`` finds the run's runtime; the node's own run is LangGraph's to report, once.
    """

    def __init__(
        self,
        sync: Callable[[Any, Runtime[Context]], Any],
        asynchronous: Callable[[Any, Runtime[Context]], Awaitable[Any]],
        name: str,
    ) -> None:
        self._sync, self._async, self.name = sync, asynchronous, name

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """The sync form, for ``invoke`` and ``stream``."""
        return self._sync(input, get_runtime(Context))

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any:
        """The async form, for ``ainvoke``, ``astream`` and a server's runs."""
        return await self._async(input, get_runtime(Context))


class TaskUpdate(TypedDict):
    """What a `run_task` returns: its result, as the state's update of ``results``."""

    results: list[TaskResult]
    """The task's result, alone."""


def _settle(done: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    """Give ``done`` its result or exception, unless it was cancelled meanwhile."""
    if done.cancelled():
        return
    if exc is not None:
        done.set_exception(exc)
    else:
        done.set_result(result)


def run_task(item: TaskInput, at: Runtime[Context], deps: Deps) -> TaskUpdate:
    """Execute one task once; its result as an update, so a stream shows it as it ends.

    ``stream_mode="updates"`` shows each as ``{"run_task": {"results": [result]}}`` during
    `execute`'s step; `execute` writes the results to the state.
    """
    return {"results": [executed(item, at, deps)]}


def executed(item: TaskInput, at: Runtime[Context], deps: Deps) -> TaskResult:
    """The task run once (journalled unless idempotent): its result, which never raises.

    A task whose execution failed (its journal's database, say) fails with the error
    (``error``), which `execute` finds after the wave (`deps.task_error`): it ends the round
    there and the run goes to summarize with the error.
    """
    try:
        return _run(item, at, deps)
    except Exception as exc:
        raised = run_error(NodeError("run_task", exc))
        output = f"{raised['type']}: {raised['message']}"
        result = task_result(item["task"], "failed", output, wave=item["wave"])
        result["error"] = raised
        return result


def journalled(tool: BaseTool, arguments: Mapping[str, Any]) -> bool:
    """Whether a call's execution is journalled: its tool is not idempotent, or it runs one.

    A write whose text a command prints (`given_command`) may read the file it replaces (``tac
    f`` into ``f``), so run again it need not write the same bytes: it is journalled as any
    call of a tool that is not idempotent.
    """
    return not is_idempotent(tool) or given_command(arguments, tool) is not None


def _run(state: TaskInput, runtime: Runtime[Context], deps: Deps) -> TaskResult:
    context = context_of(runtime)
    task, wave = state["task"], state["wave"]
    tool = deps.tools_for(context)[task["tool"]]
    emit(runtime, "task_started", task_id=task["id"], tool=task["tool"])

    def execution() -> TaskResult:
        space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
        before = readable_before(task, deps.tools_for(context), space)
        status, got, seconds = _run_with_timeout(
            tool, task, state["timeout_s"], context.max_output_chars, state.get("arguments")
        )
        undone = put_back_if_broken(before, space) if before and status == "ok" else None
        if undone:
            status, got = "failed", got._replace(ok=False, output=undone, value=None)
        done = task_result(task, cast(TaskOutcome, status), got.output, seconds, wave=wave)
        if got.written:
            done["written"] = list(got.written)
        if state.get("keep_value") and got.value is not None:
            done["value"] = got.value
        return done

    result: TaskResult
    if not journalled(tool, task["arguments"]):
        # Safe to run again: LangGraph's own task write keeps a finished call's result, and one
        # whose write was lost (in flight at a crash) simply runs again. No journal entry.
        result = execution()
    else:
        # a task sent by a version before runs had ids carries no key: it keeps its old one
        key = state.get("journal_key") or journal_key(
            thread_id(), "", state["phase_id"], state["round_seq"], task["id"]
        )
        journal = deps.journal()
        entry = journal.get(key)
        if entry and not same_call(entry, task["tool"], task["arguments"]):
            entry = None  # another call under this key (a fork, an edited plan): a new execution
        if entry and entry["state"] == "finished" and entry["result"]:
            result = cast(TaskResult, {**entry["result"], "replayed": True})
        elif entry:
            result = task_result(task, "interrupted", INTERRUPTED, wave=wave)
            journal.finish(key, dict(result))
        else:
            journal.start(key, task["tool"], task["arguments"])
            result = execution()
            journal.finish(key, dict(result))
    emit(
        runtime,
        "task_finished",
        task_id=task["id"],
        status=result["status"],
        replayed=result["replayed"],
    )
    return result
