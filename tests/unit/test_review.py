"""Human review (SPEC section 6): every review kind and action, through `resume`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import (
    Context,
    FeedbackError,
    ScriptedChatModel,
    ThreadPausedError,
    ThreadStateError,
    build_graph,
    resume,
)

from scripts import ANALYSIS, final_state, judgement, make_script, phase, phases

CONFIG = {"configurable": {"thread_id": "r1"}}


def start(tools, script: dict[str, list[Any]] | None = None, **settings: Any):
    model = ScriptedChatModel(script=script or make_script())
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    context = Context(review=settings.pop("review", "plan"), **settings)
    out = final_state(graph, {"request": "Report on the workspace files"}, CONFIG, context=context)
    return graph, model, out, context


def test_plan_review_pauses_with_pending_review(tools) -> None:
    graph, _, out, _ = start(tools)
    assert out["status"] == "awaiting_review"
    assert out["pending_review"]["kind"] == "plan_review"
    assert [p["id"] for p in out["pending_review"]["phases"]] == ["p1", "p2"]
    assert out["final_summary"] is None
    # a static breakpoint leaves no __interrupt__: the pause is read from the thread
    assert graph.get_state(CONFIG).next == ("human_review",)
    assert out["step_count"] == 1


def test_approve_runs_to_the_end(tools, tool_log) -> None:
    graph, _, _, context = start(tools)
    out = resume(graph, CONFIG, {"action": "approve"}, context=context)
    assert out["status"] == "completed"
    assert out["pending_review"] is None
    assert out["final_summary"]
    assert len(tool_log.calls) == 2
    assert out["step_count"] == 7  # waiting for the person is not counted


def test_reject_ends_with_reason_in_summary(tools, tool_log) -> None:
    graph, _, _, context = start(tools, make_script(summarizer=[None], text=[""]))
    out = resume(graph, CONFIG, {"action": "reject", "reason": "wrong scope"}, context=context)
    assert out["status"] == "rejected"
    assert "wrong scope" in out["final_summary"]
    assert tool_log.calls == []
    assert graph.get_state(CONFIG).next == ()


def test_edit_replaces_the_phases(tools) -> None:
    graph, model, _, context = start(tools)
    edited = [phase("mine")]
    out = resume(graph, CONFIG, {"action": "edit", "phases": edited}, context=context)
    assert [p["id"] for p in out["phases"]] == ["mine"]
    assert [o["phase_id"] for o in out["phase_outcomes"]] == ["mine"]
    assert "(id mine)" in model.calls_of("plan_tool_call")[0][-1].content


def test_modify_goes_to_replan_with_the_feedback(tools) -> None:
    script = make_script(replanner=[{"status": "replanned", "phases": [phase("p7")]}])
    graph, model, _, context = start(tools, script)
    out = resume(graph, CONFIG, {"action": "modify", "feedback": "only one phase"}, context=context)
    replan_prompt = model.calls_of("replanner")[0][-1].content
    assert "only one phase" in replan_prompt
    assert [p["id"] for p in out["phases"]] == ["p7"]
    assert out["status"] == "completed"


def test_clarification_before_planning_goes_back_to_analyse(tools) -> None:
    asking = dict(ANALYSIS, clarification_needed=True, clarification_questions=["Which folder?"])
    script = make_script(request_analyser=[asking, ANALYSIS])
    graph, model, out, context = start(tools, script, review="plan")
    assert out["pending_review"] == {
        "kind": "clarification",
        "stage": "analyse",
        "questions": ["Which folder?"],
    }
    out = resume(graph, CONFIG, {"action": "answer", "answer": "the docs folder"}, context=context)
    second = model.calls_of("request_analyser")[1][-1].content
    assert "Which folder?" in second and "the docs folder" in second
    assert out["pending_review"]["kind"] == "plan_review"  # then the plan review, as configured
    assert out["clarifications"] == [{"question": "Which folder?", "answer": "the docs folder"}]


def test_no_clarification_without_a_person(tools) -> None:
    asking = dict(ANALYSIS, clarification_needed=True, clarification_questions=["Which folder?"])
    _, _, out, _ = start(tools, make_script(request_analyser=[asking]), review="none")
    assert out["status"] == "completed"


def test_judge_question_goes_to_replan_after_the_answer(tools) -> None:
    script = make_script(
        phase_planner=[phases("p1", rounds=2)],
        judge_tasks=[
            judgement("ask_user", completed=False, rate=0.5, question="Keep going?"),
            judgement(),
        ],
    )
    graph, model, out, context = start(tools, script, review="all")
    out = resume(graph, CONFIG, {"action": "approve"}, context=context)
    assert out["pending_review"]["kind"] == "clarification"
    assert out["pending_review"]["stage"] == "judge"
    out = resume(graph, CONFIG, {"action": "answer", "answer": "yes, go on"}, context=context)
    assert "yes, go on" in model.calls_of("replanner")[0][-1].content
    assert out["status"] == "awaiting_review"  # review=all: the replan is reviewed too
    assert out["pending_review"]["kind"] == "replan_review"
    out = resume(graph, CONFIG, {"action": "approve"}, context=context)
    assert out["status"] == "completed"


def test_judge_question_without_a_person_replans(tools) -> None:
    script = make_script(
        phase_planner=[phases("p1", rounds=2)],
        judge_tasks=[
            judgement("ask_user", completed=False, rate=0.5, question="Keep going?"),
            judgement(),
        ],
    )
    _, model, out, _ = start(tools, script, review="none")
    assert "Keep going?" in model.calls_of("replanner")[0][-1].content
    assert out["status"] == "completed"


def test_replan_review_edit(tools) -> None:
    script = make_script(
        phase_planner=[phases("p1", "p2")],
        judge_tasks=[judgement(), judgement("replan", completed=False, rate=0.1), judgement()],
        replanner=[{"status": "replanned", "phases": [phase("p3")]}],
    )
    graph, _, out, context = start(tools, script, review="plan+replan")
    out = resume(graph, CONFIG, {"action": "approve"}, context=context)
    assert out["pending_review"]["kind"] == "replan_review"
    assert [p["id"] for p in out["pending_review"]["phases"]] == ["p3"]
    # the finished p1 and the replaced p2 (it ran a round) stay; the edit replaces the rest
    out = resume(graph, CONFIG, {"action": "edit", "phases": [phase("p4")]}, context=context)
    assert [p["id"] for p in out["phases"]] == ["p1", "p2", "p4"]
    assert out["status"] == "completed"


@pytest.mark.parametrize(
    "feedback",
    [
        {"action": "answer", "answer": "x"},  # another review kind's action
        {"action": "allow"},
        {"action": "reject"},  # missing reason
        {"action": "reject", "reason": " \n "},  # blanks say no more than nothing
        {"action": "modify", "feedback": "   "},
        {"action": "edit", "phases": []},  # empty phase list
        {"action": "edit", "phases": [{"id": "x"}]},  # phase that does not validate
        {"action": "edit", "phases": [phase("a"), phase("a")]},  # duplicate ids
        {"action": "approve", "extra": 1},
        {"action": "dance"},
        "dance",  # an action's word, but not one of this review's
        5,
        None,
    ],
)
def test_feedback_that_does_not_fit_changes_nothing(tools, feedback) -> None:
    graph, _, _, context = start(tools)
    before = graph.get_state(CONFIG)
    with pytest.raises(FeedbackError) as err:
        resume(graph, CONFIG, feedback, context=context)
    assert "plan_review" in str(err.value)
    after = graph.get_state(CONFIG)
    assert (
        after.config["configurable"]["checkpoint_id"]
        == before.config["configurable"]["checkpoint_id"]
    )
    assert after.next == ("human_review",)
    assert after.values == before.values
    # and the review still works afterwards
    assert resume(graph, CONFIG, {"action": "approve"}, context=context)["status"] == "completed"


def test_new_input_to_a_paused_thread_is_refused(tools) -> None:
    graph, _, _, context = start(tools)
    before = graph.get_state(CONFIG)
    with pytest.raises(ThreadPausedError, match="paused for a plan_review"):
        final_state(graph, {"request": "something else"}, CONFIG, context=context)
    after = graph.get_state(CONFIG)
    assert after.values == before.values and after.next == ("human_review",)


def test_new_input_to_a_finished_thread_is_refused(run) -> None:
    _, graph, _ = run(make_script())
    with pytest.raises(ThreadStateError, match="already holds a run"):
        final_state(graph, {"request": "again"}, {"configurable": {"thread_id": "t1"}})


def test_resume_errors_name_the_problem(tools) -> None:
    graph, _, _, context = start(tools)
    with pytest.raises(ThreadStateError, match="unknown thread 'nope'"):
        resume(graph, {"configurable": {"thread_id": "nope"}}, {"action": "approve"})
    resume(graph, CONFIG, {"action": "approve"}, context=context)
    with pytest.raises(ThreadStateError, match="has ended"):
        resume(graph, CONFIG, {"action": "approve"}, context=context)


def test_studio_path_update_state_as_node_then_continue(tools) -> None:
    """Studio's state editor: write human_feedback as the paused node, then continue."""
    graph, _, _, context = start(tools)
    graph.update_state(CONFIG, {"human_feedback": {"action": "bogus"}}, as_node="phase_plan")
    out = final_state(graph, None, CONFIG, context=context)
    # feedback that does not fit: still paused, the error shown beside the question
    paused = graph.get_state(CONFIG)
    assert paused.next == ("human_review",)
    assert "bogus" in paused.interrupts[0].value["error"]
    assert "bogus" in out["__interrupt__"][0].value["error"]
    assert paused.interrupts[0].value["kind"] == "plan_review"
    graph.update_state(CONFIG, {"human_feedback": {"action": "approve"}}, as_node="phase_plan")
    out = final_state(graph, None, CONFIG, context=context)
    assert out["status"] == "completed"


