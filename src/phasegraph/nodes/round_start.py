"""Super-steps that chain stages which wait for nothing between them (SPEC section 2's order).

A round is plan -> execute -> run_task... -> judge, and after the judge, usually, the next plan.
Every LangGraph super-step costs a checkpoint and a saved write of its node's result, which
``bench`` measured as most of phasegraph's overhead per tool action; the steps from planning to
dispatching, from judging to the next plan or to the summary, and from the analysis to the first
round wait for no tool and no person. So:

- the graph's ``plan`` node (`plan_round`) runs `plan` and, when the round goes on to
  `execute`, `execute` on the planned state: the first wave's tasks go straight to `run_task`;
- the graph's ``judge`` node (`judge_round`) runs `judge` and, when the run goes on to `plan`
  (SPEC section 2, rules 3 and 6), `plan_round` on the judged state; when it goes on to
  `summarize`, `summarize`;
- the graph's ``analyse`` node (`analyse_round`) runs `analyse` and, when the run goes on to
  `phase_plan`, `phase_plan_round`: the phase plan and, when no review waits, the first round's
  plan and wave.

A round then takes two checkpoints, as a ReAct loop's model call and tool call do. The same
functions run on the same state, in the same order, with the same progress events; `execute`
still makes every later wave and resumes a round after a tool-permission review, and `plan`,
`phase_plan` and `summarize` still run as their own nodes wherever the graph goes to them
otherwise (after a review, a replan, an error). Should a chained stage raise, the stage before
it is kept and the graph runs the failing one again as its own node, where an error is recorded
under that node's name. A step that ran several stages keeps what each spent (``judge_use`` in
the judged round, ``chained_use`` from the analysis), so `report.history` still tells them apart.

For the same reason every node's update is cut to the writes that change the state
(`changes_only`): a write of what the state already holds is still a saved write.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, get_type_hints

from langgraph.channels.base import BaseChannel
from langgraph.runtime import Runtime
from langgraph.types import Command

from phasegraph.context import Context
from phasegraph.nodes import analyse, execute, judge, phase_plan, plan, routing, summarize
from phasegraph.nodes.deps import Deps
from phasegraph.state import State
from phasegraph.state.state import STAGE_COUNTERS

Reducer = Callable[[Any, Any], Any]
Stage = Callable[[State, Runtime[Context], Deps], Any]


def analyse_round(state: State, runtime: Runtime[Context], deps: Deps) -> Any:
    """Analyse the request; if the run goes on to `phase_plan`, plan the phases (and on) too."""
    started = time.monotonic()
    update = analyse.analyse(state, runtime, deps)
    return then(
        state,
        update,
        routing.route_after_analyse,
        {"phase_plan": phase_plan_round},
        runtime,
        deps,
        spent=("analyse", started),
    )


def phase_plan_round(state: State, runtime: Runtime[Context], deps: Deps) -> Any:
    """Plan the phases; if the run goes on to `plan`, plan the first round (and its wave) too."""
    started = time.monotonic()
    update = phase_plan.phase_plan(state, runtime, deps)
    return then(
        state,
        update,
        routing.route_after_phase_plan,
        {"plan": plan_round},
        runtime,
        deps,
        spent=("phase_plan", started),
    )


def plan_round(state: State, runtime: Runtime[Context], deps: Deps) -> Any:
    """Plan the round; if it goes on to `execute`, dispatch its first wave too."""
    update = plan.plan(state, runtime, deps)
    return then(
        state, update, routing.route_after_plan, {"execute": execute.execute}, runtime, deps
    )


def judge_round(state: State, runtime: Runtime[Context], deps: Deps) -> Any:
    """Judge the round; then the next round's plan (and its wave), or the summary, if it is next.

    The judged round keeps what its judge spent (``judge_use``), so a report still tells the
    judge's use and time from the next plan's or the summary's (`report.history`).
    """
    started = time.monotonic()
    update = judge.judge(state, runtime, deps)
    if isinstance(update, dict):
        use: dict[str, float] = {key: update.get(key, 0) for key in STAGE_COUNTERS}
        for record in update.get("rounds", []):
            record["judge_use"] = use | {"seconds": round(time.monotonic() - started, 3)}
    return then(
        state,
        update,
        routing.route_after_judge,
        {"plan": plan_round, "summarize": summarize.summarize},
        runtime,
        deps,
        spent=("judge", started),
    )


def then(
    state: State,
    update: Any,
    route: Callable[[State], Any],
    stages: Mapping[str, Stage],
    runtime: Runtime[Context],
    deps: Deps,
    *,
    spent: tuple[str, float] | None = None,
) -> Any:
    """``update``, followed by the stage ``route`` goes to on the state after it, if in ``stages``.

    Should that stage raise, ``update`` is kept: the graph routes to that stage's own node, which
    runs it again and, should it fail again, records the error under its name, as before.
    ``spent``: the name of the stage that made ``update`` and when it started; the chained step
    then keeps what each of its stages spent in ``chained_use`` (see `report.history`).
    """
    if not isinstance(update, dict):
        return update
    after = advanced(state, update)
    goes_to = route(after)
    stage = stages.get(goes_to) if isinstance(goes_to, str) else None
    if stage is None:
        return update
    use = None
    if spent is not None:
        name, started = spent
        use = {"stage": name} | {key: update.get(key, 0) for key in STAGE_COUNTERS}
        use["seconds"] = round(time.monotonic() - started, 3)
    try:
        more = stage(after, runtime, deps)
    except Exception:
        return update
    parts = [c.update if isinstance(c, Command) else c for c in _as_list(more)]
    updates = [update, *(p for p in parts if isinstance(p, dict))]
    if use is not None:
        # the stages chained after this one have said what they spent (or are the last)
        later: list[list[dict[str, Any]]] = [
            u["chained_use"] for u in updates[1:] if u.get("chained_use")
        ]
        uses = [use, *(later[-1] if later else [{"stage": goes_to}])]
        updates = [{k: v for k, v in u.items() if k != "chained_use"} for u in updates]
        updates[0]["chained_use"] = uses
    return chained(updates)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def chained(updates: list[dict[str, Any]]) -> list[Command[Any]]:
    """Updates of stages run one after another, as one node's writes in that order.

    One write per key, except where a reducer folds them all in order (a plan's `results: []`
    starts a round, then its wave's settled tasks join it; each stage's steps add up).
    """
    reducers = _reducers()
    parts = []
    for i, update in enumerate(updates):
        later = {k for u in updates[i + 1 :] for k in u}
        parts.append({k: v for k, v in update.items() if k not in later or k in reducers})
    return [Command(update=part) for part in parts]


def advanced(state: State, update: dict[str, Any]) -> State:
    """The state after ``update``, through the state's reducers, as LangGraph would apply it."""
    reducers = _reducers()
    after = dict(state)
    for key, value in update.items():
        reduce = reducers.get(key)
        after[key] = value if reduce is None else reduce(state.get(key, type(value)()), value)
    return after  # type: ignore[return-value]


def changes_only(state: Any, result: Any) -> Any:
    """A node's ``result`` without the writes that leave the state as it was.

    Stages return every field they may set: counters that grew by nothing (a scripted or
    local model reports no tokens), empty appends to a history, values the state already holds.
    Each would still be a write LangGraph saves with the step (a row in SQLite, a new channel
    version), about a third of a short-phase run's writes (bench). ``result`` is a node's update,
    a `Command` (its route kept), or the `chained` parts of one, whose writes apply in order;
    anything else is returned as is.
    """
    if isinstance(result, dict):
        return _changes(state, result)
    if isinstance(result, Command):
        return changes_only(state, [result])[0]
    if not isinstance(result, list) or not all(isinstance(c, Command) for c in result):
        return result
    parts = []
    for command in result:
        update = command.update
        if isinstance(update, dict):
            update = _changes(state, update)
            state = advanced(state, update)
        parts.append(dataclasses.replace(command, update=update))
    return parts


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
