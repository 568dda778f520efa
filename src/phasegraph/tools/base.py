"""Any LangChain tool, described to the model and called so that its errors never crash a run."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import copy
import json
import threading
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, NamedTuple, TypeVar

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.messages.tool import tool_call
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, Tool
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from phasegraph.errors import ConfigurationError, redact
from phasegraph.tools.stopping import RUN_LOOP, stopped_here

TRUNCATION_MARKER = "\n[... output truncated: {cut} of {total} characters not shown ...]"
#: A cut tool output keeps its last lines up to this size: tools end with what sums them up
#: (a search's count, a skipped-files note), which a cut at the end alone would drop.
OUTPUT_TAIL_CHARS = 200

T = TypeVar("T")

# What is read from a tool object's schema, made once per object: LangChain builds a tool's
# parameters anew on every read (a pydantic model, its JSON schema), and every plan reads
# them for its prompt and its schema. Entries hold their tool, so an id is not reused while
# it is cached, and what they were made from, so a tool given a new description or schema
# is read again.
_PER_TOOL: dict[tuple[str, int], tuple[BaseTool, str, object, Any]] = {}
_PER_TOOL_LIMIT = 1024


def per_tool(kind: str, tool: BaseTool, make: Callable[[BaseTool], T]) -> T:
    """``make(tool)``, computed once per tool object and ``kind`` of reading."""
    key = (kind, id(tool))
    entry = _PER_TOOL.get(key)
    if (
        entry is not None
        and entry[0] is tool
        and entry[1] == tool.description
        and entry[2] is tool.args_schema
    ):
        return entry[3]  # type: ignore[no-any-return]
    value = make(tool)
    if len(_PER_TOOL) >= _PER_TOOL_LIMIT:
        _PER_TOOL.clear()  # tools made per run, in a long-lived process: start over
    _PER_TOOL[key] = (tool, tool.description, tool.args_schema, value)
    return value


def tool_index(tools: Iterable[BaseTool]) -> dict[str, BaseTool]:
    """Tools by name; two tools with one name are a configuration error, as is one tool alone.

    A tool is itself iterable (a pydantic model's fields), so one given where a list is asked
    would otherwise be read as its fields.
    """
    if isinstance(tools, BaseTool):
        raise ConfigurationError(
            f"tools takes a list of tools; got the tool {tools.name!r} alone: give [{tools.name}]"
        )
    index: dict[str, BaseTool] = {}
    for tool in tools:
        if not isinstance(tool, BaseTool):
            raise ConfigurationError(
                f"tools must be LangChain tools (BaseTool); got {type(tool).__name__}"
            )
        if tool.name in index:
            raise ConfigurationError(f"two tools are named {tool.name!r}")
        index[tool.name] = tool
    return index


def describe_tools(tools: Iterable[BaseTool]) -> str:
    """One line per tool for a prompt: name, parameters with defaults, what it does and takes.

    Small models copy what they see: a parameter's default and description keep them from
    inventing values such as "path/to/folder".
    """
    lines = [per_tool("described", tool, _described) for tool in tools]
    return "\n".join(lines) if lines else "- (no tools)"


def _described(tool: BaseTool) -> str:
    params, notes = [], []
    for name, spec in tool.args.items():
        kinds = [o["type"] for o in spec.get("anyOf", ()) if o.get("type") not in (None, "null")]
        kind = spec.get("type") or " | ".join(kinds) or "any"
        default = f" = {json.dumps(spec['default'])}" if "default" in spec else ""
        params.append(f"{name}: {kind}{default}")
        if spec.get("description"):
            notes.append(f"{name}: {spec['description']}")
    about = tool.description.strip().splitlines()[0] if tool.description else tool.name
    detail = f" ({'; '.join(notes)})" if notes else ""
    return f"- {tool.name}({', '.join(params)}): {about}{detail}"


def is_idempotent(tool: BaseTool) -> bool:
    """Whether running the tool twice does no more than running it once (SPEC section 5).

    A tool declares it with ``metadata={"idempotent": True}``; unknown tools are not.
    """
    return bool((tool.metadata or {}).get("idempotent", False))


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATION_MARKER.format(cut=len(text) - limit, total=len(text))


class ToolOutcome(NamedTuple):
    """What one call of a tool gave: whether it succeeded, its output, and what it reported.

    ``value``: the tool's whole result, for a later task that takes it as an argument
    (``$id``): its artifact's ``value`` where it reports one (a file's text without the read's
    notes, a command's output without its exit code), else its output uncut; None when the
    call failed or the value is not whole (``complete``: False in its artifact). ``written``:
    files it reports it wrote (its artifact's ``written``: a command's redirections).
    """

    ok: bool
    output: str
    value: str | None = None
    written: tuple[str, ...] = ()


def run_tool(
    tool: BaseTool,
    arguments: Mapping[str, Any],
    max_chars: int,
    config: RunnableConfig | None = None,
) -> ToolOutcome:
    """Call a tool; what it gave (`ToolOutcome`). Errors become text for the judge, never raised.

    (But a KeyboardInterrupt on the main thread, where Ctrl-C lands: a run calls its tools in
    threads of their own, where a tool's own KeyboardInterrupt fails its call.)

    The tool is called as LangGraph's ToolNode calls one: with a tool call (so a tool that
    takes its ``InjectedToolCallId`` gets one) and the calling node's ``config`` (the run's
    callbacks see the call; ``get_config`` and ``get_stream_writer`` reach the run). A call
    fails when the tool raises, and when the tool reports the failure itself: a tool that
    handles its own errors (``handle_tool_error``, as MCP tools do) answers with an error
    status, and its text is the output. A tool cannot pause or steer the run
    (``interrupt()``, a ``Command``): a task is not the place a person is asked (SPEC section
    6), and the call fails saying so.
    """
    # a copy of its own: a tool that changes its arguments in place leaves the task's record
    call = tool_call(
        name=tool.name, args=copy.deepcopy(dict(arguments)), id=f"call_{uuid.uuid4().hex[:16]}"
    )
    try:
        output = _invoke(tool, call, config)
    except GraphBubbleUp:
        return ToolOutcome(False, NO_PAUSE_IN_TOOLS)
    except BaseException as exc:  # sys.exit(), a CancelledError of its own: the call failed
        if isinstance(exc, KeyboardInterrupt) and threading.current_thread() is MAIN_THREAD:
            raise  # Ctrl-C, where Python delivers it; raised by a tool elsewhere, it is its own
        return ToolOutcome(False, truncate(redact(f"{type(exc).__name__}: {exc}"), max_chars))
    if isinstance(output, Command) or (
        isinstance(output, list) and any(isinstance(item, Command) for item in output)
    ):
        return ToolOutcome(False, NO_PAUSE_IN_TOOLS)
    ok, artifact = True, None
    if isinstance(output, ToolMessage):
        ok, artifact, output = output.status != "error", output.artifact, output.content
    text = redact(as_text(output))
    reported = artifact if isinstance(artifact, Mapping) else {}
    value: str | None = text
    if isinstance(reported.get("value"), str):
        value = redact(reported["value"])
    if not ok or reported.get("complete") is False:
        value = None
    written = reported.get("written")
    files = tuple(str(f) for f in written) if isinstance(written, list | tuple) else ()
    return ToolOutcome(ok, truncate_output(text, max_chars), value, files)


def _invoke(tool: BaseTool, call: ToolCall, config: RunnableConfig | None) -> Any:
    """The tool's answer to ``call``, from its async implementation where it has only that."""
    if _is_async_only(tool):
        return _awaited(tool.ainvoke(call, config), shares_event_loop(tool))
    try:
        return tool.invoke(call, config)
    except NotImplementedError:
        # a BaseTool subclass written for async code implements _arun and leaves _run raising;
        # a function tool's _arun runs its sync function again, which may not be done twice
        if isinstance(tool, StructuredTool | Tool) or type(tool)._arun is BaseTool._arun:
            raise
        return _awaited(tool.ainvoke(call, config), shares_event_loop(tool))


