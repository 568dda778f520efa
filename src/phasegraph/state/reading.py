"""What a run's state says, read the same way by every stage: the phase, its rounds, results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phasegraph.state.state import RoundRecord, State, TaskResult


def current_phase(state: State) -> dict[str, Any]:
    """The phase being worked."""
    return state["phases"][state["phase_index"]]


def is_last_phase(state: State, phase: Mapping[str, Any]) -> bool:
    """Whether ``phase`` is the plan's last: the one that ends the work."""
    phases = state.get("phases") or []
    return bool(phases) and phases[-1].get("id") == phase.get("id")


def phase_window(state: State) -> list[RoundRecord]:
    """Rounds of the current phase since it started or was last replanned."""
    phase_id = current_phase(state)["id"]
    start = state.get("phase_window_seq", 0)
    return [
        r for r in state.get("rounds", []) if r["phase_id"] == phase_id and r["round_seq"] > start
    ]


def planned_tasks(state: State) -> list[dict[str, Any]]:
    """The tasks of the round's plan (none when no plan is under way)."""
    return list((state.get("current_plan") or {}).get("tasks", []))


def run_results(state: State) -> list[TaskResult]:
    """Every task result of the run, whatever its phase: its judged rounds', then the round's."""
    done = [r for record in state.get("rounds") or [] for r in record.get("results") or []]
    return [*done, *(state.get("results") or [])]


def last_judgements(state: State) -> dict[str, dict[str, Any]]:
    """Each phase's latest judged round's judgement, by phase id."""
    return {r["phase_id"]: dict(r["judgement"]) for r in state.get("rounds") or []}


def shown_status(values: Mapping[str, Any]) -> str:
    """A thread's status as a person is shown it: "running" until its run sets one.

    A run stopped before its analysis (a crash, a kill) has set none; every view of the thread
    (its list, its report, the CLI) says the same of it.
    """
    return str(values.get("status") or "running")
