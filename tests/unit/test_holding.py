"""Each rule that holds a task back is a named unit a caller replaces (`phasegraph.holding`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import ConfigurationError, Context, ScriptedChatModel, build_graph
from phasegraph.holding import (
    Hold,
    RoundToRun,
    default_holds,
    fails_again,
    overwrites_unseen,
    typed_file_copies,
    typed_over_programs,
    writes_beside_reads,
)

from scripts import ANALYSIS, CONTINUE, SUMMARY, final_state, judgement, phase, round_plan

BIG = "".join(f"line {i}\n" for i in range(3000))  # larger than any prompt shows whole
SETTINGS = '{"retries": 5, "timeout": 45}\n'

#: Per default hold: the workspace's files, the rounds planned, and the task it holds (round 1
#: unless it says otherwise).
CASES: dict[Hold, tuple[dict[str, str], list[dict[str, Any]], tuple[int, str]]] = {
    writes_beside_reads: (
        {"numbers.txt": "1\n2\n"},
        [round_plan(("r", "read_file", {"path": "numbers.txt"}),
                    ("w", "write_file", {"path": "sum.txt", "content": "0"}))],
        (0, "w"),
    ),
    overwrites_unseen: (
        {"big.txt": BIG},
        [round_plan(("w", "write_file", {"path": "big.txt", "content": "short"}))],
        (0, "w"),
    ),
    fails_again: (
        {"a.txt": "alpha\n"},
        [round_plan(("e", "edit_file", {"path": "a.txt", "old_text": "zz", "new_text": "z"}))] * 2,
        (1, "e"),
    ),
    typed_over_programs: (
        {"fruit.txt": "pear\napple\n"},
        [round_plan(("s", "run_command", {"command": "sort fruit.txt > sorted.txt"}),
                    ("w", "write_file", {"path": "sorted.txt", "content": "apple pear"}))],
        (0, "w"),
    ),
    typed_file_copies: (
        {"settings.json": SETTINGS},
        [round_plan(("w", "write_file", {"path": "timeout.txt", "content": SETTINGS}))],
        (0, "w"),
    ),
}  # fmt: skip

REQUEST = "Read settings.json and write the value of timeout to timeout.txt."


def run(ws: Path, files: dict[str, str], plans: list[Any], holds: Any) -> dict[str, Any]:
    for name, text in files.items():
        (ws / name).write_text(text)
    script = {
        "request_analyser": [{**ANALYSIS, "task_type": "data"}],
        "phase_planner": [{"phases": [phase("p1", rounds=3)], "execution_strategy": "one"}],
        "plan_tool_call": plans,
        "judge_tasks": [CONTINUE, judgement()],
        "summarizer": [SUMMARY],
    }
    graph = build_graph(
        model=ScriptedChatModel(script=script), checkpointer=InMemorySaver(), holds=holds
    )
    return final_state(
        graph, {"request": REQUEST}, {"configurable": {"thread_id": "h"}},
        context=Context(workspace=str(ws)),
    )  # fmt: skip


def result_of(out: dict[str, Any], where: tuple[int, str]) -> dict[str, Any]:
    round_no, task_id = where
    (found,) = (r for r in out["rounds"][round_no]["results"] if r["task_id"] == task_id)
    return found


@pytest.mark.parametrize("hold", list(CASES), ids=[h.__name__ for h in CASES])
def test_each_default_hold_holds_its_task_and_without_it_the_task_runs(
    tmp_path: Path, hold: Hold
) -> None:
    files, plans, where = CASES[hold]
    assert hold in default_holds()
    held = result_of(run(tmp_path / "with", files, plans, None), where)
    assert held["status"] == "skipped" and held["output"].startswith("not run:")
    others = [h for h in default_holds() if h is not hold]
    ran = result_of(run(tmp_path / "without", files, plans, others), where)
    assert ran["status"] != "skipped", ran


@pytest.fixture(autouse=True)
def _folders(tmp_path: Path) -> None:
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()


def test_a_callers_hold_holds_back_what_it_names_and_an_equal_one_replaces_a_default(
    tmp_path: Path,
) -> None:
    def no_lock_files(round_: RoundToRun) -> dict[str, str]:
        """Nothing writes a .lock file."""
        return {
            t["id"]: "not run: .lock files are the build's"
            for t in round_.tasks
            if str((t.get("arguments") or {}).get("path", "")).endswith(".lock")
        }

    plan = round_plan(("w", "write_file", {"path": "deps.lock", "content": "x"}),
                      ("n", "write_file", {"path": "notes.txt", "content": "y"}))  # fmt: skip
    out = run(tmp_path / "with", {}, [plan], [*default_holds(), no_lock_files])
    assert result_of(out, (0, "w"))["output"] == "not run: .lock files are the build's"
    assert result_of(out, (0, "n"))["status"] == "ok"
    assert not (tmp_path / "with" / "deps.lock").exists()
    # a hold of the caller's that does what a default does holds what it held
    files, plans, where = CASES[writes_beside_reads]
    equal = [lambda r: writes_beside_reads(r)]
    assert result_of(run(tmp_path / "without", files, plans, equal), where)["status"] == "skipped"


def test_a_hold_that_is_not_a_function_is_refused_when_the_graph_is_built() -> None:
    with pytest.raises(ConfigurationError, match="functions of a RoundToRun"):
        build_graph(model=ScriptedChatModel(script={}), holds=["writes_beside_reads"])  # type: ignore[list-item]
