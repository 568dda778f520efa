"""Probe requests for the analysis's proposed checks: kinds the suite and held-back set lack.

Each has the files it starts from and one right result (`WorkspaceTask.solution`).
`bench.proposals` runs only the request analysis on them and counts, per kind of check, how
often a check it keeps fails on the right result (a wrong check: it would hold a right run
open) and how often it passes there. Half of them ask for work where a ``number``, ``keeps``
or ``copy`` check is right, half for work where such a check would be wrong. Written on
2026-11-26 with the check kinds they measure, before any run of them; never traced or tuned on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.suite_tasks import WorkspaceTask, lines_of, text_of

NAMES = "Ada\nGrace\nLinus\n"
CONFIG = "mode: fast\nretries: 3\n"
EXPENSES = "item,amount\nrent,700\nfood,215\nbus,35\n"
SERVER_LOG = "INFO up\nDEBUG x=1\nINFO ready\nDEBUG y=2\nWARN slow\n"
ESSAY = "The colour of the sea.\nA colour wheel.\nNo change here.\n"
POEM = "Roses are red\nViolets are blue and deep\nSugar is sweet\n"
SETUP = "[metadata]\nname = tool\nversion = 2.4.1\n"
REPORT = "# Report\nAll good.\n"
STORY = "once upon a time there was a fox\nthe end\n"
STACK = "first\nsecond\nthird\n"
TODO = "- [x] wash car\n- [ ] pay rent\n- [ ] call mum\n- [x] buy bread\n"


def _is(rel: str, text: str) -> Callable[[Path], bool]:
    return lambda root: text_of(root, rel).strip() == text.strip()


PROBES = (
    WorkspaceTask(
        "add_name",
        "Add the name Zoe as a new last line of names.txt; the names already in it stay.",
        {"names.txt": NAMES},
        lambda root: lines_of(root, "names.txt") == ["Ada", "Grace", "Linus", "Zoe"],
        solution={"names.txt": NAMES + "Zoe\n"},
    ),
    WorkspaceTask(
        "backup",
        "Make backup/config.yaml an exact copy of config.yaml.",
        {"config.yaml": CONFIG},
        _is("backup/config.yaml", CONFIG),
        solution={"backup/config.yaml": CONFIG},
    ),
    WorkspaceTask(
        "count_docs",
        "How many files are in the docs folder? Write the number to count.txt.",
        {"docs/a.md": "a\n", "docs/b.md": "b\n", "docs/c.txt": "c\n", "readme.md": "r\n"},
        _is("count.txt", "3"),
        solution={"count.txt": "3\n"},
    ),
    WorkspaceTask(
        "total",
        "Add up the amount column of expenses.csv and write the total to total.txt.",
        {"expenses.csv": EXPENSES},
        _is("total.txt", "950"),
        solution={"total.txt": "950\n"},
    ),
    WorkspaceTask(
        "drop_debug",
        "Remove every line containing DEBUG from server.log.",
        {"server.log": SERVER_LOG},
        lambda root: lines_of(root, "server.log") == ["INFO up", "INFO ready", "WARN slow"],
        solution={"server.log": "INFO up\nINFO ready\nWARN slow\n"},
    ),
    WorkspaceTask(
        "spelling",
        "Replace colour with color everywhere in essay.txt.",
        {"essay.txt": ESSAY},
        _is("essay.txt", ESSAY.replace("colour", "color")),
        solution={"essay.txt": ESSAY.replace("colour", "color")},
    ),
    WorkspaceTask(
        "longest",
        "Write the longest line of poem.txt to longest.txt.",
        {"poem.txt": POEM},
        _is("longest.txt", "Violets are blue and deep"),
        solution={"longest.txt": "Violets are blue and deep\n"},
    ),
    WorkspaceTask(
        "version",
        "Create version.txt holding the version string from setup.cfg.",
        {"setup.cfg": SETUP},
        _is("version.txt", "2.4.1"),
        solution={"version.txt": "2.4.1\n"},
    ),
    WorkspaceTask(
        "reviewed",
        "Copy report.md to report_old.md, then add a line Reviewed at the end of report.md.",
        {"report.md": REPORT},
        lambda root: text_of(root, "report_old.md") == REPORT
        and lines_of(root, "report.md") == ["# Report", "All good.", "Reviewed"],
        solution={"report_old.md": REPORT, "report.md": REPORT + "Reviewed\n"},
    ),
    WorkspaceTask(
        "word_total",
        "Write the number of words in story.txt to words.txt, followed by the word words.",
        {"story.txt": STORY},
        _is("words.txt", "10 words"),
        solution={"words.txt": "10 words\n"},
    ),
    WorkspaceTask(
        "reverse",
        "Reverse the order of the lines in stack.txt.",
        {"stack.txt": STACK},
        lambda root: lines_of(root, "stack.txt") == ["third", "second", "first"],
        solution={"stack.txt": "third\nsecond\nfirst\n"},
    ),
    WorkspaceTask(
        "open_items",
        "Write the items of todo.md that are not done yet (lines starting - [ ]) to open.md.",
        {"todo.md": TODO},
        lambda root: lines_of(root, "open.md") == ["- [ ] pay rent", "- [ ] call mum"],
        solution={"open.md": "- [ ] pay rent\n- [ ] call mum\n"},
    ),
)

