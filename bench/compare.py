"""phasegraph against `create_react_agent` and a tutorial plan-and-execute loop, on one task.

Each architecture runs `ChainTask` with the same `PolicyModel` kind, the same tool and a SQLite
checkpointer; `Meter` counts every model call. Figures per system and task size: model calls,
prompt tokens (total and largest prompt), simulated wall time (the model's priced time plus the
measured time of everything else: framework, checkpoints, tools), tool actions made, and how
many record codes the final answer gives.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from bench.baselines import plan_execute, react
from bench.sim import (
    SIMULATED,
    WIDTH,
    ChainTask,
    Latency,
    Meter,
    PolicyModel,
    chains_ended,
    codes_in,
    forced_call,
    frontier,
    prompt_text,
    report,
)
from phasegraph import Context, build_graph

# Levels per phase. A phase may estimate up to 4 rounds, but SPEC's stuck-phase check replans a
# phase whose third round ends without completion, so a plan that fits the rules uses 3.
ROUNDS_PER_PHASE = 3
SHORT_PHASE_ROUNDS = 2
"""Levels per phase in the overhead's second shape: several short phases of two rounds each."""


def _levels(text: str) -> tuple[int, int]:
    """The levels a phase covers, read back from its goal in the prompt."""
    marker = text.split("levels ", 1)[1]
    first, last = marker.split(" to ", 1)
    return int(first), int(last.split()[0].rstrip("."))


def phasegraph_policy(
    task: ChainTask, rounds_per_phase: int = ROUNDS_PER_PHASE
) -> Callable[[list[BaseMessage], str | None], AIMessage]:
    """Phasegraph's stages, each answering from what its prompt shows.

    The phase plan gives each phase ``rounds_per_phase`` levels, one round each.
    """
    phases = math.ceil(task.levels / rounds_per_phase)
    replans = {"n": 0}

    def _phases_from(level: int, prefix: str) -> dict[str, Any]:
        spans = [
            (a, min(task.levels, a + rounds_per_phase) - 1)
            for a in range(level, task.levels, rounds_per_phase)
        ][:5]
        return {
            "phases": [
                {
                    "id": f"{prefix}{i}",
                    "name": f"levels {a}-{b}",
                    "goal": f"Read the records of levels {a} to {b} of every chain.",
                    "estimated_rounds": b - a + 1,
                    "dependencies": [],
                    "allowed_tools": ["read_record"],
                }
                for i, (a, b) in enumerate(spans)
            ],
            "execution_strategy": f"one level per round, {task.chains} reads at once",
        }

    def answer(messages: list[BaseMessage], forced: str | None) -> AIMessage:
        text = prompt_text(messages)
        if forced == "request_analyser":
            found = frontier(text)
            start = ", ".join(found[1]) if found else ""
            return forced_call(
                forced,
                {
                    "core_goal": f"Read every record of {task.chains} chains and report every code",
                    "requirements": [
                        f"start from the records {start}",
                        "read each chain to its end",
                        "report the code of every record",
                    ],
                    "constraints": [],
                    "complexity": "medium",
                    "task_type": "research",
                    "estimated_phases": min(5, phases),
                    "clarification_needed": False,
                    "clarification_questions": [],
                },
            )
        if forced == "phase_planner":
            return forced_call(forced, _phases_from(0, "p"))
        if forced == "plan_tool_call":
            found = frontier(text)
            keys = found[1] if found else []
            return forced_call(
                forced,
                {
                    "tasks": [
                        {
                            "id": f"t{j}",
                            "tool": "read_record",
                            "arguments": {"key": k},
                            "purpose": f"read {k}",
                            "depends_on": [],
                        }
                        for j, k in enumerate(keys)
                    ],
                    "reasoning": "the reads of one level are independent",
                },
            )
        if forced == "judge_tasks":
            results = text.split("Results of this round:", 1)[-1]
            first, last = _levels(text)
            found = frontier(results)
            ended = chains_ended(results) or (found is not None and found[0] > last)
            done = (found[0] - first) / (last - first + 1) if found else 0.0
            codes = ", ".join(f"{k} code {v}" for k, v in sorted(codes_in(results).items()))
            follow = (
                "the chains have ended"
                if chains_ended(results)
                else (f"next keys: {', '.join(found[1])}" if found else "no next keys")
            )
            return forced_call(
                forced,
                {
                    "task_evaluation": [],
                    "phase_completion_rate": 1.0 if ended else min(0.9, done),
                    "phase_completed": ended,
                    "internal_analysis": "reads checked",
                    "user_summary": f"Read {codes}; {follow}.",
                    "next_action": "end_phase" if ended else "continue_phase",
                    "failed_reason": None,
                    "question": None,
                },
            )
        if forced == "summarizer":
            return forced_call(
                forced,
                {
                    "final_summary": report(text),
                    "highlights": [],
                    "unfinished": [],
                    "next_steps": [],
                    "quality_assessment": "as read",
                },
            )
        if forced == "replanner":
            found = frontier(text)
            if chains_ended(text) or found is None:
                return forced_call(forced, {"status": "done", "response": report(text)})
            replans["n"] += 1
            return forced_call(
                forced, {"status": "replanned"} | _phases_from(found[0], f"r{replans['n']}-")
            )
        return AIMessage(content=report(text))

    return answer


