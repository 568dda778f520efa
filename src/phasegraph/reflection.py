"""The five reflection triggers of SPEC section 4, checked by code after every judge.

Each trigger looks at the current phase window: the rounds of the current phase since it started
or since its latest replan (so a replan gives the new plan a fresh window instead of firing
again at once). A trigger that fires is recorded with its reason and becomes a reflection note,
the guidance the replan and the next plan prompts carry.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from phasegraph import prompts
from phasegraph.state import RoundRecord, TaskResult
from phasegraph.state.result import clip

# SPEC section 4 thresholds.
REPEATS_TO_FIRE = 2  # the same call executed twice in a phase
STALLED_ROUNDS = 2  # completion rate not risen for 2 consecutive rounds
STUCK_ROUNDS = 3  # 3 rounds in the phase ...
STUCK_EXECUTIONS = 3  # ... with more than 3 tool executions and no completion
FAILURES_IN_A_ROW = 3  # 3 failed tasks in a row
CHECKPOINTS = (1 / 3, 2 / 3)  # the step count crossing 1/3 and 2/3 of the budget

EXECUTED = ("ok", "failed", "timeout", "interrupted")
FAILED = ("failed", "timeout", "refused")
# A call a crash cut off (outcome unknown) says nothing about the plan: it neither extends a
# failure streak nor breaks one, so a resumed run is not ended short for the kill.
NEUTRAL = ("skipped", "interrupted")


@dataclass(frozen=True)
class Fired:
    """One trigger that fired."""

    trigger: str
    reason: str

    @property
    def note(self) -> str:
        """The reason and the concrete guidance for the next prompts."""
        return f"{self.reason} {prompts.REFLECTION_GUIDANCE[self.trigger]}"


def normalise_call(tool: str, arguments: dict[str, Any]) -> str:
    """A call's identity: tool and arguments with keys sorted and strings trimmed."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return " ".join(value.split())
        if isinstance(value, dict):
            return {k: clean(v) for k, v in sorted(value.items())}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return f"{tool}({json.dumps(clean(arguments), sort_keys=True, default=str)})"


def _results(window: Sequence[RoundRecord]) -> list[TaskResult]:
    return [r for record in window for r in record["results"]]


def repeated_action(window: Sequence[RoundRecord]) -> Fired | None:
    """The same tool with the same normalised arguments executed twice in the phase."""
    seen: dict[str, int] = {}
    for result in _results(window):
        if result["status"] not in EXECUTED:
            continue
        call = normalise_call(result["tool"], result["arguments"])
        seen[call] = seen.get(call, 0) + 1
        if seen[call] >= REPEATS_TO_FIRE:
            return Fired("repeated_action", f"{call} was executed {seen[call]} times.")
    return None


def stalled_progress(window: Sequence[RoundRecord]) -> Fired | None:
    """phase_completion_rate has not risen for 2 consecutive rounds."""
    rates = [float(record["judgement"]["phase_completion_rate"]) for record in window]
    if len(rates) <= STALLED_ROUNDS:
        return None
    recent = rates[-(STALLED_ROUNDS + 1) :]
    if all(later <= earlier for earlier, later in zip(recent, recent[1:], strict=False)):
        shown = " -> ".join(f"{r:.2f}" for r in recent)
        return Fired("stalled_progress", f"Completion has not risen for 2 rounds ({shown}).")
    return None


def stuck_phase(window: Sequence[RoundRecord]) -> Fired | None:
    """3 rounds in the phase with more than 3 tool executions and no completion."""
    executions = sum(1 for r in _results(window) if r["status"] in EXECUTED)
    completed = any(record["judgement"].get("phase_completed") for record in window)
    if len(window) >= STUCK_ROUNDS and executions > STUCK_EXECUTIONS and not completed:
        return Fired(
            "stuck_phase",
            f"{len(window)} rounds and {executions} tool executions have not completed the phase.",
        )
    return None


def consecutive_failures(window: Sequence[RoundRecord]) -> Fired | None:
    """3 failed tasks in a row (failed, timed out or refused)."""
    streak: list[TaskResult] = []
    for result in _results(window):
        if result["status"] in FAILED:
            streak.append(result)
        elif result["status"] not in NEUTRAL:
            streak = []
    if len(streak) >= FAILURES_IN_A_ROW:
        last = streak[-FAILURES_IN_A_ROW:]
        # each output on one line and cut between words: the reason is read in a prompt
        calls = "; ".join(
            f"{r['tool']}: {r['status']} ({clip(r['output'], 80, between_words=True)})"
            for r in last
        )
        return Fired("consecutive_failures", f"{len(streak)} tasks failed in a row: {calls}.")
    return None


def long_task(step_count: int, max_steps: int, times_fired: int) -> Fired | None:
    """The step count crossed the next check-point, 1/3 then 2/3 of the budget (once each)."""
    if times_fired >= len(CHECKPOINTS):
        return None
    fraction = CHECKPOINTS[times_fired]
    if step_count < fraction * max_steps:
        return None
    return Fired(
        "long_task",
        f"Check-point {times_fired + 1} of {len(CHECKPOINTS)}: "
        f"{step_count} of {max_steps} steps are spent.",
    )


def check_all(
    window: Sequence[RoundRecord], step_count: int, max_steps: int, long_task_fired: int
) -> list[Fired]:
    """Every trigger that fires after this judge, in SPEC order."""
    fired = [
        check(window)
        for check in (repeated_action, stalled_progress, stuck_phase, consecutive_failures)
    ]
    fired.append(long_task(step_count, max_steps, long_task_fired))
    return [f for f in fired if f is not None]
