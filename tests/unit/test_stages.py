"""Each stage is its own node and runs as its own step (SPEC section 2), and what code may
overrule is a list of guards of the round's facts (SPEC section 1)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.errors import FeedbackError
from phasegraph.guards import (
    DEFAULT_GUARDS,
    WORKSPACE_GUARDS,
    checks_fail,
    default_guards,
    nothing_succeeded,
    writes_never_ran,
)
from phasegraph.state import RoundFacts

from scripts import ANALYSIS, final_state, judgement, make_script, phases, round_plan

ANALYSIS_SIMPLE = ANALYSIS | {"complexity": "simple", "core_goal": "Echo hello"}


def updates(graph: Any, start: Any, config: dict[str, Any], context: Context) -> list[Any]:
    return list(graph.stream(start, config, context=context, stream_mode="updates"))


def test_every_stage_is_its_own_step_and_each_update_a_dict(tools) -> None:
    script = make_script(
        phase_planner=[phases("p1", rounds=2)],
        plan_tool_call=[
            round_plan(("t1", "echo", {"text": "a"}), ("t2", "echo", {"text": "b"})),
            round_plan(("t1", "echo", {"text": "c"})),
        ],
        judge_tasks=[judgement("replan", completed=False, rate=0.4), judgement()],
        replanner=[{"status": "replanned", "phases": [phases("p2")["phases"][0]]}],
    )
    graph = build_graph(model=ScriptedChatModel(script=script), tools=tools,
                        checkpointer=InMemorySaver())  # fmt: skip
    config = {"configurable": {"thread_id": "steps"}}
    context = Context(review="plan")
    chunks = updates(graph, {"request": "go"}, config, context)
    chunks += updates(graph, Command(resume={"action": "approve"}), config, context)
    # one {node: {channel: value}} per step, as LangGraph gives it: never a list of one-key dicts
    for chunk in chunks:
        assert isinstance(chunk, dict) and len(chunk) == 1, chunk
        (node, update), = chunk.items()
        assert node == "__interrupt__" or isinstance(update, dict), chunk
    steps = [next(iter(c)) for c in chunks if "__interrupt__" not in c]
    # inside execute's step, its tasks show their results as they end ({"run_task": ...}),
    # before execute's own update
    assert steps == [
        "analyse", "phase_plan",  # pause for plan review, answered by Command(resume=...)
        "human_review", "plan", "run_task", "run_task", "execute", "judge",
        "replan", "plan", "run_task", "execute", "judge", "summarize",
    ]  # fmt: skip
    tasks = [c["run_task"] for c in chunks if "run_task" in c]
    assert [len(t["results"]) for t in tasks] == [1, 1, 1] and all(len(t) == 1 for t in tasks)
    assert sorted(t["results"][0]["output"] for t in tasks[:2]) == ["a", "b"]
    assert graph.get_state(config).values["status"] == "completed"


def paused_for_plan_review(tools: Any, thread_id: str) -> tuple[Any, dict[str, Any], Context]:
    """A scripted run paused at its plan review: the graph, the thread's config, the context."""
    graph = build_graph(model=ScriptedChatModel(script=make_script()), tools=tools,
                        checkpointer=InMemorySaver())  # fmt: skip
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    context = Context(review="plan")
    final_state(graph, {"request": "go"}, config, context=context)
    assert graph.get_state(config).next == ("human_review",)
    return graph, config, context


def test_a_pause_shows_its_question_to_command_resume_users(tools) -> None:
    graph, config, context = paused_for_plan_review(tools, "ask")
    # an answer that does not fit: still paused, in human_review, the question and the error
    # in LangGraph's interrupts
    # (and the run's error, as code and the SDK see errors)
    wrong = Command(resume={"action": "answer", "answer": "x"})
    with pytest.raises(FeedbackError, match="got 'answer'"):
        final_state(graph, wrong, config, context=context)
    paused = graph.get_state(config)
    assert paused.next == ("human_review",)
    asked = paused.interrupts[0].value
    assert asked["kind"] == "plan_review" and "approve" in asked["actions"]
    assert "got 'answer'" in asked["error"]
    out = final_state(graph, Command(resume={"action": "approve"}), config, context=context)
    assert out["status"] == "completed"


