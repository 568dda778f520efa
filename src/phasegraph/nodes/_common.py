"""What the nodes share: their dependencies, settings access and small facts about the state."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime

from phasegraph.context import Context
from phasegraph.errors import redact
from phasegraph.models import model_from_context
from phasegraph.models.structured import StageCall
from phasegraph.state import Limits, PhaseOutcome, RoundRecord, RunError, State
from phasegraph.storage.journal import ToolJournal, journal_for
from phasegraph.tools.base import truncate
from phasegraph.tools.builtin import Toolbox, WorkspaceSettings
from phasegraph.tools.constraints import allowed_tools


@dataclass
class Deps:
    """What `build_graph` hands to every node: model (None: from settings), tools, journal."""

    model: BaseChatModel | None = None
    toolbox: Toolbox = field(default_factory=lambda: Toolbox([], builtin=False))
    checkpointer: Any = None
    _journal: ToolJournal | None = None

    def tools_for(self, context: Context) -> dict[str, BaseTool]:
        """The tools of a run: the user's, plus built-in and MCP tools bound by its settings."""
        return self.toolbox.resolve(workspace_settings(context), context.mcp_servers or None)

    def journal(self) -> ToolJournal:
        """The tool journal that fits the graph's checkpointer (created on first use)."""
        if self._journal is None:
            self._journal = journal_for(self.checkpointer)
        return self._journal

    def chat_model(self, runtime: Runtime[Context]) -> BaseChatModel:
        """The model passed to `build_graph`, else the one the settings name."""
        if self.model is not None:
            return self.model
        return model_from_context(context_of(runtime), thread_id())


def workspace_settings(context: Context) -> WorkspaceSettings:
    """What the built-in tools of a run are bound to."""
    return WorkspaceSettings(
        root=context.workspace,
        allowed_commands=tuple(context.allowed_commands),
        max_read_bytes=context.max_read_bytes,
        max_output_chars=context.max_output_chars,
        # under the task timeout, so the command is killed before its task is given up on
        command_timeout_s=context.task_timeout_s * 0.9,
    )


def thread_id() -> str:
    """The id of the thread being run ("" when the graph runs without one)."""
    return str(get_config().get("configurable", {}).get("thread_id", ""))


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


JUDGE_STEPS = 1
"""Steps a round keeps for its judge: its tools may spend the budget only up to them."""
ROUND_MIN_STEPS = 2 + JUDGE_STEPS
"""Steps a new round needs: one plan attempt, one tool execution and its judge."""


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


def retries_within_budget(state: State, retries: int, *, keep: int = 0) -> int:
    """Re-asks a counted stage may make: its setting, but none that would pass the budget.

    The first attempt is always made: routers only enter a counted stage with budget left, and a
    round's tools leave `JUDGE_STEPS` for its judge. ``keep``: steps the stage must leave for
    what follows it (a plan leaves a tool's and the judge's).
    """
    return max(0, min(retries, budget_left(state) - 1 - keep))


def stage_failure(
    node: str, call: StageCall[Any], state: State, *, keep: int = 0
) -> dict[str, Any]:
    """The update that stops the run after a stage gave no valid result.

    When the budget left no room for another attempt (``keep`` as in `retries_within_budget`),
    the budget stopped the run, not the stage.
    """
    spent_by = state.get("step_count", 0) + call.counters(counted=True)["step_count"]
    out_of_budget = node != "analyse" and spent_by >= limits_of(state)["max_steps"] - keep
    error: RunError = {"node": node, "type": "StageFailed", "message": redact(call.failure)}
    return {"stop_reason": "budget" if out_of_budget else "stage_failed", "error": error}


def phase_window(state: State) -> list[RoundRecord]:
    """Rounds of the current phase since it started or was last replanned."""
    phase_id = current_phase(state)["id"]
    start = state.get("phase_window_seq", 0)
    return [
        r for r in state.get("rounds", []) if r["phase_id"] == phase_id and r["round_seq"] > start
    ]


def phase_allowed_tools(
    state: State, phase: Mapping[str, Any], deps: Deps, context: Context
) -> list[str]:
    """Tools the phase may use: its task type's rules, narrowed by the phase's own list."""
    task_type = str((state.get("structured_request") or {}).get("task_type", ""))
    return allowed_tools(
        deps.tools_for(context), task_type, phase.get("allowed_tools") or [], context.tool_rules
    )


def tokens(text: str) -> int:
    """Approximate tokens of a prompt text, with langchain-core's counter."""
    return count_tokens_approximately([HumanMessage(text)])


# Tool output kept per task in a prompt at first, and the floor when shrinking it to fit.
PROMPT_OUTPUT_CHARS = 1200
MIN_OUTPUT_CHARS = 80


def fit_to_budget(render: Callable[[int], str], budget_tokens: int) -> str:
    """``render(limit)`` with the largest per-output limit whose text fits the token budget.

    Tool outputs are what grows a prompt, so they are cut shorter (halving the limit) until the
    text fits, down to a floor that still shows each output's start (SPEC section 7).
    """
    limit = PROMPT_OUTPUT_CHARS
    while True:
        text = render(limit)
        if tokens(text) <= budget_tokens or limit <= MIN_OUTPUT_CHARS:
            return text
        limit = max(MIN_OUTPUT_CHARS, limit // 2)


def dump(value: Any) -> str:
    """Compact JSON for prompts."""
    return json.dumps(value, ensure_ascii=False, default=str)


def bullet_list(items: list[str]) -> str:
    """Items as a Markdown list, or a dash when there are none."""
    return "\n".join(f"- {item}" for item in items) if items else "-"


def outcome_line(outcome: PhaseOutcome, summary_chars: int | None = None) -> str:
    """One finished phase, the same in every prompt and summary: how it ended, what it found."""
    how = "completed" if outcome["completed"] else f"ended incomplete ({outcome['ended_by']})"
    summary = outcome["summary"]
    if summary_chars is not None:
        summary = truncate(summary, summary_chars)
    return (
        f"{outcome['name']} ({outcome['phase_id']}): {how} after {outcome['rounds']} "
        f"round(s) - {summary}"
    )


def recent_outcomes(outcomes: list[PhaseOutcome], shown: int, summary_chars: int) -> list[str]:
    """The latest ``shown`` finished phases as lines, the ones before them counted in one.

    What finished phases found reaches later prompts only this way (a phase's rounds leave the
    window when the next starts), so it is kept to a fixed size however many phases ran.
    """
    latest = outcomes[-shown:] if shown else []
    earlier = outcomes[: len(outcomes) - len(latest)]
    lines = []
    if earlier:
        done = sum(1 for o in earlier if o["completed"])
        lines.append(f"{len(earlier)} earlier phases finished, {done} of them completed.")
    return lines + [outcome_line(o, summary_chars) for o in latest]
