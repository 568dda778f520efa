"""The run report: summary, checks, a timeline of the run and statistics, as Markdown, HTML, JSON.

Built from a thread's state, so it can be made for any thread at any time, paused or ended;
given the thread's history (`phasegraph.report.history`) it also times each round with its model
calls, charts model use by stage and places reviews and replans where they happened. The HTML
(`phasegraph.report.html`) is one self-contained file: no script, no external style or font.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from phasegraph.errors import redact, redact_all
from phasegraph.facts.deliverables import evidence_parts
from phasegraph.report.html import BAD, html_page, round_seconds
from phasegraph.shown import visible
from phasegraph.state.reading import shown_status

OUTPUT_PREVIEW = 300


def statistics(values: Mapping[str, Any]) -> dict[str, Any]:
    """The run's counts: phases, rounds, tasks, steps, LLM calls, tokens and failures."""
    rounds = values.get("rounds") or []
    results = [r for rnd in rounds for r in rnd.get("results", [])]
    outcomes = values.get("phase_outcomes") or []
    limits = values.get("limits") or {}
    return {
        "phases": len(values.get("phases") or []),
        "phases_ended": len(outcomes),
        "phases_completed": sum(1 for o in outcomes if o.get("completed")),
        "rounds": len(rounds),
        "tasks": len(results),
        "tasks_ok": sum(1 for r in results if r.get("status") == "ok"),
        "steps": int(values.get("step_count") or 0),
        "max_steps": int(limits.get("max_steps") or 0),
        "llm_calls": int(values.get("llm_calls") or 0),
        "prompt_tokens": int(values.get("prompt_tokens") or 0),
        "cached_tokens": int(values.get("cached_tokens") or 0),
        "completion_tokens": int(values.get("completion_tokens") or 0),
        "prompt_seconds": round(int(values.get("prompt_ms") or 0) / 1000, 1),
        "answer_seconds": round(int(values.get("answer_ms") or 0) / 1000, 1),
        "replans": int(values.get("replan_count") or 0),
        "parse_failures": int(values.get("parse_failures") or 0),
        "reflections": len(values.get("reflections") or []),
        "tool_violations": len(values.get("tool_violations") or []),
    }


