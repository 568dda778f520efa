"""A second held-back set: kinds neither the suite nor `bench.held_back` holds.

    python -m bench.local_suite --set new-kinds

Written on 2026-12-07, before the changes of issue 58 (commands that write their result,
outputs by reference, rules that hold on any wording), and never traced or tuned on: code fixes
in Python, edits of TOML, YAML, JSON and INI files, changes across files, transformations of
text and CSV, and questions answered into a file. A task's checker reads the files the way the
person who asked would; a program's behaviour is checked by running it. Once one of these
tasks' runs has been read round by round, it belongs to the suite, not here.
"""

from __future__ import annotations

import configparser
import csv
import io
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from bench.suite_tasks import WorkspaceTask, lines_of, text_of


def _run(root: Path, rel: str, call: str) -> Any:
    """What ``call`` evaluates to once the workspace's module ``rel`` has run; None on failure."""
    names: dict[str, Any] = {}
    try:
        exec(compile(text_of(root, rel), rel, "exec"), names)  # noqa: S102 - the task's own file
        return eval(call, names)  # noqa: S307
    except Exception:  # a broken file is a failed task
        return None


def _toml(root: Path, rel: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text_of(root, rel))
    except tomllib.TOMLDecodeError:
        return {}


def _json(root: Path, rel: str) -> Any:
    try:
        return json.loads(text_of(root, rel))
    except ValueError:
        return None


def _ini(root: Path, rel: str) -> configparser.ConfigParser | None:
    parser = configparser.ConfigParser()
    try:
        parser.read_string(text_of(root, rel))
    except configparser.Error:
        return None
    return parser


def _rows(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text)) if row]


AVERAGE = "def average(values):\n    return sum(values) / (len(values) + 1)\n"
LAST = "def last_item(items):\n    return items[len(items)]\n"
WELCOME = 'def welcome(name, greeting):\n    return f"{greeting}, {name}!"\n'
PYPROJECT = (
    '[project]\nname = "tally"\nversion = "0.2.1"\nrequires-python = ">=3.10"\n'
    'dependencies = ["click>=8"]\n\n[tool.ruff]\nline-length = 100\n'
)
DEPLOY = (
    "service: web\nimage: web:1.4\ndeploy:\n  replicas: 1\n  memory: 512Mi\n"
    "ports:\n  - 8080\n"
)
SETTINGS = {"language": "en", "autosave": True, "font_size": 12}
TOOL_INI = "[logging]\nlevel = info\nverbose = yes\nfile = tool.log\n\n[cache]\nsize = 64\n"
LIMITS = "MAX_USERS = 50\n"
APP = (
    "from limits import MAX_USERS\n\n\ndef room_left(count):\n"
    "    return MAX_USERS - count\n"
)
ORDERS = (
    "id,customer,status\n101,Ann,shipped\n102,Bob,pending\n103,Cid,shipped\n"
    "104,Dee,cancelled\n105,Eve,shipped\n"
)
SALES = "region,amount\nnorth,120\nsouth,75\neast,230\nwest,45\n"
SHOUT = "keep calm\nand carry on\n"
STEPS = "open the lid\npour the water\nclose the lid\nwait\n"
STAFF = (
    "name,department,years\nAnn,sales,3\nBob,support,5\nCid,sales,1\nDee,engineering,7\n"
    "Eve,sales,2\nFay,support,4\n"
)
UTILS = (
    "import os\n\n\ndef home():\n    return os.path.expanduser('~')\n\n\n"
    "def join(a, b):\n    return os.path.join(a, b)\n\n\nclass Cache:\n"
    "    def get(self, key):\n        return None\n\n\ndef size(path):\n"
    "    return os.path.getsize(path)\n"
)
TEMPS = "city,temperature\nOslo,-3\nRome,14\nQuito,12\nYakutsk,-31\nCairo,24\n"
DRAFT = "Dear team,\n\nthe release moves\n\n\nto Friday.\n\nThanks\n"
TEAM_A = "Ann\nBob\nCid\nDee\n"
TEAM_B = "Eve\nCid\nAnn\nGus\n"
MATHUTILS = "def double(n):\n    return n * 2\n"
JOURNAL = "Mon: rain\nTue: sun\nWed: fog\nThu: snow\n"
DOTENV = "HOST=localhost\nPORT=3000\nDEBUG=0\n"
COLORS = "name,hex\nred,#ff0000\ngreen,#00ff00\nblue,#0000ff\n"


