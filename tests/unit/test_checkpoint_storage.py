"""Checkpoint storage: a thread's history costs each checkpoint what it added, not all of it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from phasegraph import Context, ScriptedChatModel, build_graph, resume

from scripts import (
    distinct_plans,
    final_state,
    judgement,
    make_script,
    phase,
    phases,
    rising_judgements,
)


def _long_run(db: Path, tools: Any, max_steps: int) -> tuple[dict[str, Any], Any]:
    """A thread of one-task rounds that runs until its step budget is spent."""
    replans = {"n": 0}

    def replan(_messages: Any) -> dict[str, Any]:
        replans["n"] += 1  # phases have few rounds: each replan adds one more phase
        return {"status": "replanned", "phases": [phase(f"r{replans['n']}", rounds=4)]}

    script = make_script(
        phase_planner=[phases("p1", rounds=4)],
        plan_tool_call=[distinct_plans()],
        judge_tasks=[rising_judgements()],
        replanner=[replan],
    )
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=ScriptedChatModel(script=script), tools=tools, checkpointer=saver)
        config = {"configurable": {"thread_id": "long"}}
        out = final_state(graph, 
            {"request": "work"},
            config,
            context=Context(max_steps=max_steps, extra_rounds_per_phase=20, max_replans=20),
        )
        history = [s.values for s in graph.get_state_history(config)]
    return out, history


def _largest_checkpoint(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT max(length(checkpoint)) FROM checkpoints").fetchone()[0])


def test_checkpoints_do_not_grow_with_the_rounds_done(tools, tmp_path: Path) -> None:
    short, _ = _long_run(tmp_path / "short.sqlite", tools, max_steps=30)
    long, history = _long_run(tmp_path / "long.sqlite", tools, max_steps=60)
    assert short["status"] == long["status"] == "budget_exhausted"
    assert len(long["rounds"]) >= 2 * len(short["rounds"]) - 1
    # A plain reducer stores the whole rounds list in every checkpoint: the largest one would
    # about double with the rounds. A history channel stores what the step appended.
    assert _largest_checkpoint(tmp_path / "long.sqlite") <= 1.15 * _largest_checkpoint(
        tmp_path / "short.sqlite"
    )
    # nothing is lost: the state rebuilt from the stored appends has every round, in order,
    # and each earlier checkpoint shows the rounds finished by then (time travel still works)
    assert [r["round_seq"] for r in long["rounds"]] == list(range(1, len(long["rounds"]) + 1))
    counts = [len(values.get("rounds", [])) for values in reversed(history)]
    assert counts == sorted(counts)
    assert set(counts) == set(range(len(long["rounds"]) + 1))


def test_a_thread_stored_with_whole_lists_resumes(tools, tmp_path: Path) -> None:
    """Threads written before history channels kept whole lists in each checkpoint."""
    db = tmp_path / "old.sqlite"
    script = make_script(
        phase_planner=[phases("p1", "p2")],
        judge_tasks=[judgement(), judgement("replan", completed=False, rate=0.1), judgement()],
        replanner=[{"status": "replanned", "phases": [phase("p3")]}],
    )
    config: Any = {"configurable": {"thread_id": "old"}}
    context = Context(review="plan+replan")
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=ScriptedChatModel(script=script), tools=tools, checkpointer=saver)
        final_state(graph, {"request": "work"}, config, context=context)
        paused = resume(graph, config, {"action": "approve"}, context=context)
        assert paused["pending_review"]["kind"] == "replan_review"
        # store the paused checkpoint again the way a plain reducer did: the whole lists inline
        head = saver.get_tuple(config)
        assert head is not None and head.parent_config is not None
        for key in ("rounds", "phase_outcomes", "reflections"):
            head.checkpoint["channel_values"][key] = paused[key]
        saver.put(head.parent_config, head.checkpoint, head.metadata, {})
        old_rounds = graph.get_state(config).values["rounds"]
        assert old_rounds == paused["rounds"] and len(old_rounds) == 2

        out = resume(graph, config, {"action": "approve"}, context=context)
    assert out["status"] == "completed"
    assert out["rounds"][:2] == old_rounds
    assert [r["phase_id"] for r in out["rounds"]] == ["p1", "p2", "p3"]
    assert [o["phase_id"] for o in out["phase_outcomes"]] == [
        o["phase_id"] for o in paused["phase_outcomes"]
    ] + ["p3"]


def test_the_sqlite_checkpointer_waits_for_other_writers_as_long_as_phasegraph(
    tmp_path: Path,
) -> None:
    # processes share the file: LangGraph's 5 s default failed a resume ("database is locked")
    import asyncio

    from phasegraph.storage import aopen_checkpointer, open_checkpointer
    from phasegraph.storage.database import SQLITE_BUSY_S

    db = tmp_path / "t.sqlite"
    with open_checkpointer(db) as saver:
        assert saver.conn.execute("PRAGMA busy_timeout").fetchone()[0] == SQLITE_BUSY_S * 1000
        assert saver.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    async def busy_timeout() -> int:
        async with aopen_checkpointer(db) as saver:
            async with saver.conn.execute("PRAGMA busy_timeout") as cursor:
                row = await cursor.fetchone()
        return int(row[0])

    assert asyncio.run(busy_timeout()) == SQLITE_BUSY_S * 1000
