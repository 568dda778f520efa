"""The local suite's tasks: requests, the files they start from, checkers, caller checks.

`TASKS` is the suite a run's faults are traced on; `bench.held_back` holds tasks of other
kinds, never traced or tuned on.
"""

from __future__ import annotations

import configparser
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class WorkspaceTask:
    """A request, the files it starts from, a checker of the files afterwards, caller checks.

    ``solution``: the files a right run leaves that differ from ``files`` (None: deleted), one
    right answer the checker accepts; `bench.proposals` reads the analysis's checks against it.
    """

    name: str
    request: str
    files: dict[str, str]
    check: Callable[[Path], bool]
    checks: tuple[str, ...] = field(default=())
    solution: dict[str, str | None] = field(default_factory=dict)

    def fresh(self, root: Path) -> Path:
        """A new workspace holding the task's files."""
        root.mkdir(parents=True)
        for rel, text in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return root

    def solved(self, root: Path) -> Path:
        """A new workspace as a right run leaves it: the task's files, then its solution."""
        self.fresh(root)
        for rel, text in self.solution.items():
            path = root / rel
            if text is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return root


def text_of(root: Path, rel: str) -> str:
    """A workspace file's text, or "" when it is not there."""
    path = root / rel
    return path.read_text(errors="replace") if path.is_file() else ""


def lines_of(root: Path, rel: str) -> list[str]:
    """A workspace file's lines that hold something, stripped."""
    return [line.strip() for line in text_of(root, rel).splitlines() if line.strip()]


def _edited_ini(root: Path) -> bool:
    text = text_of(root, "config.ini")
    return "debug = false" in text and "debug = true" not in text and "port = 8080" in text


def _listed(root: Path) -> bool:
    return all(n in text_of(root, "files.md") for n in ("notes.txt", "todo.txt", "plan.md"))


def _json(root: Path, rel: str) -> Any:
    try:
        return json.loads(text_of(root, rel))
    except ValueError:
        return None


def _version_set(root: Path) -> bool:
    data = _json(root, "package.json")
    return (
        isinstance(data, dict)
        and data.get("version") == "1.2.0"
        and data.get("name") == "demo-app"
        and data.get("dependencies") == {"left-pad": "^1.3.0"}
    )


def _concatenated(root: Path) -> bool:
    return lines_of(root, "full.txt") == ["alpha", "beta", "gamma", "delta"]


def _renamed(root: Path) -> bool:
    text = text_of(root, "greet.py")
    return "def greet(name):" in text and 'print(greet("world"))' in text and "hello" not in text


def _key_added(root: Path) -> bool:
    parser = configparser.ConfigParser()
    try:
        parser.read_string(text_of(root, "app.ini"))
    except configparser.Error:
        return False
    return (
        parser.get("server", "timeout", fallback=None) == "30"
        and parser.get("server", "host", fallback=None) == "localhost"
        and parser.get("log", "level", fallback=None) == "info"
    )


LOG = """2026-11-01 10:00:01 INFO start
2026-11-01 10:00:02 ERROR disk full
2026-11-01 10:00:03 INFO retry
2026-11-01 10:00:04 ERROR disk full
2026-11-01 10:00:05 WARN slow
2026-11-01 10:00:06 ERROR timeout
2026-11-01 10:00:07 INFO stop
"""


PACKAGE = (
    json.dumps(
        {"name": "demo-app", "version": "1.1.4", "dependencies": {"left-pad": "^1.3.0"}}, indent=2
    )
    + "\n"
)