def _numbered(root: Path) -> bool:
    got = lines_of(root, "numbered.txt")
    want = [line for line in STEPS.splitlines() if line]
    return len(got) == len(want) and all(
        re.fullmatch(rf"{n}\s*[:.)-]?\s*{re.escape(line)}", got_line) is not None
        for n, (line, got_line) in enumerate(zip(want, got, strict=True), start=1)
    )


def _shipped(root: Path) -> bool:
    rows = _rows(text_of(root, "shipped.csv"))
    return rows == [r for r in _rows(ORDERS) if r[0] == "id" or r[2] == "shipped"]


def _renamed_constant(root: Path) -> bool:
    both = text_of(root, "limits.py") + text_of(root, "app.py")
    if "MAX_USERS" in both or "USER_LIMIT" not in text_of(root, "limits.py"):
        return False
    names: dict[str, Any] = {}
    try:
        exec(compile(text_of(root, "limits.py"), "limits.py", "exec"), names)  # noqa: S102
        app = text_of(root, "app.py").replace("from limits import USER_LIMIT", "")
        exec(compile(app, "app.py", "exec"), names)  # noqa: S102
        return bool(names["room_left"](20) == 30)
    except Exception:
        return False


def _yaml_replicas(root: Path) -> bool:
    return text_of(root, "deploy.yaml") == DEPLOY.replace("replicas: 1", "replicas: 3")


def _pyproject(root: Path) -> bool:
    data = _toml(root, "pyproject.toml")
    project = data.get("project", {})
    return (
        project.get("version") == "0.3.0"
        and project.get("name") == "tally"
        and project.get("dependencies") == ["click>=8"]
        and data.get("tool", {}).get("ruff", {}).get("line-length") == 100
    )


def _verbose_removed(root: Path) -> bool:
    parser = _ini(root, "tool.ini")
    return (
        parser is not None
        and not parser.has_option("logging", "verbose")
        and parser.get("logging", "level", fallback=None) == "info"
        and parser.get("logging", "file", fallback=None) == "tool.log"
        and parser.get("cache", "size", fallback=None) == "64"
    )


def _both_versions(root: Path) -> bool:
    parser = _ini(root, "setup.cfg")
    return (
        text_of(root, "VERSION").strip() == "2.0.0"
        and parser is not None
        and parser.get("metadata", "version", fallback=None) == "2.0.0"
        and parser.get("metadata", "name", fallback=None) == "gizmo"
    )


