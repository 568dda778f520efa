"""One structured result per stage: a forced function call, validated, repaired when invalid.

SPEC section 1: each LLM stage asks for one named function; the arguments are validated with the
stage's pydantic schema; an invalid result (bad JSON, prose, a missing field, an out-of-range value,
an unknown tool) is sent back with the validation error, at most ``max_parse_retries`` times. A
call that yields nothing (``None``) is a failed attempt like any other, never a value passed on.
Several OpenAI-compatible servers ignore a named ``tool_choice``, so a JSON object in the message
text is accepted too, after the same validation.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ValidationError

from phasegraph import prompts
from phasegraph.errors import redact

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass
class StageCall(Generic[M]):
    """The outcome of one stage's structured call, with what it cost."""

    value: M | None = None
    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the model did not read again (its prefix cache held them)."""
    completion_tokens: int = 0
    prompt_ms: int = 0
    """Milliseconds the model spent reading prompts, where it says (the local model does)."""
    answer_ms: int = 0
    """Milliseconds the model spent writing answers, where it says."""
    last_arguments: dict[str, Any] | None = None
    """The arguments of the last attempt, valid or not (None if it gave none)."""
    raised: int = 0
    """Attempts whose model call raised (a dead endpoint, a timeout) instead of answering."""
    gated: str = ""
    """Why a gate sent the first valid result back ("" if none did)."""

    def add_use(self, reply: AIMessage) -> None:
        """Count what one answer cost: tokens, cached tokens, time (where the model says)."""
        usage: dict[str, Any] = dict(reply.usage_metadata or {})
        self.prompt_tokens += int(usage.get("input_tokens", 0))
        self.completion_tokens += int(usage.get("output_tokens", 0))
        self.cached_tokens += int((usage.get("input_token_details") or {}).get("cache_read") or 0)
        timings = (reply.response_metadata or {}).get("timings") or {}
        self.prompt_ms += int(timings.get("prompt_ms", 0))
        self.answer_ms += int(timings.get("answer_ms", 0))

    @property
    def unreachable(self) -> bool:
        """Whether no attempt got any answer: an error that stops the run, not a bad answer."""
        return self.value is None and self.attempts > 0 and self.raised == self.attempts

    def counters(self, *, counted: bool) -> dict[str, int]:
        """State deltas of this call; ``counted`` stages spend one step per attempt (SPEC 3)."""
        failed = len(self.errors)  # one a failed attempt; a gate's refusal is not a failure
        return {
            "step_count": self.attempts if counted else 0,
            "llm_calls": self.attempts,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "completion_tokens": self.completion_tokens,
            "prompt_ms": self.prompt_ms,
            "answer_ms": self.answer_ms,
            "parse_failures": failed,
        }

    @property
    def failure(self) -> str:
        """Why the stage produced no result, for the summary."""
        last = self.errors[-1] if self.errors else "no result"
        return f"no valid result after {self.attempts} attempt(s); last error: {last}"


def loads_answer(text: str) -> Any:
    """A model's JSON answer, read as a person reads it; ValueError when it is not JSON.

    A raw line break or tab inside a string is taken as written: JSON asks for it escaped, but
    llama-cpp-python's JSON-schema grammar lets a local model write it raw, and a person would
    not ask again for that.
    """
    return json.loads(text, strict=False)


def function_spec(name: str, schema: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI-style function definition of a stage: its name and its schema's parameters."""
    # A fresh copy each time: model wrappers may edit the dict they are given.
    return cast(dict[str, Any], json.loads(_function_spec_json(name, schema)))


@functools.cache
def _function_spec_json(name: str, schema: type[BaseModel]) -> str:
    # Pydantic builds a JSON schema anew on every call: about 2 ms per stage call in bench's
    # profile of a 64-action run, a tenth of the run's time on the main thread.
    return json.dumps(
        {
            "type": "function",
            "function": {
                "name": name,
                "description": (schema.__doc__ or name).strip().splitlines()[0],
                "parameters": without_titles(schema.model_json_schema()),
            },
        }
    )


