"""A node's update as LangGraph applies it, and without the writes that change nothing.

Stages return every field they may set: counters that grew by nothing (a scripted or local model
reports no tokens), empty appends to a history, values the state already holds. Each would still
be a write LangGraph saves with the step (a row in SQLite, a new channel version), about a third
of a short-phase run's writes (bench). `changes_only` drops them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from typing import Any, get_type_hints

from langgraph.channels.base import BaseChannel
from langgraph.types import Command

from phasegraph.state import State

Reducer = Callable[[Any, Any], Any]


def changes_only(state: Any, result: Any) -> Any:
    """A node's ``result`` without the writes that leave the state as it was.

    ``result`` is a node's update, or a `Command` (its route kept); anything else is returned
    as it is.
    """
    if isinstance(result, dict):
        return _changes(state, result)
    if isinstance(result, Command) and isinstance(result.update, dict):
        return dataclasses.replace(result, update=_changes(state, result.update))
    return result


def _changes(state: Any, update: dict[str, Any]) -> dict[str, Any]:
    reducers = _reducers()
    kept: dict[str, Any] = {}
    for key, value in update.items():
        if key in state:
            now = state[key]
            reduce = reducers.get(key)
            if (value if reduce is None else reduce(now, value)) == now:
                continue
        kept[key] = value
    return kept


@cache
def _reducers() -> dict[str, Reducer]:
    """Each reduced key of `State` with its reducer (a history channel folds writes in batches)."""
    found: dict[str, Reducer] = {}
    for key, hint in get_type_hints(State, include_extras=True).items():
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, BaseChannel):
                found[key] = _batch(meta.reducer)  # type: ignore[attr-defined]
            elif callable(meta):
                found[key] = meta
    return found


def _batch(fold: Callable[[Any, list[Any]], Any]) -> Reducer:
    """A reducer of one write, from a channel's that folds a batch of writes."""
    return lambda old, new: fold(old, [new])
