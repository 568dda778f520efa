"""A local model on small workspace tasks: phasegraph against `create_react_agent`.

    python -m bench.local_suite [--model local:qwen2.5-coder-1.5b] [--modes alone,checks]
                                [--set suite|held-back|new-kinds]

Both systems get the same model (one llama.cpp instance in this process), the same six built-in
workspace tools bound to a fresh copy of the task's files (a tool's error comes back to the
model as text in both), a SQLite checkpointer and the same budget of model calls and tool
actions together, `BUDGET`: the ReAct agent's recursion limit (a model call and a tool step per
action, plus its last answer) and phasegraph's `max_steps` (its phase plan, plans, judges,
replans and tool executions; the analysis and the summary are not counted).

Two modes: ``alone``, the request only; ``checks``, the request with the checks a caller would
write (phasegraph takes them as its ``checks`` input; the ReAct agent reads them at the end of
its request, which is how a caller would tell a plain tool loop). A task succeeds when its
checker accepts the workspace afterwards, however the run ended; a ReAct run that spends its
budget ends at the recursion limit, which is how that agent stops. For phasegraph the suite also
counts runs that said ``completed`` while the checker failed: the honesty figure; and those that
said ``completed`` with ``evidence.verified`` (checks of code read every deliverable) while the
checker failed: the figure for the claim of checked success.

The checkers are stricter than the caller's checks (they read the whole file the way a person
would), so a run that passes its checks can still fail its task.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.errors import GraphRecursionError

from bench.held_back import HELD_BACK
from bench.new_kinds import NEW_KINDS
from bench.suite_tasks import TASKS, WorkspaceTask
from phasegraph import Context, build_graph
from phasegraph.models import model_from_context
from phasegraph.nodes.deps import workspace_settings
from phasegraph.report.history import run_history
from phasegraph.tools.builtin import workspace_tools

with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.x; still shipped
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import ToolNode, create_react_agent

#: Tool actions the ReAct agent may make on one task.
ACTIONS = 8
#: Model calls and tool actions each system may spend on one task.
BUDGET = 2 * ACTIONS + 1

MODES = ("alone", "checks")
#: The task sets by name: the suite, and the two held-back sets reported apart from it.
TASK_SETS: dict[str, tuple[WorkspaceTask, ...]] = {
    "suite": TASKS,
    "held-back": HELD_BACK,
    "new-kinds": NEW_KINDS,
}

























def _phasegraph(
    model: BaseChatModel, root: Path, task: WorkspaceTask, checks: bool, db: Path
) -> dict[str, Any]:
    context = Context(workspace=str(root), max_steps=BUDGET)
    thread = f"pg-{task.name}-{uuid.uuid4().hex[:6]}"
    config = {"configurable": {"thread_id": thread}}
    start: dict[str, Any] = {"request": task.request}
    if checks:
        start["checks"] = list(task.checks)
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=model, checkpointer=saver)
        graph.invoke(start, config, context=context)
        out = graph.get_state(config).values  # the whole state: the run's counters too
        stages = run_history(graph, config)["stages"]
    return {
        "ended": str(out.get("status")),
        "verified": bool((out.get("evidence") or {}).get("verified")),
        "thread": thread,
        "steps": out.get("step_count", 0),
        "llm_calls": out.get("llm_calls", 0),
        "prompt_tokens": out.get("prompt_tokens", 0),
        "cached_tokens": out.get("cached_tokens", 0),
        "completion_tokens": out.get("completion_tokens", 0),
        "prompt_ms": out.get("prompt_ms", 0),
        "answer_ms": out.get("answer_ms", 0),
        "stages": [s for s in stages if s["llm_calls"]],
    }


def _checks_in_words(checks: Sequence[str]) -> str:
    """Caller checks as a sentence, for a system that only reads its request."""
    words = []
    for check in checks:
        kind, _, rest = check.partition(":")
        path, _, text = rest.partition(":")
        if kind == "contains":
            words.append(f"{path} contains {text!r}")
        elif kind == "matches":
            words.append(f"{path} matches the regular expression {text!r}")
        elif kind == "exists":
            words.append(f"{path} exists")
        else:
            words.append(f"the command {rest!r} succeeds")
    return "It is done when: " + "; ".join(words) + "."


def _react(
    model: BaseChatModel, root: Path, task: WorkspaceTask, checks: bool, db: Path
) -> dict[str, Any]:
    tools = list(workspace_tools(workspace_settings(Context(workspace=str(root)))))
    thread = f"react-{task.name}-{uuid.uuid4().hex[:6]}"
    config = {"configurable": {"thread_id": thread}, "recursion_limit": BUDGET}
    request = task.request + ("\n" + _checks_in_words(task.checks) if checks else "")
    with SqliteSaver.from_conn_string(str(db)) as saver, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        # a tool's error goes back to the model as text, as phasegraph's judge gets it
        node = ToolNode(tools, handle_tool_errors=True)
        agent = create_react_agent(model, node, checkpointer=saver)
        try:
            agent.invoke({"messages": [("user", request)]}, config)
            ended = "answered"
        except GraphRecursionError:
            ended = "recursion_limit"
    return {"ended": ended, "thread": thread}


SYSTEMS: dict[str, Callable[[BaseChatModel, Path, WorkspaceTask, bool, Path], dict[str, Any]]] = {
    "phasegraph": _phasegraph,
    "create_react_agent": _react,
}


def run_suite(
    work: Path,
    tasks: Sequence[WorkspaceTask] = TASKS,
    progress: Callable[[str], None] = lambda _text: None,
    *,
    model_name: str = "",
    modes: Sequence[str] = MODES,
    systems: Sequence[str] = tuple(SYSTEMS),
) -> dict[str, Any]:
    """Every task on every system and mode; per run: ended how, checker verdict, wall seconds."""
    model = model_from_context(Context(model=model_name))
    tag = _slug(model_name or "default")
    runs: list[dict[str, Any]] = []
    for mode in modes:
        for task in tasks:
            for system in systems:
                name = f"{tag}-{mode}-{system}-{task.name}-{uuid.uuid4().hex[:4]}"
                root = task.fresh(work / name)
                db = work / f"{tag}-{mode}-{system}.sqlite"
                started = time.perf_counter()
                try:
                    record = SYSTEMS[system](model, root, task, mode == "checks", db)
                except Exception as error:  # a crash is a failed task, with its reason kept
                    record = {"ended": f"error: {type(error).__name__}: {error}"[:200]}
                success = task.check(root)
                runs.append(
                    {
                        "system": system,
                        "mode": mode,
                        "task": task.name,
                        **record,
                        "success": success,
                        "completed_but_failed": record["ended"] == "completed" and not success,
                        # the claim of checked success: completed and verified by its checks
                        "verified_but_failed": record["ended"] == "completed"
                        and bool(record.get("verified"))
                        and not success,
                        "wall_s": round(time.perf_counter() - started, 1),
                        "workspace": str(root),
                        "db": str(db),
                    }
                )
                progress(f"local suite [{model_name or 'default'}]: {json.dumps(runs[-1])}")
    return {
        "model": model_name or "default",
        "model_class": type(model).__name__,
        "budget": BUDGET,
        "tasks": [t.name for t in tasks],
        "runs": runs,
        "totals": totals(runs),
    }


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-")[:40] or "model"


def totals(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per system and mode: tasks succeeded, wall time, completed-but-failed runs."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        key = f"{run['system']}/{run['mode']}"
        row = out.setdefault(
            key,
            {
                "system": run["system"],
                "mode": run["mode"],
                "tasks": 0,
                "succeeded": 0,
                "wall_s": 0.0,
                "completed_but_failed": 0,
                "verified_but_failed": 0,
            },
        )
        row["tasks"] += 1
        row["succeeded"] += int(run["success"])
        row["wall_s"] = round(row["wall_s"] + run["wall_s"], 1)
        row["completed_but_failed"] += int(run["completed_but_failed"])
        row["verified_but_failed"] += int(run.get("verified_but_failed", False))
    return out


def table(result: dict[str, Any]) -> str:
    """The suite's figures as text: one line per system and mode, with each task's verdict."""
    names = result["tasks"]
    head = f"model {result['model']}, budget {result['budget']}"
    lines = [
        head,
        f"{'system':<20} {'mode':<7} {'succeeded':>9} {'wall s':>7} {'said done, failed':>17}"
        f" {'verified, failed':>16}  per task",
    ]
    for row in result["totals"].values():
        mine = {
            r["task"]: r
            for r in result["runs"]
            if r["system"] == row["system"] and r["mode"] == row["mode"]
        }
        cells = " ".join(
            f"{n}={'ok' if mine[n]['success'] else 'no'}" for n in names if n in mine
        )
        lines.append(
            f"{row['system']:<20} {row['mode']:<7} {row['succeeded']:>4} of {row['tasks']:<2} "
            f"{row['wall_s']:>7.0f} {row['completed_but_failed']:>17} "
            f"{row.get('verified_but_failed', 0):>16}  {cells}"
        )
    return "\n".join(lines)


def stage_table(result: dict[str, Any]) -> str:
    """Phasegraph's model use by stage over the suite: where the time goes, and what was reused."""
    rows: dict[str, dict[str, float]] = {}
    for run in result["runs"]:
        for stage in run.get("stages") or []:
            row = rows.setdefault(stage["stage"], dict.fromkeys(STAGE_KEYS, 0.0))
            for key in STAGE_KEYS:
                row[key] += float(stage.get(key) or 0)
    lines = [
        f"{'stage':<12} {'calls':>5} {'prompt tok':>10} {'cached':>7} {'answer tok':>10} "
        f"{'read s':>7} {'write s':>8} {'wall s':>7}"
    ]
    for name, row in rows.items():
        lines.append(
            f"{name:<12} {row['llm_calls']:>5.0f} {row['prompt_tokens']:>10.0f} "
            f"{row['cached_tokens']:>7.0f} {row['completion_tokens']:>10.0f} "
            f"{row['prompt_ms'] / 1000:>7.0f} {row['answer_ms'] / 1000:>8.0f} "
            f"{row['seconds']:>7.0f}"
        )
    return "\n".join(lines)


