"""What the nodes share: their dependencies, settings access and small facts about the state."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime

from phasegraph.context import Context
from phasegraph.errors import redact
from phasegraph.models import model_from_context
from phasegraph.state import Limits, RunError, State
from phasegraph.structured import StageCall


@dataclass
class Deps:
    """What `build_graph` hands to every node: the model (or None: from settings) and tools."""

    model: BaseChatModel | None = None
    tools: dict[str, BaseTool] = field(default_factory=dict)

    def chat_model(self, runtime: Runtime[Context]) -> BaseChatModel:
        """The model passed to `build_graph`, else the one the settings name."""
        if self.model is not None:
            return self.model
        thread_id = str(get_config().get("configurable", {}).get("thread_id", ""))
        return model_from_context(context_of(runtime), thread_id)


def context_of(runtime: Runtime[Context]) -> Context:
    """The run's settings; a dict (Studio, the server) or nothing becomes a `Context`."""
    return Context.coerce(runtime.context)


def limits_from(context: Context) -> Limits:
    """The limits a new run keeps for its whole life (SPEC section 8)."""
    return {
        "max_steps": context.max_steps,
        "review": context.review,
        "max_replans": context.max_replans,
        "extra_rounds_per_phase": context.extra_rounds_per_phase,
    }


def limits_of(state: State) -> Limits:
    """The run's limits, as fixed when it started."""
    return state["limits"]


def budget_left(state: State) -> int:
    """Steps left in the budget (SPEC section 3); never negative."""
    return max(0, limits_of(state)["max_steps"] - state.get("step_count", 0))


def budget_spent(state: State) -> bool:
    """Whether ``step_count >= max_steps``."""
    return budget_left(state) == 0


def person_available(limits: Limits) -> bool:
    """Whether anyone answers reviews (clarifications, asks after failures)."""
    return limits["review"] != "none"


def plan_review_on(limits: Limits) -> bool:
    """Whether the phase plan waits for approval."""
    return limits["review"] in ("plan", "plan+replan", "all")


def replan_review_on(limits: Limits) -> bool:
    """Whether every replan waits for approval."""
    return limits["review"] in ("plan+replan", "all")


def current_phase(state: State) -> dict[str, Any]:
    """The phase being worked."""
    return state["phases"][state["phase_index"]]


def round_limit(phase: Mapping[str, Any], limits: Limits) -> int:
    """Rounds a phase may run: estimated_rounds + the extra rounds (SPEC section 3)."""
    return int(phase["estimated_rounds"]) + limits["extra_rounds_per_phase"]


def retries_within_budget(state: State, retries: int) -> int:
    """Re-asks a counted stage may make: its setting, but none that would pass the budget.

    The first attempt is always made (routers only enter a counted stage with budget left, and
    the judge of a round that spent the budget still runs once).
    """
    return max(0, min(retries, budget_left(state) - 1))


def stage_failure(node: str, call: StageCall[Any], state: State) -> dict[str, Any]:
    """The update that stops the run after a stage gave no valid result."""
    spent_by = state.get("step_count", 0) + call.counters(counted=True)["step_count"]
    out_of_budget = node != "analyse" and spent_by >= limits_of(state)["max_steps"]
    error: RunError = {"node": node, "type": "StageFailed", "message": redact(call.failure)}
    return {"stop_reason": "budget" if out_of_budget else "stage_failed", "error": error}


def dump(value: Any) -> str:
    """Compact JSON for prompts."""
    return json.dumps(value, ensure_ascii=False, default=str)


def bullet_list(items: list[str]) -> str:
    """Items as a Markdown list, or a dash when there are none."""
    return "\n".join(f"- {item}" for item in items) if items else "-"
