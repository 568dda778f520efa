"""The schema `plan_tool_call` is sent: each task typed by the tool it names.

Validation is always `RoundPlan`'s; this schema is what a model is shown, and what a grammar
holds a local model to.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from phasegraph import prompts
from phasegraph.models.structured import function_spec, without_titles
from phasegraph.nodes.prompt_render import tokens
from phasegraph.state import RoundPlan
from phasegraph.tools.base import per_tool

# Above this size the typed plan schema gives way to RoundPlan's own: it grows with every
# allowed tool (about 130 tokens each for the built-in ones), and a model without function
# calling reads it in its prompt, outside the history's budget (SPEC 7).
PLAN_SCHEMA_TOKENS = 1500


def plan_parameters(tools: Sequence[BaseTool], *, askable: Sequence[str] = ()) -> dict[str, Any]:
    """The schema `plan_tool_call` is sent: each task typed by the tool it names.

    RoundPlan's own schema leaves a task's tool a free string and its arguments any object, so
    its grammar holds a model to no tool and no parameters. Here a task is one of the allowed
    tools, each with its own parameters. The round's reasoning comes first; a task's purpose
    comes after its call and is optional, so that the tool is picked after the reasoning, not
    after a purpose written first. ``askable`` names the tools a task may ask a person for with
    a justification (the tool-permission path of SPEC 5). With no tools, or above
    `PLAN_SCHEMA_TOKENS`, it is RoundPlan's own schema. Validation is still RoundPlan's, so a
    model that reads this as a hint loses nothing.
    """
    parameters = _round_plan_parameters()  # a fresh copy, this call's to edit
    if not tools:
        return parameters
    task = parameters["$defs"]["Task"]
    # The fields every option shares, bare: a copy of their descriptions in each option cost
    # about 100 prompt tokens per tool; the tasks array says once what they mean.
    text = {"type": "string", "minLength": 1}
    after = {
        "depends_on": {"type": "array", "items": text},
        "purpose": text | _at_most(task["properties"]["purpose"]),
    }
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"id": text, "tool": {"const": tool.name}}
            | {"arguments": _arguments_schema(tool)}
            | after,
            "required": ["id", "tool", "arguments"],
        }
        for tool in tools
    ]
    if askable:
        options.append(
            {
                "type": "object",
                "properties": {"id": text, "tool": {"enum": list(askable)}}
                | {"arguments": {"type": "object"}, "justification": text}
                | after,
                "required": ["id", "tool", "arguments", "justification"],
            }
        )
    del parameters["$defs"]["Task"]
    if not parameters["$defs"]:
        del parameters["$defs"]
    parameters["properties"]["tasks"]["description"] = prompts.PLAN_TASK_FIELDS
    parameters["properties"]["tasks"]["items"] = {"anyOf": options}
    if tokens(json.dumps(parameters)) > PLAN_SCHEMA_TOKENS:
        return _round_plan_parameters()
    return parameters


def _round_plan_parameters() -> dict[str, Any]:
    """RoundPlan's own schema, as a fresh copy, with its reasoning asked for first.

    Grammar decoding writes the required fields first, in order: with the reasoning required
    first, a model says what the rounds so far show before it picks calls, not after them.
    Validation still takes a plan without one.
    """
    spec = function_spec("plan_tool_call", RoundPlan)
    parameters = cast(dict[str, Any], spec["function"]["parameters"])
    parameters["required"] = ["reasoning", *parameters.get("required", [])]
    return parameters


def _at_most(field: dict[str, Any]) -> dict[str, Any]:
    return {"maxLength": field["maxLength"]} if "maxLength" in field else {}


def _arguments_schema(tool: BaseTool) -> dict[str, Any]:
    """A tool's parameters without titles and descriptions (the prompt's tool list has them)."""
    # a fresh copy of the tool's: plan_parameters' caller may edit what it is given
    return cast(dict[str, Any], json.loads(per_tool("arguments", tool, _arguments_json)))


def _arguments_json(tool: BaseTool) -> str:
    schema: dict[str, Any] = without_titles(convert_to_openai_tool(tool)["function"]["parameters"])
    for spec in schema.get("properties", {}).values():
        if isinstance(spec, dict):
            spec.pop("description", None)
    schema.pop("description", None)
    return json.dumps(schema)
