"""The benchmark runner runs (`python -m bench --quick`): figures are printed, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]


def test_the_quick_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "checkpoint bytes, x per doubling of steps" in done.stdout
    figures = json.loads(out.read_text())
    # each growth run really spent its steps (a run that ended early would measure nothing)
    assert [r["steps"] for r in figures["checkpoint_growth"]["rows"]][-1] >= 98
    assert figures["many_threads"]["threads"] == 1002
    assert figures["parallel_round"]["tasks"] == 8
    # the comparison is only fair if every system did the whole task the same way
    rows = figures["architectures"] + figures["architectures_1000_token_records"]
    assert {r["system"] for r in rows} == {"phasegraph", "react", "plan_execute"}
    for row in rows:
        assert row["all_records_read"], row
        assert row["tool_actions"] == row["actions_needed"], row  # nothing read twice or skipped
        assert row["codes_reported"] == row["actions_needed"], row
        assert row["llm_calls"] > 0 and row["prompt_tokens"] > 0
        # the simulated model's and tool's own work is measured, and left out of the framework's
        assert 0 < row["framework_s"] < row["real_s"], row
    # the former default, twice the history budget, did the same work on more prompt tokens
    larger = figures["phasegraph_prompt_budget_3000"]
    assert larger["all_records_read"] and larger["codes_reported"] == larger["actions_needed"]
    default = next(r for r in figures["architectures"] if r["system"] == "phasegraph"
                   and r["actions_needed"] == larger["actions_needed"])  # fmt: skip
    assert default["prompt_tokens"] < larger["prompt_tokens"]
    assert "prompt_token_budget 3,000" in done.stdout
    assert figures["overhead"]["react_ms_per_action"] > 0
    assert figures["overhead"]["phasegraph_ms_per_action_in_memory"] > 0
    assert figures["overhead"]["short_phases_wall_over_react"] > 0
    assert "whole run, the simulated model's own work in it" in done.stdout
    cost = figures["command_cost"]
    assert cost["available"] and [r["command"] for r in cost["rows"]] == ["true", "wc -l data.csv"]
    assert all(r["sandboxed_ms"] > 0 and r["checks_only_ms"] > 0 for r in cost["rows"])
    assert "sandboxed ms" in done.stdout


def test_the_local_suite_refuses_a_name_it_does_not_know_before_running_anything(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.local_suite", "--systems", "react", "--work", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "--systems: unknown react; known: phasegraph, create_react_agent" in done.stderr
    assert list(tmp_path.iterdir()) == []  # no workspace made, no model loaded
