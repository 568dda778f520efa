"""A separate process that runs or resumes one thread on a SQLite file, for the process tests.

    python runner.py DB THREAD start REQUEST --script FILE [--review LEVEL] [--log FILE]
    python runner.py DB THREAD resume [FEEDBACK_JSON] --script FILE [--log FILE]

Prints the run's outcome as one JSON line; a phasegraph error prints {"error": ...} and exits 2.
The tools write what they do to --log, so tests can count executions from the tool's own side.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from phasegraph import Context, PhasegraphError, ScriptedChatModel, build_graph, resume


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("thread")
    parser.add_argument("command", choices=["start", "resume"])
    parser.add_argument("payload", nargs="?")
    parser.add_argument("--script", required=True)
    parser.add_argument("--review", default="none")
    parser.add_argument("--log", default=None)
    parser.add_argument("--fast", action="store_true", help="slow tools sleep 0.05 s")
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

    model = ScriptedChatModel.from_file(args.script)
    config = {"configurable": {"thread_id": args.thread}}
    context = Context(review=args.review, max_steps=50)
    with SqliteSaver.from_conn_string(args.db) as saver:
        graph = build_graph(model=model, tools=[echo, slow, slow_idempotent], checkpointer=saver)
        try:
            if args.command == "start":
                out = graph.invoke({"request": args.payload}, config, context=context)
            else:
                feedback = json.loads(args.payload) if args.payload else None
                out = resume(graph, config, feedback, context=context)
        except PhasegraphError as exc:
            print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
            return 2
        keys = ("status", "final_summary", "step_count", "pending_review", "phases", "rounds")
        print(json.dumps({k: out.get(k) for k in keys}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
