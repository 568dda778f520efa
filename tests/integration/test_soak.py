"""Kill-and-resume soak: runs killed with SIGKILL at random moments, resumed until done.

Each run is a three-phase task (two rounds a phase) whose rounds write a file with the built-in
`write_file`, run `sleep` with the built-in `run_command`, and call `logged_write`, a tool that
writes a note, runs a command and logs "start LABEL" / "done LABEL" itself. Two drivers share one
SQLite file. Every thread must end with a summary; the tool's own log must show no call run twice
(it is not idempotent: an interrupted call is reported, never repeated); the file must pass
``PRAGMA integrity_check``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from procs import Proc, query
from scripts import make_script

pytestmark = pytest.mark.integration

RUNS = 20
SEED = int(os.environ.get("PHASEGRAPH_SOAK_SEED", "20261123"))


@dataclass
class Outcome:
    thread: str
    kills: int = 0
    restarts: int = 0  # killed before its first checkpoint: started again
    out: dict[str, object] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    workspace: Path = Path()


def drive(base: Path, db: Path, index: int) -> Outcome:
    """Start one run, SIGKILL it 1-3 times at random moments, resume it until it ends."""
    rng = random.Random(SEED + index)
    outcome = Outcome(thread=f"soak-{index}")
    home = base / outcome.thread
    home.mkdir()
    proc = Proc(home, make_script(), db)
    proc.soak = outcome.workspace = home / "ws"
    proc.soak.mkdir()
    planned = rng.randint(1, 3)
    command = ["start", f"Soak run {index}"]
    for _ in range(30):
        runner = proc.start_background(outcome.thread, *command)
        if outcome.kills < planned and _alive_after(runner, proc, rng, first=outcome.kills == 0):
            runner.kill()  # SIGKILL: no cleanup, no flush, no lease release
            runner.communicate()
            outcome.kills += 1
            command = ["resume"]
            continue
        stdout, stderr = runner.communicate(timeout=180)
        lines = [line for line in stdout.splitlines() if line.strip()]
        out = json.loads(lines[-1]) if lines else {}
        if "unknown thread" in str(out.get("message", "")):
            outcome.restarts += 1  # the kill came before the first checkpoint
            command = ["start", f"Soak run {index}"]
            continue
        if "has ended" in str(out.get("message", "")):
            command = ["show"]  # the kill came after the last checkpoint: read what it left
            continue
        assert runner.returncode == 0, (out, stderr[-2000:])
        outcome.out = out
        outcome.log = proc.tool_lines()
        return outcome
    raise AssertionError(f"{outcome.thread} did not end")


def _alive_after(
    runner: subprocess.Popen[str], proc: Proc, rng: random.Random, first: bool
) -> bool:
    """Wait for the moment to kill; False if the run ended first.

    The first kill of a run waits for a random tool call to start, so it lands mid-call; later
    ones come after a random time, wherever the run is then.
    """
    if not first:
        try:
            runner.wait(timeout=rng.uniform(0.2, 4.0))
            return False
        except subprocess.TimeoutExpired:
            return True
    calls = rng.randint(1, 10)  # a run starts 12 logged calls
    while runner.poll() is None:
        if sum(line.startswith("start ") for line in proc.tool_lines()) >= calls:
            return True
        time.sleep(0.01)
    return False


def test_runs_killed_at_random_moments_resume_to_a_summary_and_never_repeat_a_call(
    tmp_path: Path,
) -> None:
    db = tmp_path / "soak.sqlite"
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda i: drive(tmp_path, db, i), range(RUNS)))

    duplicates = interrupted = 0
    for o in outcomes:
        brief = (o.thread, o.kills, o.out.get("status"), o.out.get("step_count"), o.log[-4:])
        assert o.out["status"] == "completed", brief
        assert o.out["final_summary"], brief
        starts = Counter(line.split(" ", 1)[1] for line in o.log if line.startswith("start "))
        dones = Counter(line.split(" ", 1)[1] for line in o.log if line.startswith("done "))
        duplicates += sum(n - 1 for n in starts.values() if n > 1)
        interrupted += sum(1 for label in starts if label not in dones)
        # every round's calls have a result; what a result calls done really happened
        for record in o.out["rounds"]:
            results = {r["task_id"]: r for r in record["results"]}
            assert set(results) == {"w", "c", "n1", "n2"}
            assert {r["status"] for r in results.values()} <= {"ok", "interrupted"}
            label = f"{record['phase_id']}.r{record['round']}"
            if results["w"]["status"] == "ok":
                written = o.workspace / "out" / f"{label}.txt"
                assert written.read_text() == f"{label}\n"
            for task in ("n1", "n2"):
                note = f"{label}.{task}"
                if results[task]["status"] == "ok":
                    assert dones[note] == 1 and (o.workspace / "notes" / f"{note}.txt").exists()
                else:
                    assert "outcome unknown" in results[task]["output"]
                    assert dones[note] <= 1 and starts[note] <= 1

    assert duplicates == 0
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    assert query(db, "SELECT count(*) FROM phasegraph_leases") == [(0,)]
    assert query(db, "SELECT count(DISTINCT thread_id) FROM checkpoints") == [(RUNS,)]
    kills = sum(o.kills for o in outcomes)
    assert kills >= RUNS  # every run was killed ...
    assert max(o.kills for o in outcomes) >= 2  # ... some several times
    assert interrupted >= RUNS // 2  # and many kills cut a tool call off mid-way
    print(
        f"\nsoak: {RUNS} runs, {kills} SIGKILLs survived "
        f"({sum(o.restarts for o in outcomes)} before a first checkpoint), "
        f"{interrupted} calls interrupted and reported, {duplicates} duplicate executions"
    )
