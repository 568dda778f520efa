"""Running phasegraph in separate processes against one SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).with_name("runner.py")


class Proc:
    """Run tests/integration/runner.py against one SQLite file and one script."""

    def __init__(self, tmp_path: Path, script: dict[str, list[Any]]) -> None:
        self.db = tmp_path / "threads.sqlite"
        self.log = tmp_path / "tools.log"
        self.script = tmp_path / "script.json"
        self.script.write_text(json.dumps(script), encoding="utf-8")
        self.env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true"}

    def argv(self, thread: str, *args: str, review: str = "none", fast: bool = False) -> list[str]:
        return [
            sys.executable,
            str(RUNNER),
            str(self.db),
            thread,
            *args,
            "--script",
            str(self.script),
            "--log",
            str(self.log),
            "--review",
            review,
            *(["--fast"] if fast else []),
        ]

    def run(
        self, thread: str, *args: str, review: str = "none", fast: bool = False
    ) -> tuple[int, dict[str, Any], str]:
        done = subprocess.run(
            self.argv(thread, *args, review=review, fast=fast),
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
        )
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        return done.returncode, json.loads(lines[-1]) if lines else {}, done.stderr

    def start_background(self, thread: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(thread, *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )

    def tool_lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
