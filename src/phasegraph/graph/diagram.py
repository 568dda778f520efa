"""The compiled graph as a Mermaid diagram: the one the README shows, drawn from the graph itself.

``python -m phasegraph.graph.diagram`` prints it; ``--write README.md`` replaces the diagram
between the README's markers. A unit test compares the two, so the picture cannot drift from the
code: when the graph changes, the test names the command that redraws it.

What LangGraph draws is kept as it is: conditional edges dotted, the pause before
``human_review`` (the graph is compiled with ``interrupt_before=["human_review"]``) in the
node's label, which is also drawn in amber; each conditional edge says in words when it is taken
(the routers' path maps). One thing is added: LangGraph draws the node error handler with no way
out, because a handler chooses its next node with a ``Command`` at run time; the edge it takes is
read from the handler's own answer, so the diagram shows where an exception goes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from langchain_core.runnables.graph import Graph
from langgraph.errors import NodeError

from phasegraph.graph.builder import build_graph, on_node_error

BEGIN = "<!-- graph diagram: begin (python -m phasegraph.graph.diagram --write README.md) -->"
END = "<!-- graph diagram: end -->"
ERROR_HANDLER = "__default_error_handler__"
PAUSE, PAUSE_STYLE = "pause", "fill:#ffe8b0,stroke:#b7791f,stroke-width:2px"
COMMAND = "python -m phasegraph.graph.diagram --write README.md"


def drawable() -> Graph:
    """The compiled graph's drawable form, with the error handlers' ways out added."""
    graph = build_graph(tools=[]).get_graph()
    # Each handler's Commands for an exception: what they return is where runs go.
    raised = RuntimeError("drawing")
    answers = {
        ERROR_HANDLER: ("a node raised", [on_node_error({}, NodeError(node="plan", error=raised))]),
    }
    for handler_name, (label, commands) in answers.items():
        handler = graph.nodes.get(handler_name)
        if handler is None or any(e.source == handler_name for e in graph.edges):
            continue
        for command in commands:
            targets = command.goto if isinstance(command.goto, list | tuple) else [command.goto]
            for target in targets:
                name = target if isinstance(target, str) else getattr(target, "node", "")
                if name in graph.nodes:
                    graph.add_edge(handler, graph.nodes[name], label, conditional=True)
    return graph


def mermaid() -> str:
    """The graph in Mermaid syntax, as the README holds it, the nodes that pause in amber."""
    graph = drawable()
    lines = [graph.draw_mermaid().rstrip()]
    pausing = [n.id for n in graph.nodes.values() if (n.metadata or {}).get("__interrupt")]
    if pausing:
        lines += [f"\tclassDef {PAUSE} {PAUSE_STYLE}", f"\tclass {','.join(pausing)} {PAUSE}"]
    return "\n".join(lines) + "\n"


def readme_block(text: str) -> str | None:
    """The Mermaid text between the README's markers, or None when the markers are missing."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return None
    inner = text[start + len(BEGIN) : end].strip("\n")
    fence = "```mermaid\n"
    if not inner.startswith(fence) or not inner.endswith("```"):
        return None
    return inner[len(fence) : -len("```")]


def with_diagram(text: str, diagram: str) -> str:
    """``text`` with the diagram between the markers replaced by ``diagram``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the markers are missing: {BEGIN!r} ... {END!r}")
    block = f"{BEGIN}\n```mermaid\n{diagram}```\n"
    return text[:start] + block + text[end:]


def main(argv: list[str] | None = None) -> int:
    """Print the diagram, or write it into a README between the markers."""
    parser = argparse.ArgumentParser(prog="python -m phasegraph.graph.diagram")
    parser.add_argument("--write", metavar="README", help="replace the diagram in this file")
    args = parser.parse_args(argv)
    diagram = mermaid()
    if not args.write:
        sys.stdout.write(diagram)
        return 0
    path = Path(args.write)
    path.write_text(with_diagram(path.read_text(encoding="utf-8"), diagram), encoding="utf-8")
    print(f"wrote the diagram into {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