STAGE_KEYS = (
    "llm_calls",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "prompt_ms",
    "answer_ms",
    "seconds",
)


def main(argv: list[str] | None = None) -> int:
    """Run the suite on one model and print its table; the raw figures go to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="a model setting; empty: the default model")
    parser.add_argument("--modes", default=",".join(MODES), help="alone,checks or one of them")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument(
        "--set",
        default="suite",
        choices=tuple(TASK_SETS),
        help="suite: the tasks faults are traced on; held-back and new-kinds: tasks never "
        "traced or tuned on",
    )
    parser.add_argument("--tasks", default="", help="task names, comma-separated; empty: all")
    parser.add_argument("--work", default="", help="folder for workspaces and threads")
    parser.add_argument("--out", default="", help="write the raw figures here (JSON)")
    args = parser.parse_args(argv)
    tasks = TASK_SETS[args.set]
    # A misspelt name would otherwise cost a long run before it shows as an error per task.
    for option, given, known in (
        ("--modes", args.modes, MODES),
        ("--systems", args.systems, tuple(SYSTEMS)),
        ("--tasks", args.tasks, tuple(t.name for t in tasks)),
    ):
        unknown = [name for name in given.split(",") if name and name not in known]
        if unknown:
            parser.error(f"{option}: unknown {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = [t for t in tasks if not args.tasks or t.name in args.tasks.split(",")]
    work = Path(args.work or f"/tmp/phasegraph-suite-{uuid.uuid4().hex[:6]}")
    work.mkdir(parents=True, exist_ok=True)
    result = run_suite(
        work,
        chosen,
        lambda text: print(text, file=sys.stderr, flush=True),
        model_name=args.model,
        modes=[m for m in args.modes.split(",") if m],
        systems=[s for s in args.systems.split(",") if s],
    )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(table(result))
    print(stage_table(result))
    print(f"workspaces and threads: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
