"""Checks of what a file holds for any request (SPEC section 11): one number, the lines it had,
a copy's bytes, its whole text; evaluated by code, proposed by the analysis where the request
names the file, and holding a phase open when the judge calls wrong work done."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_checks import ALLOWED, run
from test_checks_in_runs import script, start

from phasegraph import Context
from phasegraph.errors import CheckError
from phasegraph.facts.checks import in_words
from phasegraph.nodes.human_review import kept_baselines
from phasegraph.tools.checks import (
    evaluate,
    label,
    parse_check,
    problem,
    record,
    validate_checks,
    with_baseline,
)
from phasegraph.tools.workspace import Workspace

from scripts import ANALYSIS, judgement, round_plan


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("number:n.txt", {"kind": "number", "path": "n.txt"}),
        ("keeps:a.txt", {"kind": "keeps", "path": "a.txt"}),
        ("copy:b/c.yaml:c.yaml", {"kind": "copy", "path": "b/c.yaml", "of": "c.yaml"}),
        ("equals:t.txt:a: b\nc", {"kind": "equals", "path": "t.txt", "text": "a: b\nc"}),
    ],
)
def test_the_new_kinds_read_from_and_back_to_their_command_line_form(
    text: str, expected: dict[str, str]
) -> None:
    parsed = parse_check(text)
    assert {k: parsed[k] for k in expected} == expected
    assert label(parsed) == text


@pytest.mark.parametrize(
    ("content", "passed"),
    [("3\n", True), (" -12.5 ", True), ("1,234\n", True), ("3 errors\n", False),
     ("a ERROR\nb ERROR\n[2 matching lines]\n", False), ("", False), ("3\n4\n", False)],
)  # fmt: skip
def test_a_number_check_passes_only_on_one_number_alone(
    tmp_path: Path, content: str, passed: bool
) -> None:
    (tmp_path / "n.txt").write_text(content)
    assert run(tmp_path, "number:n.txt")[0] is passed


@pytest.mark.parametrize(
    ("content", "passed"),
    [("ann\nbob\n", True), ("ann  \r\nbob\n\n\n", True), ("ann\nbob", True),
     ("ann\n", False), ("bob\nann\n", False), ("ann\nbob\ncid\n", False),
     (" ann\nbob\n", False), ("ann\n\nbob\n", False), ("", False)],
)  # fmt: skip
def test_an_equals_check_passes_on_the_whole_text_and_nothing_missing_or_more(
    tmp_path: Path, content: str, passed: bool
) -> None:
    (tmp_path / "t.txt").write_text(content, newline="")
    assert run(tmp_path, "equals:t.txt:ann\nbob\n")[0] is passed


def test_an_equals_check_says_what_the_file_holds_instead(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("ann\n")
    passed, detail = run(tmp_path, "equals:t.txt:ann\nbob")
    assert passed is False and detail == "t.txt holds 'ann', not exactly 'ann\\nbob'"
    (tmp_path / "t.txt").write_text(" 42\n")  # the blank that makes it differ is shown
    assert run(tmp_path, "equals:t.txt:42")[1] == "t.txt holds ' 42', not exactly '42'"
    # a long file: where it first differs, or that it has more lines
    rows = [f"row {n} of the table" for n in range(8)]
    (tmp_path / "t.txt").write_text("\n".join(rows) + "\n")
    wanted = "\n".join([*rows[:5], "row five", *rows[6:]])
    detail = run(tmp_path, f"equals:t.txt:{wanted}")[1]
    assert detail.endswith("differs from the check's text at line 6: 'row 5 of the table'")
    detail = run(tmp_path, "equals:t.txt:" + "\n".join(rows[:6]))[1]
    assert detail.endswith("has 8 lines where the check's text has 6, the same up to line 6")


def test_an_equals_check_reads_no_file_outside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "pw").symlink_to("/etc/passwd")
    (tmp_path / "env").symlink_to("/proc/self/environ")
    space = Workspace(str(tmp_path))
    for text in ("equals:../etc/passwd:root", "equals:pw:root", "equals:env:x",
                 "equals:/proc/self/environ:x"):  # fmt: skip
        check = parse_check(text)
        assert problem(check, space, ALLOWED) is not None, text
        result = evaluate(record(check, "c1", "caller"), space, ALLOWED)
        assert result["passed"] is False and "root:" not in result["detail"], text


def test_an_equals_check_of_blank_text_is_refused_and_a_long_one_is_quoted_in_part() -> None:
    with pytest.raises(CheckError, match="more than blank space"):
        parse_check("equals:t.txt: \n")
    long_text = "\n".join(f"line {n}" for n in range(400))
    said = in_words(record(parse_check(f"equals:t.txt:{long_text}"), "c1", "caller"))
    assert len(said) < 500 and "(3489 characters, 400 lines in all)" in said


def test_a_keeps_check_holds_the_lines_the_file_had_when_it_was_set(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("first\nsecond\n")
    space = Workspace(str(tmp_path))
    check = record(with_baseline(parse_check("keeps:notes.txt"), space), "c1", "caller")
    notes.write_text("first\nsecond\nthird\n")  # a line added at the end: kept
    assert evaluate(check, space, ALLOWED)["passed"] is True
    notes.write_text("third\nsecond\n")  # the first line replaced: lost
    result = evaluate(check, space, ALLOWED)
    assert result["passed"] is False
    assert result["detail"] == "notes.txt lost 1 of the lines it had, first 'first'"


def test_a_keeps_check_needs_a_text_file_with_baseline(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("\n")
    context = Context(workspace=str(tmp_path))
    for path in ("missing.txt", "empty.txt"):
        with pytest.raises(CheckError, match="no text file with lines to keep"):
            validate_checks([f"keeps:{path}"], context)


def test_a_copy_check_compares_bytes_with_the_source_as_it_was_when_set(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("a: 1\n")
    space = Workspace(str(tmp_path))
    check = record(with_baseline(parse_check("copy:d.yaml:c.yaml"), space), "c1", "caller")
    assert evaluate(check, space, ALLOWED)["detail"] == "d.yaml does not exist"
    (tmp_path / "d.yaml").write_text("a: 1")
    differs = "d.yaml (4 bytes) differs from what c.yaml held"
    assert evaluate(check, space, ALLOWED)["detail"] == differs
    (tmp_path / "d.yaml").write_text("a: 1\n")
    (tmp_path / "c.yaml").write_text("a: 2\n")  # the source changed after the copy: still a copy
    result = evaluate(check, space, ALLOWED)
    same = "d.yaml holds the same bytes as c.yaml had"
    assert (result["passed"], result["detail"]) == (True, same)
    for both in ("d.yaml", "c.yaml"):  # both overwritten alike: no copy of what was there
        (tmp_path / both).write_text("x")
    assert evaluate(check, space, ALLOWED)["passed"] is False


@pytest.mark.parametrize(
    ("text", "says"),
    [("copy:c.yaml:c.yaml", "a file is always a copy of itself"),
     ("copy:d.yaml:../c.yaml", "outside"), ("copy:d.yaml:gone.yaml", "gone.yaml is no file")],
)  # fmt: skip
def test_a_copy_check_that_cannot_hold_is_refused(tmp_path: Path, text: str, says: str) -> None:
    (tmp_path / "c.yaml").write_text("a: 1\n")
    with pytest.raises(CheckError, match=says):
        validate_checks([text], Context(workspace=str(tmp_path)))


def test_a_file_over_the_read_limit_is_no_copy_and_no_number(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("x" * 100 + "AAAA")
    (tmp_path / "d.txt").write_text("x" * 100 + "BBBBBBBB")
    (tmp_path / "n.txt").write_text("7" * 100 + " and more words")
    space = Workspace(str(tmp_path), max_read_bytes=100)
    for text in ("copy:d.txt:c.txt", "number:n.txt"):
        check = record(with_baseline(parse_check(text), space), "c1", "caller")
        result = evaluate(check, space, ALLOWED)
        assert result["passed"] is False and "over the read limit" in result["detail"]


def test_checks_edited_at_a_review_keep_the_baselines_read_when_first_set() -> None:
    earlier = [record({"kind": "keeps", "path": "n.txt", "text": "Ada\nGrace"}, "c1", "analysis")]
    edited = [
        {"kind": "keeps", "path": "n.txt", "text": "Ada\nZoe"},  # re-read after the work began
        {"kind": "exists", "path": "x"},
    ]
    kept = kept_baselines(edited, earlier)
    assert [c.get("text") for c in kept] == ["Ada\nGrace", ""]


def test_the_analysis_is_not_offered_the_kinds_for_callers(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("x\n")
    proposed = [
        {"kind": "number", "path": "count.txt"},
        {"kind": "copy", "path": "old.cfg", "of": "setup.cfg"},
        {"kind": "exists", "path": "count.txt"},  # a kind it is offered: kept
    ]
    request = "Count the lines of setup.cfg into count.txt and copy setup.cfg to old.cfg"
    steps = script(request_analyser=[{**ANALYSIS, "checks": proposed}])
    out, _, model = start(tmp_path, steps, request=request, max_steps=1)
    (spec,) = model.tools_of("request_analyser")[0]
    offered = str(spec["function"]["parameters"]["properties"]["checks"])
    assert "ExistsCheck" in offered and "NumberCheck" not in offered
    kept = [c["label"] for c in out["checks"] if c["source"] == "analysis"]
    assert kept == ["matches:count.txt:\\S"]
    notes = out["structured_request"]["check_notes"]
    assert sum("dropped the proposed check {'kind': " in n for n in notes) == 2


def test_a_number_check_holds_a_phase_open_over_a_judge_that_calls_a_search_done(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.log").write_text("ERROR a\nok\nERROR b\n")
    pasted = "ERROR a\nERROR b\n[2 matching lines]\n"
    plan = round_plan(("w", "write_file", {"path": "errors.txt", "content": pasted}))
    steps = script(plan_tool_call=[plan], judge_tasks=[judgement()])  # "done, 1.0" each round
    request = "Count the lines of app.log with ERROR and write the count to errors.txt"
    out, _, model = start(tmp_path, steps, ["number:errors.txt"], request=request, max_steps=8)
    assert out["status"] != "completed"
    assert "errors.txt must hold one number and nothing else" in str(
        model.calls_of("plan_tool_call")[-1][-1].content
    )
    assert any("number:errors.txt fails" in s for s in out["shortfalls"])
    assert out["evidence"]["verified"] is False


@pytest.mark.parametrize(
    ("given", "content", "request_text"),
    [
        ({"kind": "keeps", "path": "names.txt"}, "Ada\nZoe\n", "add Zoe to names.txt"),
        ({"kind": "number", "path": "n.txt"}, "7\n", "write the count to n.txt"),
    ],
)
def test_a_keeps_or_number_check_alone_does_not_vouch_for_the_content(
    tmp_path: Path, given: dict[str, str], content: str, request_text: str
) -> None:
    (tmp_path / "names.txt").write_text("Ada\n")
    path = given["path"]
    plan = round_plan(("w", "write_file", {"path": path, "content": content}))
    steps = script(plan_tool_call=[plan])
    out, _, _ = start(tmp_path, steps, [given], request=request_text)
    assert out["status"] == "completed"
    (written,) = [f for f in out["evidence"]["files"] if f["path"] == path]
    assert written["vouched_by"] == "presence" and written["checks"] == [label(given)]
    assert out["evidence"]["verified"] is False
