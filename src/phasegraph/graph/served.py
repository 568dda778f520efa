"""The graph a LangGraph server runs: a folder per thread, and the operator's settings as bounds.

On a server, every client's run brings its own settings (its context). A run that names no
workspace works in a folder of its own for its thread (`thread_workspace`), never in the folder
the server was started from (SPEC section 8). The settings that decide what the server's machine
runs, where its tools read and write, and where the operator's API key is sent are the
operator's, read from the server's environment (``PHASEGRAPH_*``): a run may keep or narrow
them, never widen them (`within_operator`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from phasegraph.context import Context
from phasegraph.errors import ConfigurationError
from phasegraph.models.selection import model_file


def within_operator(run: Context, operator: Context, workspaces: str) -> None:
    """Refuse (`ConfigurationError`, naming the setting) a run's settings that widen the operator's.

    - ``base_url``: the operator's only: the API key from the server's environment is sent there;
    - ``mcp_servers``: each one the operator's, as the operator configured it (a stdio server is
      a program started on the server);
    - ``allowed_commands``: programs the operator allows, or fewer;
    - ``command_sandbox``: the operator's, or ``os`` (the stronger);
    - ``command_memory_mb``: the operator's cap or a lower one (0 is no cap);
    - ``workspace``: empty (a folder of the thread's own), the operator's, or a folder under
      ``workspaces``, the folder of the threads' own (not that folder itself);
    - ``model``: any model's name; a file (a script, a GGUF file) only the operator's, or a
      regular file under the folder the server runs in (`_served_model_file`).
    """
    refused = []
    if run.base_url != operator.base_url:
        refused.append("base_url")
    if any(operator.mcp_servers.get(name) != spec for name, spec in run.mcp_servers.items()):
        refused.append("mcp_servers")
    if not set(run.allowed_commands) <= set(operator.allowed_commands):
        refused.append("allowed_commands")
    if run.command_sandbox not in (operator.command_sandbox, "os"):
        refused.append("command_sandbox")
    cap, operators = run.command_memory_mb, operator.command_memory_mb
    if cap != operators and (cap == 0 or 0 < operators < cap):
        refused.append("command_memory_mb")
    if run.workspace and not _served_folder(run.workspace, operator.workspace, workspaces):
        refused.append("workspace")
    if not _served_model_file(run.model, operator.model):
        refused.append("model")
    if refused:
        raise ConfigurationError(
            f"settings {refused} go beyond what this server allows: on a server they are the "
            "operator's (PHASEGRAPH_* in the server's environment); a run may keep or narrow "
            "them, not widen them"
            + (
                "; a model file must be the operator's or lie in the server's folder"
                if "model" in refused
                else ""
            )
        )


def _served_folder(asked: str, operator: str, workspaces: str) -> bool:
    """Whether a run's workspace is the operator's or a folder under the threads' folder.

    Not the threads' folder itself: a run there would write among every thread's folders.
    """
    where = Path(asked).expanduser().resolve()
    if operator and where == Path(operator).expanduser().resolve():
        return True
    base = Path(workspaces).expanduser().resolve()
    return where != base and where.is_relative_to(base)


def _served_model_file(asked: str, operator: str) -> bool:
    """Whether a run's model setting reads no file, or one the operator offers.

    A file elsewhere on the server's disk is not the client's to read: a script is parsed, and
    its errors tell what the file is; a device such as ``/dev/zero`` is read without end.
    """
    path = model_file(asked)
    if path is None or asked.strip() == operator.strip():
        return True
    where = Path(path).expanduser().resolve()
    # one missing under the server's folder is let through: the run then says it is missing
    return where.is_relative_to(Path.cwd().resolve()) and (where.is_file() or not where.exists())


def thread_workspace(base: str, configurable: Mapping[str, Any]) -> str:
    """The folder of one thread's runs under ``base``, made if missing (no thread: a new one)."""
    thread = str(configurable.get("thread_id") or f"run-{os.urandom(6).hex()}")
    name = re.sub(r"[^\w.-]", "_", thread).strip(".") or "thread"
    if name != thread:  # two ids that read the same once made safe keep apart
        name += "-" + hashlib.sha256(thread.encode()).hexdigest()[:8]
    folder = Path(base).expanduser() / name
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder.resolve())


def default_thread_workspaces() -> str:
    """Where a server's runs get their own folders: ``PHASEGRAPH_WORKSPACES``, else the cache."""
    given = os.environ.get("PHASEGRAPH_WORKSPACES")
    if given:
        return given
    cache = os.environ.get("PHASEGRAPH_CACHE_DIR") or "~/.cache/phasegraph"
    return str(Path(cache).expanduser() / "workspaces")
