"""Round execution (SPEC section 5): parallel waves, timeouts, constraints, permission, budgets."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.types import Send

from phasegraph import Context, ScriptedChatModel, build_graph, resume
from phasegraph.models.structured import function_spec
from phasegraph.nodes.deps import workspace_settings
from phasegraph.nodes.plan import render_history
from phasegraph.nodes.plan_schema import PLAN_SCHEMA_TOKENS, plan_parameters
from phasegraph.nodes.prompt_render import tokens
from phasegraph.nodes.waves import picks_read_files
from phasegraph.report import build_report
from phasegraph.state import RoundPlan
from phasegraph.storage.journal import journal_for, journal_key
from phasegraph.tools.builtin import Toolbox

from scripts import (
    ANALYSIS,
    distinct_plans,
    final_state,
    judgement,
    make_script,
    phase,
    phases,
    rising_judgements,
    round_plan,
)


def sleepy_tools(log: list[str]) -> list[BaseTool]:
    lock = threading.Lock()

    @tool
    def nap(seconds: float, label: str) -> str:
        """Sleep for a while."""
        time.sleep(seconds)
        with lock:
            log.append(label)
        return f"slept {seconds}"

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file (a test stand-in that only logs)."""
        with lock:
            log.append(f"write {path}")
        return "written"

    @tool
    def read_file(path: str) -> str:
        """Read a file (a test stand-in)."""
        return f"contents of {path}"

    write_file.metadata = {"writes": "path"}  # the tool rules read what a tool declares
    return [nap, write_file, read_file]


def run_graph(script: dict[str, list[Any]], tools: list[BaseTool], thread: str = "x", **settings):
    model = ScriptedChatModel(script=script)
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": thread}}
    context = Context(**settings)
    events: list[tuple[float, dict[str, Any]]] = []
    for mode, chunk in graph.stream(
        {"request": "go"}, config, context=context, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append((time.monotonic(), chunk))
    return graph.get_state(config).values, events, model, graph, config, context


def test_eight_independent_tasks_run_at_once() -> None:
    log: list[str] = []
    eight = round_plan(*[(f"t{i}", "nap", {"seconds": 0.5, "label": str(i)}) for i in range(8)])
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[eight])
    out, events, *_ = run_graph(script, sleepy_tools(log), max_parallel=8)
    starts = [t for t, e in events if e["event"] == "task_started"]
    ends = [t for t, e in events if e["event"] == "task_finished"]
    assert sorted(log) == [str(i) for i in range(8)]
    # all eight were running together: every one started before the first one finished (an
    # order, not a duration, so a loaded machine cannot fail it)
    assert len(starts) == 8 and max(starts) < min(ends)
    assert out["step_count"] == 1 + 1 + 8 + 1


def test_max_parallel_makes_waves_and_depends_on_orders_them() -> None:
    log: list[str] = []
    plan = round_plan(*[(f"t{i}", "nap", {"seconds": 0.05, "label": f"t{i}"}) for i in range(5)])
    plan["tasks"][4]["depends_on"] = ["t0", "t1", "t2", "t3"]
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    out, *_ = run_graph(script, sleepy_tools(log), max_parallel=2)
    waves = {r["task_id"]: r["wave"] for r in out["rounds"][0]["results"]}
    assert waves == {"t0": 1, "t1": 1, "t2": 2, "t3": 2, "t4": 3}
    assert log[-1] == "t4"


def test_a_call_planned_twice_in_a_round_runs_once() -> None:
    # the 1.5B model planned each of four reads twice in one round, a step each
    log: list[str] = []
    nap, write_file, _ = sleepy_tools(log)
    nap.metadata = {"read_only": True, "idempotent": True}
    write_file.metadata = {}  # declaring nothing, it runs beside the reads
    same = {"seconds": 0.01, "label": "a"}
    plan = round_plan(
        ("t0", "nap", same),
        ("t1", "nap", dict(same)),
        ("t2", "nap", {"seconds": 0.01, "label": "b"}),
        ("w0", "write_file", {"path": "x", "content": "1"}),
        ("w1", "write_file", {"path": "x", "content": "1"}),
        ("t3", "nap", dict(same)),
    )
    plan["tasks"][2]["depends_on"] = ["t1"]  # waits for t0, which ran in t1's place
    plan["tasks"][4]["depends_on"] = ["w0"]
    plan["tasks"][5]["depends_on"] = ["w1"]  # a read after a write may see something new
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    out, *_ = run_graph(script, [nap, write_file], max_parallel=8)
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["t1"]["status"] == "skipped"
    assert results["t1"]["output"] == (
        "not run: the same call as t0 in this round; its result is theirs"
    )
    assert results["t2"]["status"] == "ok" and results["t2"]["wave"] == 2
    assert results["t3"]["status"] == "ok"
    # identical calls run once (SPEC 5), a write's too: a call with effects would act twice
    assert results["w1"]["status"] == "skipped" and log.count("write x") == 1
    # a read that waits for a write other than its first may see something new: it runs
    assert log.count("a") == 2
    assert out["step_count"] == 1 + 1 + 4 + 1


def test_a_call_with_effects_planned_eight_times_runs_once() -> None:
    # the embedded model planned add {"a": 2, "b": 3} as p1..p8 in one round
    sums: list[int] = []

    @tool
    def add(a: int, b: int) -> str:
        """Add two numbers and record the sum."""
        sums.append(a + b)
        return str(a + b)

    plan = round_plan(*[(f"p{i}", "add", {"a": 2, "b": 3}) for i in range(1, 9)])
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    out, *_ = run_graph(script, [add], max_parallel=8)
    statuses = [r["status"] for r in out["rounds"][0]["results"]]
    assert sums == [5] and statuses.count("ok") == 1 and statuses.count("skipped") == 7
    assert out["step_count"] == 1 + 1 + 1 + 1


def test_a_read_that_waits_for_its_own_repeat_is_not_left_waiting() -> None:
    log: list[str] = []
    nap, *_ = sleepy_tools(log)
    nap.metadata = {"read_only": True, "idempotent": True}
    same = {"seconds": 0.01, "label": "a"}
    plan = round_plan(("t0", "nap", same), ("t1", "nap", dict(same)))
    plan["tasks"][0]["depends_on"] = ["t1"]
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    out, *_ = run_graph(script, [nap], max_parallel=8)
    assert sorted(r["status"] for r in out["rounds"][0]["results"]) == ["ok", "ok"]


def node_order(graph, config, context) -> list[str]:
    return [
        name
        for chunk in graph.stream({"request": "go"}, config, context=context, stream_mode="updates")
        for name in chunk
    ]


