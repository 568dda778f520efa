"""The README's graph diagram is the one the code draws (issue 22)."""

from __future__ import annotations

from pathlib import Path

from phasegraph.graph.diagram import COMMAND, mermaid, readme_block, with_diagram

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_diagram_is_the_compiled_graph() -> None:
    shown = readme_block(README.read_text(encoding="utf-8"))
    assert shown is not None, f"README.md has no graph diagram between the markers: {COMMAND}"
    assert shown == mermaid(), f"README.md's graph diagram is out of date; run: {COMMAND}"


def test_the_diagram_shows_the_pause_the_routers_and_the_way_out_of_an_error() -> None:
    drawn = mermaid()
    assert "human_review(human_review<hr/><small><em>__interrupt = before</em></small>)" in drawn
    # conditional edges are dotted and say when they are taken
    assert "judge -. &nbsp;stalled or asked to replan&nbsp; .-> replan;" in drawn
    assert "replan -. &nbsp;new phases&nbsp; .-> plan;" in drawn
    assert "__default_error_handler__ -. &nbsp;a node raised&nbsp; .-> summarize;" in drawn
    assert "summarize --> __end__;" in drawn


def test_writing_replaces_only_the_block_between_the_markers() -> None:
    text = readme_block("x")
    assert text is None
    page = README.read_text(encoding="utf-8")
    redrawn = with_diagram(page.replace(mermaid(), "graph TD;\n"), mermaid())
    assert redrawn == page


def test_the_graph_draws_its_eight_stages_with_about_as_many_edges_as_the_rules() -> None:
    drawn = mermaid()
    edges = [line for line in drawn.splitlines() if "-->" in line or ".->" in line]
    assert len(edges) <= 30, edges
    for stage in ("analyse", "phase_plan", "plan", "execute", "judge", "replan", "human_review",
                  "summarize"):  # fmt: skip
        assert f"\t{stage}(" in drawn
    # only the ways SPEC section 2 names: the analysis reaches no plan, execute or judge
    assert not [e for e in edges if e.strip().startswith("analyse") and "plan;" in e
                and "phase_plan" not in e]  # fmt: skip
    assert not [e for e in edges if e.strip().startswith("judge") and "execute" in e]


def test_the_graph_studio_draws_shows_where_an_exception_goes() -> None:
    """Studio draws `get_graph()` (the server, `aget_graph`): no handler box left on its own."""
    import asyncio

    from phasegraph import build_graph

    graph = build_graph(tools=[])
    for drawn in (graph.get_graph(), asyncio.run(graph.aget_graph())):
        out = [(e.target, e.data) for e in drawn.edges if e.source == "__default_error_handler__"]
        assert out == [("summarize", "a node raised")]
        assert len(drawn.edges) <= 30
