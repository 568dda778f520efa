"""A run as a tree on the terminal: phases > rounds > tasks, judgements, reviews, replans, checks.

The same structure as the HTML report's timeline (`phasegraph.report.build_report`), so a long
run reads at a glance: what went wrong is red and marked ✗, the longest round is marked in
yellow, and marks and words carry the meaning where colour is lost (a pipe, a print).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from rich.tree import Tree

from phasegraph.cli.render import pending_lines
from phasegraph.errors import redact
from phasegraph.report import event_text
from phasegraph.report.html import BAD, round_seconds

ARGUMENTS_SHOWN = 60
OUTPUT_SHOWN = 80


def run_tree(report: Mapping[str, Any], request: str = "") -> Tree:
    """The report's timeline (`phasegraph.report.build_report`) as a rich `Tree`."""
    stats = report["statistics"]
    budget = f"/{stats['max_steps']}" if stats["max_steps"] else ""
    status = report["status"]
    root = Text.assemble(
        (f"Thread {report['thread_id']}", "bold"),
        "  ",
        (status, _status_style(status)),
        f"  {stats['steps']}{budget} steps, {stats['llm_calls']} model calls, "
        f"{stats['tasks_ok']}/{stats['tasks']} tasks ok",
    )
    tree = Tree(root)
    if request:
        tree.add(Text(f"request: {_line(request, 160)}", style="dim"))
    look = report["glance"]
    # what to look at first, as the HTML report's glance: failures, then the longest round
    for t in look["failed_tasks"]:
        where = f"{t['phase_id']} round {t['round']}, {t['task_id']} {t['tool']}"
        tree.add(
            Text(f"✗ {where}: {t['status']}: {_line(t['output'], OUTPUT_SHOWN)}", style="bold red")
        )
    longest = look["longest_round"]
    if longest:
        where = f"{longest['phase_id']} round {longest['round']}"
        tree.add(Text(f"◷ longest round: {where}, {longest['seconds']:.2f} s", style="yellow"))
    for event in report["before_rounds"]:
        tree.add(_event(event))
    for phase in report["phases"]:
        ended = phase["ended_by"]
        mark, style = ("✓", "green") if ended == "completed" else ("·", "dim")
        if ended == "in progress":
            mark, style = "▸", "cyan"
        elif ended not in ("completed", "not run"):
            mark, style = "!", "yellow"
        node = tree.add(
            Text.assemble(
                (f"{mark} {phase['id']} {_line(phase['name'], 80)}", f"bold {style}"),
                f"  {ended}, {phase['completion_rate']:.0%}, {len(phase['rounds'])} round(s)",
            )
        )
        for rnd in phase["rounds"]:
            is_longest = bool(longest) and (longest["phase_id"], longest["round"]) == (
                phase["id"],
                rnd["round"],
            )
            _round(node, rnd, is_longest)
            for event in rnd["events_after"]:
                node.add(_event(event))
        for refused in phase["tool_violations"]:
            node.add(Text(f"✗ refused: {_line(refused)}", style="red"))
    if report["checks"]:
        passed = sum(1 for c in report["checks"] if c.get("passed"))
        failing = passed < len(report["checks"])
        checks = tree.add(
            Text(
                f"checks: {passed}/{len(report['checks'])} pass",
                style="bold red" if failing else "bold green",
            )
        )
        for c in report["checks"]:
            checks.add(_check(c))
    pending = report.get("pending_review")
    if pending:
        waiting = tree.add(
            Text(f"waiting for a person: {pending.get('kind')}", style="bold magenta")
        )
        for line in pending_lines(pending):
            waiting.add(Text(_line(line)))
    return tree


def _round(phase: Tree, rnd: Mapping[str, Any], longest: bool) -> None:
    seconds = round_seconds(rnd)
    timed = "" if rnd.get("seconds") is not None else " (tools)"
    head = Text.assemble(
        (f"round {rnd['round']}", "bold yellow" if longest else "bold"), f"  {seconds:.2f} s{timed}"
    )
    if longest:
        head.append("  ◷ longest", style="bold yellow")
    bad = sum(1 for t in rnd["tasks"] if t["status"] in BAD)
    if bad:
        head.append(f"  ✗ {bad} failed", style="bold red")
    node = phase.add(head)
    for task in rnd["tasks"]:
        node.add(_task(task))
    if rnd.get("next_action"):
        rate = rnd.get("completion_rate")
        done = f"{rate:.0%}" if isinstance(rate, int | float) else "?"
        node.add(
            Text(
                f"judge: {done} done, next {rnd['next_action']}: {_line(rnd['judge'], 120)}",
                style="cyan",
            )
        )
    for note in rnd["notes"]:
        node.add(Text(f"! {_line(note, 160)}", style="yellow"))


def _task(task: Mapping[str, Any]) -> Text:
    failed = task["status"] in BAD
    mark = "✗" if failed else "✓" if task["status"] == "ok" else "·"
    arguments = _line(task.get("arguments") or "{}", ARGUMENTS_SHOWN)
    text = Text.assemble(
        (f"{mark} {task['task_id']} {task['tool']}", "bold red" if failed else ""),
        (f" {arguments}" if arguments != "{}" else "", "dim"),
        "  ",
        (task["status"].upper() if failed else task["status"], "bold red" if failed else "green"),
        f"  {task['duration_s']:.2f} s",
    )
    if task.get("replayed"):
        text.append(" (replayed)", style="dim")
    output = _line(task["output"], OUTPUT_SHOWN)
    if output:
        text.append(f"  {output}", style="red" if failed else "dim")
    return text


def _check(check: Mapping[str, Any]) -> Text:
    passed = check.get("passed")
    if passed is None:
        return Text(f"· {_line(check['label'])}: not evaluated", style="dim")
    if passed:
        return Text(f"✓ {_line(check['label'])}", style="green")
    detail = _line(check.get("detail", ""))
    return Text(f"✗ {_line(check['label'])}: FAILS ({detail})", style="bold red")


def _event(event: Mapping[str, Any]) -> Text:
    mark = "↻" if event.get("kind") == "replan" else "»"
    return Text(f"{mark} {_line(event_text(event))}", style="magenta")


def _status_style(status: str) -> str:
    if status == "completed":
        return "bold green"
    if status in ("running", "awaiting_review"):
        return "bold magenta"
    return "bold red"


def _line(text: object, limit: int = 400) -> str:
    """One line of at most ``limit`` characters, with any known secret masked."""
    flat = " ".join(redact(str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