def build_report(
    thread_id: str, values: Mapping[str, Any], history: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The report of one thread as plain data (what ``--format json`` prints).

    Args:
        thread_id: The thread.
        values: Its state.
        history: What its checkpoints tell (`phasegraph.report.history.run_history`): model use
            by stage, rounds' wall time, reviews and replans. Without it the report has no
            stages, rounds are timed by their tools, and replans show where a judge or a
            reflection asked for one.
    """
    summary = values.get("summary") or {}
    timeline = _timeline(values, history or {})
    return {
        "thread_id": thread_id,
        "request": values.get("request", ""),
        "status": shown_status(values),
        "stop_reason": values.get("stop_reason"),
        "final_summary": values.get("final_summary") or "",
        "highlights": list(summary.get("highlights") or []),
        "unfinished": list(summary.get("unfinished") or []),
        "next_steps": list(summary.get("next_steps") or []),
        "pending_review": values.get("pending_review"),
        "shortfalls": list(values.get("shortfalls") or []),
        "checks": [
            {k: c.get(k) for k in ("id", "label", "passed", "detail", "phase_id", "source")}
            for c in values.get("checks") or []
            if isinstance(c, Mapping) and "label" in c
        ],
        "evidence": values.get("evidence"),
        "fallbacks": [dict(f) for f in values.get("fallbacks") or []],
        "before_rounds": timeline["before_rounds"],
        "phases": timeline["phases"],
        "glance": _glance(timeline["phases"]),
        "stages": [dict(row) for row in (history or {}).get("stages") or []],
        "statistics": statistics(values),
    }


def _timeline(values: Mapping[str, Any], history: Mapping[str, Any]) -> dict[str, Any]:
    """Phases with their rounds, tasks, notes and the events after each round, in run order."""
    outcomes = {o["phase_id"]: o for o in values.get("phase_outcomes") or []}
    wall = history.get("round_seconds") or {}
    events = list(history.get("events") or [])
    seqs = {r.get("round_seq") for r in values.get("rounds") or []}
    phases = []
    for phase in values.get("phases") or []:
        outcome = outcomes.get(phase["id"])
        rounds = [
            _round(r, values, wall, events, history_known=bool(history))
            for r in values.get("rounds") or []
            if r.get("phase_id") == phase["id"]
        ]
        phases.append(
            {
                "id": phase["id"],
                "name": phase["name"],
                "goal": phase.get("goal", ""),
                **_standing(outcome, phase["id"], values),
                "rounds": rounds,
                "tool_violations": [
                    f"{v.get('tool')} ({v.get('task_id')}): {v.get('reason')}"
                    for v in values.get("tool_violations") or []
                    if v.get("phase_id") == phase["id"]
                ],
            }
        )
    return {
        "phases": phases,
        "before_rounds": [e for e in events if e.get("after_round_seq") not in seqs],
    }


def _standing(
    outcome: Mapping[str, Any] | None, phase_id: str, values: Mapping[str, Any]
) -> dict[str, Any]:
    """How a phase ended and how far it got; one with rounds but no end is not "not run".

    Such a phase is the one the run is in (paused, or still going), or the one it stopped in;
    its rate is its last judge's.
    """
    if outcome:
        return {"ended_by": outcome["ended_by"], "completion_rate": outcome["completion_rate"]}
    mine = [r for r in values.get("rounds") or [] if r.get("phase_id") == phase_id]
    judged = [r["judgement"] for r in mine if r.get("judgement")]
    phases = values.get("phases") or []
    index = int(values.get("phase_index") or 0)
    current = index < len(phases) and phases[index].get("id") == phase_id
    ran = bool(mine) or (
        current and bool(values.get("current_plan") or values.get("results"))
    )  # the phase whose first round is under way has no round recorded yet
    if not ran:
        return {"ended_by": "not run", "completion_rate": 0.0}
    status = str(values.get("status") or "")
    going = status in ("awaiting_review", "running", "")
    return {
        "ended_by": "in progress" if going else f"stopped ({status})",
        "completion_rate": float(judged[-1].get("phase_completion_rate", 0.0)) if judged else 0.0,
    }


def _round(
    record: Mapping[str, Any],
    values: Mapping[str, Any],
    wall: Mapping[str, float],
    events: list[dict[str, Any]],
    history_known: bool,
) -> dict[str, Any]:
    judgement = record.get("judgement") or {}
    results = list(record.get("results") or [])
    where = (record.get("phase_id"), record.get("round"))
    notes = []
    if judgement.get("overridden"):
        notes.append(f"code overrode the judge: {judgement['overridden']}")
    notes += [
        f"reflection {r.get('trigger')}: {r.get('reason')}"
        for r in values.get("reflections") or []
        if (r.get("phase_id"), r.get("round")) == where
    ]
    notes += [
        f"{f.get('stage')} gave no usable answer; code {f.get('action')}"
        for f in values.get("fallbacks") or []
        if (f.get("phase_id"), f.get("round")) == where
    ]
    if not history_known and judgement.get("next_action") == "replan":
        notes.append("the judge asked for a replan")
    # Tasks of one wave run at once: a round's tool time is its slowest task of each wave.
    waves: dict[int, float] = {}
    for t in results:
        wave = int(t.get("wave") or 0)
        waves[wave] = max(waves.get(wave, 0.0), float(t.get("duration_s") or 0.0))
    seconds = wall.get(str(record.get("round_seq")))
    return {
        "round": record["round"],
        "round_seq": record.get("round_seq"),
        "judge": judgement.get("user_summary", ""),
        "completion_rate": judgement.get("phase_completion_rate"),
        "next_action": judgement.get("next_action"),
        "seconds": seconds,
        "tool_seconds": round(sum(waves.values()), 3),
        "notes": notes,
        "events_after": [e for e in events if e.get("after_round_seq") == record.get("round_seq")],
        "tasks": [
            {
                "task_id": t["task_id"],
                "tool": t["tool"],
                "status": t["status"],
                "duration_s": float(t.get("duration_s") or 0.0),
                "wave": t.get("wave"),
                "replayed": bool(t.get("replayed")),
                "arguments": redact(json.dumps(t.get("arguments", {}), ensure_ascii=False)),
                "output": redact(str(t.get("output", ""))[:OUTPUT_PREVIEW]),
            }
            for t in results
        ],
    }


def _glance(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """What the eye should find first: the tasks that went wrong and the longest round."""
    failed = [
        {"phase_id": p["id"], "round": r["round"], **t}
        for p in phases
        for r in p["rounds"]
        for t in r["tasks"]
        if t["status"] in BAD
    ]
    rounds = [(round_seconds(r), p["id"], r["round"]) for p in phases for r in p["rounds"]]
    longest = None
    if len(rounds) > 1:  # with one round, "longest" says nothing
        seconds, phase_id, number = max(rounds, key=lambda x: x[0])
        longest = {"phase_id": phase_id, "round": number, "seconds": round(seconds, 3)}
    return {"failed_tasks": failed, "longest_round": longest}


def to_json(report: Mapping[str, Any]) -> str:
    """The report as indented JSON, its control characters escaped (C1 ones too)."""
    text = json.dumps(report, indent=2, ensure_ascii=False, default=str)
    return re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text)


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "- (none)"


def _verdict(passed: object) -> str:
    if passed is None:
        return "not evaluated"
    return "passes" if passed else "**fails**"


def _cell(text: object) -> str:
    """Text for a Markdown table cell: one line, no column breaks."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("`", "'")


def markdown_sections(report: Mapping[str, Any]) -> dict[str, str]:
    """The Markdown report by section, in order; a section with nothing to say is empty."""
    stats = report["statistics"]
    head = [
        f"# Run report: {report['thread_id']}",
        f"**Request:** {report['request']}  \n**Status:** {report['status']}",
    ]
    if report.get("pending_review"):
        head.append(f"**Paused for:** {report['pending_review'].get('kind')}")
    sections = {
        "head": head,
        "summary": ["## Summary", report["final_summary"] or "(the run has not ended yet)"],
        "highlights": ["## Highlights", _bullets(report["highlights"])],
        "unfinished": ["## Unfinished", _bullets(report["unfinished"])],
        "next_steps": ["## Next steps", _bullets(report["next_steps"])],
        "shortfalls": ["## What fell short", _bullets(report["shortfalls"])],
        "checks": [
            "## Checks",
            "| check | result | what code saw | phase | from |\n|---|---|---|---|---|\n"
            + "\n".join(
                f"| `{_cell(c['label'])}` | {_verdict(c['passed'])} | {_cell(c['detail'])} "
                f"| {c['phase_id'] or 'last'} | {c['source']} |"
                for c in report["checks"]
            ),
        ],
        "evidence": ["## Evidence", _bullets(evidence_parts(report["evidence"] or {}))],
        "fallbacks": [
            "## Decided by code",
            _bullets(
                [
                    f"{f['stage']}" + (f" ({f['phase_id']})" if f["phase_id"] else "")
                    + f": {f['action']} (after: {f['reason']})"
                    for f in report["fallbacks"]
                ]
            ),
        ],
        "phases": ["## Phases", *_phase_lines(report)],
        "stages": [
            "## Model use by stage",
            "| stage | steps | LLM calls | prompt tokens (cached) | completion tokens | seconds "
            "(reading, writing) |\n|---|---|---|---|---|---|\n"
            + "\n".join(
                f"| {r['stage']} | {r['steps']} | {r['llm_calls']} | {r['prompt_tokens']} "
                f"({r.get('cached_tokens', 0)}) | {r['completion_tokens']} | {r['seconds']:.2f} "
                f"({r.get('prompt_ms', 0) / 1000:.1f}, {r.get('answer_ms', 0) / 1000:.1f}) |"
                for r in report["stages"]
            ),
        ],
        "statistics": [
            "## Statistics",
            "| phases | rounds | tasks ok | steps | LLM calls | prompt tokens "
            "| completion tokens |\n|---|---|---|---|---|---|---|\n"
            f"| {stats['phases_completed']}/{stats['phases']} | {stats['rounds']} "
            f"| {stats['tasks_ok']}/{stats['tasks']} | {stats['steps']} | {stats['llm_calls']} "
            f"| {stats['prompt_tokens']} | {stats['completion_tokens']} |",
            f"Parse failures: {stats['parse_failures']}, reflections: {stats['reflections']}, "
            f"tool violations: {stats['tool_violations']}.",
        ],
    }
    # The summary and highlights are always there (they say when there is none); the rest only
    # when they hold something.
    optional = (
        "unfinished", "next_steps", "shortfalls", "checks", "evidence", "fallbacks", "stages"
    )
    return {
        key: "" if key in optional and not report[key] else "\n\n".join(parts)
        for key, parts in sections.items()
    }


def _phase_lines(report: Mapping[str, Any]) -> list[str]:
    parts = [_event_line(e) for e in report["before_rounds"]]
    for phase in report["phases"]:
        rate = f"{phase['completion_rate']:.0%}"
        parts.append(f"### {phase['name']} ({phase['id']}): {phase['ended_by']}, {rate}")
        parts.append(f"Goal: {phase['goal']}")
        for rnd in phase["rounds"]:
            lines = [f"- Round {rnd['round']} ({round_seconds(rnd):.2f} s): {rnd['judge']}"]
            for task in rnd["tasks"]:
                output = " ".join(task["output"].split())[:120]
                lines.append(
                    f"  - `{task['tool']}` {task['status']} ({task['duration_s']:.2f} s): {output}"
                )
            lines += [f"  - {note}" for note in rnd["notes"]]
            lines += [f"- {_event_line(e)}" for e in rnd["events_after"]]
            parts.append("\n".join(lines))
    return parts


def event_text(event: Mapping[str, Any]) -> str:
    """A review or a replan from the run's history, as one line."""
    if event.get("kind") == "replan":
        return f"replan: {event.get('reason') or 'no reason given'}: {event.get('outcome')}"
    waited = float(event.get("waited_s") or 0.0)
    return f"review ({event.get('review')}): {event.get('action')}, after {waited:.1f} s"


def _event_line(event: Mapping[str, Any]) -> str:
    return f"*{_cell(event_text(event))}*"


def to_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown, control characters made visible (`shown.visible`)."""
    return visible("\n\n".join(text for text in markdown_sections(report).values() if text) + "\n")


def to_html(report: Mapping[str, Any]) -> str:
    """The report as one self-contained HTML page: the Markdown's sections, and pictures."""
    sections = {name: visible(text) for name, text in markdown_sections(report).items()}
    return html_page(report, sections)


def render(
    thread_id: str,
    values: Mapping[str, Any],
    fmt: str,
    history: Mapping[str, Any] | None = None,
) -> str:
    """The report of a thread in ``fmt``: md, html or json (``history``: see `build_report`).

    Secrets are masked in every part of it (`errors.redact_all`): a check's detail, a summary
    or a judge's note may quote a file or a message that holds one.
    """
    report = redact_all(build_report(thread_id, values, history))
    if fmt == "json":
        return to_json(report)
    if fmt == "html":
        return to_html(report)
    return to_markdown(report)
