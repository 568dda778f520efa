"""Where a node works: the thread's folder, unless the run's settings name another.

LangGraph hands each call of a graph only the context it is given, and a thread is continued
by calls that may give none (an answer to a pause, a parent graph resumed, a run from a
checkpoint). The thread's folder is in its state (``workspace``, set when it starts); a node
whose settings name no workspace works there, not in the caller's current folder, and a run
told to go on in another folder (a project moved) records that one, so its output names
where the work is.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Command

from phasegraph.context import Context


def thread_folder(context: Context, values: Mapping[str, Any]) -> str | None:
    """The thread's folder, where a call of these settings works instead of their own.

    That is when they name none (`Context.names_workspace`: the environment's folder is a
    default, not a choice) and the thread's state (``values``) has one; else None.
    """
    recorded = values.get("workspace")
    if context.names_workspace or not isinstance(recorded, str) or not recorded:
        return None
    return recorded


def in_thread_folder(state: Mapping[str, Any], runtime: Runtime[Context]) -> Runtime[Context]:
    """The node's runtime, its settings working in the thread's folder unless they name one."""
    given = runtime.context
    if isinstance(given, Context) and given.names_workspace:
        return runtime  # the common case, checked without building anything
    context = Context.coerce(given)
    folder = thread_folder(context, state)
    return runtime if folder is None else runtime.override(context=_moved(context, folder))


_last: tuple[Context, str, Context] | None = None


def _moved(context: Context, folder: str) -> Context:
    """``context`` working in ``folder``: one copy for all the nodes of a call, not one each.

    The settings were checked when ``context`` was made; a folder is no limit to check again.
    """
    global _last
    last = _last
    if last is not None and last[0] is context and last[1] == folder:
        return last[2]
    moved = copy.copy(context)
    moved.workspace = folder
    _last = (context, folder, moved)
    return moved


def recording_folder(state: Mapping[str, Any], runtime: Runtime[Context], result: Any) -> Any:
    """A node's ``result``, naming the folder the run now works in where that has changed.

    Only a stage's update does (a task's, one of several at once, does not): ``state`` is the
    run's state when it holds its limits.
    """
    recorded = state.get("workspace")
    if "limits" not in state or not recorded:
        return result
    context = Context.coerce(runtime.context)
    if context.workspace == recorded or (root := context.root) == recorded:
        return result
    if isinstance(result, dict):
        return {**result, "workspace": root}
    if isinstance(result, Command) and isinstance(result.update, dict):
        return dataclasses.replace(result, update={**result.update, "workspace": root})
    return result
