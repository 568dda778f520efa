"""The graph of SPEC section 2, compiled.

``build_graph`` wires the eight stages, each its own node and each run in a step of its own, and
their routers, each declared with the nodes it may go to (its path map, with the condition in
words on each edge). Every node has LangGraph's error handler: an exception inside a node is
recorded in the state (``error``) and the run goes to ``summarize``, which ends it with the
error named, never with a traceback. A ``run_task`` never raises: a task whose execution raised
fails with the error, and the node its wave goes on to ends the run there.

The compiled graph is a `PhaseGraph`: a LangGraph ``CompiledStateGraph`` whose every run (invoke,
stream, their async forms) holds the thread's lease and refuses new input for a thread that
already holds a run, most importantly one paused for review (SPEC sections 6 and 8).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint
from langgraph.constants import TASKS
from langgraph.errors import NodeError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from phasegraph.context import MAX_STEPS_LIMIT, Context
from phasegraph.errors import ThreadPausedError, ThreadStateError
from phasegraph.graph.updates import changes_only
from phasegraph.guards import Guard
from phasegraph.nodes import (
    analyse,
    execute,
    human_review,
    judge,
    phase_plan,
    plan,
    replan,
    routing,
    run_task,
    summarize,
)
from phasegraph.nodes.deps import Deps, run_error
from phasegraph.state import InputState, State, TaskInput
from phasegraph.storage.database import Database, adatabase_of, database_of
from phasegraph.storage.integrity import achecked_state, checked_state
from phasegraph.storage.lease import (
    Lease,
    ahold_lease,
    alease_store_for,
    hold_lease,
    lease_store_for,
)
from phasegraph.storage.thread_index import index_for
from phasegraph.tools.builtin import Toolbox
from phasegraph.tools.checks import validate_checks

# Budgets live in the state (SPEC section 8), not in LangGraph's per-invocation super-step limit.
# Every super-step but execute (which may run no tool) and the review pauses spends a step, so
# an invocation takes at most about 1.5 super-steps per step: this limit is never the one reached.
RECURSION_LIMIT = 2 * MAX_STEPS_LIMIT + 100

NodeFn = Callable[[Any, Runtime[Context], Deps], Any]


def _bind(fn: NodeFn, deps: Deps) -> Callable[..., Any]:
    """A node LangGraph can call (state, runtime) with the graph's dependencies bound.

    Its update keeps only the writes that change the state (`updates.changes_only`).
    """

    def node(state: State, *, runtime: Runtime[Context]) -> Any:
        return changes_only(state, fn(state, runtime, deps))

    node.__name__ = fn.__name__
    node.__doc__ = fn.__doc__
    # LangGraph reads a node's annotations to infer its input schema, evaluating State's whole
    # (string) annotations on every add_node; the graph's state schema is the input anyway.
    node.__annotations__ = {}
    return node


Router = Callable[[State], Any]


def _labelled(name: str, route: Router) -> tuple[Router, dict[str, str]]:
    """A router as LangGraph is given it, and its path map: each way out in words, to its node.

    The router returns a node (or Sends); LangGraph is handed the words for it, which the path
    map turns back into the node, so the drawn graph says on each edge when it is taken.
    The wrapper has no annotations: LangGraph would otherwise evaluate State's whole (string)
    annotations for each conditional edge, most of a build's time (bench builds one per run).
    """
    exits = routing.EXITS[name]

    def labelled(state: State) -> Any:
        goes = route(state)
        return exits[goes] if isinstance(goes, str) else goes

    labelled.__name__ = route.__name__
    labelled.__doc__ = route.__doc__
    labelled.__annotations__ = {}
    return labelled, {words: node for node, words in exits.items()}


def _human_review(state: State, runtime: Runtime[Context], deps: Deps) -> Any:
    """`human_review.human_review`, bound like the other nodes.

    LangGraph looks for subgraphs in what a node's function can reach, reading the bytecode of
    the module functions it names: 1.2 ms a build for human_review's, against 0.05 ms for a
    bound node's (bench's short-phase shape builds a graph for each run).
    """
    return human_review.human_review(state, runtime=runtime)


def on_node_error(state: State, error: NodeError) -> Command[Any]:
    """Record a node's exception and end the run in summarize (SPEC section 2)."""
    return Command(update={"stop_reason": "error", "error": run_error(error)}, goto="summarize")


