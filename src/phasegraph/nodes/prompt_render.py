"""Rendering the state into prompts within the token budget (SPEC section 7).

Tokens are counted with langchain-core's approximate counter; tool outputs are cut shorter until
a prompt fits; finished phases reach later prompts as one line each, a fixed number of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from phasegraph import prompts
from phasegraph.state import PhaseOutcome
from phasegraph.tools.base import truncate


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


def round_finding(judgement: Mapping[str, Any]) -> str:
    """What a round found: its judge's summary, or why not done where code overruled the judge.

    A claim of done that code overruled never reaches a reader as the round's finding: a model
    repeats what it reads, and a report that says "completed successfully" over a run that did not
    complete tells its person the opposite of the facts.
    """
    overruled = judgement.get("overridden")
    if overruled:
        return f"not complete: {overruled}"
    return str(judgement.get("user_summary", ""))


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


def request_facts(state: Mapping[str, Any]) -> str:
    """The structured request as later prompts show it (never the raw request, SPEC 7)."""
    request = dict(state.get("structured_request") or {})
    request.pop("check_notes", None)  # the analysis's bookkeeping, not the request
    return dump(request)


def quoted(output: str) -> str:
    """A tool's output as prompts quote it: marked as data, never instructions (SPEC 5)."""
    return f"{prompts.OUTPUT_OPEN}{output}{prompts.OUTPUT_CLOSE}"


def unquoted(value: Any) -> Any:
    """``value`` with the quotes `quoted` adds taken out of every string in it.

    They are phasegraph's own markup, never part of a file, though a model that copies a
    quoted output into a file copies them too.
    """
    if isinstance(value, str):
        return value.replace(prompts.OUTPUT_OPEN, "").replace(prompts.OUTPUT_CLOSE, "")
    if isinstance(value, dict):
        return {key: unquoted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unquoted(item) for item in value]
    return value
