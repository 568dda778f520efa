"""The embedded local model: a GGUF file run in-process by llama-cpp-python (SPEC section 10).

A forced function call is decoded under a grammar made from the function's JSON schema, so any
model, however small, answers with an object of the right shape; whether its content is any good
is the judge's business. With several tools and a free choice (``tool_choice`` "auto", "any" or
none, as LangGraph's prebuilt ReAct agent binds them), the grammar is the union of one
``{"name", "arguments"}`` object per tool and, unless a call is required, ``{"answer"}`` for a
plain reply: a model, a small one least of all, cannot be relied on to write a chat template's
tool-call tags. The models the package index carries are assembled and verified by
`phasegraph.models.embedded`.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from phasegraph import prompts
from phasegraph.cache import cache_dir
from phasegraph.errors import ConfigurationError
from phasegraph.models import grammar_sampler, stop
from phasegraph.models.disk_states import DiskStates, keep_opening
from phasegraph.models.embedded import DEFAULT, EMBEDDED, model_path
from phasegraph.models.local_format import (
    _as_chat_message,
    _as_chosen_call,
    _as_tool_call,
    _bounded_numbers,
    _choice_schema,
    _forced_function,
    _within_grammar_limits,
)
from phasegraph.models.model_thread import on_model_thread
from phasegraph.models.state_cache import StateCache, install_lean_states

LOCAL_EXTRA_HINT = 'pip install -e ".[local]" in your clone of phasegraph'


def resolve_model_path(spec: str) -> str:
    """The GGUF file a spec names: a path, an embedded model's name, or "" for the default."""
    name = spec.strip()
    if not name:
        return str(model_path(DEFAULT))
    if name.lower() in EMBEDDED:
        return str(model_path(EMBEDDED[name.lower()]))
    return name


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError:
        raise ConfigurationError(
            f"the embedded local model needs llama-cpp-python; install it with {LOCAL_EXTRA_HINT} "
            "(or set a model: --model NAME --base-url URL)"
        ) from None
    return llama_cpp


_loaded: dict[tuple[str, int], tuple[Any, threading.Lock]] = {}
_load_lock = threading.Lock()


@atexit.register
def _close_loaded() -> None:
    """Free loaded models while the interpreter still works.

    Left to garbage collection at exit, llama-cpp-python's finalizer runs after the module
    globals it needs are gone and prints a TypeError traceback on every exit.
    """
    with _load_lock:
        for llm, _lock in _loaded.values():
            stop.forget(llm)
            llm.close()
        _loaded.clear()


@contextmanager
def _without_extra_buffers(llama_cpp: Any) -> Iterator[None]:
    """Load weights without llama.cpp's extra CPU buffer types (AMX, repacked layouts).

    Where a CPU reports AMX but the kernel does not grant it (containers, sandboxes), the AMX
    path crashes the process on the first batch; plain buffers work everywhere.
    """
    module = llama_cpp.llama_cpp
    original = module.llama_model_default_params

    def params() -> Any:
        value = original()
        if hasattr(value, "use_extra_bufts"):
            value.use_extra_bufts = False
        return value

    module.llama_model_default_params = params
    try:
        yield
    finally:
        module.llama_model_default_params = original


#: Memory the model's saved states may take, by default (``PHASEGRAPH_STATE_CACHE_MB``).
STATE_CACHE_MB = 384
#: Disk the stages' opening states may take, by default (``PHASEGRAPH_STATE_DISK_MB``).
STATE_DISK_MB = 256