def test_a_round_of_two_waves_is_one_execute_step() -> None:
    log: list[str] = []
    plan = round_plan(*[(f"t{i}", "nap", {"seconds": 0.01, "label": f"t{i}"}) for i in range(3)])
    plan["tasks"][2]["depends_on"] = ["t0"]
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    graph = build_graph(
        model=ScriptedChatModel(script=script),
        tools=sleepy_tools(log),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "w"}}
    order = node_order(graph, config, Context(max_parallel=8))
    # wave 1 (t0, t1), then wave 2 (t2, which waits for t0), each task shown as it ends, all
    # in execute's one step; then the judge
    assert order[: order.index("judge") + 1] == [
        "analyse", "phase_plan", "plan", "run_task", "run_task", "run_task", "execute", "judge",
    ]  # fmt: skip
    assert sorted(log[:2]) == ["t0", "t1"] and log[2] == "t2"
    (record,) = graph.get_state(config).values["rounds"]
    assert {r["task_id"]: r["wave"] for r in record["results"]} == {"t0": 1, "t1": 1, "t2": 2}


def test_a_wave_is_saved_as_picked_where_its_tasks_name_files(tmp_path) -> None:
    """Where a round's tasks read or write files, what holds a task back looks at them: each
    wave picked is saved ({"pick_wave": ...}), so a node run again after a crash is handed it
    (tests/integration/test_processes.py); where none does, picking again gives the same."""
    settings = workspace_settings(Context(workspace=str(tmp_path)))
    tools = Toolbox(None, builtin=True).resolve(settings)
    read = {"id": "r", "tool": "read_file", "arguments": {"path": "a.txt"}}
    write = {"id": "w", "tool": "write_file", "arguments": {"path": "a.txt", "content": "x"}}
    listing = {"id": "l", "tool": "list_files", "arguments": {}}
    assert picks_read_files([read], tools) and picks_read_files([listing, write], tools)
    assert not picks_read_files([listing], tools)  # the whole folder: no file of its own
    mine = {"id": "m", "tool": "nap", "arguments": {"seconds": 0.01, "label": "a"}}
    assert not picks_read_files([mine], {t.name: t for t in sleepy_tools([])})

    @tool
    def save(content: str, path: str = "out.txt") -> str:
        """Save the content (to out.txt unless told)."""
        return "saved"

    save.metadata = {"writes": "path"}  # its file may be its default: a write all the same
    assert picks_read_files([{"id": "s", "tool": "save", "arguments": {"content": "x"}}],
                            {"save": save})  # fmt: skip

    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    plan = round_plan(("r", "read_file", {"path": "a.txt"}), ("n", "list_files", {}))
    plan["tasks"][1]["depends_on"] = ["r"]  # a wave each
    graph = build_graph(
        model=ScriptedChatModel(
            script=make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
        ),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "files"}}
    order = node_order(graph, config, Context(workspace=str(tmp_path)))
    assert order[order.index("plan") : order.index("judge") + 1] == [
        "plan", "pick_wave", "run_task", "pick_wave", "run_task", "execute", "judge",
    ]  # fmt: skip


class OlderLayout(InMemorySaver):
    """Hands a checkpoint taken before ``execute`` back as versions before 13a (run_task a node
    of its own) left a thread stopped in a wave: execute run, a Send pending for each task."""

    def get_tuple(self, config):  # type: ignore[no-untyped-def]
        saved = super().get_tuple(config)
        checkpoint = saved.checkpoint if saved is not None else {"channel_values": {}}
        values = checkpoint["channel_values"]
        if "branch:to:execute" in values and values.get("current_plan"):
            del values["branch:to:execute"]
            seen = checkpoint["channel_versions"]["branch:to:execute"]
            checkpoint["versions_seen"]["execute"] = {"branch:to:execute": seen}
            phase = values["phases"][values["phase_index"]]["id"]
            values["__pregel_tasks"] = [
                Send("run_task", {
                    "task": task, "phase_id": phase, "round_seq": values["round_seq"],
                    "journal_key": journal_key("older", values["run_id"], phase,
                                               values["round_seq"], task["id"]),
                    "wave": 1, "timeout_s": 30.0, "last_wave": True,
                })  # fmt: skip
                for task in values["current_plan"]["tasks"]
            ]
            checkpoint["updated_channels"] = ["__pregel_tasks"]
        return saved


