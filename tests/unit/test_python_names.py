"""A Python file the run leaves using a name nothing binds is not done (`facts.python_names`)."""

from __future__ import annotations

import sysconfig
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.facts.formats import broken_formats
from phasegraph.facts.python_names import new_unbound_names, unbound_names

from scripts import ANALYSIS, SUMMARY, final_state, judgement, phase, round_plan

GREET = 'def hello(name):\n    return "Hi " + name\n\n\nprint(hello("world"))\n'


def test_a_name_renamed_where_it_is_defined_but_not_where_it_is_called_is_unbound() -> None:
    half = GREET.replace("def hello", "def greet")
    assert unbound_names(half) == {"hello": 5}
    assert new_unbound_names(GREET, half) == (
        "does not run as Python: it uses hello (line 5), which nothing in it defines or imports"
    )
    assert new_unbound_names(GREET, GREET.replace("hello", "greet")) is None


def test_every_way_of_binding_a_name_binds_it() -> None:
    code = (
        "import os.path\nfrom json import loads as parse\nx: int = 1\n"
        "def f(a, /, b=2, *args, c, **kw):\n    global g\n    g = [y for y in args]\n"
        "    return a, b, c, kw, g, os, parse, x, (z := 3), z, __name__, len\n"
        "class C:\n    pass\ntry:\n    C()\nexcept Exception as e:\n    print(e)\n"
        "match x:\n    case [first, *rest]:\n        print(first, rest)\n"
        "    case {'k': v, **others}:\n        print(v, others)\n"
        "with open(__file__) as fh:\n    print(fh)\nfor i in range(2):\n    del i\n"
    )
    assert unbound_names(code) == {}


def test_what_cannot_be_known_is_not_called_unbound() -> None:
    assert unbound_names("from os.path import *\nprint(join)\n") == {}
    assert unbound_names("def broken(:\n") == {}  # its form is another fact
    # a name the file lacked before is not the run's doing
    lacking = "globals().update(A=1)\nprint(A)\n"
    assert new_unbound_names(lacking, lacking + "print(A + 1)\n") is None


def test_real_code_it_was_not_written_for_is_rarely_called_broken() -> None:
    # the standard library's own modules, as they ship: each runs, so a name called unbound in
    # one is a false positive (their few are names set through globals(), which a file the
    # run changes keeps: only names it newly lacks count)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.glob("*.py"))[:200]
    assert len(files) >= 100
    flagged = [p.name for p in files if unbound_names(p.read_text(errors="replace"))]
    assert len(flagged) * 20 <= len(files), flagged


def test_a_rename_left_half_done_keeps_the_phase_open(tmp_path: Path) -> None:
    # the 1.5B model renamed the definition, left the call, and its judge called it done
    half = GREET.replace("def hello", "def greet")
    (tmp_path / "greet.py").write_text(half)
    context, originals = Context(workspace=str(tmp_path)), {"greet.py": GREET}
    assert list(broken_formats(["greet.py"], context, originals, [])) == ["greet.py"]
    (tmp_path / "greet.py").write_text(GREET)
    script = {
        "request_analyser": [{**ANALYSIS, "task_type": "coding", "files_to_write": ["greet.py"]}],
        "phase_planner": [{"phases": [phase("p1", rounds=3)], "execution_strategy": "one"}],
        "plan_tool_call": [
            round_plan(("w1", "write_file", {"path": "greet.py", "content": half})),
            round_plan(
                (
                    "w2",
                    "edit_file",
                    {"path": "greet.py", "old_text": "print(hello", "new_text": "print(greet"},
                )
            ),
        ],
        "judge_tasks": [judgement(), judgement()],
        "summarizer": [SUMMARY],
    }
    model = ScriptedChatModel(script=script)
    graph = build_graph(model=model, checkpointer=InMemorySaver())
    out = final_state(
        graph,
        {"request": "In greet.py, rename the function hello to greet."},
        {"configurable": {"thread_id": "rename"}},
        context=Context(workspace=str(tmp_path)),
    )
    first, second = (r["judgement"] for r in out["rounds"])
    said = "greet.py does not run as Python: it uses hello (line 5)"
    assert first["phase_completed"] is False and first["overridden"].startswith(said)
    plans = [str(call[-1].content) for call in model.calls_of("plan_tool_call")]
    assert said in plans[1]
    assert second["phase_completed"] is True and out["status"] == "completed"
    assert (tmp_path / "greet.py").read_text() == GREET.replace("hello", "greet")
