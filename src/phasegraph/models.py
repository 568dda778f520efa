"""Chat model selection: an object passed in, or a model named in the settings (SPEC section 10)."""

from __future__ import annotations

import os
import threading
from typing import Any

from langchain_core.language_models import BaseChatModel

from phasegraph.context import Context
from phasegraph.errors import ConfigurationError
from phasegraph.scripted import ScriptedChatModel

SCRIPTED_PREFIX = "scripted:"

_scripted_cache: dict[tuple[str, str], ScriptedChatModel] = {}
_cache_lock = threading.Lock()


def model_from_context(context: Context, thread_id: str = "") -> BaseChatModel:
    """Build the chat model the settings name.

    ``scripted:FILE.json`` gives the scripted model; one instance serves a thread within a
    process, so its answers advance through the script across the run's stages.
    Any other name is an OpenAI-compatible model reached through langchain-openai; the API key
    comes from ``PHASEGRAPH_API_KEY`` or ``OPENAI_API_KEY`` only, never from the settings.
    """
    spec = context.model.strip()
    if spec.startswith(SCRIPTED_PREFIX):
        path = spec[len(SCRIPTED_PREFIX) :]
        with _cache_lock:
            key = (thread_id, path)
            if key not in _scripted_cache:
                _scripted_cache[key] = ScriptedChatModel.from_file(path)
            return _scripted_cache[key]
    if not spec:
        raise ConfigurationError(
            "no model configured: pass model= to build_graph, set Context.model "
            "(or PHASEGRAPH_MODEL) to a model name, or use scripted:FILE.json"
        )
    return _openai_model(spec, context)


def _openai_model(name: str, context: Context) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    kwargs: dict[str, Any] = {"model": name, "timeout": context.llm_timeout_s, "max_retries": 2}
    base_url = context.base_url or os.environ.get("OPENAI_BASE_URL", "")
    if base_url:
        kwargs["base_url"] = base_url
    api_key = os.environ.get("PHASEGRAPH_API_KEY") or os.environ.get("OPENAI_API_KEY")
    if api_key:
        kwargs["api_key"] = api_key
    elif base_url:
        # Local servers (vLLM, Ollama, llama.cpp) need no key, but the client insists on one.
        kwargs["api_key"] = "not-needed"
    else:
        raise ConfigurationError(
            f"model {name!r} needs an API key: set OPENAI_API_KEY or PHASEGRAPH_API_KEY, "
            "or give a base URL of a server that needs none"
        )
    return ChatOpenAI(**kwargs)