@pytest.mark.parametrize("given", ["to build_graph", "in the config"])
def test_a_wave_an_older_version_sent_to_run_task_nodes_is_run_by_execute(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its tasks run once each, in one execute and one judge; one that finished replays.

    Also where the checkpointer comes in the config, as the LangGraph server gives it.
    """
    log: list[str] = []

    @tool
    def append(text: str) -> str:
        """Append text (not idempotent)."""
        log.append(text)
        return f"appended {text}"

    plan = round_plan(("t0", "append", {"text": "a"}), ("t1", "append", {"text": "b"}))
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    saver = OlderLayout()
    config: Any = {"configurable": {"thread_id": "older"}}
    built = saver if given == "to build_graph" else None
    if built is None:
        config["configurable"][CONFIG_KEY_CHECKPOINTER] = saver
    graph = build_graph(model=ScriptedChatModel(script=script), tools=[append], checkpointer=built)
    context = Context(workspace=str(tmp_path))
    final_state(graph, {"request": "go"}, config, context=context, interrupt_before=["execute"])
    stopped = graph.get_state(config)
    assert stopped.next == ("execute",)  # the pending sends, read as this version's
    # the process stopped after the wave's first task had run: its journal entry finished
    monkeypatch.setenv("PHASEGRAPH_STATE_DIR", str(tmp_path / "state"))  # its journal file
    journal = journal_for(saver)
    key = journal_key("older", stopped.values["run_id"], "p1", 1, "t0")
    done = {"task_id": "t0", "tool": "append", "arguments": {"text": "a"}, "status": "ok"}
    journal.start(key, "append", {"text": "a"})
    journal.finish(key, done | {"output": "appended a", "duration_s": 0.01, "wave": 1,
                                "replayed": False})  # fmt: skip
    chunks = list(graph.stream(None, config, context=context, stream_mode="updates"))
    assert [next(iter(c)) for c in chunks][:4] == ["run_task", "run_task", "execute", "judge"]
    out = graph.get_state(config).values
    assert out["status"] == "completed", out.get("error")
    (record,) = out["rounds"]
    replayed = {r["task_id"]: r["replayed"] for r in record["results"]}
    assert log == ["b"]  # the second task; the first replayed
    assert replayed == {"t0": True, "t1": False}


NAP = round_plan(("t1", "nap", {"seconds": 0.01, "label": "a"}))


def test_phases_named_after_the_tools_become_one_phase_with_the_requests_goal() -> None:
    # the 0.5B local model copied the tool list out as phases for "write hello.txt", and
    # answered the same when asked again
    tool_named = phases("p1", "p2", "p3", rounds=2)
    for p, name in zip(tool_named["phases"], ["Read file", "write_file", "nap"], strict=True):
        p["name"] = name
    script = make_script(phase_planner=[tool_named], plan_tool_call=[NAP])
    out, _, model, *_ = run_graph(script, sleepy_tools([]))
    goal = "; ".join([ANALYSIS["core_goal"], *ANALYSIS["requirements"]])
    assert [(p["id"], p["goal"], p["estimated_rounds"]) for p in out["phases"]] == [("p1", goal, 4)]
    assert "named its phases after tools (Read file, write_file, nap)" in out["execution_strategy"]
    assert [name for name, _ in model.calls].count("phase_planner") == 1


def test_phases_each_narrowed_to_one_tool_become_one_phase_also_when_replanned() -> None:
    # the 1.5B model split "join two files into a third" into five one-tool phases of a round
    # each (more rounds than one phase may have), spent the budget on their plans and judges,
    # and its replan made the same split again
    one_tool = [phase(f"p{i}", 1, [t]) for i, t in enumerate(["read_file"] * 2 + ["nap"] * 3, 1)]
    again = [phase(f"q{i}", 1, [t]) for i, t in enumerate(["read_file", "write_file"], 1)]
    script = make_script(
        phase_planner=[{"phases": one_tool, "execution_strategy": "in order"}],
        plan_tool_call=[NAP, round_plan(("t2", "nap", {"seconds": 0.01, "label": "b"}))],
        judge_tasks=[judgement("replan", completed=False, rate=0.2), judgement()],
        replanner=[{"status": "replanned", "phases": again}],
    )
    out, _, model, *_ = run_graph(script, sleepy_tools([]))
    first, second = out["phases"]
    assert (first["id"], first["allowed_tools"], first["estimated_rounds"]) == ("p1", [], 4)
    assert first["goal"].endswith("; ".join(f"finish p{i}" for i in range(1, 6)))
    assert (second["id"], second["allowed_tools"]) == ("q1", [])
    assert second["goal"].endswith("finish q1; finish q2")
    assert "the 2 planned phases split a small job" in out["execution_strategy"]
    assert out["status"] == "completed"
    assert [name for name, _ in model.calls].count("plan_tool_call") == 2


def test_a_completion_the_judges_own_rate_contradicts_is_not_taken() -> None:
    # the 0.5B model ended "list the files and write files.md" after listing, at rate 0.1
    script = make_script(
        phase_planner=[phases("p1", rounds=2)],
        plan_tool_call=[NAP, round_plan(("t2", "nap", {"seconds": 0.01, "label": "b"}))],
        judge_tasks=[judgement(rate=0.1), judgement(rate=1.0)],
    )
    out, *_ = run_graph(script, sleepy_tools([]))
    first, second = (r["judgement"] for r in out["rounds"])
    assert (first["phase_completed"], first["next_action"]) == (False, "continue_phase")
    assert (second["phase_completed"], second["next_action"]) == (True, "end_phase")


def test_per_task_timeout() -> None:
    log: list[str] = []
    plan = round_plan(
        ("slow", "nap", {"seconds": 5, "label": "slow"}),
        ("quick", "nap", {"seconds": 0.01, "label": "quick"}),
    )
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    out, *_ = run_graph(script, sleepy_tools(log), task_timeout_s=0.3)
    results = {r["task_id"]: r for r in out["rounds"][0]["results"]}
    assert results["slow"]["status"] == "timeout"
    assert "no result within 0.3 s" in results["slow"]["output"]
    assert results["quick"]["status"] == "ok"
    # the run did not wait for the slow call (an order, not a duration: no wall-clock bound)
    assert log == ["quick"]


def test_round_timeout_cuts_later_waves() -> None:
    log: list[str] = []
    plan = round_plan(*[(f"t{i}", "nap", {"seconds": 0.4, "label": f"t{i}"}) for i in range(3)])
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    out, *_ = run_graph(script, sleepy_tools(log), max_parallel=1, round_timeout_s=0.6)
    statuses = [r["status"] for r in out["rounds"][0]["results"]]
    # wave 1 takes 0.4 s; wave 2 gets the 0.2 s left and times out; wave 3 never starts
    assert statuses == ["ok", "timeout", "timeout"]
    assert "time limit was reached" in out["rounds"][0]["results"][2]["output"]
    assert out["step_count"] == 1 + 1 + 2 + 1  # the one that never started is not counted


def test_research_may_not_write_and_the_plan_prompt_lists_only_allowed_tools() -> None:
    log: list[str] = []
    research = dict(ANALYSIS, task_type="research")
    writes = round_plan(("w", "write_file", {"path": "x", "content": "y"}))
    reads = round_plan(("r", "read_file", {"path": "x"}))
    script = make_script(
        request_analyser=[research], phase_planner=[phases("p1")], plan_tool_call=[writes, reads]
    )
    out, _, model, *_ = run_graph(script, sleepy_tools(log))
    first_prompt = model.calls_of("plan_tool_call")[0][-1].content
    assert "- read_file(" in first_prompt and "- nap(" in first_prompt
    assert "write_file" not in first_prompt
    retry = " ".join(str(m.content) for m in model.calls_of("plan_tool_call")[1])
    assert "'write_file', which is not available" in retry
    assert log == []
    assert out["status"] == "completed"


def test_the_plan_prompt_names_the_round_after_the_phase_and_before_the_tools() -> None:
    # measured: the round placed after the tools and workspace changed a small model's plans
    # and judgements for the worse on tasks never tuned on (docs/benchmarks.md, e1013e3)
    script = make_script(phase_planner=[phases("p1")])
    _, _, model, *_ = run_graph(script, sleepy_tools([]))
    prompt = str(model.calls_of("plan_tool_call")[0][-1].content)
    goal, round_line = prompt.index("Phase goal:"), prompt.index("Round 1 of at most")
    assert goal < round_line < prompt.index("Tools you may use:")


def test_forbidden_tool_is_never_executed_even_when_the_model_insists() -> None:
    log: list[str] = []
    research = dict(ANALYSIS, task_type="research")
    writes = round_plan(("w", "write_file", {"path": "x", "content": "y"}))
    script = make_script(
        request_analyser=[research],
        phase_planner=[phases("p1", rounds=3)],
        plan_tool_call=[writes],  # every attempt of every round
        judge_tasks=[judgement("retry_failed", completed=False, rate=0.0)],
    )
    out, *_ = run_graph(script, sleepy_tools(log), max_steps=60, review="none")
    assert log == []
    assert len(out["tool_violations"]) >= 3
    violation = out["tool_violations"][0]
    assert violation["tool"] == "write_file" and violation["phase_id"] == "p1"
    assert "not allowed for 'research' work" in violation["reason"]
    assert all(r["status"] == "refused" for rec in out["rounds"] for r in rec["results"])
    assert out["final_summary"]


def test_phase_allowed_tools_narrow_further() -> None:
    log: list[str] = []
    narrow = {"phases": [phase("p1", tools=["read_file"])], "execution_strategy": ""}
    naps = round_plan(("n", "nap", {"seconds": 0, "label": "n"}))
    script = make_script(phase_planner=[narrow], plan_tool_call=[naps], judge_tasks=[judgement()])
    out, _, model, *_ = run_graph(script, sleepy_tools(log), max_parse_retries=0)
    assert "- nap(" not in model.calls_of("plan_tool_call")[0][-1].content
    assert out["tool_violations"][0]["tool"] == "nap"
    assert log == []


NAP = round_plan(("n", "nap", {"seconds": 0, "label": "n"}))


def _task_options(model: ScriptedChatModel) -> list[dict[str, Any]]:
    spec = model.tools_of("plan_tool_call")[0][0]["function"]["parameters"]
    return spec["properties"]["tasks"]["items"]["anyOf"]


def test_the_plan_schema_types_each_task_by_an_allowed_tool() -> None:
    # the embedded 0.5B model wrote list_files(output=...) for "write hello.txt" under the
    # free-form schema, and write_file(path, content) under this one (bench/local_suite.py)
    narrow = {"phases": [phase("p1", tools=["read_file", "nap"])], "execution_strategy": ""}
    script = make_script(phase_planner=[narrow], plan_tool_call=[NAP])
    _, _, model, *_ = run_graph(script, sleepy_tools([]))
    options = _task_options(model)
    assert [o["properties"]["tool"] for o in options] == [{"const": "nap"}, {"const": "read_file"}]
    nap = options[0]
    assert nap["properties"]["arguments"]["required"] == ["seconds", "label"]
    assert nap["properties"]["arguments"]["properties"]["seconds"] == {"type": "number"}
    # the call comes straight after the round's reasoning; its purpose after it, optional: asked
    # first, the 1.5B model copied the first tool's description into it and picked that tool
    assert list(nap["properties"]) == ["id", "tool", "arguments", "depends_on", "purpose"]
    assert nap["required"] == ["id", "tool", "arguments"]
    plan = model.tools_of("plan_tool_call")[0][0]["function"]["parameters"]
    assert list(plan["properties"])[0] == "reasoning" and plan["required"][0] == "reasoning"
    assert all("justification" not in o["properties"] for o in options)


def test_with_permission_reviews_the_plan_schema_also_offers_a_justified_other_tool() -> None:
    research = dict(ANALYSIS, task_type="research")  # may not write
    script = make_script(
        request_analyser=[research], phase_planner=[phases("p1")], plan_tool_call=[NAP]
    )
    _, _, model, graph, config, context = run_graph(script, sleepy_tools([]), review="all")
    resume(graph, config, {"action": "approve"}, context=context)
    *allowed, ask = _task_options(model)
    assert [o["properties"]["tool"]["const"] for o in allowed] == ["nap", "read_file"]
    # only a tool that exists and is not allowed can be asked for, and only with a reason
    assert ask["properties"]["tool"] == {"enum": ["write_file"]}
    assert ask["properties"]["justification"] == {"type": "string", "minLength": 1}
    assert "justification" in ask["required"]


def test_a_plan_schema_too_large_for_the_prompt_falls_back_to_the_plain_one() -> None:
    many = [_echo_tool(f"tool_{i:02d}") for i in range(30)]
    assert "anyOf" in json.dumps(plan_parameters(many[:5]))
    plain = plan_parameters(many)
    own = function_spec("plan_tool_call", RoundPlan)["function"]["parameters"]
    assert plain == own | {"required": ["reasoning", *own["required"]]}  # reasoning asked first
    assert tokens(json.dumps(plan_parameters(many[:11]))) <= PLAN_SCHEMA_TOKENS


def _echo_tool(name: str) -> BaseTool:
    @tool(name)
    def echo(text: str, times: int = 1) -> str:
        """Repeat the text."""
        return text * times

    return echo


def test_a_tool_is_described_from_its_own_schema_each_read_once() -> None:
    from phasegraph.tools import describe_tools

    first, second = _echo_tool("echo"), _echo_tool("echo")
    second.description = "Say the text back."
    # the same name, another object: each is described and typed by what it is
    assert "Repeat the text." in describe_tools([first])
    assert "Say the text back." in describe_tools([second])
    first.description = "Echo it."  # a tool changed after a plan read it is read again
    assert "Echo it." in describe_tools([first])
    # a plan may edit the schema it is given; the next plan's is whole again
    schema = plan_parameters([first])
    schema["properties"]["tasks"]["items"]["anyOf"][0]["properties"]["arguments"].clear()
    again = plan_parameters([first])["properties"]["tasks"]["items"]["anyOf"][0]
    assert again["properties"]["arguments"]["required"] == ["text"]


def test_justified_request_asks_the_person_and_allow_runs_it() -> None:
    log: list[str] = []
    research = dict(ANALYSIS, task_type="research")
    plan = round_plan(
        ("w", "write_file", {"path": "notes.md", "content": "x"}), ("r", "read_file", {"path": "a"})
    )
    plan["tasks"][0]["justification"] = "the notes must be saved"
    script = make_script(
        request_analyser=[research], phase_planner=[phases("p1")], plan_tool_call=[plan]
    )
    out, _, _, graph, config, context = run_graph(script, sleepy_tools(log), review="all")
    out = resume(graph, config, {"action": "approve"}, context=context)
    assert out["pending_review"]["kind"] == "tool_permission"
    assert out["pending_review"]["task"]["tool"] == "write_file"
    assert out["pending_review"]["justification"] == "the notes must be saved"
    assert log == []
    out = resume(graph, config, {"action": "allow"}, context=context)
    assert log == ["write notes.md"]
    assert out["status"] == "completed"
    assert out["tool_violations"] == []


def test_justified_request_denied_is_a_violation() -> None:
    log: list[str] = []
    research = dict(ANALYSIS, task_type="research")
    plan = round_plan(("w", "write_file", {"path": "notes.md", "content": "x"}))
    plan["tasks"][0]["justification"] = "please"
    script = make_script(
        request_analyser=[research], phase_planner=[phases("p1")], plan_tool_call=[plan]
    )
    _, _, _, graph, config, context = run_graph(script, sleepy_tools(log), review="all")
    resume(graph, config, {"action": "approve"}, context=context)
    out = resume(graph, config, {"action": "deny"}, context=context)
    assert log == []
    assert "the person denied the request" in out["tool_violations"][0]["reason"]


def test_a_tool_denied_is_not_asked_about_again_in_its_phase() -> None:
    log: list[str] = []
    research = dict(ANALYSIS, task_type="research")
    plan = round_plan(("w", "write_file", {"path": "notes.md", "content": "x"}))
    plan["tasks"][0]["justification"] = "please"
    going_on = judgement("continue_phase", completed=False, rate=0.5)
    script = make_script(
        request_analyser=[research],
        phase_planner=[phases("p1", rounds=2)],
        plan_tool_call=[plan, plan],
        judge_tasks=[going_on, judgement()],
    )
    _, _, _, graph, config, context = run_graph(script, sleepy_tools(log), review="all")
    resume(graph, config, {"action": "approve"}, context=context)
    out = resume(graph, config, {"action": "deny"}, context=context)
    # the next round named it again: refused as denied, not asked about
    assert (out["pending_review"] or {}).get("kind") != "tool_permission"
    assert log == [] and len(out["rounds"]) >= 2
    assert [v["denied"] for v in out["tool_violations"]] == [True] * len(out["rounds"])


def test_a_tool_denied_is_not_asked_about_again_in_a_later_wave_of_its_round() -> None:
    log: list[str] = []
    research = dict(ANALYSIS, task_type="research")
    plan = round_plan(
        ("a", "write_file", {"path": "x.md", "content": "1"}),
        ("n", "nap", {"seconds": 0.01, "label": "n"}),
        ("b", "write_file", {"path": "y.md", "content": "2"}),
    )
    for task in (plan["tasks"][0], plan["tasks"][2]):
        task["justification"] = "must save"
    plan["tasks"][2]["depends_on"] = ["n"]  # b comes in the wave after a's
    script = make_script(
        request_analyser=[research], phase_planner=[phases("p1")], plan_tool_call=[plan]
    )
    _, _, _, graph, config, context = run_graph(script, sleepy_tools(log), review="all")
    out = resume(graph, config, {"action": "approve"}, context=context)
    assert out["pending_review"]["task"]["id"] == "a"
    out = resume(graph, config, {"action": "deny"}, context=context)
    assert (out["pending_review"] or {}).get("kind") != "tool_permission"
    (record, *_) = out["rounds"]
    statuses = {r["task_id"]: r["status"] for r in record["results"]}
    assert statuses == {"a": "refused", "n": "ok", "b": "refused"}
    assert [v["task_id"] for v in out["tool_violations"]][:2] == ["a", "b"]
    assert all(v["denied"] for v in out["tool_violations"])


def test_justification_without_reviews_is_refused() -> None:
    log: list[str] = []
    research = dict(ANALYSIS, task_type="research")
    plan = round_plan(("w", "write_file", {"path": "n", "content": "x"}))
    plan["tasks"][0]["justification"] = "please"
    script = make_script(
        request_analyser=[research], phase_planner=[phases("p1")], plan_tool_call=[plan]
    )
    out, *_ = run_graph(script, sleepy_tools(log), review="plan+replan")
    assert out["status"] == "awaiting_review"  # the plan review, never a permission request
    assert out["pending_review"]["kind"] == "plan_review"


def test_custom_rules_replace_the_defaults() -> None:
    log: list[str] = []
    research = dict(ANALYSIS, task_type="research")
    writes = round_plan(("w", "write_file", {"path": "x", "content": "y"}))
    script = make_script(
        request_analyser=[research], phase_planner=[phases("p1")], plan_tool_call=[writes]
    )
    out, *_ = run_graph(
        script, sleepy_tools(log), tool_rules={"research": {"allowed": ["write_file"]}}
    )
    assert log == ["write x"]
    assert out["tool_violations"] == []


def test_forty_rounds_keep_the_prompt_bounded() -> None:
    log: list[str] = []
    big = "x" * 5000

    def plans(_messages: list[BaseMessage], count={"n": 0}) -> dict[str, Any]:  # noqa: B006
        count["n"] += 1
        n = count["n"]
        return round_plan(
            *[(f"t{i}", "nap", {"seconds": 0, "label": f"{n}.{i} {big}"}) for i in range(3)]
        )

    replans = {"n": 0}

    def replanner(_messages: list[BaseMessage]) -> dict[str, Any]:
        replans["n"] += 1
        return {"status": "replanned", "phases": [phase(f"r{replans['n']}", rounds=4)]}

    script = make_script(
        phase_planner=[phases("p1", rounds=4)],
        plan_tool_call=[plans],
        judge_tasks=[rising_judgements(0.01)],
        replanner=[replanner],
    )
    out, _, model, *_ = run_graph(
        script,
        sleepy_tools(log),
        max_steps=260,
        max_replans=100,
        extra_rounds_per_phase=20,
        prompt_token_budget=2000,
    )
    assert len(out["rounds"]) >= 40
    # group every model call by the round it belongs to: calls after the k-th plan call
    rounds: list[list[int]] = []
    for name, messages in model.calls:
        size = sum(tokens(str(m.content)) for m in messages)
        if name == "plan_tool_call":
            rounds.append([])
        if rounds:
            rounds[-1].append(size)
    largest_3, largest_40 = max(rounds[2]), max(rounds[39])
    assert largest_40 <= 1.5 * largest_3, (largest_3, largest_40)
    assert any(r["trigger"] == "stuck_phase" for r in out["reflections"])


def test_history_of_forty_rounds_fits_its_budget() -> None:
    rounds = [
        {
            "phase_id": "p",
            "round": n,
            "round_seq": n,
            "tasks": [],
            "results": [
                {
                    "task_id": "t",
                    "tool": "nap",
                    "arguments": {"n": n},
                    "status": "ok",
                    "output": "y" * 4000,
                    "duration_s": 0,
                    "wave": 1,
                    "replayed": False,
                }
            ],
            "judgement": {
                "user_summary": f"round {n} did its part",
                "phase_completion_rate": n / 50,
            },
        }
        for n in range(1, 41)
    ]
    text = render_history(rounds, 600)
    assert tokens(text) <= 600
    assert "Rounds 1-34: 34 earlier rounds" in text
    assert "Round 38: round 38 did its part" in text
    assert "Round 40 (judged" in text
    assert "output truncated" in text
    assert tokens(render_history(rounds[:3], 600)) <= tokens(text)


def test_judge_prompt_fits_the_budget_with_eight_large_outputs(tools) -> None:
    big = round_plan(*[(f"t{i}", "echo", {"text": f"{i}" * 20_000}) for i in range(8)])
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[big])
    model = ScriptedChatModel(script=script)
    graph = build_graph(model=model, tools=tools, checkpointer=InMemorySaver())
    out = final_state(
        graph,
        {"request": "go"},
        {"configurable": {"thread_id": "big"}},
        context=Context(prompt_token_budget=1500, max_output_chars=50_000),
    )
    judge_prompt = model.calls_of("judge_tasks")[0][-1].content
    assert tokens(judge_prompt) <= 1500
    assert judge_prompt.count("output truncated") == 16  # 8 outputs and 8 long arguments
    # the state keeps the longer output (max_output_chars), the prompt only its start
    assert len(out["rounds"][0]["results"][0]["output"]) == 20_000


def test_at_the_default_budget_the_judge_sees_a_large_file_s_first_1200_chars(tmp_path) -> None:
    # README (Settings) promises this much of one large file read in a round: the default
    # history budget went down from 3,000 to 1,500 tokens on the condition that it stays so.
    text = "\n".join(f"line {n:05d} " + "x" * 40 for n in range(2_000))  # about 100 KB
    (tmp_path / "big.txt").write_text(text)
    read = round_plan(("r", "read_file", {"path": "big.txt"}))
    prompts = []
    for budget in (Context().prompt_token_budget, 3000):
        script = make_script(phase_planner=[phases("p1")], plan_tool_call=[read])
        model = ScriptedChatModel(script=script)
        graph = build_graph(model=model)
        context = Context(workspace=str(tmp_path), prompt_token_budget=budget)
        graph.invoke({"request": "go"}, context=context)
        prompts.append(model.calls_of("judge_tasks")[0][-1].content)
    as_shown = json.dumps(text)[1:-1]  # results reach the judge as JSON
    assert json.dumps(text[:1200])[1:-1] in prompts[0]
    assert json.dumps(text[:1300])[1:-1] not in prompts[0]
    assert prompts[0] == prompts[1] and as_shown not in prompts[0]


def test_a_new_phase_plans_with_what_the_earlier_phases_found(run) -> None:
    found = judgement()
    found["user_summary"] = "The key for the next phase is K-4711."
    script = make_script(
        phase_planner=[phases("p1", "p2", "p3", "p4", "p5")],
        judge_tasks=[found, judgement(), judgement(), judgement(), judgement()],
        plan_tool_call=[distinct_plans()],
    )
    out, _, model = run(script)
    assert out["status"] == "completed"
    prompts_ = [m[-1].content for m in model.calls_of("plan_tool_call")]
    assert "K-4711" not in prompts_[0]
    line = "- phase p1 (p1): completed after 1 round(s) - The key for the next phase is K-4711."
    assert f"Phases finished before this one:\n{line}" in prompts_[1]
    # only the latest few phases are named: the prompt does not grow with the phases done
    assert "K-4711" not in prompts_[4]
    assert "1 earlier phases finished, 1 of them completed." in prompts_[4]
    # the summary names finished phases the same way
    assert line[2:] in model.calls_of("summarizer")[0][-1].content


def test_a_replan_keeps_what_the_replaced_phase_found(run) -> None:
    found = judgement("replan", completed=False, rate=0.4)
    found["user_summary"] = "Half done; the key found so far is K-99."
    script = make_script(
        phase_planner=[phases("p1", rounds=3)],
        judge_tasks=[found, judgement()],
        replanner=[{"status": "replanned", "phases": [phase("p2")]}],
    )
    out, _, model = run(script)
    assert out["status"] == "completed"
    replan_prompt = model.calls_of("replanner")[0][-1].content
    second_plan = model.calls_of("plan_tool_call")[1][-1].content
    assert "K-99" in replan_prompt
    line = "phase p1 (p1): ended incomplete (replanned) after 1 round(s) - Half done; the key"
    assert f"- {line}" in second_plan
    report = build_report("t1", out)
    assert [(p["id"], p["ended_by"], len(p["rounds"])) for p in report["phases"]] == [
        ("p1", "replanned", 1),
        ("p2", "completed", 1),
    ]


def test_a_replan_that_reuses_a_finished_phase_id_gets_a_new_one(run) -> None:
    # the embedded 0.5B model restarts at p1 when it replans; sent back, it answered the same
    # until the budget ran out, and the run failed
    script = make_script(
        phase_planner=[phases("p1", "p2")],
        judge_tasks=[judgement(), judgement("replan", completed=False, rate=0.2), judgement()],
        replanner=[{"status": "replanned", "phases": [phase("p1")]}],
    )
    out, _, model = run(script)
    assert out["status"] == "completed"
    assert len(model.calls_of("replanner")) == 1
    assert [(o["phase_id"], o["ended_by"]) for o in out["phase_outcomes"]] == [
        ("p1", "completed"),
        ("p2", "replanned"),
        ("p1-2", "completed"),
    ]


def test_phases_of_several_rounds_on_one_tool_stay_as_planned() -> None:
    # a long job on one tool (many records, read a level a round) is work, not a tool call
    work = [phase(f"p{i}", 2, ["nap"]) for i in range(1, 4)]
    script = make_script(
        phase_planner=[{"phases": work, "execution_strategy": "in order"}],
        plan_tool_call=[NAP, round_plan(("t2", "nap", {"seconds": 0.01, "label": "b"}))] * 3,
        judge_tasks=[judgement()] * 3,
    )
    out, *_ = run_graph(script, sleepy_tools([]))
    assert [p["id"] for p in out["phases"]] == ["p1", "p2", "p3"]
    assert out["execution_strategy"] == "in order"
    # nor is a look, a change of several rounds and a test run (all but one a call: not enough)
    work = [phase("p1", 1, ["read_file"]), phase("p2", 3), phase("p3", 1, ["nap"])]
    script["phase_planner"] = [{"phases": work, "execution_strategy": "in order"}]
    out, *_ = run_graph(script, sleepy_tools([]))
    assert [p["id"] for p in out["phases"]] == ["p1", "p2", "p3"]


def test_writes_of_one_file_run_in_the_plan_s_order_and_others_at_once() -> None:
    log: list[str] = []

    @tool
    def store(path: str, text: str) -> str:
        """Write a note (a test stand-in that sleeps, then logs)."""
        log.append(f"start {text}")
        time.sleep(0.1)
        log.append(f"end {text}")
        return "stored"

    store.metadata = {"writes": "path"}
    plan = round_plan(
        ("t1", "store", {"path": "notes.txt", "text": "a"}),
        ("t2", "store", {"path": "./notes.txt", "text": "b"}),
        ("t3", "store", {"path": "other.txt", "text": "c"}),
    )
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    out, *_ = run_graph(script, [store], max_parallel=8)
    waves = {r["task_id"]: r["wave"] for r in out["rounds"][0]["results"]}
    assert waves == {"t1": 1, "t2": 2, "t3": 1}
    assert log.index("end a") < log.index("start b")


def test_a_read_of_a_file_the_round_writes_later_runs_first_in_a_run() -> None:
    log: list[str] = []

    @tool
    def look(path: str) -> str:
        """Read a note (a test stand-in that sleeps, then logs)."""
        log.append("start look")
        time.sleep(0.1)
        log.append("end look")
        return "read"

    @tool
    def store(path: str, text: str) -> str:
        """Write a note (a test stand-in)."""
        log.append("store")
        return "stored"

    look.metadata, store.metadata = {"read_only": True}, {"writes": "path"}
    plan = round_plan(("t1", "look", {"path": "notes.txt"}),
                      ("t2", "store", {"path": "notes.txt", "text": "b"}))  # fmt: skip
    script = make_script(phase_planner=[phases("p1")], plan_tool_call=[plan])
    out, *_ = run_graph(script, [look, store], max_parallel=8)
    waves = {r["task_id"]: r["wave"] for r in out["rounds"][0]["results"]}
    assert waves == {"t1": 1, "t2": 2}
    assert log == ["start look", "end look", "store"]


@tool
def put(path: str) -> str:
    """Write a file (a stand-in that declares it)."""
    return "put"


@tool
def get(path: str) -> str:
    """Read a file or a folder (a stand-in that declares it)."""
    return "got"


@tool
def fetch(name: str) -> str:
    """Read a file named otherwise (a stand-in that declares which argument names it)."""
    return "got"


put.metadata, get.metadata = {"writes": "path"}, {"read_only": True}
fetch.metadata = {"read_only": True, "reads": "name"}
STAND_INS: dict[str, Any] = {"put": put, "get": get, "fetch": fetch}


def test_an_earlier_writer_that_waits_for_a_later_one_comes_after_it(tmp_path: Any) -> None:
    from phasegraph.nodes.holds import one_file_in_plan_order
    from phasegraph.tools.workspace import Workspace

    tools = STAND_INS
    tasks = [
        {"id": "t1", "tool": "put", "arguments": {"path": "f.txt"}, "depends_on": ["t2"]},
        {"id": "t2", "tool": "put", "arguments": {"path": "f.txt"}, "depends_on": []},
        {"id": "t3", "tool": "put", "arguments": {"path": "f.txt"}, "depends_on": []},
        {"id": "t4", "tool": "get", "arguments": {"path": "f.txt"}, "depends_on": []},
        {"id": "t5", "tool": "put", "arguments": {"path": "../outside.txt"}, "depends_on": []},
    ]
    order = one_file_in_plan_order(tasks, tools, Workspace(str(tmp_path)))
    # a read waits for the writes of its file the plan lists before it
    assert order == {"t3": ["t1", "t2"], "t4": ["t1", "t2", "t3"]}


def test_a_read_beside_a_write_of_its_file_runs_in_the_plans_order(tmp_path: Any) -> None:
    """Not as the threads take it: a file read, a folder listed or searched, before or after."""
    from phasegraph.nodes.holds import one_file_in_plan_order
    from phasegraph.tools.workspace import Workspace

    tools = STAND_INS

    def task(tid: str, tool_name: str, **arguments: str) -> dict[str, Any]:
        return {"id": tid, "tool": tool_name, "arguments": arguments, "depends_on": []}

    space = Workspace(str(tmp_path))
    tasks = [task("r", "get", path="f.md"), task("l", "get", path="."),
             task("w", "put", path="f.md"), task("s", "get", path="sub"),
             task("w2", "put", path="sub/g.md"), task("n", "fetch", name="sub/g.md"),
             task("o", "get", path="other.md")]  # fmt: skip
    assert one_file_in_plan_order(tasks, tools, space) == {
        "w": ["r", "l"],  # after the read of its file and the listing of its folder
        "w2": ["l", "s"],
        "n": ["w2"],  # a read of the file a write before it made, by its declared argument
    }


def test_a_callers_tool_runs_inside_the_run_as_toolnode_would_run_it() -> None:
    """The run's callbacks see the call, and the tool reaches the run's stream writer."""
    from langchain_core.callbacks import BaseCallbackHandler
    from langgraph.config import get_stream_writer

    @tool
    def measure(label: str) -> str:
        """Measure something and say so on the run's stream."""
        get_stream_writer()({"measured": label})
        return f"measured {label}"

    class Seen(BaseCallbackHandler):
        def __init__(self) -> None:
            self.tools: list[str] = []

        def on_tool_start(self, serialized: dict[str, Any], input_str: str, **kw: Any) -> None:
            self.tools.append(serialized["name"])

    seen = Seen()
    script = make_script(plan_tool_call=[round_plan(("t1", "measure", {"label": "a"}))])
    graph = build_graph(model=ScriptedChatModel(script=script), tools=[measure])
    config: Any = {"callbacks": [seen]}
    custom = [c for c in graph.stream({"request": "go"}, config, stream_mode="custom")]
    assert {"measured": "a"} in custom
    assert seen.tools.count("measure") >= 1
    finished = [c for c in custom if c.get("event") == "task_finished"]
    assert finished and all(c["status"] == "ok" for c in finished)


def test_a_tool_that_asks_to_pause_fails_saying_why() -> None:
    from langgraph.types import interrupt

    @tool
    def confirm(question: str) -> str:
        """Ask a person."""
        return str(interrupt(question))

    script = make_script(plan_tool_call=[round_plan(("t1", "confirm", {"question": "ok?"}))])
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=[confirm], checkpointer=InMemorySaver()
    )
    out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "ask"}})
    results = [r for record in out["rounds"] for r in record["results"]]
    assert results and all(r["status"] == "failed" for r in results)
    assert all("interrupt()" in r["output"] and "pause" in r["output"] for r in results)
    assert out["status"] != "completed"