NEW_KINDS = (
    WorkspaceTask(
        "fix_average",
        "The function average in stats.py returns a wrong result (average([2, 4]) should be "
        "3). Fix the bug.",
        {"stats.py": AVERAGE},
        lambda root: _run(root, "stats.py", "(average([2, 4]), average([1, 2, 3, 10]))")
        == (3, 4),
        ("contains:stats.py:def average",),
        solution={"stats.py": AVERAGE.replace("(len(values) + 1)", "len(values)")},
    ),
    WorkspaceTask(
        "fix_index",
        "last_item in listing.py should return the last element of its list but raises an "
        "IndexError. Fix it.",
        {"listing.py": LAST},
        lambda root: _run(root, "listing.py", "(last_item([1, 2, 3]), last_item(['x']))")
        == (3, "x"),
        ("contains:listing.py:def last_item",),
        solution={"listing.py": LAST.replace("items[len(items)]", "items[-1]")},
    ),
    WorkspaceTask(
        "default_argument",
        'In greet.py, give the parameter greeting of welcome the default value "Hello", so '
        'that welcome("Ann") returns "Hello, Ann!".',
        {"greet.py": WELCOME},
        lambda root: _run(root, "greet.py", '(welcome("Ann"), welcome("Bo", "Hi"))')
        == ("Hello, Ann!", "Hi, Bo!"),
        ("contains:greet.py:def welcome",),
        solution={"greet.py": WELCOME.replace("greeting)", 'greeting="Hello")')},
    ),
    WorkspaceTask(
        "add_function",
        "Add a function square(n) that returns n * n to mathutils.py, keeping double as it is.",
        {"mathutils.py": MATHUTILS},
        lambda root: _run(root, "mathutils.py", "(square(7), double(4))") == (49, 8),
        ("contains:mathutils.py:def square",),
        solution={"mathutils.py": MATHUTILS + "\n\ndef square(n):\n    return n * n\n"},
    ),
    WorkspaceTask(
        "toml_version",
        "Change the project's version in pyproject.toml to 0.3.0.",
        {"pyproject.toml": PYPROJECT},
        _pyproject,
        ('contains:pyproject.toml:version = "0.3.0"',),
        solution={"pyproject.toml": PYPROJECT.replace("0.2.1", "0.3.0")},
    ),
    WorkspaceTask(
        "yaml_replicas",
        "In deploy.yaml, set replicas under deploy to 3 and change nothing else.",
        {"deploy.yaml": DEPLOY},
        _yaml_replicas,
        ("contains:deploy.yaml:replicas: 3",),
        solution={"deploy.yaml": DEPLOY.replace("replicas: 1", "replicas: 3")},
    ),
    WorkspaceTask(
        "json_add_key",
        'Add the key "theme" with the value "dark" to settings.json, keeping the keys it has.',
        {"settings.json": json.dumps(SETTINGS, indent=2) + "\n"},
        lambda root: _json(root, "settings.json") == {**SETTINGS, "theme": "dark"},
        ('contains:settings.json:"theme"',),
        solution={"settings.json": json.dumps({**SETTINGS, "theme": "dark"}, indent=2)},
    ),
    WorkspaceTask(
        "ini_remove",
        "Remove the verbose setting from the [logging] section of tool.ini.",
        {"tool.ini": TOOL_INI},
        _verbose_removed,
        ("contains:tool.ini:level = info",),
        solution={"tool.ini": TOOL_INI.replace("verbose = yes\n", "")},
    ),
    WorkspaceTask(
        "dotenv_port",
        "Change the port in .env from 3000 to 8000.",
        {".env": DOTENV},
        lambda root: text_of(root, ".env") == DOTENV.replace("PORT=3000", "PORT=8000"),
        ("contains:.env:PORT=8000",),
        solution={".env": DOTENV.replace("3000", "8000")},
    ),
    WorkspaceTask(
        "rename_constant",
        "The constant MAX_USERS is defined in limits.py and used in app.py. Rename it to "
        "USER_LIMIT in both files.",
        {"limits.py": LIMITS, "app.py": APP},
        _renamed_constant,
        ("contains:limits.py:USER_LIMIT", "contains:app.py:USER_LIMIT"),
        solution={
            "limits.py": "USER_LIMIT = 50\n",
            "app.py": APP.replace("MAX_USERS", "USER_LIMIT"),
        },
    ),
    WorkspaceTask(
        "two_versions",
        "Set the version to 2.0.0 in both VERSION and setup.cfg.",
        {"VERSION": "1.4.2\n", "setup.cfg": "[metadata]\nname = gizmo\nversion = 1.4.2\n"},
        _both_versions,
        ("contains:VERSION:2.0.0", "contains:setup.cfg:2.0.0"),
        solution={"VERSION": "2.0.0\n", "setup.cfg": "[metadata]\nname = gizmo\nversion = 2.0.0\n"},
    ),
    WorkspaceTask(
        "csv_filter",
        "Write the rows of orders.csv whose status is shipped to shipped.csv, header line "
        "first.",
        {"orders.csv": ORDERS},
        _shipped,
        ("contains:shipped.csv:105,Eve,shipped",),
        solution={
            "shipped.csv": "id,customer,status\n101,Ann,shipped\n103,Cid,shipped\n"
            "105,Eve,shipped\n"
        },
    ),
    WorkspaceTask(
        "csv_total",
        "Add up the amount column of sales.csv and write the total to total.txt.",
        {"sales.csv": SALES},
        lambda root: text_of(root, "total.txt").strip() == "470",
        ("contains:total.txt:470",),
        solution={"total.txt": "470\n"},
    ),
    WorkspaceTask(
        "upper_case",
        "Write the text of shout.txt in upper case to loud.txt.",
        {"shout.txt": SHOUT},
        lambda root: text_of(root, "loud.txt").strip() == SHOUT.upper().strip(),
        ("contains:loud.txt:KEEP CALM",),
        solution={"loud.txt": SHOUT.upper()},
    ),
    WorkspaceTask(
        "reverse_lines",
        "Write the lines of steps.txt to reversed.txt in reverse order.",
        {"steps.txt": STEPS},
        lambda root: lines_of(root, "reversed.txt") == STEPS.split("\n")[-2::-1],
        ("contains:reversed.txt:open the lid",),
        solution={"reversed.txt": "wait\nclose the lid\npour the water\nopen the lid\n"},
    ),
    WorkspaceTask(
        "number_lines",
        "Copy steps.txt to numbered.txt with each line preceded by its line number, "
        "as in 1: open the lid.",
        {"steps.txt": STEPS},
        _numbered,
        ("contains:numbered.txt:wait",),
        solution={
            "numbered.txt": "1: open the lid\n2: pour the water\n3: close the lid\n4: wait\n"
        },
    ),
    WorkspaceTask(
        "count_department",
        "How many people in staff.csv work in sales? Write the number to answer.txt.",
        {"staff.csv": STAFF},
        lambda root: text_of(root, "answer.txt").strip() == "3",
        ("exists:answer.txt",),
        solution={"answer.txt": "3\n"},
    ),
    WorkspaceTask(
        "count_functions",
        "How many top-level functions does utils.py define? Write the number to count.txt.",
        {"utils.py": UTILS},
        lambda root: text_of(root, "count.txt").strip() == "3",
        ("exists:count.txt",),
        solution={"count.txt": "3\n"},
    ),
    WorkspaceTask(
        "coldest_city",
        "Which city in temps.csv has the lowest temperature? Write its name to coldest.txt.",
        {"temps.csv": TEMPS},
        lambda root: text_of(root, "coldest.txt").strip() == "Yakutsk",
        ("exists:coldest.txt",),
        solution={"coldest.txt": "Yakutsk\n"},
    ),
    WorkspaceTask(
        "remove_blank_lines",
        "Remove the blank lines from draft.txt, keeping the other lines in their order.",
        {"draft.txt": DRAFT},
        lambda root: text_of(root, "draft.txt").splitlines()
        == [line for line in DRAFT.splitlines() if line.strip()],
        ("contains:draft.txt:to Friday.",),
        solution={"draft.txt": "Dear team,\nthe release moves\nto Friday.\nThanks\n"},
    ),
    WorkspaceTask(
        "common_names",
        "Write the names that are in both team_a.txt and team_b.txt to both.txt, one per line.",
        {"team_a.txt": TEAM_A, "team_b.txt": TEAM_B},
        lambda root: sorted(lines_of(root, "both.txt")) == ["Ann", "Cid"],
        ("contains:both.txt:Cid",),
        solution={"both.txt": "Ann\nCid\n"},
    ),
    WorkspaceTask(
        "last_lines",
        "Write the last two lines of journal.txt to recent.txt.",
        {"journal.txt": JOURNAL},
        lambda root: lines_of(root, "recent.txt") == ["Wed: fog", "Thu: snow"],
        ("contains:recent.txt:Thu: snow",),
        solution={"recent.txt": "Wed: fog\nThu: snow\n"},
    ),
    WorkspaceTask(
        "csv_to_json",
        "Turn colors.csv into colors.json: one JSON object mapping each color name to its hex "
        "code.",
        {"colors.csv": COLORS},
        lambda root: _json(root, "colors.json")
        == {"red": "#ff0000", "green": "#00ff00", "blue": "#0000ff"},
        ('contains:colors.json:"blue"',),
        solution={"colors.json": '{"red": "#ff0000", "green": "#00ff00", "blue": "#0000ff"}'},
    ),
)
