"""Tools of MCP servers, through langchain-mcp-adapters (the optional ``mcp`` extra).

``Context.mcp_servers`` maps a server name to a connection as langchain-mcp-adapters takes it,
e.g. ``{"notes": {"transport": "stdio", "command": "python", "args": ["server.py"]}}``. The tool
list is read once per configuration; each call opens its own session, so a call survives a
restarted server and calls from parallel tasks do not share a stream.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Coroutine
from functools import lru_cache
from typing import Any, TypeVar

from langchain_core.tools import BaseTool

from phasegraph.errors import ConfigurationError

_T = TypeVar("_T")


@lru_cache(maxsize=8)
def load_mcp_tools(config_json: str) -> tuple[BaseTool, ...]:
    """The tools of every configured server (``config_json``: the settings, as sorted JSON)."""
    try:
        from langchain_mcp_adapters.client import MultiServerMCPClient
    except ImportError:
        raise ConfigurationError(
            "mcp_servers is set but langchain-mcp-adapters is not installed; install it with "
            "pip install 'phasegraph[mcp]'"
        ) from None
    connections = json.loads(config_json)
    if not isinstance(connections, dict) or not all(
        isinstance(c, dict) for c in connections.values()
    ):
        raise ConfigurationError("mcp_servers must map server names to connection settings")
    client = MultiServerMCPClient(connections)
    try:
        tools = run_coroutine(client.get_tools())
    except Exception as exc:
        raise ConfigurationError(
            f"could not list the tools of MCP servers {sorted(connections)}: {_cause(exc)}"
        ) from None
    return tuple(tools)


def _cause(exc: BaseException) -> str:
    """What went wrong, from under the task groups an async client wraps its errors in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def run_coroutine(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine to its end from sync code, also when this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