def test_a_tool_that_exits_fails_with_its_exit_not_a_timeout() -> None:
    import sys

    @tool
    def leave(code: int) -> str:
        """Exit."""
        sys.exit(code)

    script = make_script(plan_tool_call=[round_plan(("t1", "leave", {"code": 3}))])
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=[leave], checkpointer=InMemorySaver()
    )
    out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "exit"}})
    results = [r for record in out["rounds"] for r in record["results"]]
    assert results and all(r["output"] == "SystemExit: 3" for r in results)
    assert all(r["status"] == "failed" for r in results) and out["status"] != "completed"


def test_the_default_rules_read_what_a_callers_tools_declare_not_their_names() -> None:
    """Research may not write or run programs, with any tool that declares it does."""
    log: list[str] = []

    def save(path: str, text: str) -> str:
        log.append(f"save {path}")
        return "saved"

    def shell(argv: list[str]) -> str:
        log.append(f"shell {argv}")
        return "ran"

    def lookup(key: str) -> str:
        log.append(f"lookup {key}")
        return "found"

    def drop(key: str) -> str:
        log.append(f"drop {key}")
        return "dropped"

    # an MCP tool's annotations, as langchain-mcp-adapters keeps them in its metadata
    mcp_hints = {"readOnlyHint": False, "destructiveHint": True}
    tools = [
        StructuredTool.from_function(save, description="Save.", metadata={"writes": "path"}),
        StructuredTool.from_function(shell, description="Run.", metadata={"runs": "argv"}),
        StructuredTool.from_function(lookup, description="Look up.", metadata={"read_only": True}),
        StructuredTool.from_function(drop, description="Drop a key.", metadata=mcp_hints),
    ]
    research = dict(ANALYSIS, task_type="research")
    tasks = round_plan(
        ("w", "save", {"path": "notes.md", "text": "x"}),
        ("r", "shell", {"argv": ["ls"]}),
        ("l", "lookup", {"key": "k"}),
        ("d", "drop", {"key": "k"}),
    )
    script = make_script(
        request_analyser=[research], phase_planner=[phases("p1")], plan_tool_call=[tasks]
    )
    out, *_ = run_graph(script, tools)
    assert set(log) == {"lookup k"}  # each round's plan: the lookup ran, the others never
    assert {v["tool"] for v in out["tool_violations"]} == {"save", "shell", "drop"}
    with pytest.raises(ValueError, match=r"unknown kinds \['@deletes'\]"):
        Context(tool_rules={"research": {"forbidden": ["@deletes"]}})


