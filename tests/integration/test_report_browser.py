"""The HTML report as a person sees it: printed by headless Chromium, its visible text read back.

Printing to PDF keeps only what is rendered, so text hidden by markup or style would be missing.
Needs Debian's chromium and poppler-utils (pdftotext), which `.ci/run` installs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.report import render

from scripts import make_script

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
        values = graph.invoke(
            {"request": "Report on the workspace files <b>now</b>"},
            {"configurable": {"thread_id": "html"}},
            context=Context(),
        )
    page = tmp_path / "report.html"
    page.write_text(render("html", values, "html"), encoding="utf-8")
    pdf = tmp_path / "report.pdf"
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
    text = subprocess.run(
        [pdftotext, "-layout", str(pdf), "-"], check=True, capture_output=True, text=True
    ).stdout
    visible = " ".join(text.split())
    assert "Run report: html" in visible
    assert "Scripted summary of the run." in visible  # the summary
    assert "it ran" in visible  # a highlight
    # the statistics table: phases, rounds, tasks ok, steps, LLM calls
    for header in ("phases", "rounds", "tasks", "steps", "LLM", "calls", "Statistics"):
        assert header in visible
    assert "2/2 2 2/2 7 7" in visible
    assert "<b>now</b>" in visible  # text from the request is shown, not rendered as markup
