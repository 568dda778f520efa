"""phasegraph benchmarks, measured side by side in one run (issue 8).

    python -m bench [--quick] [--out bench/results/latest.json]

Two tables. The architecture comparison (`bench.compare`): phasegraph, LangGraph's
`create_react_agent` and a tutorial-style plan-and-execute loop on the same chain task (8, 24 and
64 tool actions), the same tool and the same simulated model, with model calls, prompt tokens, the
largest prompt, simulated wall time and the codes each final answer reports; then framework
overhead per tool action against `create_react_agent` with `SqliteSaver`, for phasegraph in phases
of three rounds and in several short phases of two rounds each (target: 1.1 x ReAct's). The
framework's own figures: SQLite bytes after 50, 100 and 200 steps (growth must be linear), a round
of 8 independent 200 ms tasks against one task, listing and resuming at 10,000 threads, and what
a command costs in the operating-system sandbox against the argument checks alone
(`bench.commands`). Last, with the embedded local model, phasegraph and `create_react_agent` on
twelve workspace tasks, each with a checker, with the request alone and with a caller's checks
(`bench.local_suite`, which also runs on its own for any model; not in --quick, or with
--no-local; --local-model picks the model).

Each figure is printed with its target and a verdict; nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.sqlite import SqliteSaver

from bench.commands import command_cost
from bench.commands import table as commands_table
from bench.compare import compare, measure, overhead
from bench.local_suite import run_suite
from bench.local_suite import stage_table as local_stage_table
from bench.local_suite import table as local_table
from bench.sim import Latency
from bench.tables import systems_table, table
from phasegraph import Context, ScriptedChatModel, build_graph, resume
from phasegraph.storage.database import sqlite_database
from phasegraph.storage.thread_index import index_for

ANALYSIS = {
    "core_goal": "Benchmark work",
    "requirements": ["do the work"],
    "constraints": [],
    "complexity": "medium",
    "task_type": "coding",
    "estimated_phases": 1,
    "clarification_needed": False,
    "clarification_questions": [],
}
SUMMARY = {
    "final_summary": "## Done",
    "highlights": [],
    "unfinished": [],
    "next_steps": [],
    "quality_assessment": "n/a",
}


def _phase(pid: str, rounds: int) -> dict[str, Any]:
    return {
        "id": pid,
        "name": pid,
        "goal": f"finish {pid}",
        "estimated_rounds": rounds,
        "dependencies": [],
        "allowed_tools": [],
    }


def _plan(*tasks: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "tasks": [{"id": i, "tool": t, "arguments": a, "purpose": "bench"} for i, t, a in tasks],
        "reasoning": "bench",
    }


def _judgement(action: str, rate: float) -> dict[str, Any]:
    return {
        "task_evaluation": [],
        "phase_completion_rate": rate,
        "phase_completed": action == "end_phase",
        "internal_analysis": "bench",
        "user_summary": "The round was judged.",
        "next_action": action,
        "failed_reason": None,
        "question": None,
    }


def _script(plan: Any, judge: Any, phases: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {
        "request_analyser": [ANALYSIS],
        "phase_planner": [{"phases": phases, "execution_strategy": "in order"}],
        "plan_tool_call": [plan],
        "judge_tasks": [judge],
        "replanner": [{"status": "done", "response": "enough"}],
        "summarizer": [SUMMARY],
    }


@tool
def note(text: str) -> str:
    """Return a short receipt (a cheap tool)."""
    return f"noted: {text}"


@tool
def wait(seconds: float, label: str) -> str:
    """Sleep, then return (a slow, independent task)."""
    time.sleep(seconds)
    return f"{label} done"


def _run(
    db: Path, script: dict[str, list[Any]], tools: list[BaseTool], thread: str, **settings: Any
) -> tuple[dict[str, Any], float]:
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=ScriptedChatModel(script=script), tools=tools, checkpointer=saver)
        start = time.perf_counter()
        out = graph.invoke(
            {"request": "benchmark"},
            {"configurable": {"thread_id": thread}},
            context=Context(**settings),
        )
        elapsed = time.perf_counter() - start
    if out["status"] == "failed":  # a benchmark of a broken run would measure nothing
        raise RuntimeError(f"benchmark run {thread!r} failed: {out.get('error')}")
    return out, elapsed


def _file_bytes(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db.stat().st_size


def checkpoint_growth(work: Path, steps: list[int]) -> dict[str, Any]:
    """Bytes of the SQLite file after a thread spent each number of steps."""
    counter = {"n": 0}

    def plan(_messages: Any) -> dict[str, Any]:
        counter["n"] += 1  # never the same call twice: no repeated-action reflection
        return _plan(("t1", "note", {"text": f"item {counter['n']}"}))

    def judge(_messages: Any) -> dict[str, Any]:
        return _judgement("continue_phase", min(0.99, 0.002 * counter["n"]))  # always rising

    def replan(_messages: Any) -> dict[str, Any]:
        counter["n"] += 1  # reflection check-points replan: always with a new phase id
        return {"status": "replanned", "phases": [_phase(f"r{counter['n']}", 4)]}

    rows = []
    for n in steps:
        db = work / f"growth-{n}.sqlite"
        script = _script(plan, judge, [_phase(f"p{i}", 4) for i in range(1, 6)])
        script["replanner"] = [replan]
        out, _ = _run(
            db, script, [note], "growth", max_steps=n, extra_rounds_per_phase=20, max_replans=20
        )
        if out["status"] != "budget_exhausted":  # the thread must really spend its steps
            raise RuntimeError(f"growth run of {n} steps ended early: {out['status']}")
        size = _file_bytes(db)
        spent = out["step_count"]
        rows.append({"steps": spent, "bytes": size, "bytes_per_step": size / spent})
    doubling = [b["bytes"] / a["bytes"] for a, b in zip(rows, rows[1:], strict=False)]
    return {"rows": rows, "bytes_ratio_per_doubling": doubling}


def parallel_round(work: Path, tasks: int = 8, seconds: float = 0.2) -> dict[str, Any]:
    """One round of independent sleeping tasks: all at once, one at a time, and one alone."""
    round_of = _plan(
        *[(f"t{i}", "wait", {"seconds": seconds, "label": f"t{i}"}) for i in range(tasks)]
    )
    script = _script(round_of, _judgement("end_phase", 1.0), [_phase("p1", 1)])
    single = _script(
        _plan(("t0", "wait", {"seconds": seconds, "label": "t0"})),
        _judgement("end_phase", 1.0),
        [_phase("p1", 1)],
    )
    _, parallel_s = _run(work / "par.sqlite", script, [wait], "par", max_parallel=tasks)
    _, serial_s = _run(work / "ser.sqlite", script, [wait], "ser", max_parallel=1)
    _, one_s = _run(work / "one.sqlite", single, [wait], "one")
    return {
        "tasks": tasks,
        "task_seconds": seconds,
        "parallel_run_s": parallel_s,
        "one_at_a_time_run_s": serial_s,
        "one_task_run_s": one_s,
        "parallel_over_one_task": parallel_s / one_s,
        "one_at_a_time_over_parallel": serial_s / parallel_s,
    }


def many_threads(work: Path, count: int) -> dict[str, Any]:
    """Listing and resuming on a database of ``count`` threads (copies of real ones)."""
    db = work / "many.sqlite"
    review = _script(
        _plan(("t1", "note", {"text": "x"})), _judgement("end_phase", 1.0), [_phase("p1", 1)]
    )
    _run(db, review, [note], "seed-done")
    _run(db, review, [note], "seed-paused", review="plan")
    with sqlite3.connect(db) as conn:  # copy both threads' rows under new ids, in bulk
        for table in ("checkpoints", "writes", "phasegraph_threads"):
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            others = ", ".join(c for c in columns if c != "thread_id")
            for i in range(count // 2):
                for seed in ("seed-done", "seed-paused"):
                    conn.execute(
                        f"INSERT INTO {table} (thread_id, {others}) "
                        f"SELECT ?, {others} FROM {table} WHERE thread_id = ?",
                        (f"{seed}-{i}", seed),
                    )
    index = index_for(sqlite_database(str(db)))
    # what `phasegraph threads` does: look for threads missing from the index, then list
    listing = _best_of(3, lambda: (index.unindexed(), index.rows()))
    paused = _best_of(3, lambda: index.rows(status="awaiting_review"))
    threads = len(index.rows())

    with SqliteSaver.from_conn_string(str(db)) as saver:
        model = ScriptedChatModel(script=review)
        graph = build_graph(model=model, tools=[note], checkpointer=saver)
        resume_ms = sorted(_resume_ms(graph, f"seed-paused-{i}") for i in range(5))
    return {
        "threads": threads,
        "list_all_s": listing,
        "list_paused_s": paused,
        "resume_to_first_event_ms": resume_ms[len(resume_ms) // 2],
    }


def _resume_ms(graph: Any, thread_id: str) -> float:
    """Milliseconds from calling resume() on a paused thread to its first node's event."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    first: list[float] = []

    def on_event(_event: dict[str, Any]) -> None:
        if not first:
            first.append(time.perf_counter())

    start = time.perf_counter()
    resume(
        graph, config, {"action": "approve"}, context=Context(review="plan"), on_progress=on_event
    )
    return (first[0] - start) * 1000