class PhaseGraph(CompiledStateGraph[State, Context, InputState, State]):
    """The compiled phasegraph: a LangGraph graph whose runs lease their thread."""

    def _guard_target(self, config: RunnableConfig | None) -> str | None:
        """The thread to lease, or None when there is no thread or no checkpointer."""
        if not isinstance(self.checkpointer, BaseCheckpointSaver) or not config:
            return None
        thread_id = (config.get("configurable") or {}).get("thread_id")
        return str(thread_id) if thread_id else None

    @staticmethod
    def _check_input(input: Any, context: Any = None) -> bool:
        """Whether ``input`` starts a run; a malformed start is refused before any write.

        The caller's checks are refused here too, naming the one at fault: an unknown kind, a
        path outside the workspace or a command not allowed (SPEC section 11).
        """
        if input is None or isinstance(input, Command):
            return False
        if not isinstance(input, Mapping):
            raise ValueError(f'input must be {{"request": "..."}}; got {type(input).__name__}')
        request = input.get("request")
        if not isinstance(request, str) or not request.strip():
            raise ValueError('input needs a non-empty "request" string')
        checks = input.get("checks")
        if checks is not None:
            if not isinstance(checks, list):
                raise ValueError('"checks" must be a list, e.g. ["exists:out.txt"]')
            validate_checks(checks, Context.coerce(context))
        return True

    @staticmethod
    def _refuse_new_input(values: Mapping[str, Any], next_nodes: Sequence[str], tid: str) -> None:
        if not values:
            return
        if "human_review" in next_nodes:
            kind = (values.get("pending_review") or {}).get("kind", "review")
            raise ThreadPausedError(
                f"thread {tid!r} is paused for a {kind}; answer it with resume() "
                "(or `phasegraph resume`) instead of sending new input, or use a new thread id"
            )
        raise ThreadStateError(
            f"thread {tid!r} already holds a run (status {values.get('status')}); "
            "resume it, or start the new request on a new thread id"
        )

    @staticmethod
    def _with_step_limit(config: RunnableConfig | None, context: Any) -> RunnableConfig:
        """The config with LangGraph's super-step limit raised above any budget (SPEC 8).

        Unless the caller set one, LangGraph's thread pool is also sized so that a wave of
        ``max_parallel`` tasks really runs at once (its default is a few threads per core).
        """
        merged: dict[str, Any] = dict(config or {})
        merged["recursion_limit"] = max(int(merged.get("recursion_limit") or 0), RECURSION_LIMIT)
        if merged.get("max_concurrency") is None:
            merged["max_concurrency"] = Context.coerce(context).max_parallel + 2
        return cast(RunnableConfig, merged)

    def _migrate_checkpoint(self, checkpoint: Checkpoint) -> None:
        """LangGraph's migrations of a loaded checkpoint, then those of earlier phasegraphs.

        Until 60db59b a wave's tasks went on by the state's ``last_wave``, which the tasks sent
        now carry themselves. In a wave stopped part way (a crash, a kill), the tasks that
        finished went by the old flag; the ones still to run are given it, so that every task
        of the wave goes the same way (else the judge and execute would run at once).
        """
        super()._migrate_checkpoint(checkpoint)
        values = checkpoint["channel_values"]
        if "last_wave" not in values:
            return
        for packet in values.get(TASKS) or []:
            if isinstance(packet, Send) and packet.node == "run_task":
                if isinstance(packet.arg, dict):
                    packet.arg.setdefault("last_wave", bool(values["last_wave"]))

    @contextlib.contextmanager
    def lease(self, config: RunnableConfig | None) -> Iterator[Lease | None]:
        """Hold the thread's lease for the block; `ThreadBusyError` if another runner has it."""
        thread_id = self._guard_target(config)
        if thread_id is None:
            yield None
            return
        with hold_lease(lease_store_for(self.checkpointer), thread_id) as lease:
            yield lease

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """LangGraph's stream, run under the thread's lease; new input only for new threads."""
        starts = self._check_input(input, kwargs.get("context"))
        config = self._with_step_limit(config, kwargs.get("context"))
        with self.lease(config) as lease:
            thread_id = self._guard_target(config)
            if thread_id and "checkpoint_id" not in (config or {}).get("configurable", {}):
                snapshot = checked_state(self, config)  # a refused value: nothing runs
                if starts:
                    self._refuse_new_input(snapshot.values, snapshot.next, thread_id)
            last: Mapping[str, Any] | None = None
            try:
                for chunk in super().stream(input, config, **kwargs):
                    if lease is not None:
                        lease.check()  # taken over while this run stalled: stop here
                    last = _state_values(chunk, kwargs, self.stream_mode) or last
                    yield chunk
            except BaseException:
                last = None  # the state may have moved past the last values streamed
                raise
            finally:
                self._index_thread(config, kwargs.get("context"), last)

    def _index_thread(
        self, config: RunnableConfig, context: Any, values: Mapping[str, Any] | None = None
    ) -> None:
        """Record the thread in its database's thread index (see `storage.thread_index`).

        ``values``: the run's final state, when the stream carried it; else it is read.
        """
        thread_id = self._guard_target(config)
        # The index only speeds up listing: a failure here must never fail the run.
        with contextlib.suppress(Exception):
            db = database_of(self.checkpointer) if thread_id else None
            if thread_id and db is not None:
                if values is None:
                    values = self.get_state(config).values
                _record_thread(db, thread_id, values, context)

    async def _aindex_thread(self, config: RunnableConfig, context: Any) -> None:
        """`_index_thread` for async savers."""
        thread_id = self._guard_target(config)
        with contextlib.suppress(Exception):
            db = await adatabase_of(self.checkpointer) if thread_id else None
            if thread_id and db is not None:
                snapshot = await self.aget_state(config)
                await asyncio.to_thread(_record_thread, db, thread_id, snapshot.values, context)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """`stream` for async callers."""
        starts = self._check_input(input, kwargs.get("context"))
        config = self._with_step_limit(config, kwargs.get("context"))
        thread_id = self._guard_target(config)
        if thread_id is None:
            async for chunk in super().astream(input, config, **kwargs):
                yield chunk
            return
        store = await alease_store_for(self.checkpointer)
        async with ahold_lease(store, thread_id) as lease:
            if "checkpoint_id" not in (config or {}).get("configurable", {}):
                snapshot = await achecked_state(self, config)
                if starts:
                    self._refuse_new_input(snapshot.values, snapshot.next, thread_id)
            try:
                async for chunk in super().astream(input, config, **kwargs):
                    lease.check()
                    yield chunk
            finally:
                await self._aindex_thread(config, kwargs.get("context"))


