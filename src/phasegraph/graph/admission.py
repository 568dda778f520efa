"""What a run of the compiled graph is admitted with (SPEC sections 6 and 8).

A malformed start is refused before anything is written, new input for a thread that holds a
run (above all one paused for review) is refused, a run that continues a thread works in the
thread's folder unless told otherwise, and LangGraph's super-step limit is set above any step
budget, which lives in the state.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.types import Command, StateSnapshot

from phasegraph.carried import carried_settings
from phasegraph.context import MAX_STEPS_LIMIT, Context
from phasegraph.errors import ConfigurationError, ThreadPausedError, ThreadStateError
from phasegraph.graph.folder import thread_folder
from phasegraph.tools.boundary import workspace_refusal
from phasegraph.tools.checks import validate_checks

# Budgets live in the state (SPEC section 8), not in LangGraph's per-invocation super-step limit.
# Every super-step but execute (which may run no tool) and the review pauses spends a step, so
# an invocation takes at most about 1.5 super-steps per step: this limit is never the one reached.
RECURSION_LIMIT = 2 * MAX_STEPS_LIMIT + 100


def check_input(input: Any) -> bool:
    """Whether ``input`` starts a run; a malformed start is refused before any write.

    Its checks are looked at in the folder the run works in, once that is settled
    (`check_checks`).
    """
    if isinstance(input, Command) and input == Command():
        # LangGraph itself fails on it with an UnboundLocalError (langgraph 1.2)
        raise ValueError(
            "Command() carries nothing to do (resume=None is no answer): answer a pause with "
            "Command(resume=answer)"
        )
    if isinstance(input, Command) and isinstance(input.resume, Mapping) and not input.resume:
        # LangGraph reads a dict as answers keyed by question id: this one answers none
        raise ValueError(
            "Command(resume={}) answers no question: answer a pause with "
            "Command(resume=answer), or Command(resume={question id: answer})"
        )
    if input is None or isinstance(input, Command):
        return False
    if not isinstance(input, Mapping):
        raise ValueError(f'input must be {{"request": "..."}}; got {type(input).__name__}')
    request = input.get("request")
    if not isinstance(request, str) or not request.strip():
        raise ValueError('input needs a non-empty "request" string')
    checks = input.get("checks")
    if checks is not None and not isinstance(checks, list):
        raise ValueError('"checks" must be a list, e.g. ["exists:out.txt"]')
    return True


def admit_workspace(settings: Context, builtin_tools: bool) -> None:
    """Refuse a run whose built-in tools would work in a folder that cannot be a workspace.

    `tools.boundary.workspace_refusal` says which (``/``, a home or system folder, the Python
    environment that runs phasegraph): a `ConfigurationError` of one line, before anything runs.
    """
    if builtin_tools and (why := workspace_refusal(Path(settings.root))):
        raise ConfigurationError(why)


def check_checks(input: Any, settings: Context) -> None:
    """Refuse the caller's checks of a starting run, naming the one at fault (SPEC section 11).

    An unknown kind, a path outside the workspace ``settings`` work in, or a command they do
    not allow: `CheckError` before anything runs.
    """
    if isinstance(input, Mapping) and input.get("checks") is not None:
        validate_checks(input["checks"], settings)


def refuse(input: Any, starts: bool, snapshot: StateSnapshot, tid: str) -> None:
    """Refuse new input for a thread that holds a run, and an answer where none is awaited.

    A ``Command`` (an answer, an update) sent to a thread with no run (a mistyped id) would
    otherwise start an empty run there.
    """
    if starts:
        _refuse_new_input(snapshot.values, snapshot.next, tid)
    elif isinstance(input, Command) and not snapshot.values:
        raise ThreadStateError(
            f'unknown thread {tid!r}: it holds no run to resume; start one with {{"request": ...}}'
        )
    elif isinstance(input, Command) and input.resume is not None and not snapshot.next:
        raise ThreadStateError(
            f"thread {tid!r} has ended (status {snapshot.values.get('status')}): nothing "
            "waits for an answer; start a new request on a new thread id"
        )


def _refuse_new_input(values: Mapping[str, Any], next_nodes: Sequence[str], tid: str) -> None:
    if not values:
        return
    if "human_review" in next_nodes:
        kind = (values.get("pending_review") or {}).get("kind", "review")
        raise ThreadPausedError(
            f"thread {tid!r} is paused for a {kind}; answer it with Command(resume=...) "
            "(resume() from code, `phasegraph resume` from a shell) instead of sending new "
            "input, or use a new thread id"
        )
    status = values.get("status")
    if not next_nodes:
        raise ThreadStateError(
            f"thread {tid!r} already holds a run, which has ended (status {status}); start "
            "the new request on a new thread id"
        )
    raise ThreadStateError(
        f"thread {tid!r} already holds a run (status {status}); continue it with input "
        "None (resume() from code, `phasegraph resume` from a shell), or start the new "
        "request on a new thread id"
    )


def with_step_limit(config: RunnableConfig | None, context: Any) -> RunnableConfig:
    """The config with LangGraph's super-step limit raised above any budget (SPEC 8).

    Unless the caller set one, LangGraph's thread pool is also sized so that a wave of
    ``max_parallel`` tasks really runs at once (its default is a few threads per core).
    """
    merged: dict[str, Any] = dict(config or {})
    merged["recursion_limit"] = max(int(merged.get("recursion_limit") or 0), RECURSION_LIMIT)
    if merged.get("max_concurrency") is None:
        merged["max_concurrency"] = Context.coerce(context).max_parallel + 2
    return cast(RunnableConfig, merged)


def resumed_settings(settings: Context, values: Mapping[str, Any], starts: bool) -> Context:
    """The settings a thread's run goes on with: its own (`carried_settings`), in its folder.

    A run that continues a thread (an answer to a pause, a resume after an error) and whose
    settings name no workspace works where the thread worked, as `phasegraph resume` does, not
    in the folder the caller happens to be in; settings that name one are kept (a project moved,
    say). A thread whose folder is gone is refused, naming the setting that goes on elsewhere.
    """
    if starts:
        return settings
    settings = carried_settings(settings, values)
    folder = thread_folder(settings, values)
    if folder is None:
        return settings
    if not os.path.isdir(folder):
        raise ConfigurationError(
            f"the thread worked in {folder!r}, which is not a folder any more; to go on "
            "elsewhere, give the run Context(workspace=...)"
        )
    return dataclasses.replace(settings, workspace=folder)


def latest_config(config: RunnableConfig) -> RunnableConfig:
    """The config of the thread's latest state: a run from an earlier checkpoint ends there."""
    configurable = dict(config.get("configurable") or {})
    configurable.pop("checkpoint_id", None)
    return cast(RunnableConfig, {**config, "configurable": configurable})


def check_persistence(checkpointer: Any, config: RunnableConfig | None, context: Any) -> None:
    """Refuse a run whose settings ask for reviews on a graph that cannot keep a pause.

    A review pauses the run until a person answers; without a checkpointer (the graph's, or
    the one a server passes in the config) the paused run is lost, so it is refused before
    anything runs (`ConfigurationError`).
    """
    configurable = (config or {}).get("configurable") or {}
    kept = isinstance(checkpointer, BaseCheckpointSaver) or (
        checkpointer is not False and configurable.get(CONFIG_KEY_CHECKPOINTER)
    )
    review = Context.coerce(context).review
    if not kept and review != "none":
        raise ConfigurationError(
            f"review={review!r} pauses the run for a person, and a "
            "paused run needs a checkpointer to be resumed: build_graph(checkpointer=...), "
            "or review='none'"
        )
