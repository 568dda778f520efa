"""What a person reads: progress lines, a pending review and the commands that answer it, a thread.

Markdown is rendered on a terminal and written as it is when piped, for the next program.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from phasegraph.errors import redact
from phasegraph.shown import visible
from phasegraph.state.reading import shown_status


def describe_event(event: Mapping[str, Any]) -> str:
    """One progress event as a short line for a person."""
    name = event.get("event", "")
    match name:
        case "analysed":
            return f"analysed: {event.get('goal')} ({event.get('task_type')})"
        case "phases_planned":
            names = ", ".join(f"{p['id']} {p['name']}" for p in event.get("phases", []))
            return f"phases: {names}"
        case "phase_started":
            return f"phase {event.get('index')}/{event.get('total')}: {event.get('name')}"
        case "round_planned":
            again = " (asked again: its first plan added nothing)"
            again = again if event.get("asked_again") else ""
            return f"  round {event.get('round')}: {event.get('tasks')} task(s) planned{again}"
        case "task_started":
            return f"    {event.get('task_id')} {event.get('tool')} ..."
        case "task_finished":
            return f"    {event.get('task_id')} {event.get('status')}"
        case "judged":
            rate = event.get("completion_rate")
            done = f"{rate:.0%}" if isinstance(rate, int | float) else "?"
            return f"  judged: {done} done, next {event.get('next_action')}"
        case "phase_ended":
            return f"phase {event.get('phase_id')} ended: {event.get('ended_by')}"
        case "reflection_triggered":
            return f"  reflection ({event.get('trigger')}): {event.get('reason')}"
        case "replanned":
            return f"replanned: {event.get('status')}"
        case "awaiting_review":
            return f"waiting for a person: {event.get('kind')}"
        case "review_answered":
            return f"review answered: {event.get('action')}"
        case "stage_failed":
            return f"{event.get('node')} failed: {event.get('reason')}"
        case "stage_fallback":
            return f"  {event.get('node')} gave no usable answer; code {event.get('action')}"
        case "summary_ready":
            return f"summary ready ({event.get('status')})"
    details = " ".join(f"{k}={v}" for k, v in event.items() if k != "event")
    return f"{name} {details}".strip()


#: What a stage that waits on the model is doing, as a person watching it is told.
STAGE_WORK = {
    "analyse": "reading the request",
    "phase_plan": "planning the phases",
    "plan": "planning a round",
    "judge": "judging the round",
    "replan": "replanning",
    "summarize": "writing the summary",
}


class _Waiting:
    """The line a terminal shows while a stage waits on the model: what, and for how long."""

    def __init__(self, stage: str) -> None:
        self.work = STAGE_WORK.get(stage, stage)
        self.started = time.monotonic()

    def line(self) -> str:
        """What the stage does, and its seconds so far."""
        return f"  {self.work}... {time.monotonic() - self.started:.0f} s"

    def __rich__(self) -> Text:
        return Text(self.line(), style="dim")


#: Seconds between the lines that say a stage still waits, where no terminal shows a timer.
HEARTBEAT_S = 30.0


@contextlib.contextmanager
def progress_printer(err: Console) -> Iterator[Callable[[dict[str, Any]], None]]:
    """A progress callback that prints each event as one line on ``err``, for the block.

    On a terminal, a stage that waits on the model (``stage_started``) shows what it is doing
    and its seconds so far, on a line the next event replaces. Elsewhere (a log, a pipe) each
    line starts with the seconds since the command began, the stage's start is a line of its
    own, and a stage that still waits says so every `HEARTBEAT_S` seconds.
    """
    live = Live(console=err, transient=True, refresh_per_second=2, auto_refresh=True)
    began = time.monotonic()
    waiting: list[_Waiting] = []
    done = threading.Event()

    def say(text: str) -> None:
        err.print(f"[{time.monotonic() - began:5.0f}s] {text}", markup=False, highlight=False)

    def beat() -> None:
        while not done.wait(HEARTBEAT_S):
            current = next(iter(waiting[-1:]), None)  # one read: the main thread may clear it
            if current is not None:
                say(current.line().strip() + " so far")

    def show(event: dict[str, Any]) -> None:
        if event.get("event") == "stage_started":
            if err.is_terminal:
                live.update(_Waiting(str(event.get("stage"))), refresh=True)
                live.start()
            else:
                waiting[:] = [_Waiting(str(event.get("stage")))]
                say(f"  {waiting[-1].work}...")
            return
        waiting.clear()
        live.stop()
        line = redact(describe_event(event))
        if err.is_terminal:
            err.print(line, markup=False, highlight=False)
        else:
            say(line)

    heart = threading.Thread(target=beat, name="phasegraph-progress", daemon=True)
    if not err.is_terminal:
        heart.start()
    try:
        yield show
    finally:
        done.set()
        if heart.is_alive():
            heart.join()  # no line after the block's own
        live.stop()


def phase_line(phase: Mapping[str, Any]) -> str:
    """One phase as a line: its id, name and goal."""
    return f"  {phase['id']}. {phase['name']}: {phase.get('goal', '')}"


def pending_lines(pending: Mapping[str, Any]) -> list[str]:
    """What a pending review asks, one line per phase, question or tool."""
    lines = []
    if pending.get("error"):
        lines.append(f"The last answer did not fit: {pending['error']}")
    lines += [phase_line(phase) for phase in pending.get("phases") or []]
    checks = pending.get("checks") or []
    if checks:
        lines.append("Checks (each made true by the phase beside it):")
        lines += [f"  {c['id']} {c['check']} (phase {c['phase']})" for c in checks]
    if pending.get("reason"):
        lines.append(f"Why: {pending['reason']}")
    lines += [f"  ? {q}" for q in pending.get("questions") or []]
    task = pending.get("task") or {}
    tool = task.get("tool")
    if tool:  # a person allows a call: the call itself, arguments and all, and why it is asked
        arguments = json.dumps(task.get("arguments") or {}, ensure_ascii=False)
        lines.append(f"  call {tool} {redact(arguments)}")
        lines.append(f"  asked because: {pending.get('justification', '')}")
    return lines


def program() -> str:
    """This command's name as a person types it again, from any folder.

    ``phasegraph`` where that name on the PATH is this very program; else the path it was
    started by, made absolute (``/home/me/proj/.venv/bin/phasegraph``), or ``PYTHON -m
    phasegraph.cli`` when it was started as a module.
    """
    started = sys.argv[0] if sys.argv and sys.argv[0] else "phasegraph"
    if os.path.basename(started) == "__main__.py":
        return f"{shlex.quote(sys.executable)} -m phasegraph.cli"
    on_path = shutil.which("phasegraph")
    if on_path and os.path.realpath(on_path) == os.path.realpath(shutil.which(started) or started):
        return "phasegraph"
    return shlex.quote(os.path.abspath(started))


def resume_command(thread_id: str, flags: str) -> str:
    """The command that resumes ``thread_id``, with ``flags`` (answer, location) as given."""
    return f"{program()} resume {shlex.quote(thread_id)}{flags}"


ANSWER_FLAGS = {
    "plan_review": ["--approve", '--reject "REASON"', '--modify "TEXT"', "--edit PHASES.json"],
    "replan_review": ["--approve", '--reject "REASON"', '--modify "TEXT"', "--edit PHASES.json"],
    "clarification": ['--answer "TEXT"', '--reject "REASON"'],
    "tool_permission": ["--allow", "--deny"],
}


def review_prompt(thread_id: str, pending: Mapping[str, Any], where: str) -> str:
    """What a paused run asks, and the commands that answer it; ``where``: location flags."""
    kind = pending.get("kind", "review")
    lines = [f"Paused for {kind} (thread {thread_id}).", *pending_lines(pending)]
    answers = ANSWER_FLAGS.get(kind, ["--approve", '--reject "REASON"'])
    lines.append("Answer with one of:")
    lines += [f"  {resume_command(thread_id, f' {a}{where}')}" for a in answers]
    return "\n".join(lines)


def print_markdown(out: Console, text: str) -> None:
    """Markdown, rendered on a terminal and written as it is when piped."""
    if out.is_terminal:
        out.print(Markdown(text), soft_wrap=False)  # rich wraps at word ends, not the terminal
    else:  # piped: the Markdown itself, for the next program
        print(visible(text))


def show_text(thread_id: str, values: Mapping[str, Any]) -> str:
    """A thread in detail, as Markdown."""
    lines = [f"# Thread {thread_id}", f"**Status:** {shown_status(values)}"]
    lines.append(f"**Request:** {values.get('request')}")
    structured = values.get("structured_request")
    if structured:
        lines += ["## Structured request", f"- goal: {structured.get('core_goal')}"]
        for key in ("requirements", "constraints"):
            if structured.get(key):
                lines.append(f"- {key}: " + "; ".join(structured[key]))
        lines.append(f"- type: {structured.get('task_type')}, {structured.get('complexity')}")
    phases = values.get("phases") or []
    if phases:
        lines.append("## Phases")
        current = values.get("phase_index", 0)
        outcomes = {o["phase_id"]: o for o in values.get("phase_outcomes") or []}
        for i, phase in enumerate(phases):
            mark = _phase_mark(outcomes.get(phase["id"]), i, current)
            lines.append(f"{i + 1}. **{phase['name']}** ({phase['id']}, {mark}): {phase['goal']}")
    for rnd in values.get("rounds") or []:
        judgement = rnd.get("judgement") or {}
        lines.append(f"## {rnd['phase_id']} round {rnd['round']}")
        if rnd.get("asked_again"):
            lines.append(f"- plan asked again: {' '.join(str(rnd['asked_again']).split())[:200]}")
        for result in rnd.get("results", []):
            output = " ".join(str(result.get("output", "")).split())[:160]
            args = json.dumps(result.get("arguments", {}), ensure_ascii=False)[:120]
            lines.append(f"- `{result['tool']}` {args}: **{result['status']}** {output}")
        if judgement:
            lines.append(
                f"- judge: {judgement.get('phase_completion_rate', 0):.0%} done, next "
                f"{judgement.get('next_action')}: {judgement.get('user_summary', '')}"
            )
            if judgement.get("overridden"):
                lines.append(f"- overridden by code: {judgement['overridden']}")
    checks = [c for c in values.get("checks") or [] if isinstance(c, Mapping) and "label" in c]
    if checks:
        lines.append("## Checks")
        lines += [f"- {check_line(c)}" for c in checks]
    for title, key, fmt in (
        ("What fell short", "shortfalls", ""),
        ("Decided by code", "fallbacks", "{stage} ({phase_id} round {round}): {action}"),
        ("Reflections", "reflections", "{trigger} ({phase_id} round {round}): {reason}"),
        ("Tool violations", "tool_violations", "{tool} in {phase_id}/{task_id}: {reason}"),
    ):
        items = values.get(key) or []
        if items:
            lines.append(f"## {title}")
            lines += [
                "- " + (item if isinstance(item, str) else fmt.format_map(_Missing(item)))
                for item in items
            ]
    pending = values.get("pending_review")
    if pending:
        lines += ["## Pending review", "```", json.dumps(pending, indent=2, default=str), "```"]
    if values.get("final_summary"):
        lines += ["## Summary", values["final_summary"]]
    # list items stay together; headings and paragraphs are separated by a blank line
    text, last = "", ""
    for line in lines:
        if text:
            text += "\n" if _list_item(line) and _list_item(last) else "\n\n"
        text, last = text + line, line
    return redact(text)


def _phase_mark(outcome: Mapping[str, Any] | None, index: int, current: int) -> str:
    """How a phase stands: a phase that ended short is not shown as done."""
    if outcome:
        return "completed" if outcome.get("completed") else f"ended short: {outcome['ended_by']}"
    return "current" if index == current else ("to do" if index > current else "not run")


def check_line(check: Mapping[str, Any]) -> str:
    """One check with its result and what code saw."""
    passed = check.get("passed")
    verdict = "not evaluated" if passed is None else "passes" if passed else "FAILS"
    owner = f", phase {check['phase_id']}" if check.get("phase_id") else ""
    label = check["label"].replace("\n", "\\n")  # one check a line: an equals text may have more
    return f"{label}: {verdict} ({check.get('detail', '')}; {check.get('source')}{owner})"


def _list_item(line: str) -> bool:
    return line.startswith("- ") or line[:1].isdigit()


class _Missing(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"
