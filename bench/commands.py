"""What a command costs in the operating-system sandbox, against the argument checks alone.

    python -m bench.commands [--repeats 100]

Each `run_command` call is timed whole (checks, start, wait, output), the two settings
alternating call by call so that the machine's load falls on both alike; the figures are the
median milliseconds per call and their ratio, for a program that does nothing (`true`) and one
that reads a file (`wc -l`). The sandbox's one-off probe (is bubblewrap usable here?) is timed
apart: a process pays it once.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from phasegraph.tools import sandbox
from phasegraph.tools.commands import CommandSettings
from phasegraph.tools.pipeline import run_command
from phasegraph.tools.workspace import Workspace

COMMANDS = (["true"], ["wc", "-l", "data.csv"])


def command_cost(work: Path, repeats: int = 100) -> dict[str, Any]:
    """Median ms per call of each command in each setting, and the probe's ms."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "data.csv").write_text("".join(f"{i},row\n" for i in range(1000)))
    space = Workspace(str(work))
    sandbox.sandbox_status.cache_clear()
    start = time.perf_counter()
    status = sandbox.sandbox_status()
    probe_ms = (time.perf_counter() - start) * 1000
    settings = {
        mode: CommandSettings(allowed=("true", "wc"), timeout_s=30, sandbox=mode)  # type: ignore[arg-type]
        for mode in ("os", "checks")
    }
    rows = []
    for argv in COMMANDS:
        times: dict[str, list[float]] = {"os": [], "checks": []}
        for i in range(repeats):
            for mode in ("os", "checks") if i % 2 == 0 else ("checks", "os"):
                began = time.perf_counter()
                run_command(list(argv), workspace=space, settings=settings[mode])
                times[mode].append((time.perf_counter() - began) * 1000)
        os_ms, checks_ms = (statistics.median(times[m]) for m in ("os", "checks"))
        rows.append(
            {
                "command": " ".join(argv),
                "sandboxed_ms": os_ms,
                "checks_only_ms": checks_ms,
                "ratio": os_ms / checks_ms,
            }
        )
    return {"available": status.available, "probe_ms": probe_ms, "repeats": repeats, "rows": rows}


def table(result: dict[str, Any]) -> str:
    """The figures as text."""
    lines = [
        f"command cost, median of {result['repeats']} calls each, settings alternating "
        f"(sandbox probe once per process: {result['probe_ms']:.1f} ms)",
        f"{'command':<16} {'sandboxed ms':>12} {'checks only ms':>14} {'ratio':>6}",
    ]
    for row in result["rows"]:
        lines.append(
            f"{row['command']:<16} {row['sandboxed_ms']:>12.2f} {row['checks_only_ms']:>14.2f} "
            f"{row['ratio']:>6.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the command-cost table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        print(table(command_cost(Path(work) / "ws", args.repeats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
