"""The graph builder and the graph exported for ``langgraph.json``."""

from phasegraph.graph.builder import PhaseGraph, build_graph

__all__ = ["PhaseGraph", "build_graph"]