def test_a_thread_paused_by_a_version_that_answered_stages_by_code_resumes(tools) -> None:
    # versions 593539c..d2716b1 wrote code_answers; a paused thread holding it must go on
    graph, config, context = paused_for_plan_review(tools, "old")
    earlier = {"stage": "phase_plan", "reason": "simple", "action": "one phase"}
    graph.update_state(config, {"code_answers": [earlier]}, as_node="phase_plan")
    assert graph.get_state(config).next == ("human_review",)
    out = final_state(graph, Command(resume={"action": "approve"}), config, context=context)
    assert out["status"] == "completed" and out["code_answers"] == [earlier]


# -- guards: what code may overrule -------------------------------------------------------------


def facts(**given: Any) -> RoundFacts:
    base: dict[str, Any] = {
        "phase_id": "p1", "round": 1, "last_phase": True, "tasks": 1, "succeeded": 1,
        "phase_succeeded": 1, "writes": [], "changed_files": [], "written_files": [],
        "failing_checks": [], "malformed": {}, "to_write": [], "unwritten": [],
        "files": "none", "workspace": "", "named": "",
    }  # fmt: skip
    return base | given  # type: ignore[return-value]


def test_each_default_guard_keeps_a_phase_open_only_on_its_own_fact() -> None:
    quiet = facts()
    assert [guard(quiet) for guard in default_guards(workspace=True)] == [None] * 5
    assert checks_fail(facts(failing_checks=["c1: out.txt must exist (not there)"])) == (
        "checks fail: c1: out.txt must exist (not there)"
    )
    assert writes_never_ran(facts(writes=["t2 skipped"])) == (
        "no file changed: the writes planned (t2 skipped) did not run"
    )
    assert writes_never_ran(facts(writes=["t2 skipped", "t3 ok"])) is None
    assert writes_never_ran(facts(writes=["t2 skipped"], changed_files=["a.txt"])) is None
    assert nothing_succeeded(facts(phase_succeeded=0)).startswith("no task of the phase")
    assert set(DEFAULT_GUARDS) <= set(default_guards(workspace=False))
    assert not set(WORKSPACE_GUARDS) & set(default_guards(workspace=False))


@pytest.fixture
def own_tools() -> list[Any]:
    """A caller's own tools, which declare nothing of themselves: a calculator and a store."""
    @tool
    def calculate(expression: str) -> str:
        """Evaluate an arithmetic expression."""
        raise ValueError(f"cannot evaluate {expression!r}")

    @tool
    def put(key: str, value: str) -> str:
        """Store a value under a key."""
        raise ConnectionError("the store is down")

    return [calculate, put]


def own_run(own_tools: list[Any], **kw: Any) -> dict[str, Any]:
    plan = round_plan(("t1", "calculate", {"expression": "6*7"}),
                      ("t2", "put", {"key": "answer", "value": "42"}))  # fmt: skip
    done = judgement("end_phase", completed=True, rate=1.0)
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan], judge_tasks=[done])
    graph = build_graph(model=ScriptedChatModel(script=script), tools=own_tools,
                        checkpointer=InMemorySaver(), **kw)  # fmt: skip
    return final_state(graph, {"request": "compute 6*7 and store it"},
                        {"configurable": {"thread_id": "own"}}, context=Context())  # fmt: skip