def shares_event_loop(tool: BaseTool) -> bool:
    """Whether an async tool is to be awaited on its async run's own event loop.

    A tool declares it with ``metadata={"shares_event_loop": True}``: it uses what the caller's
    loop holds (its clients, queues, locks), as it may under LangGraph's ToolNode. Such a tool
    must not block: on the caller's loop, a blocking call holds up the whole run, and its
    timeout is its own to keep; a KeyboardInterrupt or SystemExit it raises ends that loop
    (asyncio's rule for any task on it), and with it the run. Other async tools run on a loop
    of their own, in a thread of their own, where the task's timeout holds whatever they do;
    so does every async tool of a run that `aresume` drives (its stream runs in a worker
    thread, not on the caller's loop).
    """
    return bool((tool.metadata or {}).get("shares_event_loop", False))


def _awaited(coroutine: Coroutine[Any, Any, T], on_run_loop: bool) -> T:
    """An async tool's answer, awaited on a loop of its own, or on the run's (`shares_event_loop`).

    Either way it is cancelled once its task is given up on (`stopping.stopped_here`), rather
    than left waiting forever.
    """
    loop = RUN_LOOP.get() if on_run_loop else None
    if loop is None or loop.is_closed() or not loop.is_running():
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop runs in this thread: a loop of its own, here
            return asyncio.run(_until_stopped(coroutine))
        here = contextvars.copy_context()  # what stops it is told in this context
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(here.run, asyncio.run, _until_stopped(coroutine)).result()
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    while True:
        try:
            return future.result(timeout=STOP_POLL_S)
        except concurrent.futures.TimeoutError:
            if stopped_here():
                future.cancel()
                raise TimeoutError("the call was given up on and cancelled") from None


