"""The reflection triggers of SPEC section 4: each fires at its threshold, not a round earlier."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph, reflection, resume

from scripts import (
    final_state,
    judgement,
    make_script,
    phase,
    phases,
    rising_judgements,
    round_plan,
)


def record(n: int, results: list[tuple[str, dict[str, Any], str]], rate: float = 0.1) -> dict:
    return {
        "phase_id": "p1",
        "round": n,
        "round_seq": n,
        "tasks": [],
        "results": [
            {
                "task_id": f"t{i}",
                "tool": tool,
                "arguments": args,
                "status": status,
                "output": status,
                "duration_s": 0.0,
                "wave": 1,
                "replayed": False,
            }
            for i, (tool, args, status) in enumerate(results)
        ],
        "judgement": {"phase_completion_rate": rate, "phase_completed": False},
    }


OK = ("echo", {"text": "a"}, "ok")


class TestThresholds:
    def test_repeated_action_fires_on_the_second_execution(self) -> None:
        first = record(1, [("read", {"path": "a.txt", "n": 1}, "ok")])
        again = record(2, [("read", {"n": 1, "path": " a.txt "}, "failed")])
        assert reflection.repeated_action([first]) is None
        fired = reflection.repeated_action([first, again])
        assert fired is not None and "read(" in fired.reason and "2 times" in fired.reason

    def test_repeated_action_ignores_calls_that_never_ran(self) -> None:
        first = record(1, [("read", {"path": "a"}, "refused")])
        again = record(2, [("read", {"path": "a"}, "skipped")])
        assert reflection.repeated_action([first, again]) is None

    def test_stalled_progress_after_two_rounds_without_a_rise(self) -> None:
        rounds = [record(1, [OK], 0.2), record(2, [OK], 0.2), record(3, [OK], 0.1)]
        assert reflection.stalled_progress(rounds[:2]) is None  # one round without a rise
        fired = reflection.stalled_progress(rounds)
        assert fired is not None and "0.20 -> 0.20 -> 0.10" in fired.reason

    def test_stalled_progress_needs_consecutive_rounds(self) -> None:
        rounds = [
            record(1, [OK], 0.2),
            record(2, [OK], 0.2),
            record(3, [OK], 0.3),
            record(4, [OK], 0.3),
        ]
        assert reflection.stalled_progress(rounds) is None

    def test_stuck_phase_needs_three_rounds_and_more_than_three_executions(self) -> None:
        two = [record(1, [OK, OK, OK]), record(2, [OK, OK])]
        assert reflection.stuck_phase(two) is None  # 5 executions, only 2 rounds
        three_small = [record(1, [OK]), record(2, [OK]), record(3, [OK])]
        assert reflection.stuck_phase(three_small) is None  # 3 rounds, only 3 executions
        fired = reflection.stuck_phase([*three_small[:2], record(3, [OK, OK])])
        assert fired is not None and "3 rounds and 4 tool executions" in fired.reason

    def test_stuck_phase_not_when_completed(self) -> None:
        rounds = [record(1, [OK, OK]), record(2, [OK]), record(3, [OK, OK])]
        rounds[2]["judgement"]["phase_completed"] = True
        assert reflection.stuck_phase(rounds) is None

    def test_consecutive_failures_three_in_a_row_across_rounds(self) -> None:
        fail = ("fail", {}, "failed")
        assert reflection.consecutive_failures([record(1, [fail, fail])]) is None
        fired = reflection.consecutive_failures(
            [record(1, [fail, fail]), record(2, [("slow", {}, "timeout")])]
        )
        assert fired is not None and "3 tasks failed in a row" in fired.reason

    def test_consecutive_failures_name_each_output_on_one_line_cut_between_words(self) -> None:
        fail = ("fail", {}, "failed")
        rounds = [record(1, [fail, fail, fail])]
        for name in ("x", "xy", "xyz", "wxyz", "vwxyz"):  # each puts the cut elsewhere in a word
            rounds[0]["results"][2]["output"] = f"Traceback:\n  File {name}\n" + "word " * 40
            fired = reflection.consecutive_failures(rounds)
            assert fired is not None
            last = fired.reason.split("; ")[-1]
            assert "\n" not in fired.reason
            assert last.startswith(f"fail: failed (Traceback: File {name} word word")
            assert last.endswith(" word...).")

    def test_consecutive_failures_broken_by_a_success(self) -> None:
        fail = ("fail", {}, "failed")
        assert reflection.consecutive_failures([record(1, [fail, OK, fail, fail])]) is None

    def test_consecutive_failures_ignore_calls_a_crash_interrupted(self) -> None:
        fail, cut = ("fail", {}, "failed"), ("slow", {}, "interrupted")
        assert reflection.consecutive_failures([record(1, [cut, cut, cut])]) is None
        assert reflection.consecutive_failures([record(1, [fail, cut, fail])]) is None
        assert reflection.consecutive_failures([record(1, [fail, cut, fail, cut, fail])])

    def test_long_task_at_one_third_then_two_thirds_once_each(self) -> None:
        assert reflection.long_task(9, 30, 0) is None
        assert reflection.long_task(10, 30, 0) is not None
        assert reflection.long_task(19, 30, 1) is None
        assert reflection.long_task(20, 30, 1) is not None
        assert reflection.long_task(30, 30, 2) is None


class TestInTheGraph:
    def test_repeated_action_routes_to_replan_with_a_note(self, run) -> None:
        script = make_script(
            phase_planner=[phases("p1", rounds=4)],
            plan_tool_call=[round_plan(("t1", "echo", {"text": "same"}))],
            judge_tasks=[
                judgement("continue_phase", completed=False, rate=0.1),
                judgement("continue_phase", completed=False, rate=0.2),
                judgement(),
            ],
            replanner=[{"status": "replanned", "phases": [phase("p2", rounds=1)]}],
        )
        out, _, model = run(script, max_steps=100)
        fired = out["reflections"][0]
        assert (fired["trigger"], fired["phase_id"], fired["round"]) == ("repeated_action", "p1", 2)
        assert len(model.calls_of("replanner")) == 1
        replan_prompt = model.calls_of("replanner")[0][-1].content
        next_plan_prompt = model.calls_of("plan_tool_call")[2][-1].content
        for prompt in (replan_prompt, next_plan_prompt):
            assert "Do not repeat that call" in prompt
        assert "Do not repeat" not in model.calls_of("plan_tool_call")[1][-1].content

    def test_consecutive_failures_end_the_phase_without_a_person(self, run) -> None:
        script = make_script(
            phase_planner=[phases("p1", "p2", rounds=4)],
            plan_tool_call=[
                round_plan(("a", "fail", {"reason": "1"}), ("b", "fail", {"reason": "2"})),
                round_plan(("a", "fail", {"reason": "3"})),
                round_plan(("a", "echo", {"text": "p2"})),
            ],
            judge_tasks=[
                judgement("retry_failed", completed=False, rate=0.0),
                judgement("retry_failed", completed=False, rate=0.1),
                judgement(),
            ],
        )
        out, _, _ = run(script, review="none")
        assert out["phase_outcomes"][0]["ended_by"] == "consecutive_failures"
        assert out["phase_outcomes"][0]["rounds"] == 2  # not after round 1 (2 failures)
        # every phase ran, but p1 ended short: the run says so, and why
        assert out["status"] == "incomplete"
        assert out["shortfalls"] == [
            "phase phase p1 (p1) ended short: its tasks failed in a row, at 10%"
        ]

    def test_consecutive_failures_ask_a_person(self, run) -> None:
        script = make_script(
            phase_planner=[phases("p1", rounds=4)],
            plan_tool_call=[round_plan(*[(f"t{i}", "fail", {"reason": str(i)}) for i in range(3)])],
            judge_tasks=[judgement("retry_failed", completed=False, rate=0.0)],
        )
        _, graph, _ = run(script, review="plan")
        config = {"configurable": {"thread_id": "t1"}}
        out = resume(graph, config, {"action": "approve"}, context=Context(review="plan"))
        assert out["status"] == "awaiting_review"
        review = out["pending_review"]
        assert review["kind"] == "clarification" and review["stage"] == "judge"
        assert "3 tasks failed in a row" in review["questions"][0]

    def test_replan_cap_ends_the_phase_when_nobody_answers(self, run) -> None:
        script = make_script(
            phase_planner=[phases("p1", rounds=4)],
            plan_tool_call=[round_plan(("t1", "echo", {"text": "same"}))],
            judge_tasks=[rising_judgements(0.1)],
            replanner=[{"status": "replanned", "phases": [phase("p1", rounds=4)]}],
        )
        out, _, model = run(script, max_steps=100, max_replans=1)
        assert len(model.calls_of("replanner")) == 1
        assert out["phase_outcomes"][-1]["ended_by"] == "replan_cap"
        assert [r["trigger"] for r in out["reflections"]].count("repeated_action") == 2
        # the revised phase came back under the replaced one's id: it is numbered, not merged
        assert [(o["phase_id"], o["ended_by"]) for o in out["phase_outcomes"]] == [
            ("p1", "replanned"),
            ("p1-2", "replan_cap"),
        ]

    def test_replan_cap_asks_the_person_when_reviews_are_on(self, tools) -> None:
        script = make_script(
            phase_planner=[phases("p1", rounds=4)],
            plan_tool_call=[round_plan(("t1", "echo", {"text": "same"}))],
            judge_tasks=[rising_judgements(0.1)],
            replanner=[{"status": "done", "response": "stopping here"}],
        )
        graph = build_graph(
            model=ScriptedChatModel(script=script), tools=tools, checkpointer=InMemorySaver()
        )
        config = {"configurable": {"thread_id": "cap"}}
        context = Context(review="plan", max_replans=0, max_steps=100)
        final_state(graph, {"request": "go"}, config, context=context)
        out = resume(graph, config, {"action": "approve"}, context=context)
        assert out["pending_review"]["kind"] == "clarification"
        assert "0 replans allowed are used up" in out["pending_review"]["questions"][0]
        out = resume(graph, config, {"action": "answer", "answer": "wrap up"}, context=context)
        assert out["final_response"] == "stopping here"
        # wrapped up before its phase completed: the run says it ended short, and where
        assert out["status"] == "incomplete"
        assert [o["ended_by"] for o in out["phase_outcomes"]] == ["replan_done"]
