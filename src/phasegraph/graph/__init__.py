"""The graph builder and the graph exported for ``langgraph.json``."""

from phasegraph.graph.builder import build_graph
from phasegraph.graph.compiled import PhaseGraph

__all__ = ["PhaseGraph", "build_graph"]
