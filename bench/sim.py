"""The simulated model, the shared task and the meter the architecture comparison uses.

The comparison puts phasegraph and two baselines built from LangGraph itself in front of the same
task, the same tool and the same kind of model, and counts what each architecture makes the model
read. The pieces:

- `ChainTask`: 8 chains of records (``width``), ``levels`` records long. Reading a record (the
  one tool, ``read_record``, declared idempotent as a read is) reveals the key of the next record
  in its chain, so the 8 reads of one level can run at once but the next level must wait for
  them: a task of ``8 * levels`` tool actions in ``levels`` dependent batches. Each record is
  about 300 tokens, like a small file.
- `PolicyModel`: a LangChain chat model whose answers come from a policy function. The policies
  (one per architecture) do the right thing with what the prompt shows: they find the next keys
  *in the prompt text*, so an architecture that drops what a later call needs pays for it with
  wasted or repeated reads instead of being helped by an oracle.
- `Meter`: a callback handler that counts, for every chat-model call of any architecture, the
  prompt tokens (messages plus bound tool schemas, langchain-core's approximate counter) and the
  completion tokens, and prices the call with `Latency`.
- `SIMULATED`: the CPU time the simulated model and tool spend on their own work (a policy reading
  its prompt, a record being made), which a run's framework time leaves out.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult, LLMResult
from langchain_core.tools import BaseTool, tool
from pydantic import Field

from phasegraph import ScriptedChatModel
from phasegraph.models.structured import forced_name

WIDTH = 8
"""Chains per task, by default: the reads of one level are independent of each other."""
NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight")

KEY = re.compile(r"\br(\d+)-(\d+)\b")
END = "end of chain"


@dataclass(frozen=True)
class Latency:
    """What a model call costs in time: fixed, per prompt token and per completion token.

    The defaults are of a hosted model's order: half a second to the first token, prompts read
    at 5,000 tokens a second, answers written at 50 tokens a second.
    """

    per_call_s: float = 0.5
    per_prompt_token_s: float = 0.0002
    per_completion_token_s: float = 0.02

    def of(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Seconds one call takes."""
        return (
            self.per_call_s
            + self.per_prompt_token_s * prompt_tokens
            + self.per_completion_token_s * completion_tokens
        )


class CpuClock:
    """CPU time spent inside the simulated model and tool, summed over threads.

    A zero-latency model and tool take no time, but the policies read their prompts with regular
    expressions and the tool makes each record's text: work a real model or tool would do, not
    the framework. It is taken out of the framework's time per action. Thread CPU time, not wall
    time: tools run in parallel threads, and a thread waiting for the GIL computes nothing.
    """

    def __init__(self) -> None:
        """Start at zero."""
        self.seconds = 0.0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def timing(self) -> Iterator[None]:
        """Count the CPU time this thread spends inside the block."""
        start = time.thread_time()
        try:
            yield
        finally:
            spent = time.thread_time() - start
            with self._lock:
                self.seconds += spent

    def reset(self) -> None:
        """Back to zero, for the next run."""
        with self._lock:
            self.seconds = 0.0


SIMULATED = CpuClock()
"""The one clock of the simulated model and tool (runs are measured one at a time)."""


@dataclass
class ChainTask:
    """``width`` (8) chains of ``levels`` records; reading one names the next."""

    levels: int
    width: int = WIDTH
    tool_seconds: float = 0.0
    record_tokens: int = 300
    """About how long each record is, in tokens (a small file)."""
    reads: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def actions(self) -> int:
        """Tool actions a perfect run makes."""
        return self.width * self.levels

    @property
    def request(self) -> str:
        """The request every architecture gets."""
        start = ", ".join(key(0, j) for j in range(self.width))
        return (
            f"{self.chains.capitalize()} chains of records start at {start}. Each record names "
            f"the next record of its chain. Read every record of every chain with read_record, "
            f"to the end of each chain, and report the code of every record."
        )

    def record(self, name: str) -> str:
        """The text of one record: its code, the next key, then ~300 tokens of body."""
        match = KEY.fullmatch(name.strip())
        if not match:
            raise ValueError(f"no record {name!r}")
        level, chain = int(match[1]), int(match[2])
        if level >= self.levels or chain >= self.width:
            raise ValueError(f"no record {name!r}")
        following = key(level + 1, chain) if level + 1 < self.levels else END
        words = self.record_tokens * 130 // 300  # an 8-hex-digit word is about 2.3 tokens
        body = " ".join(
            hashlib.sha256(f"{name}/{i}".encode()).hexdigest()[:8] for i in range(words)
        )
        return f"record {name}: code {code(name)}; next: {following}.\n{body}"

    def tool(self) -> BaseTool:
        """The one tool, shared by all architectures; logs every read."""

        @tool
        def read_record(key: str) -> str:
            """Read one record by its key (like r0-0); returns its code and the next key."""
            with self._lock:
                self.reads.append(key)
            if self.tool_seconds:
                time.sleep(self.tool_seconds)
            with SIMULATED.timing():
                return self.record(key)

        # A read: running it again does no harm, as a user would declare it (SPEC 5).
        read_record.metadata = {"idempotent": True}
        return read_record

    def complete(self) -> bool:
        """Whether every record was read at least once."""
        wanted = {key(lv, j) for lv in range(self.levels) for j in range(self.width)}
        return set(self.reads) >= wanted

    @property
    def chains(self) -> str:
        """How many chains, in a word ("eight")."""
        return NUMBERS[self.width] if self.width < len(NUMBERS) else str(self.width)


