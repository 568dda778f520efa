"""The run report: summary, highlights, per-phase results and statistics, as Markdown, HTML or JSON.

Built from a thread's state alone, so it can be made for any thread at any time, paused or
ended. The HTML is one self-contained file (no script, no external style or font) that renders
the Markdown with compact spacing.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from markdown_it import MarkdownIt

from phasegraph.errors import redact

OUTPUT_PREVIEW = 300


def statistics(values: Mapping[str, Any]) -> dict[str, int]:
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
        "completion_tokens": int(values.get("completion_tokens") or 0),
        "replans": int(values.get("replan_count") or 0),
        "parse_failures": int(values.get("parse_failures") or 0),
        "reflections": len(values.get("reflections") or []),
        "tool_violations": len(values.get("tool_violations") or []),
    }


def build_report(thread_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The report of one thread as plain data (what ``--format json`` prints)."""
    summary = values.get("summary") or {}
    outcomes = {o["phase_id"]: o for o in values.get("phase_outcomes") or []}
    phases = []
    for phase in values.get("phases") or []:
        rounds = [r for r in values.get("rounds") or [] if r.get("phase_id") == phase["id"]]
        outcome = outcomes.get(phase["id"])
        phases.append(
            {
                "id": phase["id"],
                "name": phase["name"],
                "goal": phase.get("goal", ""),
                "ended_by": outcome["ended_by"] if outcome else "not run",
                "completion_rate": outcome["completion_rate"] if outcome else 0.0,
                "rounds": [
                    {
                        "round": r["round"],
                        "judge": (r.get("judgement") or {}).get("user_summary", ""),
                        "tasks": [
                            {
                                "task_id": t["task_id"],
                                "tool": t["tool"],
                                "status": t["status"],
                                "output": redact(str(t.get("output", ""))[:OUTPUT_PREVIEW]),
                            }
                            for t in r.get("results", [])
                        ],
                    }
                    for r in rounds
                ],
            }
        )
    return {
        "thread_id": thread_id,
        "request": values.get("request", ""),
        "status": values.get("status", ""),
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
        "fallbacks": [dict(f) for f in values.get("fallbacks") or []],
        "phases": phases,
        "statistics": statistics(values),
    }


def to_json(report: Mapping[str, Any]) -> str:
    """The report as indented JSON."""
    return json.dumps(report, indent=2, ensure_ascii=False, default=str)


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items) if items else "- (none)"


def _verdict(passed: object) -> str:
    if passed is None:
        return "not evaluated"
    return "passes" if passed else "**fails**"


def _cell(text: object) -> str:
    """Text for a Markdown table cell: one line, no column breaks."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("`", "'")


def to_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown."""
    stats = report["statistics"]
    parts = [
        f"# Run report: {report['thread_id']}",
        f"**Request:** {report['request']}  \n**Status:** {report['status']}",
    ]
    if report.get("pending_review"):
        parts.append(f"**Paused for:** {report['pending_review'].get('kind')}")
    parts += [
        "## Summary",
        report["final_summary"] or "(the run has not ended yet)",
        "## Highlights",
        _bullets(report["highlights"]),
    ]
    if report["unfinished"]:
        parts += ["## Unfinished", _bullets(report["unfinished"])]
    if report["next_steps"]:
        parts += ["## Next steps", _bullets(report["next_steps"])]
    if report["shortfalls"]:
        parts += ["## What fell short", _bullets(report["shortfalls"])]
    if report["checks"]:
        parts += [
            "## Checks",
            "| check | result | what code saw | phase | from |\n|---|---|---|---|---|\n"
            + "\n".join(
                f"| `{_cell(c['label'])}` | {_verdict(c['passed'])} | {_cell(c['detail'])} "
                f"| {c['phase_id'] or 'last'} | {c['source']} |"
                for c in report["checks"]
            ),
        ]
    if report["fallbacks"]:
        parts += [
            "## Decided by code",
            _bullets(
                [
                    f"{f['stage']}" + (f" ({f['phase_id']})" if f["phase_id"] else "")
                    + f": {f['action']} (after: {f['reason']})"
                    for f in report["fallbacks"]
                ]
            ),
        ]
    parts.append("## Phases")
    for phase in report["phases"]:
        rate = f"{phase['completion_rate']:.0%}"
        parts.append(f"### {phase['name']} ({phase['id']}): {phase['ended_by']}, {rate}")
        parts.append(f"Goal: {phase['goal']}")
        for rnd in phase["rounds"]:
            lines = [f"- Round {rnd['round']}: {rnd['judge']}"]
            for task in rnd["tasks"]:
                output = " ".join(task["output"].split())[:120]
                lines.append(f"  - `{task['tool']}` {task['status']}: {output}")
            parts.append("\n".join(lines))
    parts += [
        "## Statistics",
        "| phases | rounds | tasks ok | steps | LLM calls | prompt tokens | completion tokens |\n"
        "|---|---|---|---|---|---|---|\n"
        f"| {stats['phases_completed']}/{stats['phases']} | {stats['rounds']} "
        f"| {stats['tasks_ok']}/{stats['tasks']} | {stats['steps']} | {stats['llm_calls']} "
        f"| {stats['prompt_tokens']} | {stats['completion_tokens']} |",
        f"Parse failures: {stats['parse_failures']}, reflections: {stats['reflections']}, "
        f"tool violations: {stats['tool_violations']}.",
    ]
    return "\n\n".join(parts) + "\n"


_STYLE = """
body { font: 15px/1.4 system-ui, sans-serif; max-width: 52rem; margin: 1.5rem auto;
  padding: 0 1rem; color: #1d1d1f; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; } h2 { font-size: 1.2rem; margin: 1.1rem 0 .3rem; }
h3 { font-size: 1rem; margin: .8rem 0 .2rem; } p, ul, table { margin: .3rem 0; }
ul { padding-left: 1.3rem; } li { margin: .1rem 0; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: .2rem .5rem; }
code { background: #f2f2f2; padding: 0 .2rem; border-radius: 3px; }
"""


def to_html(report: Mapping[str, Any]) -> str:
    """The report as one self-contained HTML page."""
    # html=False: text from the model or a tool is escaped, never rendered as markup.
    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    body = renderer.render(to_markdown(report))
    title = html.escape(f"phasegraph report: {report['thread_id']}")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{_STYLE}</style></head>\n<body>\n{body}</body></html>\n"
    )


def render(thread_id: str, values: Mapping[str, Any], fmt: str) -> str:
    """The report of a thread in ``fmt``: md, html or json."""
    report = build_report(thread_id, values)
    if fmt == "json":
        return to_json(report)
    if fmt == "html":
        return to_html(report)
    return to_markdown(report)
