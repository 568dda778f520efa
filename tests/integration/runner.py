"""A separate process that runs or resumes one thread on a database, for the process tests.

    python runner.py DB THREAD start REQUEST --script FILE [--review LEVEL] [--log FILE]
    python runner.py DB THREAD resume [FEEDBACK_JSON] --script FILE [--log FILE]
    python runner.py DB THREAD show
    python runner.py DB PREFIX many COUNT --script FILE [--log FILE]

DB is a SQLite file or a postgresql:// URL. Prints the run's outcome as one JSON line; a
phasegraph error prints {"error": ...} and exits 2. `many` runs COUNT threads PREFIX-0... at once
(asyncio, the async savers) and prints each one's status. The tools write what they do to --log,
so tests can count executions from the tool's own side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from langchain_core.tools import tool

from phasegraph import Context, PhasegraphError, ScriptedChatModel, build_graph, resume
from phasegraph.storage import aopen_checkpointer, open_checkpointer

from scripts import ANALYSIS, final_state, judgement, make_script, phases, round_plan


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("thread")
    parser.add_argument("command", choices=["start", "resume", "show", "many"])
    parser.add_argument("payload", nargs="?")
    parser.add_argument("--script", default=None)
    parser.add_argument(
        "--soak", metavar="WORKSPACE", default=None, help="the soak test's run, in WORKSPACE"
    )
    parser.add_argument("--review", default="none")
    parser.add_argument("--log", default=None)
    parser.add_argument("--fast", action="store_true", help="slow tools sleep 0.05 s")
    parser.add_argument(
        "--workspace", default=None, help="the built-in tools on, in WORKSPACE, one task a wave"
    )
    args = parser.parse_args()
    log = Path(args.log) if args.log else None

    def record(line: str) -> None:
        if log is not None:
            with log.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")

    @tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        record(f"echo {text}")
        return text

    def nap(seconds: float, label: str) -> str:
        record(f"start {label}")
        time.sleep(0.05 if args.fast else seconds)
        record(f"done {label}")
        return f"slept {seconds}"

    @tool
    def slow(seconds: float, label: str = "slow") -> str:
        """Sleep, then return (not idempotent: it leaves a trace each time)."""
        return nap(seconds, label)

    @tool
    def slow_idempotent(seconds: float, label: str = "slow") -> str:
        """Sleep, then return; safe to repeat."""
        return nap(seconds, label)

    slow_idempotent.metadata = {"idempotent": True}

    @tool
    def logged_write(label: str, seconds: float) -> str:
        """Write a note and run a command (not idempotent: it leaves a trace each time)."""
        record(f"start {label}")
        notes = Path(args.soak or ".") / "notes"
        notes.mkdir(exist_ok=True)
        (notes / f"{label}.txt").write_text(label, encoding="utf-8")
        subprocess.run(["sleep", str(seconds)], check=True)
        record(f"done {label}")
        return f"wrote {label}"

    @tool
    def halt() -> str:
        """The first call ends the process at once, as a crash does; later calls return."""
        marker = (log.parent if log is not None else Path(".")) / "halted"
        if not marker.exists():
            marker.touch()
            time.sleep(0.5)  # what the tasks before it saved reaches the database first
            os._exit(3)
        return "went on"

    tools = [echo, slow, slow_idempotent, halt]
    config = {"configurable": {"thread_id": args.thread}}
    context = Context(review=args.review, max_steps=50)
    if args.workspace:
        context = Context(review=args.review, max_steps=50, workspace=args.workspace,
                          max_parallel=1)  # fmt: skip
    if args.soak:
        model = ScriptedChatModel(script=soak_script())
        tools = [logged_write]
        context = Context(workspace=args.soak, max_steps=100, max_parallel=4)
    else:
        model = ScriptedChatModel.from_file(args.script)
    if args.command == "many":
        outcomes = asyncio.run(run_many(args.db, args.thread, int(args.payload), model, tools))
        print(json.dumps(outcomes))
        return 0
    with open_checkpointer(args.db) as saver:
        graph = build_graph(
            model=model,
            tools=tools,
            builtin_tools=bool(args.soak or args.workspace),
            checkpointer=saver,
        )
        try:
            if args.command == "start":
                out = final_state(graph, {"request": args.payload}, config, context=context)
            elif args.command == "show":
                out = graph.get_state(config).values
            else:
                feedback = json.loads(args.payload) if args.payload else None
                out = resume(graph, config, feedback, context=context)
        except PhasegraphError as exc:
            print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
            return 2
        keys = ("status", "final_summary", "step_count", "pending_review", "phases", "rounds")
        print(json.dumps({k: out.get(k) for k in keys}))
    return 0


def soak_script() -> dict[str, list[Any]]:
    """Three phases of two rounds; each round writes a file, runs a command and a logged write.

    The plan and the judgement are read off the prompt (phase id, round number), not off a
    counter: a process started to resume a killed one plans the same round the same way.
    """

    def where(messages: Any) -> tuple[str, int]:
        text = "\n".join(str(m.content) for m in messages)  # a repair prompt comes last
        phase = re.search(r"\(id (\w+)\)", text)
        round_no = re.search(r"[Rr]ound (\d+) of", text)
        return (phase.group(1) if phase else "p?"), int(round_no.group(1)) if round_no else 0

    def plan(messages: Any) -> dict[str, Any]:
        phase, round_no = where(messages)
        label = f"{phase}.r{round_no}"
        return round_plan(
            ("w", "write_file", {"path": f"out/{label}.txt", "content": f"{label}\n"}),
            ("c", "run_command", {"argv": ["sleep", "0.4"]}),
            ("n1", "logged_write", {"label": f"{label}.n1", "seconds": 0.6}),
            ("n2", "logged_write", {"label": f"{label}.n2", "seconds": 0.2}),
        )

    def judge(messages: Any) -> dict[str, Any]:
        _, round_no = where(messages)
        if round_no < 2:
            return judgement("continue_phase", completed=False, rate=0.5)
        return judgement()

    return make_script(
        request_analyser=[{**ANALYSIS, "task_type": "coding"}],  # writing may not run commands
        phase_planner=[phases("p1", "p2", "p3", rounds=2)],
        plan_tool_call=[plan],
        judge_tasks=[judge],
    )


async def run_many(db: str, prefix: str, count: int, model: Any, tools: list[Any]) -> list[Any]:
    """Run ``count`` threads at once on one saver; each one's status or error."""

    async def one(graph: Any, thread_id: str) -> Any:
        try:
            out = await graph.ainvoke(
                {"request": f"Request of {thread_id}"},
                {"configurable": {"thread_id": thread_id}},
                context=Context(max_steps=50),
            )
            return {"thread": thread_id, "status": out["status"], "summary": out["final_summary"]}
        except Exception as exc:  # reported, so the test sees every error that reached a user
            traceback.print_exc()
            return {"thread": thread_id, "error": type(exc).__name__, "message": str(exc)}

    async with aopen_checkpointer(db) as saver:
        graph = build_graph(model=model, tools=tools, checkpointer=saver)
        return list(await asyncio.gather(*(one(graph, f"{prefix}-{i}") for i in range(count))))


if __name__ == "__main__":
    sys.exit(main())
