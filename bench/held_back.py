"""Held-back workspace tasks: kinds the local suite does not hold, never traced or tuned on.

    python -m bench.local_suite --set held-back

The local suite (`bench.local_suite.TASKS`) is where a run's rounds are read and a fault is
named; these tasks are not. They were written on 2026-11-26, before the changes measured on
them, and are run before and after a change and reported apart from the suite, so that a
figure on them says how a change does on requests it was not made for. Their checkers read
the whole file the way a person would; their caller checks are what a caller would write.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from bench.suite_tasks import WorkspaceTask, lines_of, text_of

NAMES = "alice\nbob\n"
STORY = "The cat sat on the mat.\nA cat is not a dog.\nEvery cat naps.\n"
PEOPLE = "Mallory\nalice\nTrent\nbob\nEve\n"
WORDS = "red\ngreen\nred\nblue\ngreen\nred\n"
USERS = "id,name,email\n1,Ann,ann@example.org\n2,Bob,bob@example.org\n3,Cid,cid@example.org\n"
ESSAY = "Small models need\nshort prompts and clear tools.\nThat is all.\n"
SOURCES = {
    "a.py": "x = 1\n# TODO rename x\nprint(x)\n",
    "b.py": "# TODO add tests\ndef f():\n    return 2  # TODO document f\n",
}


def _bytes(root: Path, rel: str) -> bytes | None:
    path = root / rel
    return path.read_bytes() if path.is_file() else None


def _json_object(root: Path, rel: str) -> object:
    try:
        return json.loads(text_of(root, rel))
    except ValueError:
        return None


def _emails(root: Path) -> bool:
    wanted = [row["email"] for row in csv.DictReader(io.StringIO(USERS))]
    return lines_of(root, "emails.txt") == wanted


def _todos(root: Path) -> bool:
    got = lines_of(root, "todos.txt")
    wanted = ["# TODO rename x", "# TODO add tests", "return 2  # TODO document f"]
    return len(got) == 3 and all(any(w in line for line in got) for w in wanted)


HELD_BACK = (
    WorkspaceTask(
        "append_line",
        "Add the line carol to the end of names.txt, keeping the lines already there.",
        {"names.txt": NAMES},
        lambda root: lines_of(root, "names.txt") == ["alice", "bob", "carol"],
        ("contains:names.txt:carol", "contains:names.txt:alice"),
    ),
    WorkspaceTask(
        "copy",
        "Make a copy of report.md named report_backup.md.",
        {"report.md": "# Report\n\nSales rose 4% in May.\n- north: 12\n- south: 9\n"},
        lambda root: _bytes(root, "report_backup.md") == _bytes(root, "report.md")
        and _bytes(root, "report.md") is not None
        and b"Sales rose" in (_bytes(root, "report.md") or b""),
        ("contains:report_backup.md:Sales rose 4% in May.",),
    ),
    WorkspaceTask(
        "max_value",
        "Find the largest number in values.txt and write it to max.txt.",
        {"values.txt": "12\n87\n45\n3\n"},
        lambda root: text_of(root, "max.txt").strip() == "87",
        ("contains:max.txt:87",),
    ),
    WorkspaceTask(
        "first_line",
        "Write the first line of poem.txt to title.txt.",
        {"poem.txt": "Ode to a Compiler\nYou turn my words\ninto deeds.\n"},
        lambda root: text_of(root, "title.txt").strip() == "Ode to a Compiler",
        ("contains:title.txt:Ode to a Compiler",),
    ),
    WorkspaceTask(
        "delete_line",
        "Remove the line that says DEPRECATED from notes.txt and keep the other lines.",
        {"notes.txt": "keep one\nDEPRECATED\nkeep two\n"},
        lambda root: lines_of(root, "notes.txt") == ["keep one", "keep two"],
        ("contains:notes.txt:keep two",),
    ),
    WorkspaceTask(
        "replace_all",
        "In story.txt, replace every occurrence of the word cat with dog.",
        {"story.txt": STORY},
        lambda root: text_of(root, "story.txt") == STORY.replace("cat", "dog"),
        ("contains:story.txt:Every dog naps.",),
    ),
    WorkspaceTask(
        "sort_lines",
        "Write the names in people.txt to sorted.txt in alphabetical order, one per line.",
        {"people.txt": PEOPLE},
        lambda root: [n.lower() for n in lines_of(root, "sorted.txt")]
        == sorted(n.lower() for n in PEOPLE.split()),
        ("contains:sorted.txt:Trent",),
    ),
    WorkspaceTask(
        "distinct",
        "Write each distinct word of words.txt once to unique.txt, one per line, "
        "in the order they first appear.",
        {"words.txt": WORDS},
        lambda root: lines_of(root, "unique.txt") == ["red", "green", "blue"],
        ("contains:unique.txt:blue",),
    ),
    WorkspaceTask(
        "csv_column",
        "Write the values of the email column of users.csv to emails.txt, one per line.",
        {"users.csv": USERS},
        _emails,
        ("contains:emails.txt:cid@example.org",),
    ),
    WorkspaceTask(
        "word_count",
        "Count the words in essay.txt and write the number to words.txt.",
        {"essay.txt": ESSAY},
        lambda root: text_of(root, "words.txt").strip() == str(len(ESSAY.split())),
        (f"contains:words.txt:{len(ESSAY.split())}",),
    ),
    WorkspaceTask(
        "create_json",
        'Create config.json holding a JSON object whose "name" is "demo" and whose "port" '
        "is 8080.",
        {},
        lambda root: _json_object(root, "config.json") == {"name": "demo", "port": 8080},
        ('contains:config.json:"demo"', "contains:config.json:8080"),
    ),
    WorkspaceTask(
        "collect_todos",
        "Collect every line that contains TODO from a.py and b.py into a new file todos.txt.",
        SOURCES,
        _todos,
        ("contains:todos.txt:add tests",),
    ),
)