async def _until_stopped(coroutine: Coroutine[Any, Any, T]) -> T:
    task = asyncio.ensure_future(coroutine)
    while True:
        done, _ = await asyncio.wait({task}, timeout=STOP_POLL_S)
        if done:
            return task.result()
        if stopped_here():
            task.cancel()
            raise TimeoutError("the call was given up on and cancelled")


#: Seconds between looks, while an async tool runs, at whether its task was given up on.
STOP_POLL_S = 0.05


MAIN_THREAD = threading.main_thread()

NO_PAUSE_IN_TOOLS = (
    "the tool tried to pause or steer the run (interrupt(), or a Command to the graph), which a "
    "task cannot do: phasegraph asks a person only in its review stage (the review setting); "
    "the call was stopped there"
)


def truncate_output(text: str, limit: int) -> str:
    """Cut a tool's output to about ``limit`` characters, keeping its last whole lines.

    Found in review: a search of 57 matching lines lost the count it ends with, and a count
    the model then wrote right was taken for one no tool showed.
    """
    if len(text) <= limit:
        return text
    tail = text[-OUTPUT_TAIL_CHARS:]
    tail = tail[tail.index("\n") + 1 :] if "\n" in tail and limit > 2 * OUTPUT_TAIL_CHARS else ""
    head = text[: limit - len(tail)]
    cut = len(text) - len(head) - len(tail)
    marker = TRUNCATION_MARKER.format(cut=cut, total=len(text))
    return head + marker + (f"\n{tail}" if tail else "")


def as_text(output: object) -> str:
    """A tool's output as text; content blocks (MCP tools return them) become their text.

    A block with no text (an image, a file) is named by its type, never given as its data.
    """
    if isinstance(output, str):
        return output
    if isinstance(output, list) and output and all(_is_block(b) for b in output):
        return "\n".join(
            str(b["text"]) if "text" in b else f"[{b['type']} content]" for b in output
        )
    return str(output)


def _is_block(item: object) -> bool:
    """Whether ``item`` is a content block: a dict with its text, or with its type."""
    return isinstance(item, dict) and ("text" in item or "type" in item)


def _is_async_only(tool: BaseTool) -> bool:
    func = getattr(tool, "func", None)
    coroutine = getattr(tool, "coroutine", None)
    return func is None and coroutine is not None
