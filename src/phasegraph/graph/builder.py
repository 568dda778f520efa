"""The graph of SPEC section 2, compiled.

``build_graph`` wires the eight stages, each its own node and each run in a step of its own, and
their routers, each declared with the nodes it may go to (its path map, with the condition in
words on each edge). Every node has LangGraph's error handler: an exception inside a node is
recorded in the state (``error``) and the run goes to ``summarize``, which ends it with the
error named, never with a traceback. A ``run_task`` never raises: a task whose execution raised
fails with the error, and ``execute`` ends the run there once its wave is done.

The compiled graph is a `PhaseGraph`: a LangGraph ``CompiledStateGraph`` whose every run (invoke,
stream, their async forms) holds the thread's lease and refuses new input for a thread that
already holds a run, most importantly one paused for review (SPEC sections 6 and 8).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from phasegraph.context import Context
from phasegraph.errors import ConfigurationError
from phasegraph.graph.compiled import PhaseGraph
from phasegraph.graph.errors import on_node_error
from phasegraph.graph.folder import in_thread_folder, recording_folder
from phasegraph.graph.updates import changes_only
from phasegraph.guards import Guard, checked_guards
from phasegraph.holding import Hold, checked_holds
from phasegraph.nodes import (
    analyse,
    execute,
    human_review,
    judge,
    phase_plan,
    plan,
    replan,
    routing,
    summarize,
)
from phasegraph.nodes.deps import Deps
from phasegraph.nodes.run_task import cancellable
from phasegraph.policy import Policy, checked_policy
from phasegraph.progress import emit
from phasegraph.state import InputState, OutputState, State
from phasegraph.tools.builtin import Toolbox

NodeFn = Callable[[Any, Runtime[Context], Deps], Any]


def _bind(fn: NodeFn, deps: Deps, *, announced: bool = False) -> Callable[..., Any]:
    """A node LangGraph can call (state, runtime) with the graph's dependencies bound.

    It works in the thread's folder unless the run's settings name another, and records a new
    one (`folder`). Its update keeps only the writes that change the state
    (`updates.changes_only`). An
    ``announced`` stage (one that waits on the model) first sends ``stage_started``, so that
    a person watching knows what the wait is for (SPEC section 9).
    """
    stage = fn.__name__

    def node(state: State, *, runtime: Runtime[Context]) -> Any:
        runtime = in_thread_folder(state, runtime)
        if announced:
            emit(runtime, "stage_started", stage=stage)
        return changes_only(state, recording_folder(state, runtime, fn(state, runtime, deps)))

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


def _wired(deps: Deps) -> StateGraph[State, Context, InputState, OutputState]:
    """The eight stages as nodes, with their routers and their ways out (SPEC section 2)."""
    builder = StateGraph(
        State, context_schema=Context, input_schema=InputState, output_schema=OutputState
    )
    # LangGraph injects the NodeError by the parameter's type; its typing has no such protocol.
    builder.set_node_defaults(error_handler=cast(Any, on_node_error))
    builder.add_node("analyse", _bind(analyse.analyse, deps, announced=True))
    builder.add_node("phase_plan", _bind(phase_plan.phase_plan, deps, announced=True))
    builder.add_node("plan", _bind(plan.plan, deps, announced=True))
    builder.add_node("execute", cancellable(_bind(execute.execute, deps)))
    builder.add_node("judge", _bind(judge.judge, deps, announced=True))
    builder.add_node("replan", _bind(replan.replan, deps, announced=True))
    builder.add_node("human_review", _bind(_human_review, deps))
    builder.add_node("summarize", _bind(summarize.summarize, deps, announced=True))
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
    return builder


def build_graph(
    *,
    model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] | None = None,
    builtin_tools: bool | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    guards: Sequence[Guard] | None = None,
    holds: Sequence[Hold] | None = None,
    policy: Policy | None = None,
    thread_workspaces: str | None = None,
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
        guards: What may keep a phase open when its judge calls it done (`phasegraph.guards`),
            each a function of the round's facts that returns a reason or None. None: the
            defaults, which hold for any tools, and the workspace set when the built-in tools
            are on (`default_guards`); a list replaces them (add to ``default_guards(...)``).
        holds: What may hold a planned task back before it runs (`phasegraph.holding`), each a
            function of the round (`RoundToRun`) that returns the tasks it holds, with why.
            None: `default_holds`, which hold for any tools; a list replaces them.
        policy: The rules that merge planned phases, gate a round's plan, keep tools in a
            phase and drop proposed checks (`phasegraph.policy.Policy`). None: ``Policy()``.
        thread_workspaces: A folder in which a run whose settings name no workspace gets one
            of its own, per thread (the LangGraph server's graph); None: such a run works in
            the current folder, as the CLI does.
        name: Name of the compiled graph.

    Returns:
        The compiled graph, interrupting before ``human_review``.
    """
    if model is not None and not isinstance(model, Runnable):
        raise ConfigurationError(
            f"build_graph(model=...) takes a LangChain chat model, got {type(model).__name__}; "
            "to name one, give the run Context(model=...)"
        )
    deps = Deps(
        model=model,
        toolbox=Toolbox(tools, builtin=builtin_tools),
        checkpointer=checkpointer,
        guards=None if guards is None else checked_guards(guards),
        holds=None if holds is None else checked_holds(holds),
        policy=Policy() if policy is None else checked_policy(policy),
    )
    builder = _wired(deps)
    compiled = builder.compile(
        checkpointer=checkpointer, interrupt_before=["human_review"], name=name
    )
    return PhaseGraph.of(
        compiled, thread_workspaces=thread_workspaces, builtin_tools=deps.toolbox.builtin
    )
