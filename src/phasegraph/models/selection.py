"""Chat model selection: an object passed in, or a model named in the settings (SPEC section 10).

``Context.model`` names the model:

- empty, with no ``base_url``: the default embedded model (llama-cpp-python, the ``local`` extra);
- ``local:NAME``: an embedded model by name (``local:qwen2.5-coder-0.5b``, ``...-1.5b``);
- ``local`` or ``local:PATH.gguf`` (or any path ending in ``.gguf``): a GGUF file run in-process;
- ``scripted:FILE.json``: the scripted model, for demos and tests;
- anything else: a model of an OpenAI-compatible endpoint (``base_url``, else
  ``OPENAI_BASE_URL``, else OpenAI's), reached through langchain-openai.

The API key comes from ``PHASEGRAPH_API_KEY`` or ``OPENAI_API_KEY`` only, never from the
settings, so it cannot reach a checkpoint or a Studio form; the key and the endpoint's URL are
masked in every error text the run keeps.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from phasegraph.context import Context
from phasegraph.errors import ConfigurationError, register_secret
from phasegraph.models.scripted import ScriptedChatModel

if TYPE_CHECKING:
    from phasegraph.models.embedded import EmbeddedModel

SCRIPTED_PREFIX = "scripted:"
LOCAL_PREFIX = "local:"
# The openai client retries 429 and 5xx answers with exponential backoff (honouring
# Retry-After); a call that still fails is one failed attempt of its stage.
HTTP_RETRIES = 3

_cache: dict[tuple[str, ...], BaseChatModel] = {}
_cache_lock = threading.Lock()
#: Scripted models kept (one per run of a thread): the least recently used goes past it.
SCRIPTED_KEPT = 64


def model_kind(context: Context) -> str:
    """Which kind of model the settings select: local, scripted or openai."""
    spec = context.model.strip()
    if spec.startswith(SCRIPTED_PREFIX):
        return "scripted"
    if spec == "local" or spec.startswith(LOCAL_PREFIX) or spec.endswith(".gguf"):
        return "local"
    if not spec and not _base_url(context):
        return "local"
    return "openai"


def describe_model(context: Context) -> str:
    """The selected model in words, for the CLI and logs (never the key or the URL)."""
    kind = model_kind(context)
    spec = context.model.strip()
    if kind == "local":
        chosen = embedded_choice(context)
        if chosen is not None:
            return f"the embedded local model, {chosen.title}"
        return f"local model {_local_path(spec)}"
    if kind == "scripted":
        return f"the scripted model ({spec[len(SCRIPTED_PREFIX) :]})"
    where = "an OpenAI-compatible endpoint" if _base_url(context) else "OpenAI"
    return f"{spec} on {where}"


def model_from_context(context: Context, thread_id: str = "", run_id: str = "") -> BaseChatModel:
    """Build (or reuse) the chat model the settings name.

    A scripted model is one per run (``run_id``) of a thread: its answers advance through the
    script as the run goes on, resumed or not, and a new run starts at the top of every list,
    also on a thread id used before in this process (a new checkpointer, or none).
    """
    kind = model_kind(context)
    spec = context.model.strip()
    if kind == "scripted":
        path = spec[len(SCRIPTED_PREFIX) :]
        key = ("scripted", thread_id, run_id, path)
        return _cached(key, lambda: ScriptedChatModel.from_file(path))
    if kind == "local":
        from phasegraph.models.local import LocalChatModel

        path = _local_path(spec)
        if embedded_choice(context) is None and not _names_a_file(path):
            from phasegraph.models.embedded import embedded

            embedded(path)  # no model has that name: the error names the ones that do
        return _cached(("local", path), lambda: LocalChatModel(model_path=path))
    if not spec:
        raise ConfigurationError(
            "a base URL is set but no model name: set --model (PHASEGRAPH_MODEL) to the name "
            "the endpoint serves"
        )
    return _openai_model(spec, context)


def embedded_choice(context: Context) -> EmbeddedModel | None:
    """The embedded model the settings select, if they select one (not a file of their own)."""
    from phasegraph.models.embedded import DEFAULT, EMBEDDED

    if model_kind(context) != "local":
        return None
    path = _local_path(context.model.strip())
    return EMBEDDED.get(path.lower()) if path else DEFAULT


def with_absolute_path(spec: str) -> str:
    """The model setting with the file it names, if it names one, as an absolute path.

    A thread records its model; resumed from another folder, ``scripted:examples/x.json`` or
    ``local:models/m.gguf`` would name another file or none. A model's name (``gpt-4o``,
    ``local:qwen2.5-coder-0.5b``) is left as it is.
    """
    path = model_file(spec)
    if path is None:
        return spec
    prefix = SCRIPTED_PREFIX if spec.strip().startswith(SCRIPTED_PREFIX) else LOCAL_PREFIX
    return prefix + os.path.abspath(path)


def model_file(spec: str) -> str | None:
    """The file a model setting names (a script, a GGUF file), or None for a model's name."""
    stripped = spec.strip()
    if stripped.startswith(SCRIPTED_PREFIX):
        return stripped[len(SCRIPTED_PREFIX) :]
    path = _local_path(stripped)
    return path if path and _names_a_file(path) else None


def _names_a_file(path: str) -> bool:
    """Whether a local model's setting names a file rather than an embedded model."""
    return path.endswith(".gguf") or os.sep in path or os.path.isfile(path)


def _local_path(spec: str) -> str:
    if spec.startswith(LOCAL_PREFIX):
        return os.path.expanduser(spec[len(LOCAL_PREFIX) :])
    return os.path.expanduser(spec) if spec.endswith(".gguf") else ""


def _base_url(context: Context) -> str:
    return context.base_url.strip() or os.environ.get("OPENAI_BASE_URL", "").strip()


def _cached(key: tuple[str, ...], build: Any) -> BaseChatModel:
    with _cache_lock:
        if key not in _cache:
            _cache[key] = build()
            scripted = [k for k in _cache if k[0] == "scripted"]
            for old in scripted[: max(0, len(scripted) - SCRIPTED_KEPT)]:
                del _cache[old]
        model = _cache.pop(key)
        _cache[key] = model  # last: the most recently used
        return model


def _openai_model(name: str, context: Context) -> BaseChatModel:
    base_url = _base_url(context)
    api_key = os.environ.get("PHASEGRAPH_API_KEY") or os.environ.get("OPENAI_API_KEY") or ""
    if not api_key and not base_url:
        raise ConfigurationError(
            f"model {name!r} needs an API key: set OPENAI_API_KEY or PHASEGRAPH_API_KEY, "
            "or give a base URL of a server that needs none"
        )
    for secret in (api_key, base_url):
        register_secret(secret)

    def build() -> BaseChatModel:
        from langchain_openai import ChatOpenAI

        kwargs: dict[str, Any] = {
            "model": name,
            "timeout": context.llm_timeout_s,
            "max_retries": HTTP_RETRIES,
            "temperature": 0,
            # local servers (vLLM, Ollama, llama.cpp) need no key, but the client insists on one
            "api_key": api_key or "not-needed",
        }
        if base_url:
            kwargs["base_url"] = base_url
        return ChatOpenAI(**kwargs)

    key = ("openai", name, base_url, str(hash(api_key)), str(context.llm_timeout_s))
    return _cached(key, build)
