"""Fuzzing what the model answers (hypothesis): whatever comes back, the run ends with a summary.

Each generated case is a whole script for the scripted model: for every stage, a few answers
drawn from valid ones and their corruptions (malformed JSON, missing and extra fields, wrong
types, JSON that is not an object, `None`, exceptions) and from answers that are well-formed but
wrong (9+ tasks, unknown tools, empty plans, contradictory judgements, impossible replans). The
run is driven to its end, answering any review it asks for. Checked against SPEC section 3:
every counted attempt and tool execution spends one step, and no more than the budget.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, FeedbackError, ScriptedChatModel, build_graph, resume

from scripts import (
    ANALYSIS,
    SUMMARY,
    ToolLog,
    final_state,
    judgement,
    make_tools,
    phase,
    round_plan,
)

MAX_STEPS = 25
COUNTED = ("phase_planner", "plan_tool_call", "judge_tasks", "replanner")
ENDED = {"completed", "incomplete", "budget_exhausted", "rejected", "failed"}
NOT_RUN = ("skipped", "refused")  # task results of tasks never handed to their tool

VALID: dict[str, list[dict[str, Any]]] = {
    "request_analyser": [ANALYSIS, {**ANALYSIS, "clarification_needed": True,
                                    "clarification_questions": ["Which files?"]}],
    "phase_planner": [
        {"phases": [phase("p1"), phase("p2")], "execution_strategy": "in order"},
        {"phases": [phase("p1", rounds=3)], "execution_strategy": "one"},
    ],
    "plan_tool_call": [
        round_plan(("t1", "echo", {"text": "hi"})),
        round_plan(("a", "echo", {"text": "x"}), ("b", "fail", {"reason": "no"})),
    ],
    "judge_tasks": [judgement(), judgement("continue_phase", completed=False, rate=0.4),
                    judgement("retry_failed", completed=False, rate=0.2),
                    judgement("replan", completed=False, rate=0.1)],
    "replanner": [{"status": "replanned", "phases": [phase("p9")]},
                  {"status": "done", "response": "nothing more to do"}],
    "summarizer": [SUMMARY],
}  # fmt: skip

# Well-formed answers that are wrong in what they say.
WRONG: dict[str, list[Any]] = {
    "request_analyser": [{**ANALYSIS, "estimated_phases": 99, "complexity": "galactic"}],
    "phase_planner": [
        {"phases": [], "execution_strategy": "none"},
        {"phases": [phase(f"p{i}") for i in range(9)], "execution_strategy": "too many"},
        {"phases": [phase("p1"), phase("p1")], "execution_strategy": "same id twice"},
    ],
    "plan_tool_call": [
        {"tasks": [], "reasoning": "empty plan"},
        round_plan(*[(f"t{i}", "echo", {"text": str(i)}) for i in range(9)]),
        round_plan(*[(f"t{i}", "echo", {"text": str(i)}) for i in range(12)]),
        round_plan(("t1", "launch_rockets", {"count": 3})),
        round_plan(("t1", "echo", {"wrong_argument": 1})),
        round_plan(("t1", "echo", {"text": "a"}), ("t1", "echo", {"text": "b"})),
    ],
    "judge_tasks": [
        judgement("continue_phase", completed=True, rate=0.0),  # contradictory
        judgement("end_phase", completed=False, rate=1.0),
        judgement("ask_user", completed=False, rate=0.5),  # a question without the question
        judgement("ask_user", completed=False, rate=0.5, question="Go on?"),
        {**judgement(), "phase_completion_rate": 1.7},
        {**judgement(), "next_action": "celebrate"},
    ],
    "replanner": [
        {"status": "replanned", "phases": []},
        {"status": "done"},
        {"status": "maybe", "phases": [phase("p9")]},
    ],
    "summarizer": [{**SUMMARY, "final_summary": ""}, {**SUMMARY, "highlights": "not a list"}],
}

ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(),
                                                         max_size=2),
)  # fmt: skip
EXCEPTIONS = st.sampled_from(
    [RuntimeError("model crashed"), TimeoutError("read timed out"), ValueError("bad request")]
)


@st.composite
def corrupted(draw: st.DrawFn, valid: dict[str, Any]) -> Any:
    """A valid answer, or one of its corruptions."""
    kind = draw(
        st.sampled_from(
            ["valid", "missing", "extra", "wrong_type", "truncated", "not_object", "none", "raise"]
        )
    )
    item = dict(valid)
    if kind == "missing":
        del item[draw(st.sampled_from(sorted(item)))]
    elif kind == "extra":
        item[draw(st.text(min_size=1, max_size=8))] = draw(ODD_VALUES)
    elif kind == "wrong_type":
        key = draw(st.sampled_from(sorted(item)))
        item[key] = draw(ODD_VALUES.filter(lambda v: type(v) is not type(valid[key])))
    elif kind == "truncated":
        text = json.dumps(item)
        return text[: draw(st.integers(1, len(text) - 1))]
    elif kind == "not_object":
        return draw(st.sampled_from(["[1, 2]", "42", '"just text"', "null", "{}"]))
    elif kind == "none":
        return None
    elif kind == "raise":
        return draw(EXCEPTIONS)
    return item


def answers(name: str) -> st.SearchStrategy[Any]:
    """Answers for one stage: valid, corrupted or wrong."""
    return st.one_of(
        st.sampled_from(VALID[name]),  # a third valid: runs get far enough to meet the rest
        st.sampled_from(VALID[name]).flatmap(corrupted),
        st.sampled_from(WRONG[name]),
    )


SCRIPTS = st.fixed_dictionaries(
    {name: st.lists(answers(name), min_size=1, max_size=4) for name in VALID}
)
REVIEWS = st.sampled_from(["none", "none", "plan", "all"])
ANSWERS = [
    {"action": "approve"},
    {"action": "answer", "answer": "yes, go on"},
    {"action": "allow"},
    {"action": "reject", "reason": "stop"},
]


def drive(model: ScriptedChatModel, review: str, tools: list[Any]) -> dict[str, Any]:
    """Run to the end, answering each review with the first answer that fits it."""
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "fuzz"}}
    context = Context(review=review, max_steps=MAX_STEPS, task_timeout_s=5)
    out = final_state(graph, {"request": "Report on the files"}, config, context=context)
    for _ in range(20):
        if out["status"] != "awaiting_review":
            return out
        for answer in ANSWERS:
            try:
                out = resume(graph, config, answer, context=context)
                break
            except FeedbackError:  # this answer does not fit the pending review: the next
                continue
    raise AssertionError("the run asked for review more than 20 times")


@settings(
    max_examples=500,
    deadline=None,
    derandomize=True,  # the same 500 cases every run: a failure in CI is a failure here
    database=None,  # no .hypothesis folder in the work tree
    suppress_health_check=[HealthCheck.too_slow],
)
@given(script=SCRIPTS, review=REVIEWS)
def test_any_model_output_ends_in_a_summary_with_steps_counted(
    script: dict[str, list[Any]], review: str
) -> None:
    log = ToolLog()
    model = ScriptedChatModel(script=script)
    out = drive(model, review, make_tools(log))

    assert out["status"] in ENDED
    if out["status"] == "failed":  # a failure always says what failed
        assert out["error"] and out["error"]["message"]
        if out["error"]["type"] == "StageFailed":
            # bad answers never fail a run: only a stage that got no answer at all does (SPEC 1)
            assert "model call failed" in out["error"]["message"], out["error"]
    for taken in out["fallbacks"]:  # a stage code stood in for says which, and why
        assert taken["stage"] in ("analyse", "phase_plan", "plan", "judge", "replan")
        assert "no valid result" in taken["reason"] and taken["action"]
    event(f"status {out['status']}")  # the spread shows with --hypothesis-show-statistics
    assert isinstance(out["final_summary"], str) and out["final_summary"].strip()
    calls = model.calls
    counted = sum(1 for name, _ in calls if name in COUNTED)
    # a tool execution: a task handed to its tool (skipped and refused tasks never are)
    rounds = [record["results"] for record in out["rounds"]]
    judged = out["rounds"][-1]["round_seq"] if out["rounds"] else 0
    if out.get("round_seq", 0) > judged:
        rounds.append(out.get("results") or [])  # the last round ran but was never judged
    executed = [r for results in rounds for r in results if r["status"] not in NOT_RUN]
    assert len(log.calls) <= len(executed)  # a body may not run: its arguments did not fit
    # SPEC 3: every attempt of a counted stage and every tool execution is one step
    assert out["step_count"] == counted + len(executed)
    assert out["step_count"] <= MAX_STEPS
    assert out["llm_calls"] == len(calls)
    assert 0 <= out["parse_failures"] <= len(calls)
    positions: Counter[str] = Counter()
    hopeless = 0  # answers that can never be a valid result: each is a failed attempt
    for name, _ in calls:
        if name in COUNTED:
            items = script[name]
            hopeless += _hopeless(items[min(positions[name], len(items) - 1)])
            positions[name] += 1
    assert out["parse_failures"] >= hopeless


def _hopeless(item: Any) -> bool:
    """Whether an answer holds no JSON object at all."""
    if item is None or isinstance(item, BaseException):
        return True
    if isinstance(item, str):
        try:
            return not isinstance(json.loads(item), dict)
        except ValueError:
            return True
    return False