_INDEXED = frozenset({"status", "request", "step_count"})
"""The state keys a thread's index row is written from (`ThreadIndex.record`)."""


def _state_values(chunk: Any, options: Mapping[str, Any], default: Any) -> Mapping[str, Any] | None:
    """The state a chunk of LangGraph's (v1) stream carries, if it carries the indexed keys.

    That is the state after the step, as its checkpoint holds it: `_index_thread` then need not
    read the thread back (a read that replays the history channels' deltas: about 1.5 ms a run
    in bench's short-phase shape). Chunks of subgraphs, or of another stream format, say None.
    ``options`` are the stream's; ``default`` is the graph's stream mode.
    """
    if options.get("subgraphs") or options.get("version", "v1") != "v1":
        return None
    mode = options.get("stream_mode") or default
    values: Any = None
    if mode == "values":
        values = chunk
    elif not isinstance(mode, str) and "values" in mode and isinstance(chunk, tuple):
        values = chunk[1] if len(chunk) == 2 and chunk[0] == "values" else None
    if isinstance(values, Mapping) and _INDEXED <= values.keys():
        return values
    return None


def _record_thread(db: Database, thread_id: str, values: Mapping[str, Any], context: Any) -> None:
    if values:
        settings = Context.coerce(context)
        index_for(db).record(thread_id, values, model=settings.model, workspace=settings.workspace)


