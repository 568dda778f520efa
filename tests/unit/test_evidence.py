"""A number the work writes must come from somewhere code can see, and the last phase can write.

Facts by code (SPEC sections 1 and 11): a count or sum a model works out in its head is its
word alone; the judge is shown which numbers nothing shows, and a last phase that may run
programs is not done on one. The last phase keeps the tools the work needs, and its plan is
told which files the request changes are still unwritten.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.facts.evidence import misplaced_names, unsourced_numbers
from phasegraph.facts.request import ASKS_FOR_A_PATH
from phasegraph.guards import DEFAULT_GUARDS
from phasegraph.nodes.deps import workspace_settings
from phasegraph.state import TaskResult
from phasegraph.tools.base import run_tool
from phasegraph.tools.builtin import BUILTIN_TOOL_NAMES, workspace_tools
from phasegraph.tools.workspace import WorkspaceError

from scripts import ANALYSIS, CONTINUE, SUMMARY, final_state, judgement, phase, round_plan

DONE = judgement()
SUM_REQUEST = "Read numbers.txt (one integer per line) and write their sum to sum.txt."


def run(
    ws: Path, steps: dict[str, list[Any]], request: str, checks: list[str] | None = None
) -> tuple[dict[str, Any], ScriptedChatModel]:
    model = ScriptedChatModel(script={"summarizer": [SUMMARY], **steps})
    graph = build_graph(model=model, checkpointer=InMemorySaver())
    given: dict[str, Any] = {"request": request}
    if checks is not None:
        given["checks"] = checks
    out = final_state(graph, 
        given, {"configurable": {"thread_id": "e"}}, context=Context(workspace=str(ws))
    )
    return out, model


def builtin(ws: Path) -> dict[str, Any]:
    return {t.name: t for t in workspace_tools(workspace_settings(Context(workspace=str(ws))))}


def result(tool: str, arguments: dict[str, Any], output: str) -> TaskResult:
    return {
        "task_id": "t",
        "tool": tool,
        "arguments": arguments,
        "status": "ok",
        "output": output,
        "duration_s": 0.0,
        "wave": 0,
        "replayed": False,
    }


def test_a_number_no_input_or_tool_output_shows_is_unsourced(tmp_path: Path) -> None:
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n")
    (tmp_path / "sum.txt").write_text("58\n")
    context = Context(workspace=str(tmp_path))
    tools = builtin(tmp_path)
    assert set(tools) == set(BUILTIN_TOOL_NAMES)

    def unsourced(*results: TaskResult, checks: Any = ()) -> dict[str, str]:
        return unsourced_numbers(["sum.txt"], SUM_REQUEST, context, results, tools, (), checks)

    assert unsourced() == {"sum.txt": "58"}
    # a receipt, a read of the file itself and an echo of the number are no sources
    assert unsourced(
        result("write_file", {"path": "sum.txt", "content": "58"}, "wrote 58 bytes to sum.txt"),
        result("read_file", {"path": "./sum.txt"}, "58"),
        result("run_command", {"argv": ["echo", "58"]}, "exit code: 0\n58\n"),
        result("run_command", {"argv": ["expr", "17", "+", "25"]}, "exit code: 0\n42\n"),
    ) == {"sum.txt": "58"}
    # nor is the status line of a command that ran: its exit code is no count
    (tmp_path / "sum.txt").write_text("0")
    listed = result("run_command", {"argv": ["wc", "-l", "numbers.txt"]}, "exit code: 0\n3 n\n")
    assert unsourced(listed) == {"sum.txt": "0"}
    (tmp_path / "sum.txt").write_text("58")
    # a program that computed it, or a caller who said what the file must hold, is a source
    computed = result("run_command", {"argv": ["expr", "17", "+", "41"]}, "exit code: 0\n58\n")
    assert unsourced(computed) == {}
    (tmp_path / "sum.txt").write_text("3")  # a count a search showed
    search = tools["search_text"].invoke({"pattern": r"\d", "path": "numbers.txt"})
    assert unsourced(result("search_text", {"pattern": r"\d", "path": "numbers.txt"}, search)) == {}
    (tmp_path / "sum.txt").write_text("58")
    caller = {"kind": "contains", "path": "sum.txt", "text": "58"}
    assert unsourced(checks=[caller]) == {}
    # a number an input holds is a value read out of it, not worked out
    (tmp_path / "sum.txt").write_text("25")
    assert unsourced() == {}
    # a number inside another one is not that number
    (tmp_path / "numbers.txt").write_text("158\n2.58\n")
    (tmp_path / "sum.txt").write_text("58")
    assert unsourced() == {"sum.txt": "58"}
    # text beside the number, or work that starts from no input, is left to the judge
    (tmp_path / "sum.txt").write_text("the sum is 58")
    assert unsourced() == {}
    (tmp_path / "sum.txt").write_text("58")
    assert unsourced_numbers(["sum.txt"], "Write 7 * 8 + 2 to sum.txt.", context, (), tools) == {}
    # a call on another file whose name ends the same is a source, not a read-back
    (tmp_path / "checksum.txt").write_text("x")
    other = result("run_command", {"argv": ["cksum", "checksum.txt"]}, "exit code: 0\n58 1\n")
    assert unsourced(other) == {}
    assert unsourced({**other, "arguments": {"argv": ["cat", "out/sum.txt"]}}) == {"sum.txt": "58"}


def test_a_count_a_search_shows_survives_a_long_output_and_no_match(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_text("".join(f"10:{i:02} ERROR {'x' * 120}\n" for i in range(57)))
    (tmp_path / "count.txt").write_text("57")
    context = Context(workspace=str(tmp_path))
    tools = builtin(tmp_path)
    request = "Count the lines of app.log that hold ERROR and write the count to count.txt."
    args = {"pattern": "ERROR", "path": "app.log"}
    ok, output = run_tool(tools["search_text"], args, context.max_output_chars)
    assert ok and "output truncated" in output and output.endswith("\n[57 matching lines]")
    assert len(output) < context.max_output_chars + 100
    found = [result("search_text", args, output)]
    assert unsourced_numbers(["count.txt"], request, context, found, tools) == {}
    # nothing found is a count of 0 the tool showed
    (tmp_path / "count.txt").write_text("0")
    args = {"pattern": "FATAL", "path": "app.log"}
    ok, output = run_tool(tools["search_text"], args, context.max_output_chars)
    assert output == "no match for 'FATAL' under app.log\n[0 matching lines]"
    found = [result("search_text", args, output)]
    assert unsourced_numbers(["count.txt"], request, context, found, tools) == {}
    assert unsourced_numbers(["count.txt"], request, context, [], tools) == {"count.txt": "0"}


def sum_script(*plans: dict[str, Any], judges: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {
        "request_analyser": [{**ANALYSIS, "task_type": "data", "files_to_write": ["sum.txt"]}],
        "phase_planner": [{"phases": [phase("p1", rounds=3)], "execution_strategy": "one"}],
        "plan_tool_call": list(plans),
        "judge_tasks": judges,
    }


def test_a_last_phase_is_not_done_on_a_number_worked_out_in_the_head(tmp_path: Path) -> None:
    # the 1.5B model wrote 58 for the sum of 17, 25 and 8, and 0 for a count of three, and
    # its judges called both done
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n")
    guessed = round_plan(("w", "write_file", {"path": "sum.txt", "content": "58"}))
    computed = round_plan(("c", "run_command", {"argv": ["expr", "17", "+", "25", "+", "8"]}))
    written = round_plan(("w2", "write_file", {"path": "sum.txt", "content": "50"}))
    steps = sum_script(guessed, computed, written, judges=[DONE, judgement("continue_phase",
                       completed=False, rate=0.5), DONE])  # fmt: skip
    out, model = run(tmp_path, steps, SUM_REQUEST)
    first, _, third = (r["judgement"] for r in out["rounds"])
    assert first["phase_completed"] is False
    assert first["overridden"].startswith(
        "sum.txt holds 58, a number that no input, no tool output and not the request shows"
    )
    judged = model.calls_of("judge_tasks")[0][-1].content
    assert "sum.txt (2 bytes, now '58'), a number that no input" in judged
    plans = [str(call[-1].content) for call in model.calls_of("plan_tool_call")]
    # each later plan is told to write it again, not left to find that in a judge's words
    step = (
        "Still to do, so plan it now:\n- sum.txt holds 58, a number that no input, no tool output"
        " and not the request shows: write sum.txt again with the number a tool's output shows"
    )
    assert step not in plans[0] and step in plans[1] and step in plans[2]
    assert third["phase_completed"] is True and "overridden" not in third
    assert out["status"] == "completed" and (tmp_path / "sum.txt").read_text() == "50"


def test_the_plan_is_told_to_write_again_only_what_a_guard_holds_its_judge_to(
    tmp_path: Path,
) -> None:
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n")
    guessed = round_plan(("w", "write_file", {"path": "sum.txt", "content": "58"}))
    written = round_plan(("w2", "write_file", {"path": "sum.txt", "content": "50"}))
    steps = sum_script(guessed, written, judges=[CONTINUE, DONE])
    model = ScriptedChatModel(script={"summarizer": [SUMMARY], **steps})
    # guards without unsourced_number: no judge is held to the number, no plan told of it
    graph = build_graph(model=model, checkpointer=InMemorySaver(), guards=DEFAULT_GUARDS)
    graph.invoke({"request": SUM_REQUEST}, {"configurable": {"thread_id": "g"}},
                 context=Context(workspace=str(tmp_path)))  # fmt: skip
    later = str(model.calls_of("plan_tool_call")[1][-1].content)
    assert "sum.txt holds 58" not in later and "write sum.txt again" not in later


def test_a_number_in_the_head_ends_the_run_short_not_completed(tmp_path: Path) -> None:
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n")
    guessed = round_plan(("w", "write_file", {"path": "sum.txt", "content": "58"}))
    again = round_plan(("w", "write_file", {"path": "sum.txt", "content": "58\n"}))
    out, _ = run(tmp_path, sum_script(guessed, again, judges=[DONE]), SUM_REQUEST)
    assert out["status"] != "completed"
    assert all(r["judgement"]["phase_completed"] is False for r in out["rounds"])


def test_a_number_is_taken_on_the_models_word_where_no_program_may_run(tmp_path: Path) -> None:
    # writing work may not run commands under the built-in rules: nothing could show the sum
    (tmp_path / "numbers.txt").write_text("17\n25\n8\n")
    steps = sum_script(
        round_plan(("w", "write_file", {"path": "sum.txt", "content": "50"})), judges=[DONE]
    )
    steps["request_analyser"] = [{**ANALYSIS, "files_to_write": ["sum.txt"]}]  # writing
    out, _ = run(tmp_path, steps, SUM_REQUEST)
    assert out["status"] == "completed"


def test_the_last_phase_keeps_the_tools_the_work_needs_and_is_told_what_is_unwritten(
    tmp_path: Path,
) -> None:
    # the 1.5B model's one phase, "Read app.ini", allowed read_file alone, and every plan read
    # the file: the run ended with app.ini unchanged
    (tmp_path / "app.ini").write_text("[server]\nport = 80\n")
    reading = {**phase("p1", rounds=2, tools=["read_file"]), "name": "Read app.ini"}
    edit = round_plan(
        ("e", "edit_file", {"path": "app.ini", "old_text": "port = 80", "new_text": "port = 80\n"
                            "timeout = 30"})
    )  # fmt: skip
    steps = {
        "request_analyser": [{**ANALYSIS, "files_to_write": ["app.ini"]}],
        "phase_planner": [{"phases": [phase("p0", 3, ["list_files"]), reading],
                           "execution_strategy": "in order"}],  # fmt: skip
        "plan_tool_call": [round_plan(("l", "list_files", {"path": "."})), edit],
        "judge_tasks": [DONE],
    }
    out, model = run(tmp_path, steps, "In app.ini, add timeout = 30 to [server].")
    first, last = (str(call[-1].content) for call in model.calls_of("plan_tool_call"))
    assert "change app.ini" not in first  # an earlier phase may only read
    assert "edit_file" not in first.split("Tools you may use:")[1].split("\n\n")[0]
    assert "- change app.ini as the request asks (this run has not written it yet)" in last
    assert "edit_file" in last.split("Tools you may use:")[1]
    assert out["rounds"][-1]["results"][0]["status"] == "ok"
    assert "timeout = 30" in (tmp_path / "app.ini").read_text()
    assert out["status"] == "completed"


def test_expr_computes_and_its_operands_are_not_paths(tmp_path: Path) -> None:
    tools = builtin(tmp_path)
    assert tools["run_command"].invoke({"argv": ["expr", "17", "+", "25", "+", "8"]}).endswith(
        "\n50\n"
    )
    assert tools["run_command"].invoke({"argv": ["expr", "6", "/", "2"]}).endswith("\n3\n")
    with pytest.raises(WorkspaceError, match="absolute path"):  # where it is a path, it is one
        tools["run_command"].invoke({"argv": ["ls", "/"]})


def test_a_bare_name_where_a_path_is_asked_for_is_not_done(tmp_path: Path) -> None:
    # with the caller's check "answer.txt contains dates.py", the 1.5B model wrote "dates.py"
    # without a search and its judge called it done; the file is src/util/dates.py
    (tmp_path / "src" / "util").mkdir(parents=True)
    (tmp_path / "src" / "util" / "dates.py").write_text("def parse_date(text):\n    pass\n")
    bare = round_plan(("w", "write_file", {"path": "answer.txt", "content": "dates.py"}))
    whole = round_plan(("w2", "write_file", {"path": "answer.txt", "content": "src/util/dates.py"}))
    steps = {
        "request_analyser": [{**ANALYSIS, "files_to_write": ["answer.txt"]}],
        "phase_planner": [{"phases": [phase("p1", rounds=2)], "execution_strategy": "one"}],
        "plan_tool_call": [bare, whole],
        "judge_tasks": [DONE, DONE],
    }
    request = "Find the file that defines parse_date and write its path to answer.txt."
    out, model = run(tmp_path, steps, request, ["contains:answer.txt:dates.py"])
    first, second = (r["judgement"] for r in out["rounds"])
    said = "'dates.py' is not a path in the workspace (a file of that name: src/util/dates.py)"
    assert first["overridden"] == f"answer.txt holds {said}: the request asks for a path"
    assert f"answer.txt (8 bytes, now 'dates.py'), {said}" in str(
        model.calls_of("judge_tasks")[0][-1].content
    )
    assert "overridden" not in second and out["status"] == "completed"
    # and the next plan has it as a step to take, not only in a judge's words
    step = f"Still to do, so plan it now:\n- answer.txt holds {said}: write answer.txt again with"
    plans = [str(call[-1].content) for call in model.calls_of("plan_tool_call")]
    assert step not in plans[0] and step in plans[1]
    # asked for its name, the name is the answer
    (tmp_path / "answer.txt").unlink()
    out, _ = run(tmp_path, {**steps, "plan_tool_call": [bare]}, request.replace("path", "name"))
    assert out["status"] == "completed" and out["rounds"][0]["judgement"]["phase_completed"]


def test_a_path_relative_to_a_folder_or_a_path_not_asked_for_is_left_to_the_judge(
    tmp_path: Path,
) -> None:
    (tmp_path / "src" / "util").mkdir(parents=True)
    (tmp_path / "src" / "util" / "dates.py").write_text("def parse_date(text):\n    pass\n")
    (tmp_path / "answer.txt").write_text("util/dates.py")
    context = Context(workspace=str(tmp_path))
    assert misplaced_names(["answer.txt"], context) == {}
    (tmp_path / "answer.txt").write_text("dates.py")
    assert misplaced_names(["answer.txt"], context) == {
        "answer.txt": ("dates.py", ["src/util/dates.py"])
    }
    assert ASKS_FOR_A_PATH.search("Write its path to answer.txt.")
    assert ASKS_FOR_A_PATH.search("the full path of the file")
    assert not ASKS_FOR_A_PATH.search("Name the script that sets the PATH variable in answer.txt.")