def _best_of(times: int, fn: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks, print the table, write the raw figures as JSON."""
    parser = argparse.ArgumentParser(description="phasegraph benchmarks")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (seconds)")
    parser.add_argument("--out", default="bench/results/latest.json")
    parser.add_argument(
        "--no-local",
        action="store_true",
        help="skip the embedded local model's task suite (about 50 minutes on 2 cores; --quick "
        "skips it)",
    )
    parser.add_argument(
        "--local-model",
        default="",
        help="the model of the local suite (default: the default embedded model)",
    )
    args = parser.parse_args(argv)
    latency = Latency()
    sizes = [8, 64] if args.quick else [8, 24, 64]
    with tempfile.TemporaryDirectory(prefix="phasegraph-bench-") as tmp:
        work = Path(tmp)
        systems = compare(sizes, latency, work, tool_seconds=0.05)
        long_records = compare([64], latency, work, tool_seconds=0.05, record_tokens=1000)
        # The history budget is what sets phasegraph's tokens: the default (1,500) was chosen
        # by these figures, and the former default is measured beside it, for scale.
        larger_budget = measure(
            "phasegraph", max(sizes), latency, work, 0.05, settings={"prompt_token_budget": 3000}
        )
        per_action = overhead(64, work, repeats=1 if args.quick else 9)
        growth = checkpoint_growth(work, [25, 50, 100] if args.quick else [50, 100, 200])
        parallel = parallel_round(work)
        many = many_threads(work, 1_000 if args.quick else 10_000)
        commands = command_cost(work / "commands", 20 if args.quick else 100)
        local = (
            None
            if args.quick or args.no_local
            else run_suite(work, progress=_progress, model_name=args.local_model)
        )
    results = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {platform.python_version()}, {platform.system()}",
        "quick": args.quick,
        "latency_model": dataclasses.asdict(latency),
        "architectures": systems,
        "architectures_1000_token_records": long_records,
        "phasegraph_prompt_budget_3000": larger_budget,
        "overhead": per_action,
        "checkpoint_growth": growth,
        "parallel_round": parallel,
        "many_threads": many,
        "command_cost": commands,
        "local_model_suite": local,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(systems_table(results))
    print()
    print(table(results))
    print()
    print(commands_table(commands))
    if local is not None:
        print()
        print(local_table(local))
        print(local_stage_table(local))
    print(f"\nraw figures: {out}")
    return 0


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)