class _Crash(BaseException):
    """A process dying between saving a node's writes and saving the next checkpoint."""


class CrashAfterJudgeSaver(InMemorySaver):
    """Saves the first judge's writes, then dies instead of saving the next checkpoint."""

    armed = True
    crash_next_put = False

    def put_writes(self, config, writes, task_id, task_path=""):  # type: ignore[no-untyped-def]
        super().put_writes(config, writes, task_id, task_path)
        if self.armed and any(ch == "judgement" and value for ch, value in writes):
            self.armed, self.crash_next_put = False, True

    def put(self, config, checkpoint, metadata, new_versions):  # type: ignore[no-untyped-def]
        if self.crash_next_put:
            self.crash_next_put = False
            raise _Crash()
        return super().put(config, checkpoint, metadata, new_versions)


def test_a_crash_after_a_node_saved_its_writes_resumes_instead_of_looking_ended(
    tools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHASEGRAPH_STATE_DIR", str(tmp_path / "state"))  # its journal file
    model = ScriptedChatModel(script=make_script())
    graph = build_graph(model=model, tools=tools, checkpointer=CrashAfterJudgeSaver())
    config = {"configurable": {"thread_id": "c"}}
    context = {"workspace": str(tmp_path)}
    with pytest.raises(_Crash):  # saved synchronously: the run stops where the save failed
        final_state(graph, {"request": "Report"}, config, durability="sync", context=context)
    assert len(model.calls_of("judge_tasks")) == 1
    snapshot = graph.get_state(config)
    # LangGraph's `next` leaves the judge out (its writes are saved), so the thread looks ended
    assert snapshot.next == ()
    assert [(t.name, t.result is not None) for t in snapshot.tasks] == [("judge", True)]

    out = resume(graph, config)
    assert out["status"] == "completed" and out["final_summary"]
    assert out["step_count"] == 7  # the same as a run never cut off
    # the saved judgement of phase 1 was used, not asked again: one more call, for phase 2
    assert len(model.calls_of("judge_tasks")) == 2


@pytest.mark.parametrize(
    ("asking", "said"),
    [(True, "the person declined the question: not now"), (False, "rejected the plan: not now")],
)
def test_a_reject_is_told_by_what_it_answered(tools, asking: bool, said: str) -> None:
    analysis = dict(ANALYSIS, clarification_needed=asking, clarification_questions=["Which?"])
    graph, _, _, context = start(tools, make_script(request_analyser=[analysis]))
    out = resume(graph, CONFIG, {"action": "reject", "reason": "not now"}, context=context)
    assert out["status"] == "rejected" and said in out["final_summary"]


def test_a_tool_permission_shows_the_call_it_asks_for() -> None:
    from phasegraph.cli.render import pending_lines

    pending = {
        "kind": "tool_permission",
        "task": {"id": "t1", "tool": "run_command", "arguments": {"argv": ["rm", "-r", "data"]}},
        "reason": "tool 'run_command' is not allowed for 'research' work in phase 'p1'",
        "justification": "the old data must go",
    }
    lines = pending_lines(pending)
    assert '  call run_command {"argv": ["rm", "-r", "data"]}' in lines
    assert "  asked because: the old data must go" in lines
    assert any(line.startswith("Why: tool 'run_command' is not allowed") for line in lines)


def test_a_chat_answer_to_a_clarification_is_any_text_and_yes_allows_a_tool() -> None:
    from phasegraph.cli.chat import parse_chat_answer

    for text in ("yes", "ok", "approve", "allow", "the second one"):
        assert parse_chat_answer(text, "clarification") == {"action": "answer", "answer": text}
    assert parse_chat_answer("reject too vague", "clarification") == {
        "action": "reject",
        "reason": "too vague",
    }
    assert parse_chat_answer("yes", "tool_permission") == {"action": "allow"}
    assert parse_chat_answer("yes", "plan_review") == {"action": "approve"}
