"""What `phasegraph --help` tells a newcomer: every model it can name, and each default."""

from __future__ import annotations

import argparse

from phasegraph.cli import build_parser
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