def key(level: int, chain: int) -> str:
    """The key of a record."""
    return f"r{level}-{chain}"


def code(name: str) -> str:
    """The code a record carries (what the final report must give)."""
    return hashlib.sha256(name.encode()).hexdigest()[:6].upper()


def frontier(text: str) -> tuple[int, list[str]] | None:
    """The deepest level whose keys the text shows: the next reads; None when none is shown.

    A record's output names the next level, so the deepest level named is the one not read yet.
    Returns the level and the keys of it the text shows.
    """
    found: dict[int, set[int]] = {}
    for m in KEY.finditer(text):
        found.setdefault(int(m[1]), set()).add(int(m[2]))
    if not found:
        return None
    level = max(found)
    return level, [key(level, j) for j in sorted(found[level])]


def chains_ended(text: str) -> bool:
    """Whether the text shows the last records of the chains."""
    return END in text


CODE = re.compile(r"\b(r\d+-\d+)\W+code\W+([0-9A-F]{6})\b")


def codes_in(text: str) -> dict[str, str]:
    """Record key -> code, for every code the text shows next to its key."""
    return {m[1]: m[2] for m in CODE.finditer(text)}


def report(text: str) -> str:
    """A final answer giving every code the text shows (all a model could report)."""
    found = codes_in(text)
    return "Codes: " + ", ".join(f"{k} code {v}" for k, v in sorted(found.items())) + "."


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    """Everything a model reads of its messages, tool calls included."""
    parts = []
    for m in messages:
        parts.append(str(m.content))
        for call in getattr(m, "tool_calls", None) or []:
            parts.append(json.dumps(call["args"]))
    return "\n".join(parts)


def forced_call(name: str, args: dict[str, Any]) -> AIMessage:
    """A message calling one function, as a model answering with ``tool_choice`` does."""
    return AIMessage(content="", tool_calls=[tool_call(name, args)])


def tool_call(name: str, args: dict[str, Any]) -> Any:
    """One tool call entry."""
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}"}


Policy = Callable[[list[BaseMessage], "str | None"], AIMessage]
"""Messages and the forced function name (None when the model may choose) -> the answer."""


class PolicyModel(ScriptedChatModel):
    """A chat model whose answers come from a policy; it binds tools like OpenAI models do."""

    script: dict[str, list[Any]] = Field(default_factory=dict)
    """Unused: the policy answers every call."""
    policy: Policy
    """Decides each answer from the prompt."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with SIMULATED.timing():
            # with_structured_output binds its one schema with "any"
            name = forced_name(kwargs.get("tool_choice"), kwargs.get("tools") or [])
            answer = self.policy(messages, name)
        return ChatResult(generations=[ChatGeneration(message=answer)])


@dataclass
class Call:
    """One metered model call."""

    prompt_tokens: int
    completion_tokens: int = 0


class Meter(BaseCallbackHandler):
    """Counts every chat-model call's tokens, for any architecture, through LangChain callbacks."""

    def __init__(self, latency: Latency) -> None:
        """Start with no calls."""
        self.latency = latency
        self.calls: dict[Any, Call] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: Any,
        **kwargs: Any,
    ) -> None:
        """Count the prompt: its messages and the tool schemas sent with it."""
        params = kwargs.get("invocation_params") or {}
        tools = params.get("tools") or None
        tokens = count_tokens_approximately(messages[0], tools=tools)
        with self._lock:
            self.calls[run_id] = Call(prompt_tokens=tokens)

    def on_llm_end(self, response: LLMResult, *, run_id: Any, **kwargs: Any) -> None:
        """Count the answer."""
        generation = response.generations[0][0]
        message = getattr(generation, "message", None)
        tokens = count_tokens_approximately([message]) if message is not None else 0
        with self._lock:
            if run_id in self.calls:
                self.calls[run_id].completion_tokens = tokens

    def figures(self) -> dict[str, Any]:
        """Calls, prompt tokens (total and largest), completion tokens and simulated model time."""
        calls = list(self.calls.values())
        return {
            "llm_calls": len(calls),
            "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "largest_prompt": max((c.prompt_tokens for c in calls), default=0),
            "completion_tokens": sum(c.completion_tokens for c in calls),
            "model_s": sum(self.latency.of(c.prompt_tokens, c.completion_tokens) for c in calls),
        }