def without_titles(node: Any, *, names: bool = False) -> Any:
    """A JSON schema without pydantic's "title" keys: field names again, tokens in every call.

    ``names`` marks a mapping of property names, where "title" is a field like any other.
    """
    if isinstance(node, dict):
        return {
            key: without_titles(value, names=key in ("properties", "$defs") and not names)
            for key, value in node.items()
            if names or key != "title" or not isinstance(value, str)
        }
    if isinstance(node, list):
        return [without_titles(item) for item in node]
    return node


def with_variants(
    parameters: Mapping[str, Any], variants: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """An object schema as a choice of its ``variants``, each the object narrowed by one."""
    base = {k: v for k, v in parameters.items() if k != "$defs"}
    options = []
    for variant in variants:
        properties = dict(base.get("properties", {}))
        properties.update(variant.get("properties", {}))  # a variant's property replaces it
        required = list(dict.fromkeys([*base.get("required", []), *variant.get("required", [])]))
        options.append({**base, "properties": properties, "required": required})
    out: dict[str, Any] = {"anyOf": options}
    if "$defs" in parameters:
        out["$defs"] = copy.deepcopy(parameters["$defs"])
    return out


def forced_name(tool_choice: Any, tools: Sequence[Mapping[str, Any]] = ()) -> str | None:
    """The function a ``tool_choice`` forces: a name, an OpenAI dict, or a mode.

    The modes "any" and "required" force a function only when ``tools`` binds exactly one
    (LangChain's ``with_structured_output`` binds its schema that way); "auto" and "none" never.
    """
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "any", "required"):
        return tool_choice
    if isinstance(tool_choice, dict):
        fn = tool_choice.get("function") or {}
        name = fn.get("name") if isinstance(fn, dict) else None
        return str(name) if name else None
    if tool_choice in ("any", "required") and len(tools) == 1:
        return str(tools[0]["function"]["name"])
    return None


def call_structured(
    model: BaseChatModel,
    name: str,
    schema: type[M],
    messages: Sequence[BaseMessage],
    *,
    retries: int,
    validation_context: Mapping[str, Any] | None = None,
    parameters: Mapping[str, Any] | None = None,
    variants: Sequence[Mapping[str, Any]] = (),
    gate: Callable[[M], str | None] | None = None,
) -> StageCall[M]:
    """Ask ``model`` for one call of function ``name`` and validate it with ``schema``.

    ``parameters``, when given, is the JSON schema sent instead of ``schema``'s own: a narrower
    one for this call (the plan's, typed per tool); validation is still ``schema``'s.
    ``variants``: the combinations validation accepts, each a partial schema (properties and
    required fields) that narrows the parameters. A model that decodes under the schema's
    grammar (``decodes_schema``) is offered exactly those, so it cannot write, say, a replan
    with status replanned and no phases; other models get the plain schema, since a choice at
    the root is not in every provider's schema dialect, and validation re-asks them instead.
    ``gate``: a rule a valid result is held to once, while a re-ask is left: for a result it
    refuses, the model is asked again with the reason alone (not its own answer, which a model
    shown it tends to write again; see `nodes.plan_gate`); the next valid result stands, and if
    none comes, the first does (a gate costs a model call, never the result).
    """
    spec = function_spec(name, schema)
    if parameters is not None:
        # a copy the model wrapper may edit; plain JSON copies faster this way than by deepcopy
        spec["function"]["parameters"] = json.loads(json.dumps(parameters))
    if variants and getattr(model, "decodes_schema", False):
        spec["function"]["parameters"] = with_variants(spec["function"]["parameters"], variants)
    bound: Runnable[LanguageModelInput, BaseMessage]
    base = list(messages)
    try:
        bound = model.bind_tools([spec], tool_choice=name)
    except NotImplementedError:
        # A model without function calling gets the schema in the prompt and answers in JSON.
        bound = model
        schema_text = json.dumps(spec["function"]["parameters"])
        base.append(HumanMessage(prompts.JSON_MODE.format(name=name, schema=schema_text)))
    result: StageCall[M] = StageCall()
    repair: list[BaseMessage] = []
    first: M | None = None
    for attempt in range(retries + 1):
        result.attempts += 1
        try:
            reply = bound.invoke(base + repair)
        except Exception as exc:  # a failed call is a failed attempt, never a crash
            result.raised += 1
            result.errors.append(redact(f"model call failed: {type(exc).__name__}: {exc}"))
            continue
        if isinstance(reply, AIMessage):
            result.add_use(reply)
        args, problem = _extract_arguments(reply, name)
        result.last_arguments = args
        if args is not None:
            try:
                value = schema.model_validate(args, context=dict(validation_context or {}))
            except ValidationError as exc:
                problem = f"the arguments of {name} are invalid: {describe_validation_error(exc)}"
            else:
                why = gate(value) if gate and first is None and attempt < retries else None
                if not why:
                    result.value = value
                    return result
                first, result.gated = value, why
                repair = [HumanMessage(prompts.GATE_REASK.format(name=name, problem=why))]
                continue
        result.errors.append(redact(problem))
        # Only the latest failed exchange is kept: the prompt stays bounded however many retries.
        repair = _repair_messages(reply, name, problem)
    result.value = first
    return result