def build_graph(
    *,
    model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] | None = None,
    builtin_tools: bool | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    guards: Sequence[Guard] | None = None,
    name: str = "phasegraph",
) -> PhaseGraph:
    """Build and compile the phasegraph workflow.

    Args:
        model: Any LangChain chat model that can call a named function. None: the model named
            by the run's settings (``Context.model``) is used.
        tools: LangChain tools the plan may name (sync or async); not idempotent unless
            they say so with ``metadata={"idempotent": True}``.
        builtin_tools: Whether the built-in workspace tools (list_files, read_file,
            write_file, edit_file, search_text, run_command) are added, bound to the run's
            ``Context.workspace``. None: only when ``tools`` is None.
        checkpointer: Any LangGraph checkpointer; needed for review pauses and resume.
        guards: What may keep a phase open when its judge calls it done (`nodes.guards`),
            each a function of the round's facts that returns a reason or None. None: the
            defaults, which hold for any tools, and the workspace set when the built-in tools
            are on (`default_guards`); a list replaces them (add to ``default_guards(...)``).
        name: Name of the compiled graph.

    Returns:
        The compiled graph, interrupting before ``human_review``.
    """
    deps = Deps(
        model=model,
        toolbox=Toolbox(tools, builtin=builtin_tools),
        checkpointer=checkpointer,
        guards=None if guards is None else tuple(guards),
    )
    builder = StateGraph(State, context_schema=Context, input_schema=InputState)
    # LangGraph injects the NodeError by the parameter's type; its typing has no such protocol.
    builder.set_node_defaults(error_handler=cast(Any, on_node_error))
    builder.add_node("analyse", _bind(analyse.analyse, deps))
    builder.add_node("phase_plan", _bind(phase_plan.phase_plan, deps))
    builder.add_node("plan", _bind(plan.plan, deps))
    builder.add_node("execute", _bind(execute.execute, deps))
    # run_task goes on by a Command (see routing.route_after_run_task), to one of these
    builder.add_node(
        "run_task",
        _bind(run_task.run_task, deps),
        input_schema=TaskInput,
        destinations={"execute": "next wave", "judge": "last wave done"},
    )
    builder.add_node("judge", _bind(judge.judge, deps))
    builder.add_node("replan", _bind(replan.replan, deps))
    builder.add_node("human_review", _bind(_human_review, deps))
    builder.add_node("summarize", _bind(summarize.summarize, deps))

    builder.add_edge(START, "analyse")
    for node, route in (
        ("analyse", routing.route_after_analyse),
        ("phase_plan", routing.route_after_phase_plan),
        ("plan", routing.route_after_plan),
        ("execute", routing.route_after_execute),
        ("judge", routing.route_after_judge),
        ("replan", routing.route_after_replan),
        ("human_review", routing.route_after_human_review),
    ):
        router, path_map = _labelled(node, route)
        builder.add_conditional_edges(node, router, cast(Any, path_map))
    builder.add_edge("summarize", END)

    compiled = builder.compile(
        checkpointer=checkpointer, interrupt_before=["human_review"], name=name
    )
    # compile() always builds a CompiledStateGraph; PhaseGraph adds methods only, no state, so
    # re-classing the instance is safe (and Pregel.copy keeps the class from then on).
    compiled.__class__ = PhaseGraph
    return cast(PhaseGraph, compiled)
