"""The graph ``langgraph.json`` exports, compiled without a checkpointer (the server has its own).

The model comes from the run's settings (``Context.model``), which Studio shows as a form.
"""

from phasegraph.graph.builder import build_graph

graph = build_graph()