def run_phasegraph(
    task: ChainTask,
    saver: BaseCheckpointSaver[Any] | None,
    config: dict[str, Any],
    rounds_per_phase: int = ROUNDS_PER_PHASE,
    **settings: Any,
) -> str:
    """Run the task through phasegraph; returns the written summary.

    ``settings`` are Context fields beyond the defaults (the prompt budget, say).
    """
    model = PolicyModel(policy=phasegraph_policy(task, rounds_per_phase))
    graph = build_graph(model=model, tools=[task.tool()], checkpointer=saver)
    out = graph.invoke(
        {"request": task.request},
        config,
        context=Context(
            review="none",
            max_steps=500,
            max_parallel=task.width,
            max_tasks_per_round=task.width,
            **settings,
        ),
    )
    if out["status"] != "completed":
        raise RuntimeError(f"phasegraph run ended {out['status']}: {out.get('error')}")
    return str(out["final_summary"])


Runner = Callable[[ChainTask, BaseCheckpointSaver[Any] | None, dict[str, Any]], str]

SYSTEMS: dict[str, Runner] = {
    "phasegraph": run_phasegraph,
    "react": react.run,
    "plan_execute": plan_execute.run,
}
SHORT_PHASES = "phasegraph_short_phases"
"""phasegraph in phases of two rounds each (the overhead's second shape)."""
RUNNERS: dict[str, Runner] = SYSTEMS | {
    SHORT_PHASES: functools.partial(run_phasegraph, rounds_per_phase=SHORT_PHASE_ROUNDS)
}


@dataclass(frozen=True)
class Shape:
    """A run shape whose overhead per action is measured against ReAct's on the same task."""

    system: str
    """The phasegraph runner (`RUNNERS`)."""
    width: int
    """Chains of the task: the reads a round (a level) makes at once."""
    levels: int
    """Levels of the task: one round each."""
    rounds_per_phase: int
    """Rounds (levels) in each of phasegraph's phases."""

    @property
    def actions(self) -> int:
        """Tool actions of the task."""
        return self.width * self.levels


