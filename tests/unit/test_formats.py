"""A file the run leaves unreadable as its format is not done (`guards.broken_format`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.facts.formats import broken_formats, format_error
from phasegraph.guards import Guard, broken_format, default_guards

from scripts import ANALYSIS, SUMMARY, final_state, judgement, phase, round_plan

INI = "[server]\nhost = localhost\nport = 80\n\n[log]\nlevel = info\n"


@pytest.mark.parametrize(
    ("path", "text", "error"),
    [
        ("a.json", '{"a": 1}', None),
        ("a.json", '{"a": 1', "does not read as JSON: Expecting ',' delimiter"),
        ("a.json", "", "does not read as JSON: Expecting value"),
        ("app.ini", INI, None),
        (
            "app.ini",
            "  ,timeout = 30\n" + INI,
            "does not read as INI: line 1 (',timeout = 30') comes before any [section] header",
        ),
        ("a.ini", "[a]\nx = 1\n= 2\n", "does not read as INI: line 3 ('= 2') is neither a"),
        # as lenient as INI readers are: a key twice, a key without a value, a byte-order mark
        ("php.ini", "[a]\nextension=x\nextension=y\nKey=1\nkey=2\n[a]\n", None),
        ("my.ini", "[mysqld]\nskip-networking\n", None),
        ("a.ini", "\ufeff[s]\nx = 1\n", None),
        ("haproxy.cfg", "global\n    daemon\n", None),  # .cfg names no one format
        ("deep.json", "[" * 5000 + "]" * 5000, None),  # too deep for the parser: not known
        ("p.toml", 'name = "x"\n[tool]\nv = 1\n', None),
        ("P.TOML", "name = \n", "does not read as TOML: Invalid value"),
        ("calc.py", "def mean(xs):\n    return sum(xs) / len(xs)\n", None),
        ("calc.py", "def mean(xs)\n    return 1\n", "does not read as Python: expected ':'"),
        ("app.yaml", "replicas: 3\nports:\n  - 8080\n", None),
        ("app.yml", "a: [1, 2\nb: 3\n", "does not read as YAML: while parsing a flow sequence"),
        ("notes.txt", "{ not json", None),  # a suffix that names no format code knows
        ("Makefile", "", None),
    ],
)
def test_a_file_reads_as_the_format_its_suffix_names(
    path: str, text: str, error: str | None
) -> None:
    found = format_error(path, text)
    assert found == error if error is None else (found or "").startswith(error)
    assert found is None or "\n" not in found


def test_only_a_file_that_read_before_or_is_new_is_broken_by_the_run(tmp_path: Path) -> None:
    context = Context(workspace=str(tmp_path))
    for name in ("app.ini", "was_bad.ini", "unnamed.json", "new.json", "fine.json"):
        (tmp_path / name).write_text("[broken")
    (tmp_path / "fine.json").write_text("[1]")
    originals = {"app.ini": INI.strip(), "was_bad.ini": "no section", "fine.json": "[]"}
    written = ["./app.ini", "was_bad.ini", "unnamed.json", "new.json", "fine.json", "gone.json"]
    broken = broken_formats(written, context, originals, ["new.json", "gone.json"])
    assert set(broken) == {"app.ini", "new.json"}  # by workspace path, each once
    assert broken["app.ini"].startswith("does not read as INI: line 1 ('[broken')")
    assert broken_formats(["app.ini", "./app.ini"], context, originals, []) == {
        "app.ini": broken["app.ini"]
    }


def ini_run(
    ws: Path,
    *contents: str,
    judges: list[dict[str, Any]],
    existing: bool = True,
    guards: list[Guard] | None = None,
) -> tuple[dict[str, Any], ScriptedChatModel]:
    if existing:
        (ws / "app.ini").write_text(INI)
    script = {
        "request_analyser": [{**ANALYSIS, "task_type": "editing", "files_to_write": ["app.ini"]}],
        "phase_planner": [{"phases": [phase("p1", rounds=3)], "execution_strategy": "one"}],
        "plan_tool_call": [
            round_plan((f"w{i}", "write_file", {"path": "app.ini", "content": text}))
            for i, text in enumerate(contents)
        ],
        "judge_tasks": judges,
        "summarizer": [SUMMARY],
    }
    model = ScriptedChatModel(script=script)
    graph = build_graph(model=model, checkpointer=InMemorySaver(), guards=guards)
    return final_state(
        graph,
        {"request": "In app.ini, add the setting timeout = 30 to the [server] section."},
        {"configurable": {"thread_id": "ini"}},
        context=Context(workspace=str(ws)),
    ), model


@pytest.mark.parametrize("own_guard", [False, True], ids=["default guards", "an equal guard"])
def test_a_phase_is_not_done_while_a_file_it_wrote_no_longer_reads_as_its_format(
    tmp_path: Path, own_guard: bool
) -> None:
    # a new file: one that read before is put back by the write itself (`nodes.readable`)
    broken = "  ,timeout = 30\n" + INI
    fixed = INI.replace("port = 80\n", "port = 80\ntimeout = 30\n")
    judges = [judgement(), judgement()]
    # a caller's guard that does what broken_format does loses the plan none of its steps
    guards = [lambda facts: broken_format(facts)] if own_guard else None
    out, model = ini_run(tmp_path, broken, fixed, judges=judges, existing=False, guards=guards)
    first, second = (r["judgement"] for r in out["rounds"])
    assert first["phase_completed"] is False
    said = "app.ini does not read as INI: line 1 (',timeout = 30') comes before any [section]"
    assert first["overridden"].startswith(said)
    # the next plan is told what to do about it, not left to find it in the judge's words
    plans = [str(call[-1].content) for call in model.calls_of("plan_tool_call")]
    step = f"- {said} header: write app.ini again so that it does"
    assert step not in plans[0] and step in plans[1]
    assert first["overridden"].endswith("a file the run leaves broken for its kind is not done")
    assert second["phase_completed"] is True and "overridden" not in second
    assert out["status"] == "completed"


def test_a_write_that_breaks_a_file_that_read_is_put_back_and_said(tmp_path: Path) -> None:
    # the file stayed broken until a later round wrote it whole again, if one did
    broken = "  ,timeout = 30\n" + INI
    fixed = INI.replace("port = 80\n", "port = 80\ntimeout = 30\n")
    out, model = ini_run(tmp_path, broken, fixed, judges=[judgement(), judgement()])
    first, second = out["rounds"]
    said = "after this call app.ini does not read as INI: line 1 (',timeout = 30') comes before"
    assert first["results"][0]["status"] == "failed" and said in first["results"][0]["output"]
    assert first["judgement"]["phase_completed"] is False
    plans = [str(call[-1].content) for call in model.calls_of("plan_tool_call")]
    assert said in plans[1]  # the next plan reads why, from the file as it was
    assert second["judgement"]["phase_completed"] is True and out["status"] == "completed"
    assert (tmp_path / "app.ini").read_text() == fixed


def test_without_the_workspace_tools_the_guard_is_not_among_the_defaults() -> None:
    assert broken_format in default_guards(workspace=True)
    assert broken_format not in default_guards(workspace=False)
    # a record of an older version has no such field: nothing is broken
    assert broken_format({}) is None  # type: ignore[typeddict-item]
