"""The README's main command: the quickstart example runs end to end in a fresh process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).parents[2] / "examples" / "quickstart.py"


def test_quickstart_pauses_resumes_and_writes_the_file() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Paused for plan_review: ['Survey', 'Write']" in done.stdout
    assert "status=completed steps=7" in done.stdout
    assert "'event': 'summary_ready'" in done.stderr
    workspace = Path(re.search(r"workspace=(\S+)", done.stdout).group(1))
    assert (workspace / "files.md").read_text() == "- notes.txt\n- todo.txt\n"
