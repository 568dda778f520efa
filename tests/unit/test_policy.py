"""Each rule that reshapes what the model planned is a named unit a caller replaces."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import ConfigurationError, Context, ScriptedChatModel, build_graph
from phasegraph.policy import (
    CheckProposal,
    Policy,
    guessed_results,
    inputs_and_unnamed_files,
    plans_adding_nothing,
    readers_everywhere,
    small_job_phases,
    tool_named_phases,
    writers_in_the_last_phase,
)

from scripts import ANALYSIS, CONTINUE, SUMMARY, final_state, judgement, phase, round_plan

READ = round_plan(("r", "read_file", {"path": "notes.txt"}))
WRITE = round_plan(("w", "write_file", {"path": "out.txt", "content": "hello"}))


def named(pid: str, name: str, rounds: int = 2) -> dict[str, Any]:
    return {**phase(pid, rounds=rounds), "name": name}


def run(ws: Path, policy: Policy | None, **script: Any) -> tuple[dict[str, Any], Any]:
    ws.mkdir(exist_ok=True)
    (ws / "notes.txt").write_text("hello\n")
    model = ScriptedChatModel(
        script={
            "request_analyser": [ANALYSIS],
            "phase_planner": [{"phases": [phase("p1", rounds=3)], "execution_strategy": ""}],
            "plan_tool_call": [WRITE],
            "judge_tasks": [judgement()],
            "summarizer": [SUMMARY],
            **script,
        }
    )
    graph = build_graph(model=model, checkpointer=InMemorySaver(), policy=policy)
    out = final_state(
        graph, {"request": "Copy what notes.txt says into out.txt."},
        {"configurable": {"thread_id": "p"}}, context=Context(workspace=str(ws)),
    )  # fmt: skip
    return out, model


def without(unit: Any) -> Policy:
    """The default policy with ``unit`` taken out of its kind."""
    kinds = {
        f.name: tuple(u for u in getattr(Policy(), f.name) if u is not unit)
        for f in dataclasses.fields(Policy)
    }
    return Policy(**kinds)


def offered_tools(model: Any) -> list[str]:
    spec = model.tools_of("plan_tool_call")[0][0]["function"]["parameters"]
    return [o["properties"]["tool"]["const"] for o in spec["properties"]["tasks"]["items"]["anyOf"]]


def phase_count(
    ws: Path, policy: Policy | None, analysis: dict[str, Any], planned: list[Any]
) -> int:
    plan = {"phases": planned, "execution_strategy": "in order"}
    out, _ = run(ws, policy, request_analyser=[analysis], phase_planner=[plan])
    return len(out["phases"])


def test_phases_named_after_tools_become_one_and_without_the_rule_stay(tmp_path: Path) -> None:
    complex_job = {**ANALYSIS, "complexity": "complex"}
    copied = [named("p1", "list_files"), named("p2", "read_file"), named("p3", "write_file")]
    assert tool_named_phases in Policy().phase_rules
    assert phase_count(tmp_path / "a", None, complex_job, copied) == 1
    assert phase_count(tmp_path / "b", without(tool_named_phases), complex_job, copied) == 3


def test_a_small_jobs_phases_become_one_and_without_the_rule_stay(tmp_path: Path) -> None:
    simple = {**ANALYSIS, "complexity": "simple"}
    split = [named("p1", "Gather the notes"), named("p2", "Write the copy")]
    assert small_job_phases in Policy().phase_rules
    assert phase_count(tmp_path / "a", None, simple, split) == 1
    assert phase_count(tmp_path / "b", without(small_job_phases), simple, split) == 2


def test_a_plan_adding_nothing_is_asked_again_and_without_the_gate_runs(tmp_path: Path) -> None:
    judges = {"judge_tasks": [CONTINUE, judgement()], "plan_tool_call": [READ, READ, WRITE]}
    out, _ = run(tmp_path / "a", None, **judges)
    assert "read_file" in out["rounds"][1]["asked_again"]
    assert [r["tool"] for r in out["rounds"][1]["results"]] == ["write_file"]
    out, _ = run(tmp_path / "b", without(plans_adding_nothing), **judges)
    assert "asked_again" not in out["rounds"][1]
    assert [r["tool"] for r in out["rounds"][1]["results"]] == ["read_file"]


def test_reading_tools_stay_in_a_narrowed_phase_and_without_the_widening_go(
    tmp_path: Path,
) -> None:
    narrowed = {"phase_planner": [{"phases": [phase("p1", tools=["write_file"])],
                                   "execution_strategy": ""}]}  # fmt: skip
    _, model = run(tmp_path / "a", None, **narrowed)
    assert "read_file" in offered_tools(model) and "write_file" in offered_tools(model)
    _, model = run(tmp_path / "b", without(readers_everywhere), **narrowed)
    assert offered_tools(model) == ["write_file"]


def test_the_last_phase_keeps_its_writers_and_without_the_widening_loses_them(
    tmp_path: Path,
) -> None:
    script = {
        "request_analyser": [{**ANALYSIS, "files_to_write": ["out.txt"]}],
        "phase_planner": [{"phases": [phase("p1", tools=["read_file"])], "execution_strategy": ""}],
        "plan_tool_call": [READ],
    }
    _, model = run(tmp_path / "a", None, **script)
    assert "write_file" in offered_tools(model)
    _, model = run(tmp_path / "b", without(writers_in_the_last_phase), **script)
    assert "write_file" not in offered_tools(model) and "read_file" in offered_tools(model)


@pytest.mark.parametrize(
    ("unit", "proposal"),
    [(guessed_results, {"kind": "contains", "path": "out.txt", "text": "hello"}),
     (inputs_and_unnamed_files, {"kind": "exists", "path": "other.txt"})],
    ids=["guessed_results", "inputs_and_unnamed_files"],
)  # fmt: skip
def test_each_check_filter_drops_its_proposal_and_without_it_the_check_stays(
    tmp_path: Path, unit: Any, proposal: dict[str, str]
) -> None:
    analysis = {"request_analyser": [{**ANALYSIS, "checks": [proposal]}]}
    assert unit in Policy().check_filters
    out, _ = run(tmp_path / "a", None, **analysis)
    assert not out["checks"]
    assert any(proposal["path"] in n for n in out["structured_request"]["check_notes"])
    out, _ = run(tmp_path / "b", without(unit), **analysis)
    assert [c["path"] for c in out["checks"]] == [proposal["path"]]


def test_a_callers_unit_joins_the_defaults_and_a_bad_policy_is_refused(tmp_path: Path) -> None:
    def no_checks_on_text_files(proposed: CheckProposal) -> str | None:
        """A proposed check on a .txt file is dropped."""
        return "text is the judge's" if str(proposed.check["path"]).endswith(".txt") else None

    mine = dataclasses.replace(
        Policy(), check_filters=[*Policy().check_filters, no_checks_on_text_files]
    )
    analysis = {**ANALYSIS, "checks": [{"kind": "exists", "path": "out.txt"}]}
    out, _ = run(tmp_path / "a", None, request_analyser=[analysis])
    assert [c["path"] for c in out["checks"]] == ["out.txt"]
    out, _ = run(tmp_path / "b", mine, request_analyser=[analysis])
    notes = out["structured_request"]["check_notes"]
    assert not out["checks"] and any("text is the judge's" in n for n in notes)
    with pytest.raises(ConfigurationError, match="takes a phasegraph.policy.Policy"):
        build_graph(model=ScriptedChatModel(script={}), policy=[plans_adding_nothing])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="Policy.plan_gates takes a list of functions"):
        build_graph(model=ScriptedChatModel(script={}), policy=Policy(plan_gates=("no",)))  # type: ignore[arg-type]
