"""Structured results (SPEC section 1): forced calls, validation, bounded repair, JSON fallback."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from phasegraph import ScriptedChatModel
from phasegraph.models.structured import call_structured, function_spec
from phasegraph.nodes.phase_shapes import named_after_tools
from phasegraph.state import Judgement, PhasePlan, Replan, RoundPlan, StructuredRequest
from phasegraph.state.schemas import Phase

from scripts import ANALYSIS, ECHO_ROUND, judgement, phase

PROMPT = [HumanMessage("go")]


def call(items: list[Any], schema=StructuredRequest, name="request_analyser", **kw):
    model = ScriptedChatModel(script={name: items})
    return call_structured(model, name, schema, PROMPT, retries=kw.pop("retries", 2), **kw), model


def test_forced_call_names_the_function() -> None:
    result, model = call([ANALYSIS])
    assert result.value == StructuredRequest(**ANALYSIS)
    assert result.attempts == 1
    assert model.calls[0][0] == "request_analyser"


def test_function_spec_carries_the_schema() -> None:
    spec = function_spec("judge_tasks", Judgement)
    assert spec["function"]["name"] == "judge_tasks"
    props = spec["function"]["parameters"]["properties"]
    assert {"phase_completion_rate", "next_action", "user_summary"} <= set(props)


def test_function_spec_leaves_out_pydantics_titles_but_not_a_field_called_title() -> None:
    from pydantic import BaseModel

    class Note(BaseModel):
        """A note."""

        title: str
        body: Judgement

    spec = json.dumps(function_spec("note", Note))
    params = function_spec("note", Note)["function"]["parameters"]
    assert params["properties"]["title"] == {"type": "string"}
    assert spec.count('"title"') == 2  # the field and its name in "required"
    assert '"title"' not in json.dumps(function_spec("judge_tasks", Judgement))


def test_free_text_states_a_length_that_validation_does_not_enforce() -> None:
    # under a grammar the length bounds a small model that repeats itself inside a string (the
    # 0.5B default filled user_summary until its answer was cut off); others may write more
    props = function_spec("judge_tasks", Judgement)["function"]["parameters"]["properties"]
    assert props["user_summary"]["maxLength"] == 300
    assert props["internal_analysis"]["maxLength"] == 600
    long = judgement() | {"user_summary": "All done. " * 90}
    result, _ = call([long], Judgement, "judge_tasks", retries=0)
    assert result.value is not None and len(result.value.user_summary) == 900


def test_function_spec_is_built_once_and_handed_out_as_a_copy(monkeypatch) -> None:
    # Pydantic builds a JSON schema anew on each call: a stage call paid for it every time.
    built: list[str] = []
    real = PhasePlan.model_json_schema.__func__  # type: ignore[attr-defined]

    def counted(cls, *args, **kwargs):
        built.append(cls.__name__)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(PhasePlan, "model_json_schema", classmethod(counted))
    first = function_spec("phase_planner_counted", PhasePlan)
    first["function"]["parameters"]["properties"].clear()  # a model wrapper editing its copy
    second = function_spec("phase_planner_counted", PhasePlan)
    assert built == ["PhasePlan"]
    assert "phases" in second["function"]["parameters"]["properties"]


def test_prose_then_valid_is_repaired() -> None:
    result, model = call([None, ANALYSIS])
    assert result.value is not None
    assert result.attempts == 2
    repair = model.calls[1][1]
    assert "answered in prose" in repair[-1].content


def test_schema_violation_is_fed_back_with_the_error() -> None:
    result, model = call([dict(ANALYSIS, estimated_phases=9), ANALYSIS])
    assert result.value is not None
    retry = model.calls[1][1]
    tool_answers = [m for m in retry if isinstance(m, ToolMessage)]
    assert tool_answers and "estimated_phases" in tool_answers[0].content
    assert "less than or equal to 5" in tool_answers[0].content


def test_truncated_arguments_are_a_failed_attempt() -> None:
    result, _ = call(['{"core_goal": "x", "requ'], retries=0)
    assert result.value is None
    assert "not valid JSON" in result.errors[0]
    assert result.counters(counted=True) == {
        "step_count": 1,
        "llm_calls": 1,
        "prompt_tokens": result.prompt_tokens,
        "cached_tokens": 0,
        "completion_tokens": result.completion_tokens,
        "prompt_ms": 0,
        "answer_ms": 0,
        "parse_failures": 1,
    }


def test_a_plan_cut_off_in_a_task_keeps_the_tasks_written_whole() -> None:
    # the 1.5B model's eighth task repeated a line in its new text up to the token limit,
    # three attempts running; the seven tasks before it were whole
    tasks = [
        {"id": f"t{i}", "tool": "echo", "arguments": {"text": f"a, [b] {i}"}, "purpose": "p"}
        for i in range(1, 4)
    ]
    whole = json.dumps({"reasoning": "r", "tasks": tasks})
    cut = whole[: whole.index('"t3"')] + '"t3", "tool": "echo", "arguments": {"text": "x\\nx'
    as_call, _ = call([cut], schema=RoundPlan, name="plan", retries=0)  # an invalid tool call
    as_text = call_structured(JsonOnlyModel(reply=cut), "plan", RoundPlan, PROMPT, retries=0)
    for result in (as_call, as_text):
        assert result.value is not None, result.errors
        assert [t.id for t in result.value.tasks] == ["t1", "t2"]
        assert result.value.tasks[1].arguments == {"text": "a, [b] 2"}
    # cut before any task ended, it is re-asked as before
    result, _ = call([whole[: whole.index('"a, [b] 1"')]], schema=RoundPlan, name="plan", retries=0)
    assert result.value is None and "not valid JSON" in result.errors[0]


def test_retries_are_bounded() -> None:
    result, model = call([None], retries=2)
    assert result.value is None
    assert result.attempts == 3 and len(model.calls) == 3
    assert "after 3 attempt(s)" in result.failure


def test_repair_keeps_only_the_latest_failed_exchange() -> None:
    _, model = call([None, None, None, ANALYSIS], retries=3)
    sizes = [len(msgs) for _, msgs in model.calls]
    assert sizes == [1, 3, 3, 3]


def test_model_exception_is_a_failed_attempt() -> None:
    result, _ = call([RuntimeError("503 upstream"), ANALYSIS])
    assert result.value is not None
    assert "503 upstream" in result.errors[0]


def test_validation_context_limits_tools_and_tasks() -> None:
    too_many = {"tasks": [dict(ECHO_ROUND["tasks"][0], id=f"t{i}") for i in range(3)]}
    result, _ = call(
        [too_many],
        RoundPlan,
        "plan_tool_call",
        retries=0,
        validation_context={"allowed_tools": ["echo"], "max_tasks": 2},
    )
    assert "at most 2 tasks" in result.errors[0]
    result, _ = call(
        [ECHO_ROUND],
        RoundPlan,
        "plan_tool_call",
        retries=0,
        validation_context={"allowed_tools": ["read_file"]},
    )
    assert "'echo', which is not available" in result.errors[0]


def test_cyclic_dependencies_are_rejected() -> None:
    plan = {
        "tasks": [
            {"id": "a", "tool": "echo", "depends_on": ["b"]},
            {"id": "b", "tool": "echo", "depends_on": ["a"]},
        ]
    }
    result, _ = call([plan], RoundPlan, "plan_tool_call", retries=0)
    assert "cycle" in result.errors[0]


def _phases(*deps: list[str]) -> dict[str, Any]:
    return {
        "phases": [
            {"id": f"p{i}", "name": f"n{i}", "goal": "g", "estimated_rounds": 1, "dependencies": d}
            for i, d in enumerate(deps, start=1)
        ]
    }


def test_a_phase_dependency_that_names_no_phase_is_dropped() -> None:
    # small models put tool names here; phases run in list order, so nothing depends on it
    plan = _phases([], ["p1", "write_file"])
    result, _ = call([plan], PhasePlan, "phase_planner", retries=0)
    assert result.value is not None
    assert [p.dependencies for p in result.value.phases] == [[], ["p1"]]


def test_a_phase_that_depends_on_a_later_phase_is_asked_again() -> None:
    result, _ = call([_phases(["p2"], []), _phases([], ["p1"])], PhasePlan, "phase_planner")
    assert "'p1' depends on later phases ['p2']" in result.errors[0]
    assert result.value is not None and result.attempts == 2


TOOLS = ["list_files", "read_file", "write_file", "edit_file"]


def _named(*names: str) -> list[dict[str, Any]]:
    phases = (Phase(id=f"p{i}", name=n, goal="g", estimated_rounds=1) for i, n in enumerate(names))
    return [p.model_dump() for p in phases]


def test_phases_named_after_tools_are_found_but_one_phase_may_be_named_like_a_tool() -> None:
    assert named_after_tools(_named("list_files", "Read file", "Write it"), TOOLS) == [
        "list_files", "Read file"
    ]  # fmt: skip
    assert named_after_tools(_named("List files"), TOOLS) == []
    assert named_after_tools(_named("List files", "Write the report"), TOOLS) == []


def _tasks(*specs: tuple[str, list[str]]) -> dict[str, Any]:
    return {"tasks": [{"id": i, "tool": "echo", "depends_on": d} for i, d in specs]}


def test_a_repeated_task_id_nothing_depends_on_is_numbered() -> None:
    result, _ = call([_tasks(("t1", []), ("t1", []), ("t1-2", []))], RoundPlan, "plan_tool_call")
    assert result.value is not None and result.attempts == 1
    assert [t.id for t in result.value.tasks] == ["t1", "t1-3", "t1-2"]


def test_a_dependency_on_a_repeated_task_id_means_the_tasks_of_that_id_before_it() -> None:
    # the 1.5B planner gave both tasks of a round its phase's id, the write depending on it
    traced = _tasks(("p1-2", []), ("p1-2", ["p1-2"]))
    result, _ = call([traced], RoundPlan, "plan_tool_call", retries=0)
    assert result.value is not None
    assert [(t.id, t.depends_on) for t in result.value.tasks] == [
        ("p1-2", []), ("p1-2-2", ["p1-2"])
    ]  # fmt: skip
    plan = _tasks(("t1", []), ("t1", []), ("t2", ["t1"]), ("t1", ["t1", "t2"]))
    result, _ = call([plan], RoundPlan, "plan_tool_call", retries=0)
    assert result.value is not None
    assert [(t.id, t.depends_on) for t in result.value.tasks] == [
        ("t1", []), ("t1-2", []), ("t2", ["t1", "t1-2"]), ("t1-3", ["t1", "t1-2", "t2"])
    ]  # fmt: skip


def _phase(pid: str, dependencies: list[str] | None = None) -> dict[str, Any]:
    return phase(pid) | {"dependencies": dependencies or []}


def test_a_phase_id_used_twice_or_by_a_finished_phase_is_numbered() -> None:
    twice = {"phases": [_phase("p1"), _phase("p1"), _phase("p2", ["p1"])]}
    result, _ = call([twice], PhasePlan, "phase_planner", retries=0)
    assert result.value is not None
    assert [p.id for p in result.value.phases] == ["p1", "p1-2", "p2"]
    # a replan that starts again at p1 after p1 and p1-2 finished
    again = {"status": "replanned", "phases": [_phase("p1"), _phase("p3", ["p1"])]}
    context = {"done_phase_ids": ["p1", "p1-2"]}
    result, _ = call([again], Replan, "replanner", retries=0, validation_context=context)
    assert result.value is not None
    assert [(p.id, p.dependencies) for p in result.value.phases] == [("p1-3", []), ("p3", ["p1"])]


def test_a_task_dependency_that_names_no_task_of_the_round_is_dropped() -> None:
    # small models name phases, tools or the task itself here; none of them orders anything
    plan = _tasks(("t1", ["p1", "t1"]), ("t2", ["t1", "read_file"]))
    result, _ = call([plan], RoundPlan, "plan_tool_call", retries=0)
    assert result.value is not None
    assert [t.depends_on for t in result.value.tasks] == [[], ["t1"]]


def test_ask_user_needs_a_question() -> None:
    result, _ = call([judgement("ask_user", completed=False)], Judgement, "judge_tasks", retries=0)
    assert "needs a question" in result.errors[0]


class JsonOnlyModel(BaseChatModel):
    """A model without function calling that answers in (fenced) JSON text."""

    reply: str

    @property
    def _llm_type(self) -> str:
        return "json-only"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kw):
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply))])


def test_model_without_tools_gets_json_mode() -> None:
    import json

    model = JsonOnlyModel(reply="Sure:\n```json\n" + json.dumps(ANALYSIS) + "\n```")
    result = call_structured(model, "request_analyser", StructuredRequest, PROMPT, retries=0)
    assert result.value == StructuredRequest(**ANALYSIS)


def test_json_in_content_is_accepted_when_tool_choice_is_ignored() -> None:
    import json

    class IgnoresToolChoice(ScriptedChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kw):
            return ChatResult(
                generations=[ChatGeneration(message=AIMessage(content=json.dumps(ANALYSIS)))]
            )

    model = IgnoresToolChoice(script={})
    result = call_structured(model, "request_analyser", StructuredRequest, PROMPT, retries=0)
    assert result.value is not None and result.value.core_goal == ANALYSIS["core_goal"]