def test_the_default_rules_given_by_the_names_they_stand_for_are_still_the_defaults() -> None:
    from phasegraph.facts.tools import tool_kinds
    from phasegraph.nodes.deps import workspace_settings
    from phasegraph.tools.builtin import Toolbox
    from phasegraph.tools.constraints import DEFAULT_TOOL_RULES, same_rules

    by_name = {
        "research": {"forbidden": ["write_file", "edit_file", "run_command"]},
        "analysis": {"forbidden": ["write_file", "edit_file"]},
    }
    kinds = tool_kinds(Toolbox(None, builtin=True).resolve(workspace_settings(Context())))
    assert kinds == {"writes": {"write_file", "edit_file"}, "runs": {"run_command"}}
    assert same_rules(by_name, DEFAULT_TOOL_RULES, kinds)
    assert not same_rules({"research": {"forbidden": ["write_file"]}}, DEFAULT_TOOL_RULES, kinds)


def test_an_async_tool_is_awaited_on_the_runs_loop_and_cancelled_when_given_up() -> None:
    # as under LangGraph's ToolNode: an async run's tool may use what the caller's loop holds
    # (a queue its worker answers), and one that never ends is cancelled at its timeout,
    # leaving no thread behind
    import asyncio

    held: dict[str, Any] = {}

    @tool
    async def ask_app(question: str) -> str:
        """Ask the application's own worker."""
        answer = asyncio.get_running_loop().create_future()
        await held["queue"].put((question, answer))
        return str(await asyncio.wait_for(answer, 3))

    @tool
    async def forever(text: str) -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return text

    @tool
    async def blocking(text: str) -> str:
        """Blocks its loop (a mistake a tool may make)."""
        time.sleep(2)
        return text

    ask_app.metadata = {"shares_event_loop": True}  # it uses the caller's own queue

    script = make_script(plan_tool_call=[round_plan(
        ("a", "ask_app", {"question": "q"}), ("f", "forever", {"text": "x"}),
        ("b1", "blocking", {"text": "1"}), ("b2", "blocking", {"text": "2"}))])  # fmt: skip
    tools = [ask_app, forever, blocking]
    graph = build_graph(model=ScriptedChatModel(script=script), tools=tools,
                        checkpointer=InMemorySaver())  # fmt: skip

    async def app() -> dict[str, Any]:
        held["queue"] = asyncio.Queue()

        async def worker() -> None:
            while True:
                question, answer = await held["queue"].get()
                answer.set_result(f"answer to {question}")

        serving = asyncio.ensure_future(worker())
        config: Any = {"configurable": {"thread_id": "loop"}}
        started = time.monotonic()
        await graph.ainvoke({"request": "go"}, config, context=Context(task_timeout_s=0.5))
        # the tools that do not share the loop run in their own threads, at once: two that
        # block 2 s each cost the run its timeout, not 4 s of the caller's loop
        assert time.monotonic() - started < 1.9
        out = (await graph.aget_state(config)).values
        serving.cancel()
        await asyncio.sleep(0.2)  # the cancelled tool's thread ends
        assert not [t for t in threading.enumerate() if t.name == "phasegraph-forever"]
        return out

    out = asyncio.run(app())
    results = {r["task_id"]: r for rnd in out["rounds"] for r in rnd["results"]}
    assert results["a"]["status"] == "ok" and results["a"]["output"] == "answer to q"
    assert results["f"]["status"] == "timeout"
    assert results["b1"]["status"] == results["b2"]["status"] == "timeout"


