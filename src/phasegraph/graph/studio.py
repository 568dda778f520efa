"""The graph ``langgraph.json`` exports, compiled without a checkpointer (the server has its own).

The model comes from the run's settings (``Context.model``), which Studio shows as a form. A run
whose settings name no workspace works in a folder of its own for its thread, under
``PHASEGRAPH_WORKSPACES`` (default: ``~/.cache/phasegraph/workspaces``), never in the folder
the server was started from; the state and the summary name it.
"""

from phasegraph.graph.builder import build_graph
from phasegraph.graph.served import default_thread_workspaces

graph = build_graph(thread_workspaces=default_thread_workspaces())
