"""A small MCP server over stdio, for the test that runs MCP tools inside a run."""

from __future__ import annotations

import os
import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("notes")
LOG = sys.argv[1]


@server.tool()
def add_note(title: str, body: str) -> str:
    """Store a note and say where it went."""
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(f"{title}: {body}\n")
    return f"stored note {title!r}"


@server.tool()
def secret_seen() -> str:
    """Say whether the server saw an API key in its environment."""
    return "yes" if os.environ.get("OPENAI_API_KEY") else "no"


if __name__ == "__main__":
    server.run("stdio")