def overhead_shapes(actions: int) -> dict[str, Shape]:
    """The shapes of `overhead`, by the prefix of their figures.

    ``phasegraph``: the comparison's chains, 8 reads a round in phases of three rounds.
    ``short_phases``: several short phases of two rounds each, 4 reads a round (4 phases, 32
    reads), where the work of each phase and each round (analysis, phase plan, plan, judge,
    summary, every super-step's checkpoint) falls on fewer actions.
    """
    return {
        "phasegraph": Shape("phasegraph", WIDTH, actions // WIDTH, ROUNDS_PER_PHASE),
        "short_phases": Shape(SHORT_PHASES, 4, 8, SHORT_PHASE_ROUNDS),
    }


def measure(
    system: str,
    actions: int,
    latency: Latency,
    work: Path,
    tool_seconds: float = 0.0,
    record_tokens: int = 300,
    in_memory: bool = False,
    settings: dict[str, Any] | None = None,
    width: int = WIDTH,
    sqlite_sync: str = "",
) -> dict[str, Any]:
    """One run of one system on a task of ``actions`` tool actions (SQLite checkpoints).

    ``settings`` (phasegraph only) are Context fields its run uses beyond the defaults;
    ``width`` is the task's number of chains, the reads a round (a level) makes at once;
    ``sqlite_sync``: the SQLite file's ``synchronous`` setting, when not SQLite's default.
    """
    task = ChainTask(
        levels=actions // width,
        width=width,
        tool_seconds=tool_seconds,
        record_tokens=record_tokens,
    )
    meter = Meter(latency)
    db = work / f"{system}-{actions}-{time.monotonic_ns()}.sqlite"
    config: dict[str, Any] = {"callbacks": [meter], "configurable": {"thread_id": "bench"}}
    with contextlib.ExitStack() as stack:
        saver: BaseCheckpointSaver[Any] = (
            InMemorySaver()
            if in_memory
            else stack.enter_context(SqliteSaver.from_conn_string(str(db)))
        )
        if sqlite_sync and isinstance(saver, SqliteSaver):
            saver.conn.execute(f"PRAGMA synchronous = {sqlite_sync}")
        SIMULATED.reset()
        # the runs before left garbage; collected inside this run, it would be counted as this
        # system's time (a ReAct run's transcripts, say, landing on the phasegraph run after it)
        gc.collect()
        start = time.perf_counter()
        runner = RUNNERS[system]
        if settings:
            if system != "phasegraph":
                raise ValueError("settings are phasegraph's Context fields")
            runner = functools.partial(run_phasegraph, **settings)
        answer = runner(task, saver, config)
        real_s = time.perf_counter() - start
    figures = meter.figures()
    return figures | {
        "system": system,
        "record_tokens": record_tokens,
        "actions_needed": task.actions,
        "tool_actions": len(task.reads),
        "all_records_read": task.complete(),
        "codes_reported": len(codes_in(answer)),
        "real_s": real_s,
        # what the run took but the simulated model's and tool's own work: the framework's time
        "framework_s": real_s - SIMULATED.seconds,
        "simulated_wall_s": real_s + figures["model_s"],
    }


def compare(
    sizes: list[int], latency: Latency, work: Path, tool_seconds: float, record_tokens: int = 300
) -> list[dict[str, Any]]:
    """Every system on every size."""
    return [
        measure(system, actions, latency, work, tool_seconds, record_tokens)
        for actions in sizes
        for system in SYSTEMS
    ]


def overhead(actions: int, work: Path, repeats: int = 3) -> dict[str, Any]:
    """Framework time per tool action: a model and tools that take no time.

    Each shape of `overhead_shapes` against `create_react_agent` on the same task. With SQLite
    checkpoints (the target), with both SQLite files at ``synchronous=NORMAL`` (as
    `open_checkpointer` opens them: a commit is then not a disk flush each), and in memory,
    which leaves the frameworks' own work: the difference is what each one writes to the file.
    Runs alternate between the systems, in reverse order every other repeat, so that a slow
    spell of the machine's disk falls on all and no system always follows the same one. Figures
    are medians of ``repeats``; the ratio to ReAct's is the median of the runs' paired ratios
    (`paired_ratio`).

    The time counted is the framework's (``framework_s``): the run's, less the CPU time the
    simulated model and tool spend on their own work (`SIMULATED`), which a model and tools
    that take no time do not have. The whole run's time is kept too (``wall`` keys).
    """
    free = Latency(0, 0, 0)
    shapes = overhead_shapes(actions)
    out: dict[str, Any] = {"actions": actions} | {
        f"{prefix}_shape": dataclasses.asdict(shape) for prefix, shape in shapes.items()
    }
    runs = [(prefix, system) for prefix in shapes for system in (shapes[prefix].system, "react")]
    for label, in_memory, sync in (
        ("", False, ""),
        ("_sync_normal", False, "NORMAL"),
        ("_in_memory", True, ""),
    ):
        times: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
        walls: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
        for repeat in range(repeats):
            order = list(times.items())
            for (prefix, system), took in order if repeat % 2 == 0 else order[::-1]:
                shape = shapes[prefix]
                figures = measure(
                    system,
                    shape.actions,
                    free,
                    work,
                    in_memory=in_memory,
                    width=shape.width,
                    sqlite_sync=sync,
                )
                took.append(figures["framework_s"] / shape.actions)
                walls[prefix, system].append(figures["real_s"] / shape.actions)
        for prefix, shape in shapes.items():
            mine, react_s = times[prefix, shape.system], times[prefix, "react"]
            wall, react_wall = walls[prefix, shape.system], walls[prefix, "react"]
            # the chains' ReAct figure keeps its old name
            react_key = "react" if prefix == "phasegraph" else f"{prefix}_react"
            out |= {
                f"{prefix}_ms_per_action{label}": statistics.median(mine) * 1000,
                f"{react_key}_ms_per_action{label}": statistics.median(react_s) * 1000,
                f"{prefix}_over_react{label}": paired_ratio(mine, react_s),
                f"{prefix}_wall_over_react{label}": paired_ratio(wall, react_wall),
            }
    return out


def paired_ratio(mine: list[float], theirs: list[float]) -> float:
    """The median of the ratios of runs made one after the other (the i-th of each).

    A pair shares the machine's state of the moment, so a slow or a fast spell cancels out in
    its ratio; a best-of-n of each instead compares the luckiest run of one system with the
    luckiest of the other, and one lucky run moved it by a tenth.
    """
    return statistics.median(a / b for a, b in zip(mine, theirs, strict=True))
