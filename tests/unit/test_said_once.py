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
    # a line alone, a Markdown item, a number: compared as sentences, none of them repeated
    text = {"final_summary": "Totals:\n- 6 rows\n- 6 columns\n\nDone. done!"}
    assert said_once(text)["final_summary"] == "Totals:\n- 6 rows\n- 6 columns\n\nDone."


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