def test_with_a_callers_tools_a_phase_whose_calls_all_failed_does_not_complete(own_tools) -> None:
    out = own_run(own_tools)
    assert out["status"] != "completed"
    first = out["rounds"][0]
    assert [r["status"] for r in first["results"]] == ["failed", "failed"]
    assert not first["judgement"]["phase_completed"]
    assert first["judgement"]["overridden"].startswith("no task of the phase has succeeded")
    assert out["shortfalls"] and "ended short" in out["shortfalls"][0]


def test_a_claim_of_done_code_overruled_never_reaches_the_summary_as_a_finding(own_tools) -> None:
    plan = round_plan(("t1", "calculate", {"expression": "6*7"}))
    claim = judgement("end_phase", completed=True, rate=1.0) | {
        "user_summary": "The phase completed successfully."
    }
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan], judge_tasks=[claim])
    model = ScriptedChatModel(script=script)
    graph = build_graph(model=model, tools=own_tools, checkpointer=InMemorySaver())
    out = final_state(graph, {"request": "compute 6*7"},
                      {"configurable": {"thread_id": "claim"}}, context=Context())  # fmt: skip
    assert out["status"] != "completed"
    assert all(r["judgement"]["overridden"] for r in out["rounds"])
    (prompt,) = model.calls_of("summarizer")
    text = "\n".join(str(m.content) for m in prompt)
    assert "completed successfully" not in text
    # every round, and every phase that ended short, by why code kept it open
    why = "not complete: no task of the phase has succeeded"
    assert text.count(why) == len(out["rounds"]) + len(out["phase_outcomes"])
    # nor is the judge's rate given as where the phase got to
    (short,) = out["shortfalls"]
    assert "at 100%" not in short and "its judge's 100% overruled: no task" in short


def test_guards_given_to_build_graph_replace_the_defaults(own_tools) -> None:
    # none: the judge's word completes the phase (what the defaults stop above); the run is
    # still not completed, as a phase in which no task succeeded cannot be (SPEC section 1)
    out = own_run(own_tools, guards=[])
    assert [o["completed"] for o in out["phase_outcomes"]] == [True]
    assert out["status"] == "incomplete" and "none of its tasks succeeded" in out["shortfalls"][0]
    # a caller's own guard, of the same facts
    out = own_run(own_tools, guards=[lambda f: "needs two rounds" if f["round"] < 2 else None])
    assert out["rounds"][0]["judgement"]["overridden"] == "needs two rounds"
    assert len(out["rounds"]) == 2 and out["phase_outcomes"][0]["completed"]


def test_the_facts_record_is_computed_once_a_round_and_read_by_the_next_plan(tools) -> None:
    script = make_script(phase_planner=[phases("p1", rounds=2)],
                         judge_tasks=[judgement("continue_phase", completed=False, rate=0.5),
                                      judgement()])  # fmt: skip
    model = ScriptedChatModel(script=script)
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "facts"}}
    out = final_state(graph, {"request": "go"}, config, context=Context())
    assert out["facts"]["round"] == 2 and out["facts"]["phase_succeeded"] == 2
    # the judge's facts are in the state after each judge, the same the next plan was given
    history = [s.values.get("facts") for s in graph.get_state_history(config)]
    rounds_seen = {f["round"] for f in history if f}
    assert rounds_seen == {1, 2}


def test_a_simple_requests_phases_are_the_models_merged_into_one_with_its_goals(tools) -> None:
    simple = {**ANALYSIS_SIMPLE}
    model = ScriptedChatModel(script=make_script(request_analyser=[simple]))
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    out = final_state(graph, {"request": "echo hello"}, {"configurable": {"thread_id": "s"}},
                      context=Context())  # fmt: skip
    # the model plans the phases (its wording of the steps is kept), code merges them
    assert len(model.calls_of("phase_planner")) == 1
    planned = [p["goal"] for p in make_script()["phase_planner"][0]["phases"]]
    assert len(out["phases"]) == 1
    assert out["phases"][0]["goal"].split("; ") == [simple["core_goal"], *planned]
    assert out["step_count"] >= 3 and out["status"] == "completed"
