"""The compiled graph as a Mermaid diagram: the one the README shows, drawn from the graph itself.

``python -m phasegraph.graph.diagram`` prints it; ``--write README.md`` replaces the diagram
between the README's markers. A unit test compares the two, so the picture cannot drift from the
code: when the graph changes, the test names the command that redraws it.

What LangGraph draws is kept as it is: conditional edges dotted, the pause before
``human_review`` (the graph is compiled with ``interrupt_before=["human_review"]``) in the
node's label, which is also drawn in amber; each conditional edge says in words when it is taken
(the routers' path maps), and the node error handler's way out, which the compiled graph adds
to what LangGraph draws (`graph.errors.with_handler_edges`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from langchain_core.runnables.graph import Graph

from phasegraph.graph.builder import build_graph

BEGIN = "<!-- graph diagram: begin (python -m phasegraph.graph.diagram --write README.md) -->"
END = "<!-- graph diagram: end -->"
PAUSE, PAUSE_STYLE = "pause", "fill:#ffe8b0,stroke:#b7791f,stroke-width:2px"
COMMAND = "python -m phasegraph.graph.diagram --write README.md"


def drawable() -> Graph:
    """The compiled graph's drawable form, as Studio draws it (the handler's way out included)."""
    return build_graph(tools=[]).get_graph()


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
