"""Running phasegraph in separate processes against one database: a SQLite file or PostgreSQL."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).with_name("runner.py")
_SCRIPT = Path(sys.executable).with_name("phasegraph")


def phasegraph_argv() -> list[str]:
    """The ``phasegraph`` command: the environment's script, else the module."""
    return [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "phasegraph.cli"]


#: How the CLI names itself in the commands it prints, run as `cli_env` runs it: by its path.
PRINTED = shlex.join(
    [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "phasegraph.cli"]
)


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a CLI process: this one's, without the script's folder on PATH.

    So a test sees what a user sees who runs ``.venv/bin/phasegraph`` without activating the
    environment (as `.ci/run` does), whatever PATH the test runner had.
    """
    folders = os.environ.get("PATH", "").split(os.pathsep)
    own = _SCRIPT.parent.resolve()
    path = os.pathsep.join(f for f in folders if f and Path(f).resolve() != own)
    return {**os.environ, "PATH": path, **(extra or {}), "COLUMNS": "200"}


def query(db: str | Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of one query on a SQLite file or a PostgreSQL URL, read the plain way."""
    if "://" not in str(db):
        with contextlib.closing(sqlite3.connect(db)) as conn:
            return conn.execute(sql, params).fetchall()
    import psycopg

    with psycopg.connect(str(db)) as conn:
        return conn.execute(sql.replace("?", "%s"), params).fetchall()


class Proc:
    """Run tests/integration/runner.py against one database (SQLite file or URL) and one script."""

    def __init__(
        self, tmp_path: Path, script: dict[str, list[Any]], db: str | Path | None = None
    ) -> None:
        self.db = db or tmp_path / "threads.sqlite"
        self.log = tmp_path / "tools.log"
        self.script = tmp_path / "script.json"
        self.script.write_text(json.dumps(script), encoding="utf-8")
        self.soak: Path | None = None  # the soak test's workspace: runner.py --soak
        self.workspace: Path | None = None  # the built-in tools' folder: runner.py --workspace
        tests = str(Path(__file__).parents[1])  # the runner imports the shared scripts module
        path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH", "")) if p)
        self.env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true", "PYTHONPATH": path}

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
            *(["--soak", str(self.soak)] if self.soak else []),
            *(["--workspace", str(self.workspace)] if self.workspace else []),
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

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return query(self.db, sql, params)

    def tool_lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
