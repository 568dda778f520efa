"""How often a check the request analysis proposes is wrong, by kind of check.

    python -m bench.proposals [--model local:qwen2.5-coder-0.5b] [--set suite,probes]

Runs only the analysis (one model call a request) of each task with a known right result
(`WorkspaceTask.solution`: the local suite and `bench.probe_tasks`), then evaluates every
check the analysis kept on a workspace as a right run leaves it. A kept check that fails
there is wrong: it would hold a right run open. One that passes there is right. Per kind:
proposed (before code's filter), kept, right, wrong; the checks and the notes of what code
dropped are in ``--out``. Kinds wrong more often than right are the ones the analysis must
refuse (`phasegraph.policy.REFUSED_KINDS`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from bench.probe_tasks import PROBES
from bench.suite_tasks import TASKS, WorkspaceTask
from phasegraph import Context, build_graph
from phasegraph.facts.checks import evaluate_checks
from phasegraph.models.selection import model_from_context
from phasegraph.tools.checks import HAS_TEXT

SETS = {"suite": TASKS, "probes": PROBES}


def analysed(graph: Any, task: WorkspaceTask, work: Path) -> dict[str, Any]:
    """The analysis of one task: its kept checks judged on the right result, its notes."""
    root = task.fresh(work / f"{task.name}-{uuid.uuid4().hex[:4]}")
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    context = Context(workspace=str(root), review="none")
    graph.invoke({"request": task.request}, config, context=context, interrupt_after=["analyse"])
    values = graph.get_state(config).values
    kept = [c for c in values.get("checks") or [] if c.get("source") == "analysis"]
    notes = list((values.get("structured_request") or {}).get("check_notes") or [])
    right_root = task.solved(work / f"{task.name}-right-{uuid.uuid4().hex[:4]}")
    judged = evaluate_checks(kept, Context(workspace=str(right_root)))
    return {
        "task": task.name,
        "kept": [{"label": c["label"], "kind": kind_of(c), "right": c["passed"]} for c in judged],
        "dropped": notes,
    }


def kind_of(check: dict[str, Any]) -> str:
    """A check's kind, with "holds some text" (the check of a file to write) its own."""
    return "has_text" if check.get("pattern") == HAS_TEXT else str(check["kind"])


def kind_table(rows: list[dict[str, Any]]) -> str:
    """Per kind of check: proposed, kept, right and wrong on the right results."""
    proposed: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for row in rows:
        for check in row["kept"]:
            proposed[check["kind"]] += 1
            kept[check["kind"]] += 1
            right[check["kind"]] += bool(check["right"])
        for note in row["dropped"]:
            label = note.removeprefix("dropped the proposed check ")
            kind = "unreadable" if label.startswith("{") else label.split(":", 1)[0]
            # a file the analysis keeps an exists check for is held to "has some text"
            proposed["has_text" if kind == "exists" else kind] += 1
    lines = [f"{'kind':<10}{'proposed':>9}{'kept':>6}{'right':>7}{'wrong':>7}"]
    for kind in sorted(proposed):
        lines.append(
            f"{kind:<10}{proposed[kind]:>9}{kept[kind]:>6}{right[kind]:>7}"
            f"{kept[kind] - right[kind]:>7}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Analyse each task of the chosen sets and print the table by kind."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="a model setting; empty: the default model")
    parser.add_argument("--set", default="suite,probes", help="suite, probes or both")
    parser.add_argument("--out", default="", help="write each task's checks here (JSON)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.set.split(",") if name not in SETS]
    if unknown:
        parser.error(f"--set: unknown {', '.join(unknown)}; known: {', '.join(SETS)}")
    model = model_from_context(Context(model=args.model))
    graph = build_graph(model=model, checkpointer=InMemorySaver())
    rows = []
    with tempfile.TemporaryDirectory(prefix="phasegraph-proposals-") as work:
        for name in args.set.split(","):
            for task in SETS[name]:
                rows.append({"set": name, **analysed(graph, task, Path(work))})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print(f"model: {args.model or 'default'}; {len(rows)} requests analysed")
    print(kind_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
