"""What the command line tells a person: its help, and its progress on any stream."""

from __future__ import annotations

import argparse
import io
import re
import time

import pytest
from rich.console import Console

from phasegraph.cli import build_parser, render
from phasegraph.models.embedded import EMBEDDED


def _help(command: str) -> str:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return " ".join(sub.choices[command].format_help().split())


def test_run_help_names_every_embedded_model_and_the_defaults() -> None:
    text = _help("run")
    for name in EMBEDDED:
        assert name in text
    assert "step budget (default: PHASEGRAPH_MAX_STEPS or 40)" in text
    assert "(default: PHASEGRAPH_REVIEW or none)" in text


def test_report_help_says_its_default_format() -> None:
    assert "--format {md,html,json} (default: md)" in _help("report")


def test_progress_into_a_pipe_is_timed_and_a_long_stage_says_it_still_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(render, "HEARTBEAT_S", 0.05)
    stream = io.StringIO()
    err = Console(file=stream, force_terminal=False, width=200)
    with render.progress_printer(err) as show:
        show({"event": "stage_started", "stage": "judge"})
        time.sleep(0.3)
        show({"event": "summary_ready", "status": "completed"})
    lines = stream.getvalue().splitlines()
    assert all(re.match(r"\[ +\d+s\] ", line) for line in lines), lines
    assert lines[0].endswith("  judging the round...")
    assert any(line.endswith(" s so far") and "judging the round..." in line for line in lines)
    assert lines[-1].endswith("summary ready (completed)")
