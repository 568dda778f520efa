"""A model's summary keeps each sentence once (`nodes.said_once`), and the run shows it so."""

from __future__ import annotations

from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.nodes.said_once import said_once

from scripts import final_state, make_script

#: As the 1.5B model wrote one (its words changed): two sentences said twice, the quality
#: assessment the summary's first sentence again.
REPEATING = {
    "final_summary": "The phase completed. The count in data.csv is 6. out.txt must exist. "
    "The phase completed. The count in data.csv is 6.",
    "highlights": ["The count in data.csv is 6", "out.txt holds one line"],
    "unfinished": [],
    "next_steps": ["Check out.txt.", "check  out.txt"],
    "quality_assessment": "The phase completed.",
}


def test_each_sentence_is_said_once_in_the_order_the_fields_are_read() -> None:
    once = said_once(REPEATING)
    assert once["final_summary"] == (
        "The phase completed. The count in data.csv is 6. out.txt must exist."
    )
    assert once["highlights"] == ["out.txt holds one line"]
    assert once["next_steps"] == ["Check out.txt."]
    assert once["quality_assessment"] == ""


def test_a_summary_that_repeats_nothing_is_left_as_it_is() -> None:
    written = {
        "final_summary": "# Report\n\nThe file was written. Its checks pass.\n\n- one\n- two",
        "highlights": ["Both checks pass on the first round."],
        "unfinished": [],
        "next_steps": ["Run the tests again."],
        "quality_assessment": "Good.",
        "source": "summarizer",
    }
    assert said_once(written) == written
    # Markdown a strong model writes: code, tables, numbered lists, headings and facts that
    # repeat from line to line are read as they are, byte for byte
    markdown = (
        "### Result\n\n```\nls\n}\n}\n```\n\nThen:  two spaces.  \n\n```\nwc -l data.csv\n```\n\n"
        "| file | rows |\n|---|---|\n| a | 3 |\n\n| file | rows |\n|---|---|\n| b | 3 |\n\n"
        "1. Open out.txt.\n2. Open out.txt.\n\n### Result\n\np1: done. 3 files written.\n"
        "p2: done. 3 files written."
    )
    assert said_once({"final_summary": markdown})["final_summary"] == markdown
    # a list item keeps its marker while its line says a sentence once
    text = {"final_summary": "Totals:\n1. Done. done!\n- 6 rows"}
    assert said_once(text)["final_summary"] == "Totals:\n1. Done.\n- 6 rows"


def test_the_runs_summary_says_each_sentence_once(tmp_path: Path) -> None:
    script = make_script(summarizer=[REPEATING])
    graph = build_graph(model=ScriptedChatModel(script=script), checkpointer=InMemorySaver())
    out = final_state(
        graph,
        {"request": "two phases"},
        {"configurable": {"thread_id": "once"}},
        context=Context(workspace=str(tmp_path)),
    )
    assert out["final_summary"].count("The count in data.csv is 6") == 1
    assert out["summary"]["highlights"] == ["out.txt holds one line"]
