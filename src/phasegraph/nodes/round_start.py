"""The graph's ``plan`` node: `plan`, then `execute`'s first wave, in one super-step.

A round is plan -> execute -> run_task... -> judge (SPEC section 2). Every LangGraph super-step
costs a checkpoint and a saved write of its node's result, which ``bench`` measured as most of
phasegraph's overhead per tool action; the step from planning to dispatching waits for nothing
(no model, no tool, no person). So the graph's ``plan`` node runs `plan` and, when the round
goes on to `execute`, `execute` on the planned state in the same super-step: the first wave's
tasks go straight to `run_task`, and a round takes one checkpoint fewer. The same functions run
on the same state, in the same order, with the same progress events; `execute` still makes every
later wave and resumes a round after a tool-permission review, as its own node.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, get_type_hints

from langgraph.channels.base import BaseChannel
from langgraph.runtime import Runtime
from langgraph.types import Command

from phasegraph.context import Context
from phasegraph.nodes import execute, plan, routing
from phasegraph.nodes.deps import Deps
from phasegraph.state import State

Reducer = Callable[[Any, Any], Any]


def plan_round(state: State, runtime: Runtime[Context], deps: Deps) -> Any:
    """Plan the round; if it goes on to `execute`, dispatch its first wave too."""
    update = plan.plan(state, runtime, deps)
    if not isinstance(update, dict):
        return update
    planned = advanced(state, update)
    if routing.route_after_plan(planned) != "execute":
        return update
    try:
        wave = execute.execute(planned, runtime, deps)
    except Exception:
        # The plan is kept; the `execute` node runs the wave again and, should it fail again,
        # the run records the error under that node's name, as it would have before.
        return update
    # One write per key, except where a reducer folds both in order (the plan's `results: []`
    # starts the round, then the wave's settled tasks join it).
    first = {k: v for k, v in update.items() if k not in wave or k in _reducers()}
    return [Command(update=first), wave]


def advanced(state: State, update: dict[str, Any]) -> State:
    """The state after ``update``, through the state's reducers, as LangGraph would apply it."""
    reducers = _reducers()
    after = dict(state)
    for key, value in update.items():
        reduce = reducers.get(key)
        after[key] = value if reduce is None else reduce(state.get(key, type(value)()), value)
    return after  # type: ignore[return-value]


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
