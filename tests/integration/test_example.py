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


def test_the_readme_code_runs_twice_in_one_folder(tmp_path: Path) -> None:
    # the README's "Use it from code" block, as a newcomer pastes it: twice, in one folder
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("## Use it from code", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "examples").symlink_to(Path(__file__).parents[2] / "examples")
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.startswith("plan_review\ncompleted [] ")
