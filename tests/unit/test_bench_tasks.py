"""The benchmark's tasks are sound: each checker rejects the files a task starts from and accepts
its right result, and the proposals table counts a kept check that fails there as wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.new_kinds import NEW_KINDS
from bench.probe_tasks import PROBES
from bench.proposals import kind_table
from bench.suite_tasks import TASKS, WorkspaceTask


@pytest.mark.parametrize("task", [*TASKS, *PROBES, *NEW_KINDS], ids=lambda t: t.name)
def test_a_checker_rejects_the_start_and_accepts_the_right_result(
    tmp_path: Path, task: WorkspaceTask
) -> None:
    assert not task.check(task.fresh(tmp_path / "start"))
    assert task.check(task.solved(tmp_path / "right"))


def test_the_proposals_table_counts_by_kind() -> None:
    rows = [
        {
            "kept": [
                {"label": "number:a.txt", "kind": "number", "right": True},
                {"label": "number:b.txt", "kind": "number", "right": False},
            ],
            "dropped": [
                "dropped the proposed check keeps:c.txt: c.txt is no text file",
                "dropped the proposed check {'kind': 'size'}: kind: no such kind",
            ],
        }
    ]
    table = kind_table(rows).splitlines()
    assert table[1:] == [
        "keeps             1     0      0      0",
        "number            2     2      1      1",
        "unreadable        1     0      0      0",
    ]
