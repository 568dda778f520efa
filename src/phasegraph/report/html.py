"""The run report as one self-contained HTML page, with pictures where people would rather look.

Built from the report's plain data (`phasegraph.report.build_report`) and its Markdown sections:
what went wrong and the longest round first, then the summary, the checks, a timeline of phases,
rounds and tasks with bars for their durations, and a chart of model use by stage. One file: no
script, no external style, font or image; bars are boxes, so the page prints as it shows.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from markdown_it import MarkdownIt

from phasegraph.shown import visible

# Task outcomes a reader must see first: the call did not do what was asked, or may not have.
BAD = ("failed", "timeout", "refused", "interrupted")
MARKS = {"ok": "✓", "skipped": "–", "interrupted": "?", "timeout": "◷"}
OUTPUT_SHOWN = 160

STYLE = """
:root { --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --muted: #59636e; --line: #d1d9e0;
  --slow: #bf8700; --bar: #0969da; --token: #8250df; }
* { print-color-adjust: exact; -webkit-print-color-adjust: exact; }
body { font: 15px/1.4 system-ui, sans-serif; max-width: 56rem; margin: 1.5rem auto;
  padding: 0 1rem; color: #1f2328; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; } h2 { font-size: 1.2rem; margin: 1.2rem 0 .35rem; }
h3 { font-size: 1rem; margin: 0 0 .15rem; } p, ul, table { margin: .3rem 0; }
ul { padding-left: 1.3rem; } li { margin: .1rem 0; }
table { border-collapse: collapse; } th, td { border: 1px solid var(--line); padding: .2rem .5rem; }
code { background: #f2f2f2; padding: 0 .2rem; border-radius: 3px; }
a { color: inherit; }
.glance { border: 1px solid var(--line); border-left: 5px solid var(--ok); border-radius: 4px;
  padding: .45rem .8rem; margin: .8rem 0; }
.glance.trouble { border-left-color: var(--bad); }
.glance h2 { margin: 0 0 .2rem; font-size: 1.05rem; } .glance ul { margin: 0; }
.bad { color: var(--bad); font-weight: 600; } .ok { color: var(--ok); }
.slow { color: var(--slow); font-weight: 600; } .muted { color: var(--muted); }
.checks td.mark { text-align: center; font-weight: 700; }
.checks tr.failing td { background: #fff5f5; }
.phase { border-left: 5px solid var(--ok); padding: .1rem 0 .1rem .7rem; margin: .9rem 0; }
.phase.short { border-left-color: var(--warn); } .phase.unrun { border-left-color: var(--line); }
.phase .goal { color: var(--muted); margin: 0 0 .3rem; }
.round { border: 1px solid var(--line); border-radius: 4px; padding: .3rem .5rem;
  margin: .35rem 0; }
.round.longest { border: 2px solid var(--slow); background: #fff8e5; }
.round.trouble { border-left: 5px solid var(--bad); }
.round-head { display: flex; align-items: center; gap: .6rem; font-weight: 600; }
.round-head .title { white-space: nowrap; } .round-head .when { white-space: nowrap; }
.badge { font-size: .75rem; font-weight: 700; padding: 0 .4rem; border-radius: 8px;
  color: #fff; background: var(--slow); white-space: nowrap; }
.badge.bad { background: var(--bad); color: #fff; }
.track { display: block; flex: 1; height: .55rem; background: #eef1f4; border-radius: 2px;
  min-width: 4rem; }
.fill { display: block; height: 100%; background: var(--bar); border-radius: 2px;
  min-width: 2px; }
.longest .fill { background: var(--slow); }
table.tasks { width: 100%; margin: .25rem 0; font-size: .88rem; table-layout: fixed; }
table.tasks td { border: 0; border-top: 1px solid #eef1f4; padding: .12rem .35rem;
  vertical-align: top; }
table.tasks td.mark { width: 1.2rem; text-align: center; font-weight: 700; }
table.tasks td.tool { width: 11rem; overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap; }
table.tasks td.status { width: 6.5rem; } table.tasks td.time { width: 7rem; }
table.tasks td.time .track { height: .45rem; margin-top: .35rem; }
table.tasks td.secs { white-space: nowrap; text-align: right; width: 3.5rem;
  font-variant-numeric: tabular-nums; }
table.tasks tr.failed td { background: #ffebe9; }
table.tasks tr.failed td.mark { color: var(--bad); }
table.tasks td.out { color: var(--muted); word-break: break-word; }
table.tasks tr.failed td.out { color: var(--bad); }
.judge { margin: .2rem 0 0; } .note { margin: .1rem 0 0; color: var(--warn); }
.event { margin: .45rem 0; padding: .2rem .6rem; border-left: 4px solid var(--token);
  background: #f6f0ff; }
.chart td { border: 0; padding: .15rem .4rem; vertical-align: middle; }
.chart th { border: 0; border-bottom: 1px solid var(--line); text-align: left; font-size: .85rem; }
.chart td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.chart td.bar { width: 12rem; } .chart .fill.tokens { background: var(--token); }
@page { margin: 14mm; }
@media print {
  body { max-width: none; margin: 0; font-size: 11pt; }
  .round, .event, .glance, tr { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  a { text-decoration: none; }
}
"""


def html_page(report: Mapping[str, Any], sections: Mapping[str, str]) -> str:
    """The page: the Markdown sections rendered, the glance, timeline and chart in between."""
    # html=False: text from the model or a tool is escaped, never rendered as markup.
    # no images: their Markdown comes from requests, files and models, and a page that loads
    # one from elsewhere tells that place it was opened (the page is self-contained)
    renderer = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")

    def md(*keys: str) -> str:
        return "".join(renderer.render(sections[k]) for k in keys if sections.get(k))

    body = [
        md("head"),
        glance(report),
        md("summary", "highlights", "unfinished", "next_steps", "shortfalls"),
        checks(report["checks"]),
        md("evidence", "fallbacks"),
        timeline(report),
        stage_chart(report["stages"]),
        md("statistics"),
    ]
    title = _e(f"phasegraph report: {report['thread_id']}")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + "</body></html>\n"
    )


def _e(text: object) -> str:
    return html.escape(visible(str(text)), quote=True)


def round_seconds(rnd: Mapping[str, Any]) -> float:
    """A round's time: wall time when the checkpoints told it, else its tools' time."""
    seconds = rnd.get("seconds")
    return float(seconds if seconds is not None else rnd.get("tool_seconds") or 0.0)


def _secs(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"


def _bar(fraction: float, kind: str = "") -> str:
    if fraction <= 0:  # nothing spent: an empty track, not a sliver that reads as a little
        return '<span class="track"></span>'
    width = min(1.0, fraction) * 100
    fill = f'<span class="fill {kind}" style="width:{width:.1f}%"></span>'
    return f'<span class="track">{fill}</span>'


def _round_anchor(phase_id: str, number: object) -> str:
    return f"round-{phase_id}-{number}"


def glance(report: Mapping[str, Any]) -> str:
    """The box a reader sees first: what went wrong, the longest round, checks and budget."""
    look = report["glance"]
    stats = report["statistics"]
    items = []
    for t in look["failed_tasks"]:
        anchor = f"{_round_anchor(t['phase_id'], t['round'])}-{t['task_id']}"
        output = " ".join(t["output"].split())[:100]
        items.append(
            f'<li class="bad">✗ <a href="#{_e(anchor)}">{_e(t["phase_id"])} round '
            f"{_e(t['round'])}, {_e(t['task_id'])} <code>{_e(t['tool'])}</code></a> "
            f"{_e(t['status'])}: {_e(output)}</li>"
        )
    failing = [c for c in report["checks"] if c.get("passed") is False]
    if report["checks"]:
        passed = sum(1 for c in report["checks"] if c.get("passed"))
        names = ", ".join(f"<code>{_e(c['label'])}</code>" for c in failing)
        cls = ' class="bad"' if failing else ' class="ok"'
        items.append(
            f"<li{cls}>{'✗' if failing else '✓'} checks: {passed} of {len(report['checks'])} "
            f"pass{': fails ' + names if failing else ''}</li>"
        )
    longest = look["longest_round"]
    if longest:
        anchor = _round_anchor(longest["phase_id"], longest["round"])
        items.append(
            f'<li class="slow">◷ longest round: <a href="#{_e(anchor)}">{_e(longest["phase_id"])}'
            f" round {_e(longest['round'])}</a>, {_secs(longest['seconds'])}</li>"
        )
    budget = f" of {stats['max_steps']}" if stats["max_steps"] else ""
    tokens = stats["prompt_tokens"] + stats["completion_tokens"]
    items.append(
        f"<li>{stats['steps']} steps{budget}, {stats['llm_calls']} model calls, "
        f"{tokens:,} tokens, {stats['tasks_ok']} of {stats['tasks']} tasks ok</li>"
    )
    trouble = look["failed_tasks"] or failing or report["status"] in ("failed", "incomplete")
    status = _e(report["status"])
    return (
        f'<section class="glance{" trouble" if trouble else ""}"><h2>At a glance: {status}</h2>'
        f"<ul>{''.join(items)}</ul></section>"
    )


def checks(items: list[Mapping[str, Any]]) -> str:
    """The checks, each with its result and what code saw; failing ones stand out."""
    if not items:
        return ""
    rows = []
    for c in items:
        passed = c.get("passed")
        verdict = "not evaluated" if passed is None else "passes" if passed else "fails"
        mark = '<td class="mark ok">✓</td>' if passed else '<td class="mark bad">✗</td>'
        if passed is None:
            mark = '<td class="mark muted">·</td>'
        shown = f"<strong>{verdict}</strong>" if passed is False else verdict
        rows.append(
            f'<tr{" class=failing" if passed is False else ""}>{mark}'
            f"<td><code>{_e(c['label'])}</code></td><td>{shown}</td><td>{_e(c.get('detail'))}</td>"
            f"<td>{_e(c.get('phase_id') or 'last')}</td><td>{_e(c.get('source'))}</td></tr>"
        )
    head = "<tr><th></th><th>check</th><th>result</th><th>what code saw</th><th>phase</th>"
    return (
        f'<h2>Checks</h2>\n<table class="checks">{head}<th>from</th></tr>'
        f"{''.join(rows)}</table>"
    )


def timeline(report: Mapping[str, Any]) -> str:
    """Phases, their rounds and tasks in run order, with reviews and replans where they were."""
    rounds = [r for p in report["phases"] for r in p["rounds"]]
    slowest_round = max((round_seconds(r) for r in rounds), default=0.0) or 1.0
    slowest_task = max((t["duration_s"] for r in rounds for t in r["tasks"]), default=0.0) or 1.0
    longest = report["glance"]["longest_round"]
    parts = ['<section class="timeline"><h2>Timeline</h2>']
    parts += [_event(e) for e in report["before_rounds"]]
    for phase in report["phases"]:
        ended = phase["ended_by"]
        cls = {"not run": "unrun", "completed": "", "in progress": ""}.get(ended, "short")
        parts.append(
            f'<div class="phase {cls}"><h3>{_e(phase["id"])} · {_e(phase["name"])} '
            f'<span class="{"ok" if ended == "completed" else "muted"}">— {_e(ended)}, '
            f"{phase['completion_rate']:.0%}, {len(phase['rounds'])} round(s)</span></h3>"
            f'<p class="goal">{_e(phase["goal"])}</p>'
        )
        for rnd in phase["rounds"]:
            is_longest = bool(longest) and (longest["phase_id"], longest["round"]) == (
                phase["id"],
                rnd["round"],
            )
            parts.append(_round(phase["id"], rnd, is_longest, slowest_round, slowest_task))
            parts += [_event(e) for e in rnd["events_after"]]
        parts += [f'<p class="note">refused: {_e(v)}</p>' for v in phase["tool_violations"]]
        parts.append("</div>")
    pending = report.get("pending_review")
    if pending:
        parts.append(f'<div class="event">waiting for a person: {_e(pending.get("kind"))}</div>')
    parts.append("</section>")
    return "\n".join(parts)


def _round(
    phase_id: str, rnd: Mapping[str, Any], longest: bool, slowest: float, slowest_task: float
) -> str:
    anchor = _round_anchor(phase_id, rnd["round"])
    bad = [t for t in rnd["tasks"] if t["status"] in BAD]
    classes = " ".join(c for c in ("round", "longest" * longest, "trouble" * bool(bad)) if c)
    seconds = round_seconds(rnd)
    timed = "" if rnd.get("seconds") is not None else " (tools)"
    badges = '<span class="badge">longest</span>' if longest else ""
    if bad:
        badges += f'<span class="badge bad">{len(bad)} failed</span>'
    rows = []
    for t in rnd["tasks"]:
        failed = t["status"] in BAD
        mark = MARKS.get(t["status"], "✗" if failed else "·")
        output = " ".join(t["output"].split())[:OUTPUT_SHOWN]
        replayed = " (replayed)" if t.get("replayed") else ""
        rows.append(
            f'<tr id="{_e(anchor)}-{_e(t["task_id"])}"{" class=failed" if failed else ""}>'
            f'<td class="mark">{mark}</td><td class="tool">{_e(t["task_id"])} '
            f"<code>{_e(t['tool'])}</code></td><td class=status>"
            f"{'<strong>' * failed}{_e(t['status'])}{'</strong>' * failed}{replayed}</td>"
            f'<td class="time">{_bar(t["duration_s"] / slowest_task)}</td>'
            f'<td class="secs">{_secs(t["duration_s"])}</td><td class="out">{_e(output)}</td></tr>'
        )
    judge = ""
    if rnd.get("next_action"):
        rate = rnd.get("completion_rate")
        done = f"{rate:.0%}" if isinstance(rate, int | float) else "?"
        judge = (
            f'<p class="judge"><b>judge</b>: {done} done, next {_e(rnd["next_action"])}: '
            f"{_e(rnd['judge'])}</p>"
        )
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in rnd["notes"])
    return (
        f'<div class="{classes}" id="{_e(anchor)}"><div class="round-head">'
        f'<span class="title">Round {_e(rnd["round"])}</span>{_bar(seconds / slowest)}'
        f'<span class="when">{_secs(seconds)}{timed}</span>{badges}</div>'
        f'<table class="tasks">{"".join(rows)}</table>{judge}{notes}</div>'
    )


def _event(event: Mapping[str, Any]) -> str:
    if event.get("kind") == "replan":
        text = (
            f"<b>↻ replan</b> after {_e(event.get('phase_id'))}: "
            f"{_e(event.get('reason') or 'no reason given')} → {_e(event.get('outcome'))}"
        )
    else:
        waited = float(event.get("waited_s") or 0.0)
        text = (
            f"<b>review</b> ({_e(event.get('review'))}): {_e(event.get('action'))}, "
            f"answered after {_secs(waited)}"
        )
    return f'<div class="event">{text}</div>'


def stage_chart(stages: list[Mapping[str, Any]]) -> str:
    """Steps and tokens of each stage as bars, with model calls and time beside them."""
    if not stages:
        return ""
    most_steps = max(s["steps"] for s in stages) or 1
    most_tokens = max(s["prompt_tokens"] + s["completion_tokens"] for s in stages) or 1
    rows = []
    for s in stages:
        if not (s["steps"] or s["llm_calls"] or s["seconds"]):
            continue  # e.g. human_review: its time is a person's, and it spends nothing
        tokens = s["prompt_tokens"] + s["completion_tokens"]
        rows.append(
            f"<tr><td><code>{_e(s['stage'])}</code></td>"
            f'<td class="bar">{_bar(s["steps"] / most_steps)}</td><td class="num">{s["steps"]}</td>'
            f'<td class="bar">{_bar(tokens / most_tokens, "tokens")}</td>'
            f'<td class="num">{tokens:,}</td><td class="num">{s["llm_calls"]}</td>'
            f'<td class="num">{_secs(float(s["seconds"]))}</td></tr>'
        )
    head = (
        '<tr><th>stage</th><th colspan="2">steps</th><th colspan="2">tokens</th>'
        "<th>model calls</th><th>time</th></tr>"
    )
    return (
        f'<h2>Model use by stage</h2>\n<table class="chart">{head}{"".join(rows)}</table>'
        '<p class="muted">Time is wall time between checkpoints; waiting for a person is not '
        "counted.</p>"
    )
