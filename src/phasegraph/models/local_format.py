"""What the local model sends llama.cpp and reads back (see `phasegraph.models.local`).

The grammar of an answer: a forced call's JSON schema with each bounded number offered as its
values, or for a free choice the union of one ``{"name", "arguments"}`` object per tool (and
``{"answer"}`` when a plain reply is allowed). The messages: LangChain's, in the OpenAI form the
model's own chat template renders, and the answer back as a tool call or a reply.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata

from phasegraph.models.structured import forced_name, loads_answer


def _forced_function(tools: list[dict[str, Any]], choice: Any) -> dict[str, Any] | None:
    """The tool a ``tool_choice`` forces: a name, an OpenAI dict, or "any" with one tool."""
    name = forced_name(choice, tools)
    for tool in tools:
        if tool["function"]["name"] == name:
            return tool
    return None


#: The most values a bounded integer is offered as; a wider range stays a plain integer.
MAX_INTEGER_VALUES = 101


def _bounded_numbers(node: Any) -> Any:
    """The schema with each bounded number offered as a list of its values (``enum``).

    A grammar bounds strings and choices but not numbers, so a number decoded under it may fall
    outside its range (a rate from 0 to 1 written as 10, in tenths). An integer with
    ``minimum`` and ``maximum`` is offered every value between them; a real number, the tenths
    of its range. Only the grammar changes: validation is the schema's.
    """
    if isinstance(node, list):
        return [_bounded_numbers(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _bounded_numbers(value) for key, value in node.items()}
    low, high = out.get("minimum"), out.get("maximum")
    if not (isinstance(low, int | float) and isinstance(high, int | float)) or "enum" in out:
        return out
    if out.get("type") == "integer" and 0 <= high - low < MAX_INTEGER_VALUES:
        out["enum"] = list(range(int(low), int(high) + 1))
    elif out.get("type") == "number" and low <= high:
        out["enum"] = [round(low + (high - low) * i / 10, 6) for i in range(11)]
    return out


#: The largest ``maxLength`` or ``maxItems`` a grammar is given. llama.cpp refuses a grammar
#: made from a larger one (measured: a string of at most 1,100 characters is refused, 1,000 is
#: taken), and llama-cpp-python then dereferences the missing sampler: the process dies.
GRAMMAR_MAX_BOUND = 1000


def _within_grammar_limits(node: Any) -> Any:
    """The schema without the length and count bounds llama.cpp's grammar cannot take.

    A larger bound (a user's tool may well state one) is left out: the grammar then lets the
    model write any length, as without the bound, and validation still applies the schema's.
    """
    if isinstance(node, list):
        return [_within_grammar_limits(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: _within_grammar_limits(value)
        for key, value in node.items()
        if not (
            key in ("maxLength", "maxItems")
            and isinstance(value, int)
            and value > GRAMMAR_MAX_BOUND
        )
    }


def _choice_schema(tools: list[dict[str, Any]], *, may_answer: bool) -> dict[str, Any]:
    """The JSON schema of a free choice: a call of any one tool, or (if allowed) a reply."""
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "name": {"const": tool["function"]["name"]},
                "arguments": tool["function"].get("parameters") or {"type": "object"},
            },
            "required": ["name", "arguments"],
        }
        for tool in tools
    ]
    if may_answer:
        options.append(
            {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        )
    return {"anyOf": options}


def _as_chosen_call(content: str, usage: UsageMetadata) -> AIMessage:
    """A free choice as a tool call or a plain reply; anything else stays text."""
    try:
        chosen = loads_answer(content)
    except ValueError:
        return AIMessage(content=content, usage_metadata=usage)
    if isinstance(chosen, dict) and isinstance(chosen.get("answer"), str):
        return AIMessage(content=chosen["answer"], usage_metadata=usage)
    if (
        isinstance(chosen, dict)
        and isinstance(chosen.get("name"), str)
        and isinstance(chosen.get("arguments"), dict)
    ):
        return _call_message(chosen["name"], chosen["arguments"], usage)
    return AIMessage(content=content, usage_metadata=usage)


def _as_tool_call(content: str, name: str, usage: UsageMetadata) -> AIMessage:
    """The constrained answer as a tool call; cut-off JSON stays text for the repair loop."""
    try:
        args = loads_answer(content)
    except ValueError:
        return AIMessage(content=content, usage_metadata=usage)
    if not isinstance(args, dict):
        return AIMessage(content=content, usage_metadata=usage)
    return _call_message(name, args, usage)


def _call_message(name: str, args: dict[str, Any], usage: UsageMetadata) -> AIMessage:
    """One tool call of ``name`` with ``args``, as the model's answer."""
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    return AIMessage(
        content="",
        tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}],
        usage_metadata=usage,
    )


def _as_chat_message(message: BaseMessage) -> dict[str, Any]:
    """A LangChain message in the OpenAI form the model's own chat template renders.

    Calls and results go in as ``tool_calls`` and ``tool`` turns, so the template writes them
    the way the model was trained to read them (Qwen2.5: ``<tool_call>`` and
    ``<tool_response>`` blocks) and the model sees that a call already has its answer.
    """
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.text}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "content": message.text, "tool_call_id": message.tool_call_id}
    if isinstance(message, AIMessage):
        if message.tool_calls:
            calls = [
                {
                    "id": call["id"] or "call",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["args"]},
                }
                for call in message.tool_calls
            ]
            return {"role": "assistant", "content": message.text, "tool_calls": calls}
        return {"role": "assistant", "content": message.text}
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": message.text}
    return {"role": "user", "content": str(message.content)}
