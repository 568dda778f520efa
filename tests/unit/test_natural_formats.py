"""Answers read the way a person reads them (SPEC section 1): the seeds' own formats run."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from phasegraph.state import Judgement, PhasePlan, Replan, RoundPlan, StructuredRequest

from scripts import echo_round, judgement, make_script, phase

# The answers of seed 003 (request analysis, phase planning, judging, summary), its round plan
# as its walkthrough writes it ({id: 1, tool, args}), and seed 002's replanner, field for field.
SEED_ANALYSIS = {
    "core_goal": "Report on the workspace files",
    "requirements": ["list the files", "report on them"],
    "constraints": ["do not delete anything"],
    "complexity": "complex",
    "estimated_phases": 3,
    "clarification_needed": False,
    "clarification_questions": [],
}
SEED_PHASES = {
    "phases": [
        {"id": 1, "name": "Understand", "goal": "understand the files", "estimated_rounds": 2,
         "dependencies": []},
        {"id": 2, "name": "Change", "goal": "change what needs it", "estimated_rounds": 3,
         "dependencies": [1]},
        {"id": 3, "name": "Report", "goal": "write the report", "estimated_rounds": 2,
         "dependencies": [2]},
    ],
    "execution_strategy": "sequential",
    "total_estimated_rounds": 7,
}  # fmt: skip
SEED_ROUND = {
    "tasks": [
        {"id": 1, "tool": "echo", "args": {"text": "one"}},
        {"id": 2, "tool": "echo", "args": {"text": "two"}, "depends_on": [1]},
    ]
}
SEED_JUDGEMENT = {
    "task_evaluation": [
        {"task_id": 1, "status": "done", "quality_score": 8.5},
        {"task_id": 2, "status": "done", "quality_score": 9},
    ],
    "completed_tasks": [1, 2],
    "failed_tasks": [],
    "phase_completion_rate": 1.0,
    "phase_completed": True,
    "user_summary": "Both tasks are done; the phase goal is met.",
    "next_action": "end_phase",
}
SEED_SUMMARY = {
    "final_summary": "## Done\n\nThree phases, all completed.",
    "phases_completed": 3,
    "total_tasks_executed": 6,
    "total_rounds": 3,
    "highlights": ["every phase completed"],
    "quality_assessment": "good",
}


def test_a_model_answering_in_seed_003s_formats_runs_to_completed(run, tool_log) -> None:
    # a round plan exactly as seed 003 writes one, with fresh texts per phase
    rounds = [
        {"tasks": [{**t, "args": {"text": f"{p}{t['id']}"}} for t in SEED_ROUND["tasks"]]}
        for p in "abc"
    ]
    script = {
        "request_analyser": [SEED_ANALYSIS],
        "phase_planner": [SEED_PHASES],
        "plan_tool_call": rounds,
        "judge_tasks": [SEED_JUDGEMENT],
        "summarizer": [SEED_SUMMARY],
    }
    out, _, model = run(script)
    assert out["status"] == "completed" and out["error"] is None
    assert out["parse_failures"] == 0 and out["fallbacks"] == []
    assert [p["id"] for p in out["phases"]] == ["1", "2", "3"]
    assert [p["dependencies"] for p in out["phases"]] == [[], ["1"], ["2"]]
    # SPEC 3: phase_plan 1, then per phase a plan, two tool executions and a judge
    assert out["step_count"] == 1 + 3 * (1 + 2 + 1)
    assert [c[1]["text"] for c in tool_log.calls] == ["a1", "a2", "b1", "b2", "c1", "c2"]
    first = out["rounds"][0]
    assert [r["task_id"] for r in first["results"]] == ["1", "2"]
    assert [(e["task_id"], e["quality"]) for e in first["judgement"]["task_evaluation"]] == [
        ("1", 8),
        ("2", 9),
    ]
    assert out["structured_request"]["task_type"] == "other"  # seed 003 names none


def test_seed_000s_round_plan_and_a_judge_without_evaluations(run) -> None:
    steps_plan = {
        "steps": [{"tool": "echo", "arguments": {"text": "x"}}, {"tool": "echo", "arguments":
                  {"text": "y"}}],
        "reasoning": "two echoes",
        "estimated_steps": 2,
    }  # fmt: skip
    lists_only = {
        "completed_tasks": [1],
        "failed_tasks": [2],
        "phase_completed": False,
        "user_summary": "One of two calls did what was asked.",
        "next_action": "continue_phase",
    }
    script = make_script(
        phase_planner=[{"phases": [phase("p1", rounds=1)]}],
        plan_tool_call=[steps_plan, echo_round("z")],
        judge_tasks=[lists_only, judgement()],
    )
    out, _, _ = run(script)
    first = out["rounds"][0]
    assert [r["task_id"] for r in first["results"]] == ["1", "2"]
    # the lists give the evaluations; the rate, left out, is what they say: 1 of 2 done
    assert first["judgement"]["phase_completion_rate"] == 0.5
    assert out["parse_failures"] == 0 and out["status"] == "completed"


def test_seed_002s_replanner_steps_become_phases(run) -> None:
    script = make_script(
        phase_planner=[{"phases": [phase("p1", rounds=3)]}],
        judge_tasks=[judgement("replan", completed=False, rate=0.2), judgement()],
        replanner=[{"status": "replanned", "plan": ["read the file", "write the sum"],
                    "response": None}],
    )  # fmt: skip
    out, _, _ = run(script)
    assert out["parse_failures"] == 0
    new = out["phases"][1:]
    assert [(p["id"], p["goal"], p["estimated_rounds"]) for p in new] == [
        ("p1-2", "read the file", 2),  # p1 ran rounds and keeps its id: the new one is numbered
        ("p2", "write the sum", 2),
    ]


@pytest.mark.parametrize(
    ("schema", "answer"),
    [
        (PhasePlan, {"phases": [{"id": 1, "goal": "a goal, named by it"}]}),
        (RoundPlan, {"tasks": [{"id": 7, "tool": "echo", "args": {}}]}),
        (Judgement, {"phase_completed": True, "user_summary": "all of it done", "next_action":
                     "end_phase"}),
        (Replan, {"status": "done", "response": "nothing left"}),
        (StructuredRequest, {"core_goal": "g", "complexity": "simple", "estimated_phases": 1}),
    ],
)  # fmt: skip
def test_a_field_with_a_sensible_default_may_be_missing(schema: Any, answer: Any) -> None:
    schema.model_validate(answer)


@pytest.mark.parametrize(
    ("schema", "answer", "says"),
    [
        (PhasePlan, {"phases": [{"id": 1}]}, "name"),  # neither name nor goal: nothing to work
        (RoundPlan, {"tasks": [{"id": 1, "args": {}}]}, "tool"),
        (Judgement, {"phase_completed": "maybe", "user_summary": "x" * 20,
                     "next_action": "end_phase"}, "phase_completed"),
        (Replan, {"status": "replanned", "plan": []}, "non-empty"),
        (Judgement, {"phase_completed": False, "user_summary": "a summary here",
                     "next_action": "ask_user"}, "needs a question"),
    ],
)  # fmt: skip
def test_what_has_no_sensible_reading_is_still_refused(schema: Any, answer: Any, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        schema.model_validate(answer)


def test_ask_user_without_a_question_means_replan_when_nobody_can_be_asked() -> None:
    answer = {"phase_completed": False, "user_summary": "not sure how", "next_action": "ask_user"}
    judged = Judgement.model_validate(answer, context={"can_ask": False})
    assert judged.next_action == "replan"


@pytest.mark.parametrize(
    ("text", "bound", "kept"),
    [
        ("Wrote the file. It holds three names. The phase completed, with the", 67, None),
        ("Short and whole.", 400, "Short and whole."),
        ("Under the bound and cut mid", 400, "Under the bound and cut mid"),
        ("Wrote version 1.2.0. Kept", 25, "Wrote version 1.2.0."),
        ("Ran. " + "word " * 20, 105, "Ran. " + "word " * 18 + "word\u2026"),
    ],
)
def test_a_text_cut_at_its_bound_keeps_its_whole_sentences(
    text: str, bound: int, kept: str | None
) -> None:
    from phasegraph.state.result import whole_sentences

    expected = "Wrote the file. It holds three names." if kept is None else kept
    assert whole_sentences(text, bound) == expected


def test_a_summary_cut_by_its_grammar_reads_as_whole_sentences() -> None:
    from phasegraph.state import Summary
    from phasegraph.state.schemas import SUMMARY_CHARS, SUMMARY_ITEM_CHARS

    cut = ("The file was written and holds the names. " * 20)[: SUMMARY_CHARS - 6] + "with t"
    item = ("Listed the files of the folder " * 5)[:SUMMARY_ITEM_CHARS]
    summary = Summary.model_validate(
        {"final_summary": cut, "highlights": [item, "One."], "quality_assessment": "Good."}
    )
    assert summary.final_summary.endswith("holds the names.")
    assert len(summary.final_summary) < len(cut)
    assert summary.highlights == [item.rstrip().rsplit(None, 1)[0] + "\u2026", "One."]
    assert summary.quality_assessment == "Good."


def test_a_summary_is_offered_to_the_model_as_a_short_paragraph_and_short_lists() -> None:
    from phasegraph.models.structured import function_spec
    from phasegraph.state import Summary

    fields = function_spec("summarizer", Summary)["function"]["parameters"]["properties"]
    # a grammar closes each part at its bound: at most about 220 answer tokens in all
    assert fields["final_summary"]["maxLength"] == 300
    for name in ("highlights", "unfinished", "next_steps"):
        assert fields[name]["maxItems"] == 2 and fields[name]["items"]["maxLength"] == 80
    assert fields["quality_assessment"]["maxLength"] == 80
