"""The compiled phasegraph: LangGraph's compiled graph, with what every run of it holds to.

Every run holds the thread's lease and refuses new input for a thread that holds a run, above
all one paused for review (SPEC sections 6 and 8); its settings are its context, also given in
``config["configurable"]``; with ``thread_workspaces``, a run that names no workspace gets a
folder per thread; Ctrl-C stops a sync run's commands and model answers at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.graph import Graph
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Interrupt, StateSnapshot

from phasegraph.context import Context
from phasegraph.errors import ConfigurationError
from phasegraph.graph.admission import (
    admit_workspace,
    check_checks,
    check_input,
    check_persistence,
    latest_config,
    refuse,
    resumed_settings,
    with_step_limit,
)
from phasegraph.graph.errors import with_handler_edges
from phasegraph.graph.indexing import record_thread, state_values
from phasegraph.graph.migrations import wave_sent_to_execute
from phasegraph.graph.pause import (
    asker,
    asks_quietly,
    parent_context,
    paused_quietly,
    refused_answer,
    root_values,
    with_checkpoint_question,
    with_interrupts,
    with_question,
    with_review_question,
)
from phasegraph.graph.served import thread_workspace, within_operator
from phasegraph.interruption import stop_work_on_interrupt
from phasegraph.state import InputState, OutputState, State
from phasegraph.storage.database import adatabase_of, database_of
from phasegraph.storage.integrity import achecked_state, checked_state
from phasegraph.storage.lease import (
    Lease,
    ahold_lease,
    alease_store_for,
    handed_out,
    hold_lease,
    lease_store_for,
)


class PhaseGraph(CompiledStateGraph[State, Context, InputState, OutputState]):
    """The compiled phasegraph: a LangGraph graph whose runs lease their thread."""

    thread_workspaces: str | None = None
    """A folder that holds a workspace per thread, for runs whose settings name none."""
    builtin_tools: bool = False
    """Whether the graph's runs have the built-in workspace tools (`admit_workspace`)."""

    def __init__(
        self,
        *args: Any,
        thread_workspaces: str | None = None,
        builtin_tools: bool = False,
        **kwargs: Any,
    ) -> None:
        """LangGraph's compiled graph; kept by `copy` (the server copies the graph per run)."""
        super().__init__(*args, **kwargs)
        self.thread_workspaces = thread_workspaces
        self.builtin_tools = builtin_tools

    @classmethod
    def of(
        cls,
        compiled: CompiledStateGraph[State, Context, InputState, OutputState],
        **settings: Any,
    ) -> PhaseGraph:
        """The phasegraph of LangGraph's compiled graph, built as `Pregel.copy` builds a copy.

        LangGraph's ``compile()`` returns its own class; its constructor takes the compiled
        graph's attributes, which is how ``copy()`` and ``with_config()`` rebuild one, so the
        phasegraph is that graph with ``settings`` (``thread_workspaces``, ``builtin_tools``).
        """
        attributes = {k: v for k, v in vars(compiled).items() if k != "__orig_class__"}
        return cls(**attributes, **settings)

    def get_graph(self, config: RunnableConfig | None = None, *, xray: int | bool = False) -> Graph:
        """LangGraph's drawing, with the error handler's way out (`errors.with_handler_edges`)."""
        return with_handler_edges(super().get_graph(config, xray=xray))

    async def aget_graph(
        self, config: RunnableConfig | None = None, *, xray: int | bool = False
    ) -> Graph:
        """`get_graph` for async callers (the server draws the graph this way)."""
        return with_handler_edges(await super().aget_graph(config, xray=xray))

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """LangGraph's state, a review's pause showing its question in ``interrupts``."""
        return with_review_question(super().get_state(config, subgraphs=subgraphs))

    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """`get_state` for async callers."""
        return with_review_question(await super().aget_state(config, subgraphs=subgraphs))

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """LangGraph's history, each review's pause showing its question as `get_state` does."""
        history = super().get_state_history(config, filter=filter, before=before, limit=limit)
        for snapshot in history:
            yield with_review_question(snapshot)

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        """`get_state_history` for async callers."""
        history = super().aget_state_history(config, filter=filter, before=before, limit=limit)
        async for snapshot in history:
            yield with_review_question(snapshot)

    def update_state(
        self,
        config: RunnableConfig,
        values: dict[str, Any] | Any | None,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> RunnableConfig:
        """LangGraph's update_state; an answer written as ``human_review`` is the asker's.

        Written as the node that paused it goes to ``human_review``, which applies it. Written
        as ``human_review`` itself, LangGraph would take the review as done and go on past it;
        it is written as the node that asked instead (SPEC section 6's pitfall).
        """
        if as_node == "human_review":
            as_node = asker(super().get_state(config)) or as_node
        return super().update_state(config, values, as_node=as_node, task_id=task_id)

    async def aupdate_state(
        self,
        config: RunnableConfig,
        values: dict[str, Any] | Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> RunnableConfig:
        """`update_state` for async callers."""
        if as_node == "human_review":
            as_node = asker(await super().aget_state(config)) or as_node
        return await super().aupdate_state(config, values, as_node=as_node, task_id=task_id)

    def run_context(self, context: Any, config: RunnableConfig | None) -> Context:
        """A run's settings: its context, with those the older way (``configurable``) under it.

        Run as a node of another graph and given no context, it takes the parent run's
        `Context` (`parent_context`). A setting given both ways with different values is
        refused. Where the run works is settled once the thread's state is read (`settled`).
        """
        configurable = (config or {}).get("configurable") or {}
        names = {f.name for f in dataclasses.fields(Context)}
        older = {k: v for k, v in configurable.items() if k in names}
        if context is None and (parent := parent_context()) is not None:
            # the parent's settings, with those given to this node the older way over them
            context = dataclasses.replace(parent, **older)
        if isinstance(context, Context):
            clash = sorted(k for k, v in older.items() if getattr(context, k) != v)
            if clash:
                raise ConfigurationError(
                    f"settings {clash} differ between the context and config['configurable']; "
                    "give them once, as the context"
                )
            settings = context
        else:
            settings = Context.coerce({**older, **dict(context or {})})
        if self.thread_workspaces:  # the served graph: the operator's settings bound the run's
            within_operator(settings, Context.coerce(None), self.thread_workspaces)
        return settings

    def settled(
        self,
        settings: Context,
        config: RunnableConfig | None,
        values: Mapping[str, Any],
        starts: bool,
    ) -> Context:
        """The settings a run works with, in the folder it works in.

        That is the thread's folder where it has one and they name none (`resumed_settings`; a
        thread copied on a server included), else, on a graph with `thread_workspaces`, a
        folder of the thread's own under it (made here). There, a thread whose folder is gone
        (a cache cleared) goes on in a folder of its own, which its output names, rather than
        stay stranded; and the thread's folder and kept settings are held to the operator's
        bounds as given ones are (`within_operator`): a state edited to widen them is refused.
        """
        if not self.thread_workspaces:
            return resumed_settings(settings, values, starts)
        recorded = values.get("workspace")
        if isinstance(recorded, str) and recorded and not os.path.isdir(recorded):
            values = {k: v for k, v in values.items() if k != "workspace"}
        resumed = resumed_settings(settings, values, starts)
        if not resumed.workspace:
            configurable = (config or {}).get("configurable") or {}
            workspace = thread_workspace(self.thread_workspaces, configurable)
            resumed = dataclasses.replace(resumed, workspace=workspace)
        if resumed is not settings:  # the state's folder or settings (the run's: `run_context`)
            within_operator(resumed, Context.coerce(None), self.thread_workspaces)
        return resumed

    def _guard_target(self, config: RunnableConfig | None) -> str | None:
        """The thread to lease, or None when there is no thread or no checkpointer."""
        if not isinstance(self.checkpointer, BaseCheckpointSaver) or not config:
            return None
        thread_id = (config.get("configurable") or {}).get("thread_id")
        return str(thread_id) if thread_id else None

    def _migrate_checkpoint(self, checkpoint: Checkpoint) -> None:
        """LangGraph's migrations of a loaded checkpoint, then those of earlier phasegraphs."""
        super()._migrate_checkpoint(checkpoint)
        wave_sent_to_execute(checkpoint)

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
        kwargs["context"] = self.run_context(kwargs.get("context"), config)
        starts = check_input(input)
        check_persistence(self.checkpointer, config, kwargs.get("context"))
        config = with_step_limit(config, kwargs.get("context"))
        with stop_work_on_interrupt(), self.lease(config) as lease:
            thread_id = self._guard_target(config)
            values: Mapping[str, Any] = {}
            if thread_id:
                snapshot = checked_state(self, config)  # a refused value: nothing runs
                if "checkpoint_id" not in (config or {}).get("configurable", {}):
                    refuse(input, starts, snapshot, thread_id)
                values = snapshot.values
            kwargs["context"] = self._admitted(kwargs["context"], config, values, input, starts)
            last: Mapping[str, Any] | None = None
            part: Any = None
            asked: tuple[Interrupt, ...] = ()
            try:
                # LangGraph's own stream, of the graph this run streams (`_as_run`)
                run = CompiledStateGraph.stream(self._as_run(config), input, config, **kwargs)
                for chunk in run:
                    if lease is not None:
                        lease.check()  # taken over while this run stalled: stop here
                    last = state_values(chunk, kwargs, self.stream_mode) or last
                    if asks_quietly(chunk):
                        asked = self.get_state(latest_config(config)).interrupts
                        chunk = with_question(chunk, asked)
                    chunk = with_checkpoint_question(chunk)
                    part = chunk if root_values(chunk, kwargs, self.stream_mode) else part
                    with handed_out(thread_id or ""):
                        yield chunk
                if paused_quietly(part) and (
                    asked := asked or self.get_state(latest_config(config)).interrupts
                ):
                    with handed_out(thread_id or ""):
                        yield with_interrupts(part, asked)
                if isinstance(input, Command) and (
                    refused := refused_answer(input, self.get_state(latest_config(config)))
                ):
                    raise refused
            except BaseException:
                last = None  # the state may have moved past the last values streamed
                raise
            finally:
                self._index_thread(config, kwargs.get("context"), last)

    def _admitted(
        self, settings: Context, config: Any, values: Mapping[str, Any], input: Any, starts: bool
    ) -> Context:
        """`settled`, with its workspace admitted and the input's checks refused there (files)."""
        settled = self.settled(settings, config, values, starts)
        admit_workspace(settled, self.builtin_tools)
        check_checks(input, settled)
        return settled

    def _as_run(self, config: RunnableConfig | None) -> PhaseGraph:
        """The graph a run streams: this one, or as a node of another, one that asks in its node.

        Run as a node, a pause at the static breakpoint would reach the parent with no question
        and no id to answer by (LangGraph routes those to interrupts raised in a node); such a
        run goes into ``human_review``, whose ``interrupt()`` asks (`human_review.answer_of`).
        """
        if not (config or {}).get("configurable", {}).get("checkpoint_ns"):
            return self
        return self.copy({"interrupt_before_nodes": ()})

    def _index_thread(
        self, config: RunnableConfig, context: Any, values: Mapping[str, Any] | None = None
    ) -> None:
        """Record the thread in its index (`storage.thread_index`), from ``values`` or read."""
        thread_id = self._guard_target(config)
        # The index only speeds up listing: a failure here must never fail the run.
        with contextlib.suppress(Exception):
            db = database_of(self.checkpointer) if thread_id else None
            if thread_id and db is not None:
                if values is None:
                    values = self.get_state(latest_config(config)).values
                record_thread(db, thread_id, values, context)

    async def _aindex_thread(self, config: RunnableConfig, context: Any) -> None:
        """`_index_thread` for async savers."""
        thread_id = self._guard_target(config)
        with contextlib.suppress(Exception):
            db = await adatabase_of(self.checkpointer) if thread_id else None
            if thread_id and db is not None:
                snapshot = await self.aget_state(latest_config(config))
                await asyncio.to_thread(record_thread, db, thread_id, snapshot.values, context)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """`stream` for async callers."""
        # a model file is looked at here: file-system calls stay off the event loop
        kwargs["context"] = await asyncio.to_thread(self.run_context, kwargs.get("context"), config)
        starts = check_input(input)
        check_persistence(self.checkpointer, config, kwargs.get("context"))
        config = with_step_limit(config, kwargs.get("context"))
        thread_id = self._guard_target(config)
        graph = self._as_run(config)
        if thread_id is None:
            settle: tuple[Any, ...] = (kwargs["context"], config, {}, input, starts)
            kwargs["context"] = await asyncio.to_thread(self._admitted, *settle)
            async for chunk in CompiledStateGraph.astream(graph, input, config, **kwargs):
                yield chunk
            return
        store = await alease_store_for(self.checkpointer)
        async with ahold_lease(store, thread_id) as lease:
            snapshot = await achecked_state(self, config)
            if "checkpoint_id" not in (config or {}).get("configurable", {}):
                refuse(input, starts, snapshot, thread_id)
            settle = (kwargs["context"], config, snapshot.values, input, starts)
            kwargs["context"] = await asyncio.to_thread(self._admitted, *settle)
            part: Any = None
            asked: tuple[Interrupt, ...] = ()
            try:
                async for chunk in CompiledStateGraph.astream(graph, input, config, **kwargs):
                    lease.check()
                    if asks_quietly(chunk):
                        asked = (await self.aget_state(latest_config(config))).interrupts
                        chunk = with_question(chunk, asked)
                    chunk = with_checkpoint_question(chunk)
                    part = chunk if root_values(chunk, kwargs, self.stream_mode) else part
                    with handed_out(thread_id):
                        yield chunk
                if paused_quietly(part) and (
                    asked := asked or (await self.aget_state(latest_config(config))).interrupts
                ):
                    with handed_out(thread_id):
                        yield with_interrupts(part, asked)
                if isinstance(input, Command) and (
                    refused := refused_answer(input, await self.aget_state(latest_config(config)))
                ):
                    raise refused
            finally:
                await self._aindex_thread(config, kwargs.get("context"))