TASKS = (
    WorkspaceTask(
        "write",
        "Write a file named hello.txt containing exactly: Hello, world!",
        {},
        lambda root: text_of(root, "hello.txt").strip() == "Hello, world!",
        ("contains:hello.txt:Hello, world!",),
        {"hello.txt": "Hello, world!\n"},
    ),
    WorkspaceTask(
        "list",
        "List the files in this folder and write their names to files.md, one per line.",
        {"notes.txt": "meeting notes\n", "todo.txt": "buy milk\n", "plan.md": "# Plan\n"},
        _listed,
        ("contains:files.md:notes.txt", "contains:files.md:todo.txt", "contains:files.md:plan.md"),
        {"files.md": "notes.txt\ntodo.txt\nplan.md\n"},
    ),
    WorkspaceTask(
        "sum",
        "Read numbers.txt (one integer per line) and write their sum to sum.txt.",
        {"numbers.txt": "17\n25\n8\n"},
        lambda root: text_of(root, "sum.txt").strip() == "50",
        ("contains:sum.txt:50",),
        {"sum.txt": "50\n"},
    ),
    WorkspaceTask(
        "edit_ini",
        "In config.ini, change debug = true to debug = false; leave the other lines as they are.",
        {"config.ini": "name = demo\ndebug = true\nport = 8080\n"},
        _edited_ini,
        ("contains:config.ini:debug = false", "contains:config.ini:port = 8080"),
        {"config.ini": "name = demo\ndebug = false\nport = 8080\n"},
    ),
    WorkspaceTask(
        "find",
        "Find the file that defines the function parse_date and write its path to answer.txt.",
        {
            "src/app/main.py": "from util.dates import parse_date\n\nprint(parse_date('x'))\n",
            "src/util/dates.py": "def parse_date(text):\n    return text.split('-')\n",
            "src/util/text.py": "def shout(text):\n    return text.upper()\n",
        },
        lambda root: "src/util/dates.py" in text_of(root, "answer.txt"),
        ("contains:answer.txt:dates.py",),
        {"answer.txt": "src/util/dates.py\n"},
    ),
    WorkspaceTask(
        "count",
        "Count the lines of app.log that contain ERROR and write the count to errors.txt.",
        {"app.log": LOG},
        lambda root: text_of(root, "errors.txt").strip() == "3",
        ("contains:errors.txt:3",),
        {"errors.txt": "3\n"},
    ),
    WorkspaceTask(
        "json_edit",
        "In package.json, set the version to 1.2.0 and keep every other field as it is.",
        {"package.json": PACKAGE},
        _version_set,
        (r'matches:package.json:"version"\s*:\s*"1\.2\.0"',),
        {"package.json": PACKAGE.replace("1.1.4", "1.2.0")},
    ),
    WorkspaceTask(
        "concat",
        "Join part1.txt and part2.txt, in that order, into a new file full.txt.",
        {"part1.txt": "alpha\nbeta\n", "part2.txt": "gamma\ndelta\n"},
        _concatenated,
        ("contains:full.txt:alpha", "contains:full.txt:delta"),
        {"full.txt": "alpha\nbeta\ngamma\ndelta\n"},
    ),
    WorkspaceTask(
        "command",
        "Run wc -l on data.csv and write the number of lines it reports to lines.txt.",
        {"data.csv": "id,name\n1,ann\n2,bob\n3,cid\n4,dan\n5,eve\n"},
        lambda root: text_of(root, "lines.txt").strip().split()[:1] == ["6"],
        ("contains:lines.txt:6",),
        {"lines.txt": "6\n"},
    ),
    WorkspaceTask(
        "json_read",
        'Read settings.json and write the value of its "timeout" field to timeout.txt.',
        {"settings.json": '{"retries": 5, "timeout": 45, "verbose": false}\n'},
        lambda root: text_of(root, "timeout.txt").strip() == "45",
        ("contains:timeout.txt:45",),
        {"timeout.txt": "45\n"},
    ),
    WorkspaceTask(
        "rename",
        "In greet.py, rename the function hello to greet, in its definition and in its call.",
        {"greet.py": 'def hello(name):\n    return "Hi " + name\n\n\nprint(hello("world"))\n'},
        _renamed,
        ("contains:greet.py:def greet(name):", 'contains:greet.py:print(greet("world"))'),
        {"greet.py": 'def greet(name):\n    return "Hi " + name\n\n\nprint(greet("world"))\n'},
    ),
    WorkspaceTask(
        "ini_add",
        "In app.ini, add the setting timeout = 30 to the [server] section.",
        {"app.ini": "[server]\nhost = localhost\nport = 80\n\n[log]\nlevel = info\n"},
        _key_added,
        (r"matches:app.ini:\[server\][^\[]*timeout\s*=\s*30",),
        {"app.ini": "[server]\nhost = localhost\nport = 80\ntimeout = 30\n\n[log]\nlevel = info\n"},
    ),
)