def _extract_arguments(reply: BaseMessage, name: str) -> tuple[dict[str, Any] | None, str]:
    if isinstance(reply, AIMessage):
        for call in reply.tool_calls:
            if call["name"] == name:
                return dict(call["args"]), ""
        for bad in reply.invalid_tool_calls:
            if bad.get("name") in (name, None):
                kept = complete_items(str(bad.get("args") or ""))
                if kept is not None:
                    return kept, ""
                return None, f"the arguments of {name} are not valid JSON: {bad.get('error')}"
        if reply.tool_calls:
            return None, f"called {reply.tool_calls[0]['name']!r} instead of {name!r}"
    text = reply.text if isinstance(reply, AIMessage) else str(reply.content)
    parsed = _json_object(text)
    if parsed is None and text.lstrip().startswith("{"):
        parsed = complete_items(text)
    if parsed is None:
        if text.lstrip().startswith(("{", "```")):
            return None, f"the arguments of {name} are not valid JSON (cut off or malformed)"
        return None, f"answered in prose instead of calling {name}"
    # Some servers echo the call itself: {"name": ..., "arguments": {...}}.
    if parsed.get("name") == name and isinstance(parsed.get("arguments"), dict):
        return dict(parsed["arguments"]), ""
    return parsed, ""


def _json_object(text: str) -> dict[str, Any] | None:
    text = text.strip()
    if not text:
        return None
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = loads_answer(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


#: Cut-off points tried, from the last, when keeping the complete items of a cut-off answer.
CUT_POINTS_TRIED = 8


def complete_items(text: str) -> dict[str, Any] | None:
    """A cut-off JSON object with the items of its lists that were written whole, if any.

    An answer cut off at the token limit is cut off again when asked again (greedy decoding
    writes the same again), while the list items before the cut may be whole. The text is cut
    after the last list item that ended (at a comma between items) and closed; the result is
    validated like any answer, so one missing a required field is still re-asked. None when no
    list item ended before the cut.
    """
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}":
            if not stack:
                return None
            stack.pop()
            if not stack:
                return None  # the object closed: not cut off, only malformed
        elif char == "," and stack and stack[-1] == "]":
            cuts.append((i, "".join(reversed(stack))))
    for end, closers in reversed(cuts[-CUT_POINTS_TRIED:]):
        try:
            value = loads_answer(text[text.index("{") : end] + closers)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def describe_validation_error(exc: ValidationError) -> str:
    """A validation error as one line: each location and its message."""
    parts = []
    for err in exc.errors()[:8]:
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def _repair_messages(reply: BaseMessage, name: str, problem: str) -> list[BaseMessage]:
    ask = HumanMessage(prompts.REPAIR.format(name=name, problem=problem))
    if isinstance(reply, AIMessage) and (reply.tool_calls or reply.invalid_tool_calls):
        ids = [c["id"] for c in reply.tool_calls] + [c.get("id") for c in reply.invalid_tool_calls]
        answers: list[BaseMessage] = [
            ToolMessage(content=f"Error: {problem}", tool_call_id=i or "call") for i in ids
        ]
        return [reply, *answers, ask]
    return [reply, ask]