def test_a_sync_run_inside_an_async_runs_tool_runs_its_async_tools_on_their_own_loop() -> None:
    # a sub-agent: an async run's tool invokes another graph synchronously; that graph's async
    # tool must not be sent to the outer run's loop, which its caller is holding
    import asyncio

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        await asyncio.sleep(0)
        return f"value of {key}"

    lookup.metadata = {"shares_event_loop": True}
    inner = build_graph(model=ScriptedChatModel(script=make_script(
        plan_tool_call=[round_plan(("l", "lookup", {"key": "k"}))])), tools=[lookup])  # fmt: skip

    @tool
    async def delegate(task: str) -> str:
        """Hand the task to a sub-agent."""
        done = inner.invoke({"request": task}, context=Context(task_timeout_s=3))
        return str(done["status"])  # completed only if its lookup succeeded

    outer = build_graph(model=ScriptedChatModel(script=make_script(
        plan_tool_call=[round_plan(("d", "delegate", {"task": "look k up"}))])),
        tools=[delegate], checkpointer=InMemorySaver())  # fmt: skip
    config: Any = {"configurable": {"thread_id": "outer"}}
    started = time.monotonic()
    asyncio.run(outer.ainvoke({"request": "go"}, config, context=Context(task_timeout_s=20)))
    assert time.monotonic() - started < 5  # not the inner tool's 3 s timeout, waited out
    results = [r for rnd in outer.get_state(config).values["rounds"] for r in rnd["results"]]
    assert results and all((r["status"], r["output"]) == ("ok", "completed") for r in results)