def _mib_setting(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return max(0, int(raw)) if raw.strip() else default
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a number") from None


def state_cache_mb() -> int:
    """The memory bound of the saved states, in MiB (0: none are kept)."""
    return _mib_setting("PHASEGRAPH_STATE_CACHE_MB", STATE_CACHE_MB)


def state_disk_mb() -> int:
    """The disk bound of the stages' opening states (`DiskStates`), in MiB (0: none kept)."""
    return _mib_setting("PHASEGRAPH_STATE_DISK_MB", STATE_DISK_MB)


def disk_states(path: str, n_ctx: int, runtime: str) -> DiskStates | None:
    """Where the opening states of this model file and context are kept; None if off.

    The folder is named after what a state depends on: the file (its path, size and time),
    the context size, and ``runtime``: llama-cpp-python's version and how the weights are
    laid out (see `load_llama`). Its format's own version is in each file.
    """
    if not state_disk_mb():
        return None
    stat = os.stat(path)
    identity = f"{os.path.realpath(path)}|{stat.st_size}|{stat.st_mtime_ns}|{n_ctx}|{runtime}"
    name = hashlib.sha256(identity.encode()).hexdigest()[:24]
    return DiskStates(cache_dir() / "states" / name, state_disk_mb() << 20, n_ctx)


def _extra() -> bool:
    return os.environ.get("PHASEGRAPH_LLAMA_EXTRA_BUFFERS", "") == "1"


def new_llama(path: str, n_ctx: int, n_threads: int | None = None) -> Any:
    """A llama-cpp-python model of the file, greedy-seeded, as every caller here must load it.

    Its weights sit in plain CPU buffers unless ``PHASEGRAPH_LLAMA_EXTRA_BUFFERS=1`` (see
    `_without_extra_buffers`), so it runs on any CPU that reports what it cannot use. The
    instance is llama-cpp-python's own, with none of this module's samplers or caches.
    """
    llama_cpp = _import_llama()
    with nullcontext() if _extra() else _without_extra_buffers(llama_cpp):
        return llama_cpp.Llama(
            model_path=path,
            n_ctx=n_ctx,
            n_threads=n_threads or os.cpu_count() or 2,
            seed=0,
            verbose=False,
        )


def load_llama(path: str, n_ctx: int, n_threads: int | None) -> tuple[Any, threading.Lock]:
    """One loaded model per file and context size in a process, with the lock its calls share.

    Its states are kept after each call, within `state_cache_mb` (`StateCache`): a prompt then
    starts from the longest prefix any earlier call read (the plan of the round before, say,
    not only the judge just before it), and reads only the rest. The oldest go first. The
    states after each stage's opening turn are kept on disk too (`disk_states`), for the
    processes after this one.
    """
    key = (path, n_ctx)
    with _load_lock:
        if key not in _loaded:
            if not os.path.isfile(path):
                raise ConfigurationError(f"model file {path!r} does not exist")
            llama_cpp = _import_llama()
            llm = new_llama(path, n_ctx, n_threads)
            grammar_sampler.install(llm, llama_cpp)
            stop.install_abort(llm, llama_cpp)
            install_lean_states(llm, llama_cpp)
            if state_cache_mb():
                runtime = f"{getattr(llama_cpp, '__version__', '')}|extra buffers {_extra()}"
                disk = disk_states(path, llm.n_ctx(), runtime)
                llm.set_cache(StateCache(capacity_bytes=state_cache_mb() << 20, disk=disk))
            _loaded[key] = (llm, threading.Lock())
        return _loaded[key]


@dataclass(frozen=True)
class Perf:
    """llama.cpp's own counters of a context: prompt tokens read, answer tokens, their time."""

    prompt_read: int = 0
    prompt_ms: float = 0.0
    answer_tokens: int = 0
    answer_ms: float = 0.0

    def __sub__(self, other: Perf) -> Perf:
        """What was spent between two readings."""
        return Perf(
            self.prompt_read - other.prompt_read,
            self.prompt_ms - other.prompt_ms,
            self.answer_tokens - other.answer_tokens,
            self.answer_ms - other.answer_ms,
        )

    def timings(self) -> dict[str, float]:
        """As a call's ``response_metadata["timings"]``: milliseconds reading and writing."""
        return {"prompt_ms": round(self.prompt_ms, 1), "answer_ms": round(self.answer_ms, 1)}


def perf_counters(llm: Any) -> Perf:
    """The context's counters now (they only grow); zeros where llama-cpp-python lacks them."""
    try:
        import llama_cpp

        data = llama_cpp.llama_perf_context(llm.ctx)
    except Exception:  # an older binding, or a stand-in model in tests
        return Perf()
    return Perf(
        int(data.n_p_eval), float(data.t_p_eval_ms), int(data.n_eval), float(data.t_eval_ms)
    )


def _complete(
    llm: Any,
    lock: threading.Lock,
    chat: list[dict[str, Any]],
    request: dict[str, Any],
    name: str = "",
) -> tuple[dict[str, Any], Perf]:
    """One chat completion, with what llama.cpp spent on it; the prompt's opening kept.

    A call stopped while it runs (`stop.stopped`) raises `stop.CallStopped`, whatever it had
    written: a cut answer is not the model's. While splits are measured
    (`grammar_sampler.measuring`), the answer's is added under ``name``, the function it answers.
    """
    with lock:
        llm.last_split = None
        before = perf_counters(llm)
        try:
            response: dict[str, Any] = llm.create_chat_completion(messages=chat, **request)
        except RuntimeError:  # llama.cpp's decode ended by the abort callback, or failed
            stop.check()
            raise
        stop.check()
        spent = perf_counters(llm) - before
        grammar_sampler.record_split(name, getattr(llm, "last_split", None))
        _keep_opening(llm, int((response.get("usage") or {}).get("prompt_tokens", 0)))
    return response, spent


def _keep_opening(llm: Any, prompt_tokens: int) -> None:
    """The prompt's opening state to disk (`keep_opening`), where states are kept there.

    Best effort: a state that cannot be kept leaves the call's answer as it is.
    """
    cache = getattr(llm, "cache", None)
    if isinstance(cache, StateCache) and cache.disk is not None and prompt_tokens:
        import llama_cpp

        end_of_turn = llama_cpp.llama_vocab_eot(llm._model.vocab)
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            keep_opening(llm, cache.disk, prompt_tokens, end_of_turn)


class LocalChatModel(BaseChatModel):
    """A LangChain chat model over llama-cpp-python, with grammar-constrained function calls."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str = Field(
        default="",
        description="A GGUF file, or the name of an embedded model; empty: the default model.",
    )
    n_ctx: int = Field(default=8192, description="Context window in tokens.")
    n_threads: int | None = Field(default=None, description="CPU threads; None: all cores.")
    max_tokens: int = Field(default=1024, description="Most tokens one answer may have.")
    temperature: float = Field(default=0.0, description="Sampling temperature (0: greedy).")

    _resolved: str = PrivateAttr("")

    #: A forced call is decoded under its schema's grammar: offer only what validation accepts
    #: (see `phasegraph.models.structured.call_structured`'s variants).
    decodes_schema: ClassVar[bool] = True

    @property
    def _llm_type(self) -> str:
        return "phasegraph-llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path or DEFAULT.name, "n_ctx": self.n_ctx}

    def resolved_path(self) -> str:
        """The GGUF file this model runs (the default one is assembled on first use)."""
        if not self._resolved:
            self._resolved = resolve_model_path(self.model_path)
        return self._resolved

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: str | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind functions; a named ``tool_choice`` makes the answer a call of that function."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        llm, lock = load_llama(self.resolved_path(), self.n_ctx, self.n_threads)
        tools: list[dict[str, Any]] = kwargs.get("tools") or []
        choice = kwargs.get("tool_choice")
        forced = _forced_function(tools, choice)
        free = forced is None and bool(tools) and choice != "none"
        chat = [_as_chat_message(m) for m in messages]
        request: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stop": stop,
        }
        if forced is not None:
            schema = _bounded_numbers(forced["function"].get("parameters") or {"type": "object"})
            schema = _within_grammar_limits(schema)
            chat.append(
                {
                    "role": "system",
                    "content": prompts.LOCAL_FORCED_CALL.format(name=forced["function"]["name"]),
                }
            )
            request["response_format"] = {"type": "json_object", "schema": schema}
        elif free:
            may_answer = choice not in ("any", "required")
            request["tools"] = tools  # the model's own template lists them, as trained
            chat.append({"role": "system", "content": prompts.LOCAL_TOOL_CHOICE})
            request["response_format"] = {
                "type": "json_object",
                "schema": _within_grammar_limits(_choice_schema(tools, may_answer=may_answer)),
            }
        name = forced["function"]["name"] if forced is not None else "tool choice"
        call = functools.partial(_complete, llm, lock, chat, request, name)
        response, spent = on_model_thread(call)
        choice = response["choices"][0]
        content = choice["message"].get("content") or ""
        usage = response.get("usage") or {}
        prompt = int(usage.get("prompt_tokens", 0))
        usage_metadata = UsageMetadata(
            input_tokens=prompt,
            output_tokens=int(usage.get("completion_tokens", 0)),
            total_tokens=int(usage.get("total_tokens", 0)),
            # the prompt's tokens llama.cpp did not read again: its KV cache held them
            input_token_details={"cache_read": max(0, prompt - spent.prompt_read)},
        )
        message = AIMessage(content=content, usage_metadata=usage_metadata)
        if forced is not None:
            message = _as_tool_call(content, forced["function"]["name"], usage_metadata)
        elif free:
            message = _as_chosen_call(content, usage_metadata)
        message.response_metadata["timings"] = spent.timings()
        info = {"finish_reason": choice.get("finish_reason")}
        return ChatResult(generations=[ChatGeneration(message=message, generation_info=info)])
