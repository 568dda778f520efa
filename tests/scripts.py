"""Scripts for the scripted model and small real tools, shared by unit and integration tests."""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.tools import BaseTool, tool

ANALYSIS = {
    "core_goal": "Write a short report about the files in the workspace",
    "requirements": ["list the files", "write report.md"],
    "constraints": [],
    "complexity": "medium",
    "task_type": "writing",
    "estimated_phases": 2,
    "clarification_needed": False,
    "clarification_questions": [],
}


def phase(pid: str, rounds: int = 1, tools: list[str] | None = None) -> dict[str, Any]:
    return {
        "id": pid,
        "name": f"phase {pid}",
        "goal": f"finish {pid}",
        "estimated_rounds": rounds,
        "dependencies": [],
        "allowed_tools": tools or [],
    }


def phases(*ids: str, rounds: int = 1) -> dict[str, Any]:
    return {"phases": [phase(i, rounds) for i in ids], "execution_strategy": "in order"}


def round_plan(*tasks: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "tasks": [
            {"id": tid, "tool": tool_name, "arguments": args, "purpose": "test"}
            for tid, tool_name, args in tasks
        ],
        "reasoning": "scripted",
    }


ECHO_ROUND = round_plan(("t1", "echo", {"text": "hello"}))


def echo_round(text: str) -> dict[str, Any]:
    """A round of one echo of ``text`` (distinct texts: no repeated_action trigger)."""
    return round_plan(("t1", "echo", {"text": text}))


def judgement(
    next_action: str = "end_phase",
    completed: bool = True,
    rate: float = 1.0,
    question: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "task_evaluation": [],
        "phase_completion_rate": rate,
        "phase_completed": completed,
        "internal_analysis": "scripted",
        "user_summary": f"round judged: {next_action}",
        "next_action": next_action,
        "failed_reason": extra.get("failed_reason"),
        "question": question,
    }


CONTINUE = judgement("continue_phase", completed=False, rate=0.3)

SUMMARY = {
    "final_summary": "## Report\n\nScripted summary of the run.",
    "highlights": ["it ran"],
    "unfinished": [],
    "next_steps": ["none"],
    "quality_assessment": "fine",
}


def make_script(**overrides: list[Any]) -> dict[str, list[Any]]:
    """A script that completes a two-phase run; keyword arguments replace one function's items."""
    script: dict[str, list[Any]] = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1", "p2")],
        "plan_tool_call": [ECHO_ROUND],
        "judge_tasks": [judgement()],
        "replanner": [{"status": "replanned", "phases": [phase("p9")]}],
        "summarizer": [SUMMARY],
    }
    script.update(copy.deepcopy(overrides))
    return script


class ToolLog:
    """What the test tools did, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []


def make_tools(log: ToolLog) -> list[BaseTool]:
    @tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        log.calls.append(("echo", {"text": text}))
        return text

    @tool
    def fail(reason: str = "it broke") -> str:
        """Always raise an error."""
        log.calls.append(("fail", {"reason": reason}))
        raise RuntimeError(reason)

    return [echo, fail]


def distinct_plans(tasks_per_round: int = 1, tool: str = "echo") -> Any:
    """A plan_tool_call item that never repeats a call (no repeated_action trigger)."""
    count = {"n": 0}

    def item(_messages: Any) -> dict[str, Any]:
        count["n"] += 1
        return round_plan(
            *[(f"t{i}", tool, {"text": f"call {count['n']}.{i}"}) for i in range(tasks_per_round)]
        )

    return item


def rising_judgements(step: float = 0.01) -> Any:
    """A judge_tasks item whose completion rate rises a little each round (no stall)."""
    count = {"n": 0}

    def item(_messages: Any) -> dict[str, Any]:
        count["n"] += 1
        return judgement("continue_phase", completed=False, rate=min(0.99, step * count["n"]))

    return item


def named_phase(pid: str, name: str, rounds: int = 1) -> dict[str, Any]:
    return {**phase(pid, rounds), "name": name, "goal": f"{name.lower()} for the report"}


def multi_phase_script() -> dict[str, list[Any]]:
    """A run a person would want to look at: three phases, a failed task, a slow round, a
    replan, a plan review and two checks, one of which fails at the end."""
    return {
        "request_analyser": [ANALYSIS],
        "phase_planner": [
            {
                "phases": [named_phase("p1", "Gather", 2), named_phase("p2", "Draft", 2)],
                "execution_strategy": "in order",
            }
        ],
        "plan_tool_call": [
            round_plan(
                ("t1", "echo", {"text": "listing"}),
                ("t2", "fail", {"reason": "disk is read-only"}),
            ),
            round_plan(
                ("t1", "wait", {"seconds": 0.4}),
                ("t2", "write_file", {"path": "out.txt", "content": "hello world"}),
            ),
            round_plan(("t1", "echo", {"text": "draft"})),
            round_plan(("t1", "echo", {"text": "finish"})),
        ],
        "judge_tasks": [
            judgement("continue_phase", completed=False, rate=0.4),
            judgement(),
            judgement(
                "replan", completed=False, rate=0.2, failed_reason="the draft misses the notes"
            ),
            judgement(),
        ],
        "replanner": [{"status": "replanned", "phases": [named_phase("p3", "Finish")]}],
        "summarizer": [SUMMARY],
    }


MULTI_PHASE_CHECKS = ["contains:out.txt:hello", "contains:out.txt:goodbye"]


def make_slow_tools(log: ToolLog) -> list[BaseTool]:
    """echo and fail, and wait, which takes the time it is given."""

    @tool
    def wait(seconds: float) -> str:
        """Wait some seconds."""
        log.calls.append(("wait", {"seconds": seconds}))
        time.sleep(seconds)
        return f"waited {seconds} s"

    return [*make_tools(log), wait]


def processes_with(marker: str) -> list[str]:
    """The pids of this machine's processes whose command line holds ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\x00", b" ")
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(pid)
    return found


def final_state(graph: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """``graph.invoke(...)``, then the thread's whole state (invoke gives the output schema's).

    A pause's ``__interrupt__``, which only the invoke's answer carries, is kept beside it.
    """
    out = graph.invoke(*args, **kwargs)
    config = args[1] if len(args) > 1 else kwargs.get("config")
    values = dict(graph.get_state(config).values)
    if "__interrupt__" in out:
        values["__interrupt__"] = out["__interrupt__"]
    return values


def latest(_old: str, new: str) -> str:
    """The reducer that keeps the newest value."""
    return new


class Parent(TypedDict, total=False):
    """A caller's graph with phasegraph nodes: each gives back the request and its status."""

    request: Annotated[str, latest]
    status: Annotated[str, latest]
