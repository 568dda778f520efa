"""Checks (SPEC section 11): parsed from their command-line form, refused when unusable, evaluated
by code on a real workspace, with what code saw."""

from __future__ import annotations

from pathlib import Path

import pytest

from phasegraph.tools.checks import (
    CheckError,
    evaluate,
    label,
    parse_check,
    problem,
    record,
    with_baseline,
)
from phasegraph.tools.commands import CommandSettings
from phasegraph.tools.workspace import Workspace

ALLOWED = CommandSettings(allowed=("wc", "grep", "ls", "sleep"), timeout_s=5, max_chars=2000)


def run(ws: Path, text: str) -> tuple[bool | None, str]:
    space = Workspace(str(ws))
    check = with_baseline(parse_check(text), space)  # a keeps check reads its lines when set
    assert problem(check, space, ALLOWED) is None
    result = evaluate(record(check, "c1", "caller"), space, ALLOWED)
    return result["passed"], result["detail"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("exists:files.md", {"kind": "exists", "path": "files.md"}),
        ("contains:sum.txt:12", {"kind": "contains", "path": "sum.txt", "text": "12"}),
        # only the first colon after the path splits: the text may hold colons
        ("contains:a.txt:x: y", {"kind": "contains", "path": "a.txt", "text": "x: y"}),
        ("matches:v.txt:^1\\.2$", {"kind": "matches", "path": "v.txt", "pattern": "^1\\.2$"}),
        ("cmd:pytest -q", {"kind": "command", "argv": ["pytest", "-q"], "expect": ""}),
        ("cmd:wc -l 'a b.txt' => 3", {"kind": "command", "argv": ["wc", "-l", "a b.txt"],
                                      "expect": "3"}),  # fmt: skip
    ],
)
def test_command_line_forms(text: str, expected: dict[str, object]) -> None:
    parsed = parse_check(text)
    assert {k: parsed[k] for k in expected} == expected
    assert parse_check(label(parsed)) == parsed  # the label reads back as the same check


def test_object_forms_people_and_models_write() -> None:
    assert parse_check({"kind": "cmd", "command": "ls -l"})["argv"] == ["ls", "-l"]
    assert parse_check({"kind": "exists", "path": "x"})["path"] == "x"


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("size:x.txt", "unknown check"),
        ("contains:x.txt", "needs a path and a text"),
        ("matches:x.txt:(", "invalid regular expression"),
        ({"kind": "exists"}, "path"),
        ("cmd:", "argv"),
        (42, "a check is a string"),
    ],
)
def test_unusable_checks_are_refused_with_the_reason(bad: object, says: str) -> None:
    with pytest.raises(CheckError, match=says):
        parse_check(bad)  # type: ignore[arg-type]


def test_a_path_outside_the_workspace_or_a_command_not_allowed_is_a_problem(
    tmp_path: Path,
) -> None:
    space = Workspace(str(tmp_path))
    assert "outside the workspace" in str(problem(parse_check("exists:../x"), space, ALLOWED))
    assert "not an allowed command" in str(problem(parse_check("cmd:rm -rf x"), space, ALLOWED))
    assert problem(parse_check("exists:sub/ok.txt"), space, ALLOWED) is None


def test_evaluated_by_code_with_what_it_saw(tmp_path: Path) -> None:
    (tmp_path / "sum.txt").write_text("11\n")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "long.txt").write_text("word " * 100)
    assert run(tmp_path, "exists:files.md") == (False, "files.md does not exist")
    assert run(tmp_path, "exists:sum.txt") == (True, "sum.txt exists")
    assert run(tmp_path, "contains:sum.txt:12") == (False, "sum.txt holds '11', not '12'")
    assert run(tmp_path, "contains:sum.txt:11")[0] is True
    assert run(tmp_path, "contains:empty.txt:x") == (False, "empty.txt is empty")
    assert run(tmp_path, "contains:long.txt:zz") == (False, "long.txt (500 bytes) has no 'zz'")
    assert run(tmp_path, "matches:sum.txt:^1+$")[0] is True
    assert run(tmp_path, "matches:sum.txt:^12$")[0] is False
    # a deliverable's check, that the file holds some text, says so plainly: told sum.txt
    # "holds text the check's expression finds", a small model's judge read it as blank
    (tmp_path / "blank.txt").write_text("  \n")
    assert run(tmp_path, r"matches:sum.txt:\S") == (True, "sum.txt is there and holds text")
    assert run(tmp_path, r"matches:blank.txt:\S") == (False, "blank.txt holds only blank space")
    assert run(tmp_path, "matches:sum.txt:1") == (
        True,
        "sum.txt holds text the check's expression finds",
    )


def test_a_command_check_runs_as_run_command_does(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a\nb\nc\n")
    assert run(tmp_path, "cmd:wc -l data.csv => 3 data.csv") == (True, "wc -l data.csv succeeded")
    passed, detail = run(tmp_path, "cmd:grep zzz data.csv")
    assert passed is False and detail.startswith("grep zzz data.csv ended with exit code: 1")
    passed, detail = run(tmp_path, "cmd:wc -l data.csv => 4 data.csv")
    assert passed is False and "has no '4 data.csv'" in detail


def test_a_command_that_cannot_run_has_not_passed(tmp_path: Path) -> None:
    space = Workspace(str(tmp_path))
    check = record(parse_check("cmd:sleep 5"), "c1", "caller")
    result = evaluate(check, space, ALLOWED.capped(0.2))
    assert result["passed"] is False and "no exit within" in result["detail"]
    refused = evaluate(record(parse_check("cmd:rm x"), "c2", "caller"), space, ALLOWED)
    assert refused["passed"] is False and "not an allowed command" in refused["detail"]


def test_what_a_check_saw_is_kept_with_secrets_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHASEGRAPH_API_KEY", "ZZSECRETVALUE123")
    (tmp_path / "todo.txt").write_text("token=ZZSECRETVALUE123\n")
    check = record(parse_check("contains:todo.txt:nomatch"), "c1", "caller")
    result = evaluate(check, Workspace(str(tmp_path)), ALLOWED)
    assert result["passed"] is False and "todo.txt" in result["detail"]
    assert "ZZSECRETVALUE123" not in result["detail"]