def test_a_tool_that_changes_its_arguments_leaves_the_tasks_record_as_planned() -> None:
    from langchain_core.tools import BaseTool

    class Appends(BaseTool):
        name: str = "appends"
        description: str = "Adds a line to the lines it is given."

        def _run(self, lines: list[str]) -> str:
            lines.append("end")
            return " ".join(lines)

    script = make_script(plan_tool_call=[round_plan(("a", "appends", {"lines": ["a"]}))])
    graph = build_graph(model=ScriptedChatModel(script=script), tools=[Appends()],
                        checkpointer=InMemorySaver())  # fmt: skip
    out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "args"}})
    result = out["rounds"][0]["results"][0]
    assert result["output"] == "a end" and result["arguments"] == {"lines": ["a"]}


def test_a_sub_agents_tools_stop_when_the_task_that_runs_it_is_given_up() -> None:
    import asyncio

    finished: list[str] = []

    @tool
    async def slow(text: str) -> str:
        """Takes 3 s."""
        await asyncio.sleep(3)
        finished.append(text)
        return text

    inner = build_graph(model=ScriptedChatModel(script=make_script(
        plan_tool_call=[round_plan(("s", "slow", {"text": "x"}))])), tools=[slow])  # fmt: skip

    @tool
    def delegate(task: str) -> str:
        """Hand the task to a sub-agent."""
        return str(inner.invoke({"request": task}, context=Context(task_timeout_s=30))["status"])

    outer = build_graph(model=ScriptedChatModel(script=make_script(
        plan_tool_call=[round_plan(("d", "delegate", {"task": "slow x"}))])),
        tools=[delegate], checkpointer=InMemorySaver())  # fmt: skip
    config: Any = {"configurable": {"thread_id": "giving-up"}}
    outer.invoke({"request": "go"}, config, context=Context(task_timeout_s=0.5))
    time.sleep(3.5)  # a sub-agent tool left running would have finished by now
    assert finished == []
