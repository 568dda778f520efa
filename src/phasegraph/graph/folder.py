"""Where a node works: the thread's folder, unless the run's settings name another.

LangGraph hands each call of a graph only the context it is given, and a thread is continued
by calls that may give none (an answer to a pause, a parent graph resumed, a run from a
checkpoint). The thread's folder is in its state (``workspace``, set when it starts); a node
whose settings name no workspace works there, not in the caller's current folder, and a run
told to go on in another folder (a project moved) records that one, so its output names
where the work is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Command

from phasegraph.context import Context


def in_thread_folder(state: Mapping[str, Any], runtime: Runtime[Context]) -> Runtime[Context]:
    """The node's runtime, its settings working in the thread's folder unless they name one."""
    context = Context.coerce(runtime.context)
    recorded = state.get("workspace")
    if context.workspace or not isinstance(recorded, str) or not recorded:
        return runtime
    return runtime.override(context=dataclasses.replace(context, workspace=recorded))


def recording_folder(state: Mapping[str, Any], runtime: Runtime[Context], result: Any) -> Any:
    """A node's ``result``, naming the folder the run now works in where that has changed.

    Only a stage's update does (a task's, one of several at once, does not): ``state`` is the
    run's state when it holds its limits.
    """
    recorded = state.get("workspace")
    root = Context.coerce(runtime.context).root
    if "limits" not in state or not recorded or recorded == root:
        return result
    if isinstance(result, dict):
        return {**result, "workspace": root}
    if isinstance(result, Command) and isinstance(result.update, dict):
        return dataclasses.replace(result, update={**result.update, "workspace": root})
    return result
