"""The HTML report as a person sees it: printed by headless Chromium, its visible text read back.

Printing to PDF keeps only what is rendered, so text hidden by markup or style would be missing;
the printed pages, turned into pixels, show whether the highlights survive printing. Needs
Debian's chromium and poppler-utils (pdftotext, pdftoppm), which `.ci/run` installs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from phasegraph import Context, ScriptedChatModel, build_graph, resume
from phasegraph.report import render
from phasegraph.report.history import run_history

from scripts import (
    MULTI_PHASE_CHECKS,
    ToolLog,
    final_state,
    make_script,
    make_slow_tools,
    multi_phase_script,
)

pytestmark = pytest.mark.integration

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-pdf-header-footer",
]


def _tool(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(f"{names[0]} is not installed (.ci/run installs chromium and poppler-utils)")


def test_the_html_report_shows_summary_and_statistics(tools: list, tmp_path: Path) -> None:
    chromium = _tool("chromium", "chromium-browser")
    pdftotext = _tool("pdftotext")
    with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
        graph = build_graph(
            model=ScriptedChatModel(script=make_script()), tools=tools, checkpointer=saver
        )
        values = final_state(graph, 
            {"request": "Report on the workspace files <b>now</b>"},
            {"configurable": {"thread_id": "html"}},
            context=Context(),
        )
    page = tmp_path / "report.html"
    page.write_text(render("html", values, "html"), encoding="utf-8")
    visible = " ".join(_pdf_text(_print(chromium, page, tmp_path), pdftotext).split())
    assert "Run report: html" in visible
    assert "Scripted summary of the run." in visible  # the summary
    assert "it ran" in visible  # a highlight
    # the statistics table: phases, rounds, tasks ok, steps, LLM calls
    for header in ("phases", "rounds", "tasks", "steps", "LLM", "calls", "Statistics"):
        assert header in visible
    assert "2/2 2 2/2 7 7" in visible
    assert "<b>now</b>" in visible  # text from the request is shown, not rendered as markup


def _print(chromium: str, page: Path, tmp_path: Path) -> Path:
    pdf = page.with_suffix(".pdf")
    subprocess.run(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--print-to-pdf={pdf}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return pdf


def _pdf_text(pdf: Path, pdftotext: str) -> str:
    return subprocess.run(
        [pdftotext, "-layout", str(pdf), "-"], check=True, capture_output=True, text=True
    ).stdout


def _colours(pdf: Path, pdftoppm: str, tmp_path: Path) -> set[tuple[int, int, int]]:
    """Every colour on the printed pages (binary PPM, which needs no image library to read)."""
    subprocess.run([pdftoppm, "-r", "40", str(pdf), str(tmp_path / "page")], check=True)
    seen: set[tuple[int, int, int]] = set()
    for image in sorted(tmp_path.glob("page*.ppm")):
        data = image.read_bytes()
        magic, width, height, maxval, pixels = data.split(maxsplit=4)
        assert magic == b"P6" and maxval == b"255"
        size = int(width) * int(height) * 3
        raw = pixels[:size]
        seen |= {(raw[i], raw[i + 1], raw[i + 2]) for i in range(0, size, 3)}
    return seen


def test_a_multi_phase_report_puts_the_failure_and_the_longest_round_in_sight(
    tools: list, tmp_path: Path
) -> None:
    chromium = _tool("chromium", "chromium-browser")
    pdftotext, pdftoppm = _tool("pdftotext"), _tool("pdftoppm")
    config: dict = {"configurable": {"thread_id": "multi"}}
    context = Context(workspace=str(tmp_path), review="plan", extra_rounds_per_phase=0)
    with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
        graph = build_graph(
            model=ScriptedChatModel(script=multi_phase_script()),
            tools=make_slow_tools(ToolLog()),
            builtin_tools=True,
            checkpointer=saver,
        )
        start = {"request": "Write a short report", "checks": MULTI_PHASE_CHECKS}
        final_state(graph, start, config, context=context)
        values = resume(graph, config, {"action": "approve"}, context=context)
        history = run_history(graph, config)
    page = tmp_path / "multi.html"
    page.write_text(render("multi", values, "html", history), encoding="utf-8")
    pdf = _print(chromium, page, tmp_path)
    visible = " ".join(_pdf_text(pdf, pdftotext).split())
    # the glance comes before the summary, and names the failure and the longest round
    glance = visible.index("At a glance: incomplete")
    assert glance < visible.index("Summary")
    assert "p1 round 1, t2 fail failed: RuntimeError: disk is read-only" in visible
    assert "longest round: p1 round 2" in visible
    assert "checks: 1 of 2 pass: fails contains:out.txt:goodbye" in visible
    # the timeline: phases, rounds, tasks with their times, the review and the replan
    timeline = visible[visible.index("Timeline") :]
    for part in ("p1 · Gather", "p2 · Draft", "p3 · Finish", "Round 2", "longest", "1 failed"):
        assert part in timeline
    assert "review (plan_review): approve" in timeline
    assert "replan after p2: the draft misses the notes → new phases: p3 Finish" in timeline
    assert "code overrode the judge" in timeline
    # the chart of model use by stage
    chart = visible[visible.index("Model use by stage") :]
    for stage in ("analyse", "phase_plan", "plan", "execute", "judge", "replan", "summarize"):
        assert stage in chart
    # the highlights are printed, not only shown on screen: the failed task's red row, the
    # longest round's amber box, and the bars of the chart
    colours = _colours(pdf, pdftoppm, tmp_path)
    for name, rgb in (("failed row", (0xFF, 0xEB, 0xE9)), ("longest round", (0xFF, 0xF8, 0xE5))):
        assert any(max(abs(a - b) for a, b in zip(c, rgb, strict=True)) <= 3 for c in colours), name
    assert any(max(abs(a - b) for a, b in zip(c, (0x82, 0x50, 0xDF), strict=True)) <= 12
               for c in colours), "token bars"  # fmt: skip
