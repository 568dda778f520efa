"""The step budget (SPEC section 3) and the limits a run keeps for its whole life (section 8).

One counter, ``step_count``, against ``max_steps``; a round keeps a step for its judge, a counted
stage re-asks only within what is left, and a phase runs at most its estimated rounds plus the
extra ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phasegraph.carried import start_settings
from phasegraph.context import Context
from phasegraph.state import Limits, State


def limits_from(context: Context) -> Limits:
    """The limits a new run keeps for its whole life (SPEC section 8)."""
    return {
        "max_steps": context.max_steps,
        "review": context.review,
        "max_replans": context.max_replans,
        "extra_rounds_per_phase": context.extra_rounds_per_phase,
        "settings": start_settings(context),
    }


def limits_of(state: State) -> Limits:
    """The run's limits, as fixed when it started."""
    return state["limits"]


def budget_left(state: State) -> int:
    """Steps left in the budget (SPEC section 3); never negative."""
    return max(0, limits_of(state)["max_steps"] - state.get("step_count", 0))


JUDGE_STEPS = 1
"""Steps a round keeps for its judge: its tools may spend the budget only up to them."""
ROUND_MIN_STEPS = 2 + JUDGE_STEPS
"""Steps a new round needs: one plan attempt, one tool execution and its judge."""


def budget_spent(state: State) -> bool:
    """Whether ``step_count >= max_steps``."""
    return budget_left(state) == 0


def round_limit(phase: Mapping[str, Any], limits: Limits) -> int:
    """Rounds a phase may run: estimated_rounds + the extra rounds (SPEC section 3)."""
    return int(phase["estimated_rounds"]) + limits["extra_rounds_per_phase"]


def retries_within_budget(state: State, retries: int, *, keep: int = 0) -> int:
    """Re-asks a counted stage may make: its setting, but none that would pass the budget.

    The first attempt is always made: routers only enter a counted stage with budget left, and a
    round's tools leave `JUDGE_STEPS` for its judge. ``keep``: steps the stage must leave for
    what follows it (a plan leaves a tool's and the judge's).
    """
    return max(0, min(retries, budget_left(state) - 1 - keep))
