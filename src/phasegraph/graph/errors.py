"""The node error handler (SPEC section 2), and its way out drawn where LangGraph draws none.

Every node has LangGraph's error handler: an exception inside a node is recorded in the state
and the run goes to ``summarize``. The handler chooses that next node with a ``Command`` at run
time, so LangGraph draws it with no way out, a box alone in Studio; `with_handler_edges` adds
the edge its answer takes, read from the handler's own answer.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables.graph import Graph
from langgraph.errors import NodeError
from langgraph.types import Command

from phasegraph.models.stop import stopped_call
from phasegraph.nodes.deps import run_error
from phasegraph.state import State

ERROR_HANDLER = "__default_error_handler__"
"""The node LangGraph makes of the builder's default error handler."""


def on_node_error(state: State, error: NodeError) -> Command[Any]:
    """Record a node's exception and end the run in summarize (SPEC section 2).

    A node whose model call was stopped by an interrupt (`stop.stopped_call`) did not fail: the
    resumed run asks it again.
    """
    if stopped_call(error.error):
        return Command(goto=error.node)
    return Command(update={"stop_reason": "error", "error": run_error(error)}, goto="summarize")


def with_handler_edges(graph: Graph) -> Graph:
    """The drawn graph with the error handler's way out, labelled "a node raised"."""
    handler = graph.nodes.get(ERROR_HANDLER)
    if handler is None or any(e.source == ERROR_HANDLER for e in graph.edges):
        return graph
    command = on_node_error({}, NodeError(node="plan", error=RuntimeError("drawing")))
    targets = command.goto if isinstance(command.goto, list | tuple) else [command.goto]
    for target in targets:
        name = target if isinstance(target, str) else getattr(target, "node", "")
        if name in graph.nodes:
            graph.add_edge(handler, graph.nodes[name], "a node raised", conditional=True)
    return graph
