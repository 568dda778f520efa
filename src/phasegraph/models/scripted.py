"""The scripted chat model: prepared structured results, for tests and reproducible demos.

It is a real LangChain chat model, so the graph drives it exactly as it drives any other: it
binds one function with ``tool_choice`` and reads the tool call that comes back. The script maps
each function name of SPEC section 1 to a list of items returned in order, the last one
repeating. An item is

- a dict: the arguments of the forced call;
- a string: raw argument text, parsed as JSON (invalid JSON comes back as an invalid tool call,
  as a server that cuts arguments off would send it);
- ``None``: a prose answer with no call, as a model that ignores ``tool_choice`` would give;
- an exception instance: raised by the call;
- a callable: called with the prompt messages, its return value used as the item.

Calls with no forced function (the summary's plain-text fallback) read the key ``"text"``.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from phasegraph.errors import ConfigurationError
from phasegraph.models.structured import forced_name

TEXT_KEY = "text"


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers each forced function call from a script."""

    script: dict[str, list[Any]]
    """Function name -> items returned in order (the last repeats)."""

    _positions: dict[str, int] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _calls: list[tuple[str | None, list[BaseMessage]]] = PrivateAttr(default_factory=list)
    _tools: list[tuple[str | None, list[dict[str, Any]]]] = PrivateAttr(default_factory=list)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedChatModel:
        """Load a script from a JSON file (``scripted:FILE.json``); `ConfigurationError` if bad."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read scripted model file {path}: {exc.strerror or exc}"
            ) from None
        except ValueError as exc:
            raise ConfigurationError(f"scripted model file {path} is not JSON: {exc}") from None
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            raise ConfigurationError(
                f"scripted model file {path} must map function names to lists of arguments"
            )
        return cls(script=data)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[tuple[str | None, list[BaseMessage]]]:
        """Every call so far: the forced function name (None when free) and the prompt."""
        with self._lock:
            return list(self._calls)

    def calls_of(self, name: str | None) -> list[list[BaseMessage]]:
        """The prompts of every call that forced ``name``."""
        return [msgs for fn, msgs in self.calls if fn == name]

    def tools_of(self, name: str | None) -> list[list[dict[str, Any]]]:
        """The function definitions bound to every call that forced ``name``."""
        with self._lock:
            return [tools for fn, tools in self._tools if fn == name]

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind functions the way OpenAI-compatible models do, keeping ``tool_choice``."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _next_item(self, key: str, messages: list[BaseMessage]) -> tuple[bool, Any]:
        with self._lock:
            items = self.script.get(key)
            if not items:
                return False, None
            pos = self._positions.get(key, 0)
            self._positions[key] = pos + 1
            item = items[min(pos, len(items) - 1)]
        if callable(item) and not isinstance(item, BaseException):
            item = item(messages)
        return True, item

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        name = forced_name(kwargs.get("tool_choice"))
        with self._lock:
            self._calls.append((name, list(messages)))
            self._tools.append((name, list(kwargs.get("tools") or [])))
        found, item = self._next_item(name or TEXT_KEY, messages)
        prompt_chars = sum(len(str(m.content)) for m in messages)
        if isinstance(item, BaseException):
            raise item
        if not found:
            text = f"(scripted model: no scripted answer for {name or 'plain text'})"
            message = AIMessage(content=text)
        elif name is None or item is None:
            message = AIMessage(
                content=str(item) if item is not None else "I will explain in prose."
            )
        else:
            message = _tool_call_message(name, item)
        completion_chars = len(str(message.content)) + len(json.dumps(item, default=str))
        message.usage_metadata = {
            "input_tokens": prompt_chars // 4,
            "output_tokens": completion_chars // 4,
            "total_tokens": (prompt_chars + completion_chars) // 4,
        }
        return ChatResult(generations=[ChatGeneration(message=message)])


def _tool_call_message(name: str, item: Any) -> AIMessage:
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    if isinstance(item, str):
        try:
            item = json.loads(item)
        except ValueError as exc:
            return AIMessage(
                content="",
                invalid_tool_calls=[
                    {
                        "name": name,
                        "args": item,
                        "id": call_id,
                        "error": str(exc),
                        "type": "invalid_tool_call",
                    }
                ],
            )
    if not isinstance(item, dict):
        return AIMessage(
            content="",
            invalid_tool_calls=[
                {
                    "name": name,
                    "args": json.dumps(item),
                    "id": call_id,
                    "error": "arguments are not an object",
                    "type": "invalid_tool_call",
                }
            ],
        )
    return AIMessage(content="", tool_calls=[{"name": name, "args": item, "id": call_id}])
