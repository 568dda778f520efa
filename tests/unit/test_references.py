"""Programs do the work (SPEC sections 1 and 5): outputs passed by reference, commands that
write their result, the files a command wrote recorded as writes. Whole runs on the built-in
tools, a scripted model and a real workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ValidationError

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.facts.tools import changed_files, command_writes
from phasegraph.state import RoundPlan
from phasegraph.state.references import reference, resolved

from scripts import ANALYSIS, CONTINUE, SUMMARY, final_state, judgement, phases, round_plan

DONE = judgement()
CODING = {**ANALYSIS, "task_type": "coding"}  # the built-in rules let coding work run commands


def run(ws: Path, plans: list[dict[str, Any]], **settings: Any) -> tuple[dict[str, Any], Any]:
    steps = {
        "request_analyser": [CODING],
        "phase_planner": [phases("p1", rounds=2)],
        "plan_tool_call": plans,
        "judge_tasks": [DONE],
        "summarizer": [SUMMARY],
    }
    model = ScriptedChatModel(script=steps)
    graph = build_graph(model=model, checkpointer=InMemorySaver())
    out = final_state(
        graph, {"request": "do the work"}, {"configurable": {"thread_id": "r"}},
        context=Context(workspace=str(ws), **settings),
    )  # fmt: skip
    return out, model


def with_deps(plan: dict[str, Any], **deps: list[str]) -> dict[str, Any]:
    for task in plan["tasks"]:
        task["depends_on"] = deps.get(task["id"], [])
    return plan


def test_a_write_takes_a_reads_whole_output_in_the_same_round(tmp_path: Path) -> None:
    # longer than the output a result keeps (max_output_chars): passed whole, never retyped
    text = "".join(f"line {i}: {'x' * 40}\n" for i in range(400))
    (tmp_path / "notes.md").write_text(text)
    plan = round_plan(
        ("t1", "read_file", {"path": "notes.md"}),
        ("t2", "write_file", {"path": "copy.md", "content": "$t1"}),
    )
    out, _ = run(tmp_path, [plan])
    assert (tmp_path / "copy.md").read_text() == text
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t2"]["status"] == "ok" and results["t2"]["arguments"]["content"] == "$t1"
    assert "value" not in results["t1"]  # the history keeps what was shown, not the value
    assert out["status"] == "completed"


def test_a_reference_to_a_failed_or_cut_output_is_not_passed(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("y" * 5000 + "\n")
    plan = round_plan(
        ("t1", "read_file", {"path": "missing.txt"}),
        ("t2", "write_file", {"path": "a.txt", "content": "$t1"}),
        ("t3", "read_file", {"path": "big.txt"}),
        ("t4", "write_file", {"path": "b.txt", "content": "$t3"}),
    )
    out, _ = run(tmp_path, [plan, plan], max_read_bytes=1000)
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t2"]["status"] == "skipped" and "did not succeed" in results["t2"]["output"]
    assert results["t4"]["status"] == "skipped" and "not whole" in results["t4"]["output"]
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()


def test_a_reference_links_its_task_and_one_to_no_task_is_sent_back() -> None:
    read = ("1", "read_file", {"path": "a"})
    plan = RoundPlan.model_validate(round_plan(read, ("2", "write_file", {"content": "$1"})))
    assert plan.tasks[1].depends_on == ["1"]
    read = ("t1", "read_file", {"path": "a"})
    plan = RoundPlan.model_validate(round_plan(read, ("t2", "write_file", {"content": "${1}"})))
    assert plan.tasks[1].arguments["content"] == "$t1" and plan.tasks[1].depends_on == ["t1"]
    # a reference read for its number, as a person reads it: $t2 among p1, p2, p3 is p2
    plan = RoundPlan.model_validate(
        round_plan(("p1", "read_file", {"path": "a"}), ("p2", "run_command", {"command": "wc a"}),
                   ("p3", "write_file", {"path": "n.txt", "content": "$t2"}))
    )  # fmt: skip
    assert plan.tasks[2].arguments["content"] == "$p2" and plan.tasks[2].depends_on == ["p2"]
    # a number two tasks have, or the task's own, names none
    with pytest.raises(ValidationError, match=r"argument content is \$t2, which names no other"):
        RoundPlan.model_validate(
            round_plan(("a2", "read_file", {"path": "a"}), ("b2", "read_file", {"path": "b"}),
                       ("w", "write_file", {"path": "n.txt", "content": "$t2"}))
        )  # fmt: skip
    with pytest.raises(ValidationError, match=r"argument content is \$t1, which names no other"):
        RoundPlan.model_validate(round_plan(("p1", "write_file", {"path": "b", "content": "$t1"})))
    with pytest.raises(ValidationError, match=r"argument content is \$t9, which names no other"):
        RoundPlan.model_validate(round_plan(("t1", "write_file", {"path": "b", "content": "$t9"})))
    with pytest.raises(ValidationError, match="cycle"):
        RoundPlan.model_validate(
            round_plan(("a", "write_file", {"path": "x", "content": "$b"}),
                       ("b", "write_file", {"path": "y", "content": "$a"}))
        )  # fmt: skip
    # text that only starts with a dollar sign is text
    assert reference("$5 a month") is None and reference("cost: $t1") is None
    assert resolved({"content": "$t1"}, {"t1": {"status": "ok", "value": "v"}}) == (
        {"content": "v"},
        None,
    )


def test_a_command_writes_its_result_and_the_write_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "people.csv").write_text("name,city\nAnn,Oslo\nBob,Rome\nCid,Lima\n")
    plan = round_plan(
        ("t1", "run_command", {"command": "cut -d, -f2 people.csv | tail -n +2 > cities.txt"}),
        ("t2", "run_command", {"command": "tail -n +2 people.csv | wc -l"}),
        ("t3", "write_file", {"path": "count.txt", "content": "$t2"}),
    )
    out, model = run(tmp_path, [with_deps(plan, t3=["t2"])])
    assert (tmp_path / "cities.txt").read_text() == "Oslo\nRome\nLima\n"
    assert (tmp_path / "count.txt").read_text().strip() == "3"
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t1"]["written"] == ["cities.txt"]
    assert "[wrote 15 bytes to cities.txt]" in results["t1"]["output"]
    # the judge is told what changed, the command's file among them
    judged = model.calls_of("judge_tasks")[0][-1].content
    assert "cities.txt" in judged.split("Files this phase has changed so far:")[1].splitlines()[0]


def test_what_a_command_line_writes_is_read_from_the_line() -> None:
    line = "sort -u a.txt | tee x | head -3 > top.txt 2> errors.log"
    assert command_writes(line) == ["top.txt", "errors.log"]
    assert command_writes(["wc", "-l", "a"]) == [] and command_writes("wc -l < a") == []
    result = {"task_id": "t", "tool": "run_command", "status": "ok", "written": ["top.txt"],
              "arguments": {"command": line}}  # fmt: skip
    assert changed_files([result], {}) == ["top.txt"]  # type: ignore[list-item]


def test_a_command_that_would_replace_a_file_the_run_has_not_seen_waits(tmp_path: Path) -> None:
    (tmp_path / "report.txt").write_text("a user's own text\n")
    (tmp_path / "in.txt").write_text("b\na\n")
    over = round_plan(("t1", "run_command", {"command": "sort in.txt > report.txt"}))
    append = round_plan(("t2", "run_command", {"command": "sort in.txt >> report.txt"}))
    out, _ = run(tmp_path, [over, append])
    first = out["rounds"][0]["results"][0]
    assert first["status"] == "skipped" and "has not read it" in first["output"]
    assert (tmp_path / "report.txt").read_text() == "a user's own text\na\nb\n"


def test_a_command_writes_only_where_the_work_may_write(tmp_path: Path) -> None:
    # analysis work may not write files (the built-in rules): neither may its commands' >
    (tmp_path / "in.txt").write_text("b\na\n")
    plan = round_plan(
        ("t1", "run_command", {"command": "sort in.txt > out.txt"}),
        ("t2", "run_command", {"command": "sort in.txt"}),
    )
    steps = {
        "request_analyser": [{**ANALYSIS, "task_type": "analysis"}],
        "phase_planner": [phases("p1", rounds=1)],
        "plan_tool_call": [plan],
        "judge_tasks": [DONE],
        "summarizer": [SUMMARY],
    }
    graph = build_graph(model=ScriptedChatModel(script=steps), checkpointer=InMemorySaver())
    out = final_state(graph, {"request": "look at in.txt"}, {"configurable": {"thread_id": "a"}},
                      context=Context(workspace=str(tmp_path)))  # fmt: skip
    first, second = out["rounds"][0]["results"]
    assert first["status"] == "refused" and "may not write files" in first["output"]
    assert second["status"] == "ok" and second["output"].endswith("a\nb\n")
    assert not (tmp_path / "out.txt").exists()


def test_a_command_check_may_be_a_pipeline_but_writes_nothing(tmp_path: Path) -> None:
    from phasegraph.errors import CheckError
    from phasegraph.facts.checks import evaluate_checks
    from phasegraph.tools.checks import record, validate_checks

    (tmp_path / "a.txt").write_text("x\ny\nx\n")
    context = Context(workspace=str(tmp_path))
    (parsed,) = validate_checks(["cmd:sort a.txt | uniq -d => x"], context)
    check = record(parsed, "c1", "caller")
    assert check["line"] == "sort a.txt | uniq -d"
    assert check["label"] == "cmd:sort a.txt | uniq -d => x"
    (evaluated,) = evaluate_checks([check], context)
    assert evaluated["passed"] is True, evaluated["detail"]
    with pytest.raises(CheckError, match="a check writes no file"):
        validate_checks(["cmd:sort a.txt > b.txt"], context)


def test_typed_text_over_what_a_program_of_the_round_wrote_is_not_run(tmp_path: Path) -> None:
    # the 1.5B model ran sort into the file, then wrote the command's words over it
    (tmp_path / "fruit.txt").write_text("pear\napple\n")
    plan = round_plan(
        ("t1", "run_command", {"command": "sort fruit.txt > sorted_fruit.txt"}),
        ("t2", "write_file", {"path": "sorted_fruit.txt", "content": "sort fruit.txt"}),
        ("t3", "read_file", {"path": "fruit.txt"}),
        ("t4", "write_file", {"path": "copy.txt", "content": "$t3"}),
    )
    out, _ = run(tmp_path, [with_deps(plan, t2=["t1"])])
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t2"]["status"] == "skipped" and "t1's program" in results["t2"]["output"]
    assert (tmp_path / "sorted_fruit.txt").read_text() == "apple\npear\n"
    assert (tmp_path / "copy.txt").read_text() == "pear\napple\n"


def test_a_substitution_runs_first_and_its_output_is_an_argument(tmp_path: Path) -> None:
    from phasegraph.tools.command_line import parse
    from phasegraph.tools.commands import CommandSettings
    from phasegraph.tools.pipeline import execute_command
    from phasegraph.tools.workspace import Workspace, WorkspaceError

    (tmp_path / "t.csv").write_text("city,temp\nOslo,3\nRome,18\n")
    space, settings = Workspace(str(tmp_path)), CommandSettings()
    done = execute_command("echo $(tail -n +2 t.csv | wc -l) > rows.txt", workspace=space,
                           settings=settings)  # fmt: skip
    assert done.written == ("rows.txt",) and (tmp_path / "rows.txt").read_text() == "2\n"
    said = execute_command('echo "rows: $(wc -l < t.csv)"', workspace=space, settings=settings)
    assert said.output == "rows: 3\n"
    (word,) = parse('"a $(ls) b"')[0].words
    assert word.commands == ("ls",)
    for line, why in [("echo $(sort t.csv > x.txt)", "may write no file"),
                      ("echo $(echo $(ls))", "inside another"), ("echo $(rm t.csv)", "rm"),
                      ("echo $(cat missing.txt)", "did not succeed")]:  # fmt: skip
        with pytest.raises(WorkspaceError, match=why):
            execute_command(line, workspace=space, settings=settings)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.txt", "t.csv"]


def test_a_file_a_program_edits_in_place_is_reported_as_written(tmp_path: Path) -> None:
    # sed -i renamed the function in greet.py, and the round's facts said no file had changed:
    # the guard then overruled the judge for writes that "did not run"
    from phasegraph.tools.commands import CommandSettings
    from phasegraph.tools.pipeline import execute_command
    from phasegraph.tools.workspace import Workspace

    (tmp_path / "greet.py").write_text("def hello():\n    pass\n\n\nhello()\n")
    (tmp_path / "other.txt").write_text("x\n")
    space, settings = Workspace(str(tmp_path)), CommandSettings()
    done = execute_command("sed -i s/hello/greet/g greet.py", workspace=space, settings=settings)
    assert done.written == ("greet.py",) and "[wrote 32 bytes to greet.py]" in done.text
    assert (tmp_path / "greet.py").read_text() == "def greet():\n    pass\n\n\ngreet()\n"
    # a program that changes nothing writes nothing; > and a file edited beside it are each once
    assert execute_command("sed -n 1p greet.py", workspace=space, settings=settings).written == ()
    both = execute_command(
        "sed -i s/x/y/ other.txt greet.py > out.txt", workspace=space, settings=settings
    )
    assert both.written == ("out.txt", "greet.py", "other.txt")
    plan = round_plan(("t1", "run_command", {"command": "sed -i s/greet/hi/g greet.py"}))
    out, _ = run(tmp_path, [plan])
    (first,) = out["rounds"]
    assert "overridden" not in first["judgement"]
    assert first["judgement"]["facts"]["changed_files"] == ["greet.py"]


def test_a_program_given_no_input_fails_and_writes_nothing(tmp_path: Path) -> None:
    # a `wc -l` with no file read an empty input, and its 0 was written into the deliverable
    from phasegraph.tools.commands import CommandSettings
    from phasegraph.tools.pipeline import execute_command
    from phasegraph.tools.workspace import Workspace, WorkspaceError

    (tmp_path / "data.csv").write_text("id\n1\n2\n")
    space, settings = Workspace(str(tmp_path)), CommandSettings()
    lines = ("wc -l > lines.txt", "sort | head -n 1 > lines.txt", "grep 1",
             "wc -l 2>/dev/null > lines.txt", "sort 2>&1 | wc -l")  # whatever it says, or not
    for line in lines:
        with pytest.raises(WorkspaceError, match="given none: name the file it reads"):
            execute_command(line, workspace=space, settings=settings)
    assert not (tmp_path / "lines.txt").exists()
    # its input named, by operand, by <, or as /dev/null on purpose: the command runs
    for line, said in [("wc -l data.csv", "3 data.csv\n"), ("wc -l < data.csv", "3\n"),
                       ("wc -l < /dev/null", "0\n"), ("echo hi", "hi\n")]:  # fmt: skip
        assert execute_command(line, workspace=space, settings=settings).output == said
    done = execute_command("grep -c 9 data.csv", workspace=space, settings=settings)
    assert done.text.startswith("exit code: 1")  # a failure that is not a missing input stands
    plan = round_plan(
        ("t1", "run_command", {"command": "wc -l"}),
        ("t2", "write_file", {"path": "lines.txt", "content": "$t1"}),
    )
    out, _ = run(tmp_path, [with_deps(plan, t2=["t1"])])
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t1"]["status"] == "failed" and results["t2"]["status"] == "skipped"
    assert not (tmp_path / "lines.txt").exists()


def test_a_command_reads_an_earlier_tasks_output_given_as_its_input(tmp_path: Path) -> None:
    # the model ran `wc -l` with no file, meaning the read planned beside it, as a pipe would
    from phasegraph.tools.commands import CommandSettings
    from phasegraph.tools.pipeline import execute_command
    from phasegraph.tools.workspace import Workspace, WorkspaceError

    (tmp_path / "data.csv").write_text("id,name\n1,ann\n2,bob\n")
    plan = round_plan(
        ("t1", "read_file", {"path": "data.csv"}),
        ("t2", "run_command", {"command": "wc -l", "input": "$t1"}),
        ("t3", "write_file", {"path": "lines.txt", "content": "$t2"}),
    )
    out, _ = run(tmp_path, [with_deps(plan, t2=["t1"], t3=["t2"])])
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t2"]["status"] == "ok" and results["t3"]["status"] == "ok"
    assert (tmp_path / "lines.txt").read_text() == "3\n"
    space, settings = Workspace(str(tmp_path)), CommandSettings()
    done = execute_command("sort -r | head -n 1 > top.txt", workspace=space, settings=settings,
                           text_input="b\nc\na\n")  # fmt: skip
    assert done.written == ("top.txt",) and (tmp_path / "top.txt").read_text() == "c\n"
    with pytest.raises(WorkspaceError, match="given its input twice"):
        execute_command("wc -l < data.csv", workspace=space, settings=settings, text_input="x")
    assert execute_command(["wc", "-l"], workspace=space, settings=settings,
                           text_input="").output == "0\n"  # fmt: skip


def test_the_judge_is_told_how_each_file_got_its_text(tmp_path: Path) -> None:
    # a sum typed as "17+25+8+0=50" stood in the judge's prompt as any file would
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n")
    (tmp_path / "notes.txt").write_text("old\n")
    first = round_plan(
        ("t2", "run_command", {"command": "sort numbers.txt > sorted.txt"}),
        ("t3", "read_file", {"path": "numbers.txt"}),
        ("t4", "write_file", {"path": "copy.txt", "content": "$t3"}),
    )
    second = round_plan(
        ("t1", "write_file", {"path": "sum.txt", "content": "17+25+8=50"}),
        ("t5", "edit_file", {"path": "notes.txt", "old_text": "old", "new_text": "new"}),
    )
    script = {
        "request_analyser": [CODING],
        "phase_planner": [phases("p1", rounds=2)],
        "plan_tool_call": [with_deps(first, t4=["t3"]), second],
        "judge_tasks": [CONTINUE, DONE],
        "summarizer": [SUMMARY],
    }
    model = ScriptedChatModel(script=script)
    out = final_state(
        build_graph(model=model, checkpointer=InMemorySaver()), {"request": "do the work"},
        {"configurable": {"thread_id": "w"}}, context=Context(workspace=str(tmp_path)),
    )  # fmt: skip
    assert all(r["status"] == "ok" for record in out["rounds"] for r in record["results"])
    said = model.calls_of("judge_tasks")[-1][-1].content
    for told in ("; t2's program wrote it", "; t4 wrote another task's output into it",
                 "'17+25+8=50'); t1 typed its text", "; t5 edited it"):  # fmt: skip
        assert told in said, said
    # a command finds what it wrote by the files' states: an edit beside it is the edit's
    from phasegraph.facts.tools import how_written
    from phasegraph.nodes.deps import workspace_settings
    from phasegraph.tools.builtin import workspace_tools

    tools = {t.name: t for t in workspace_tools(workspace_settings(Context(workspace="/tmp")))}
    edit = {"task_id": "e", "tool": "edit_file", "arguments": {"path": "notes.txt"},
            "status": "ok", "wave": 0}
    command = {"task_id": "c", "tool": "run_command", "arguments": {"command": "sort a > b"},
               "status": "ok", "wave": 0, "written": ["b", "notes.txt"]}  # fmt: skip
    assert how_written([edit, command], tools) == {  # type: ignore[list-item]
        "notes.txt": "e edited it", "b": "c's program wrote it"
    }


def test_a_write_given_a_command_runs_beside_reads_and_the_judge_hears_a_program_wrote_it(
    tmp_path: Path,
) -> None:
    # the count a small model typed after its search ("0") is the one a program prints exactly
    (tmp_path / "app.log").write_text("ok\nERROR a\nok\nERROR b\n")
    plan = round_plan(
        ("t1", "search_text", {"pattern": "ERROR", "path": "app.log"}),
        ("t2", "write_file", {"path": "errors.txt", "command": "grep -c ERROR app.log"}),
        ("t3", "write_file", {"path": "typed.txt", "content": "2"}),
    )
    out, model = run(tmp_path, [plan])
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t2"]["status"] == "ok", results["t2"]
    assert (tmp_path / "errors.txt").read_text() == "2\n"
    assert results["t3"]["status"] == "skipped"  # typed beside a read: held, as before
    # and told the form that gives a program's output to the same tool
    assert "give the write a command whose output is the text" in results["t3"]["output"]
    said = model.calls_of("judge_tasks")[-1][-1].content
    assert "; t2's program wrote it" in said, said


def test_a_write_given_a_command_is_refused_where_no_program_may_run(tmp_path: Path) -> None:
    from phasegraph.nodes.deps import workspace_settings
    from phasegraph.nodes.holds import programs_not_allowed
    from phasegraph.nodes.typed_writes import typed_copies
    from phasegraph.tools.builtin import workspace_tools
    from phasegraph.tools.workspace import Workspace

    settings = workspace_settings(Context(workspace=str(tmp_path)))
    tools = {t.name: t for t in workspace_tools(settings)}
    computed = {"id": "w", "tool": "write_file",
                "arguments": {"path": "n.txt", "command": "sort names.txt"}}  # fmt: skip
    names = "bob smith\nann lee\n"
    typed = {"id": "v", "tool": "write_file", "arguments": {"path": "n.txt", "content": names}}
    writers = {"read_file", "write_file"}
    assert "may run no programs" in str(programs_not_allowed(computed, tools, writers))
    assert programs_not_allowed(computed, tools, writers | {"run_command"}) is None
    assert programs_not_allowed(typed, tools, writers) is None
    # a program's output is no typed copy of the file it reads, whatever it prints
    originals = {"names.txt": names}
    space = Workspace(str(tmp_path))
    assert typed_copies([computed], tools, space, originals) == {}
    assert set(typed_copies([typed], tools, space, originals)) == {"v"}


def test_a_write_given_a_command_is_journalled_and_heard_as_the_programs(tmp_path: Path) -> None:
    # tac f into f, run again after a crash, would reverse f twice: it is journalled
    from phasegraph.facts.tools import how_written
    from phasegraph.nodes.deps import workspace_settings
    from phasegraph.nodes.run_task import journalled
    from phasegraph.tools.builtin import workspace_tools

    settings = workspace_settings(Context(workspace=str(tmp_path)))
    tools = {t.name: t for t in workspace_tools(settings)}
    write, read = tools["write_file"], tools["read_file"]
    assert journalled(write, {"path": "f", "command": "tac f"})
    assert not journalled(write, {"path": "f", "content": "x"})
    assert not journalled(read, {"path": "f"})
    both = {"task_id": "w", "tool": "write_file", "status": "ok", "wave": 0,
            "arguments": {"path": "f", "command": "sort g", "content": "$t1"}}  # fmt: skip
    assert how_written([both], tools) == {"f": "w's program wrote it"}  # type: ignore[list-item]


def test_work_that_may_run_no_programs_gets_no_program_through_a_write(tmp_path: Path) -> None:
    (tmp_path / "names.txt").write_text("bob\nann\n")
    plan = round_plan(("t1", "write_file", {"path": "sorted.txt", "command": "sort names.txt"}))
    rules = {"coding": {"forbidden": ["@runs"]}}
    out, _ = run(tmp_path, [plan], tool_rules=rules)
    result = out["rounds"][0]["results"][0]
    assert result["status"] == "refused" and "may run no programs" in result["output"], result
    assert not (tmp_path / "sorted.txt").exists()
    # a phase the model narrowed to write_file alone is no rule against programs
    narrowed = phases("p1", rounds=2)
    narrowed["phases"][0]["allowed_tools"] = ["write_file"]
    model = ScriptedChatModel(script={
        "request_analyser": [CODING], "phase_planner": [narrowed], "judge_tasks": [DONE],
        "plan_tool_call": [round_plan(("t1", "write_file", plan["tasks"][0]["arguments"]))],
        "summarizer": [SUMMARY],
    })  # fmt: skip
    final_state(
        build_graph(model=model, checkpointer=InMemorySaver()), {"request": "do the work"},
        {"configurable": {"thread_id": "n"}}, context=Context(workspace=str(tmp_path)),
    )  # fmt: skip
    assert (tmp_path / "sorted.txt").read_text() == "ann\nbob\n"


def test_a_command_that_prints_its_own_words_is_typed_text(tmp_path: Path) -> None:
    # "echo 17+25+8=50" as a write's command is the guess a typed "17+25+8=50" is
    from phasegraph.facts.tools import computed, how_written, own_words
    from phasegraph.nodes.deps import workspace_settings
    from phasegraph.tools.builtin import workspace_tools

    words = ["echo 50", "expr 17 + 25 + 8", "seq 1 5", "/usr/bin/echo x",
             "printf '%s\\n' a b"]  # fmt: skip
    # a later program of a pipeline may read a file: echo | sort names.txt sorts names.txt
    files = ["echo | sort names.txt", "seq 3 | paste - data.txt", "echo b a | sort",
             "echo $(wc -l < numbers.txt)", "sort names.txt", "wc -l < f", "cat f | tr a b",
             "tr a b < f", "ls", "awk '{s+=$1} END {print s}' n.txt", "",
             "echo 'unclosed"]  # fmt: skip
    assert [line for line in words if not own_words(line)] == []
    assert [line for line in files if own_words(line)] == []
    assert not own_words(["echo", "50"])  # an argv is run as given: no line to read
    settings = workspace_settings(Context(workspace=str(tmp_path)))
    tools = {t.name: t for t in workspace_tools(settings)}
    write = tools["write_file"]
    assert not computed({"path": "s.txt", "command": "echo 50"}, write)
    assert computed({"path": "s.txt", "command": "awk '{s+=$1} END {print s}' n.txt"}, write)
    # typed or not, a command runs programs: rules against them and the journal still apply
    from phasegraph.nodes.holds import programs_not_allowed
    from phasegraph.nodes.run_task import journalled

    echoed = {"id": "e", "tool": "write_file", "arguments": {"path": "s.txt", "command": "echo 5"}}
    assert "may run no programs" in str(programs_not_allowed(echoed, tools, {"write_file"}))
    assert journalled(write, {"path": "f", "command": "echo 5"})
    results = [
        {"task_id": "c", "tool": "run_command", "arguments": {"command": "echo 50 > s.txt"},
         "status": "ok", "wave": 0, "written": ["s.txt"]},
        {"task_id": "d", "tool": "run_command", "arguments": {"command": "sort n > m"},
         "status": "ok", "wave": 0, "written": ["m"]},
        {"task_id": "w", "tool": "write_file", "status": "ok", "wave": 1,
         "arguments": {"path": "t.txt", "command": "echo 50"}},
    ]  # fmt: skip
    assert how_written(results, tools) == {  # type: ignore[arg-type]
        "s.txt": "c typed its text", "m": "d's program wrote it", "t.txt": "w typed its text"
    }


def test_a_task_planned_after_a_held_one_runs_unless_it_takes_its_output(tmp_path: Path) -> None:
    # the right edit of package.json was skipped because it was ordered after a typed write
    # that a hold stopped; each new plan ordered it so, and the budget ran out
    (tmp_path / "package.json").write_text('{"version": "1.1.4"}\n')
    plan = round_plan(
        ("t1", "read_file", {"path": "package.json"}),
        ("t2", "write_file", {"path": "package.json", "content": "1.2.0"}),
        ("t3", "edit_file", {"path": "package.json", "old_text": "1.1.4", "new_text": "1.2.0"}),
        ("t4", "write_file", {"path": "copy.json", "content": "$t2"}),
    )
    out, _ = run(tmp_path, [with_deps(plan, t2=["t1"], t3=["t2"], t4=["t2"])])
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t2"]["status"] == "skipped" and "not run" in results["t2"]["output"]
    assert results["t3"]["status"] == "ok", results["t3"]
    assert (tmp_path / "package.json").read_text() == '{"version": "1.2.0"}\n'
    assert results["t4"]["output"] == "a task it depends on did not succeed"
    assert not (tmp_path / "copy.json").exists()


def test_a_task_after_a_held_one_waits_when_it_reads_its_file_or_its_skip_was_no_hold(
    tmp_path: Path,
) -> None:
    (tmp_path / "report.txt").write_text("old\n")
    (tmp_path / "data.txt").write_text("x\n")
    plan = round_plan(
        ("t1", "read_file", {"path": "data.txt"}),
        ("t2", "write_file", {"path": "report.txt", "content": "a b\nc d\ne f\n"}),
        ("t3", "write_file", {"path": "count.txt", "command": "wc -l report.txt"}),
        ("t4", "read_file", {"path": "missing.txt"}),
        ("t5", "write_file", {"path": "other.txt", "content": "two words"}),
        ("t6", "edit_file", {"path": "data.txt", "old_text": "x", "new_text": "y"}),
    )
    out, _ = run(tmp_path, [with_deps(plan, t2=["t1"], t3=["t2"], t5=["t4"], t6=["t5"])])
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t2"]["output"].startswith("not run")  # held beside the read
    # t3 reads the file the held write was to write: what it held before is no count of it
    assert results["t3"]["output"] == "a task it depends on did not succeed"
    assert not (tmp_path / "count.txt").exists()
    # t5 was skipped for its failed read, not held: what follows it waits as before
    assert results["t5"]["output"] == "a task it depends on did not succeed"
    assert results["t6"]["output"] == "a task it depends on did not succeed"
    assert (tmp_path / "data.txt").read_text() == "x\n"


def test_a_word_in_a_writes_command_place_beside_its_text_is_dropped_from_the_plan(
    tmp_path: Path,
) -> None:
    # the 0.5B model's write(command="write_file", content="Hello, world!"): the call is the
    # typed write it is, and the judge hears so, not that a program wrote it
    plan = round_plan(
        ("t1", "write_file", {"path": "hello.txt", "command": "write_file",
                              "content": "Hello, world!"}),
        ("t2", "write_file", {"path": "n.txt", "command": "seq 3", "content": "typed"}),
    )  # fmt: skip
    out, model = run(tmp_path, [plan])
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t1"]["arguments"] == {"path": "hello.txt", "content": "Hello, world!"}
    assert (tmp_path / "hello.txt").read_text() == "Hello, world!"
    said = model.calls_of("judge_tasks")[-1][-1].content
    assert "; t1 typed its text" in said, said
    # a command that names a program stays, and wins over the text beside it
    assert results["t2"]["arguments"]["command"] == "seq 3"
    assert (tmp_path / "n.txt").read_text() == "1\n2\n3\n"
