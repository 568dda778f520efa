"""What a thread's checkpoints tell about its run that its latest state does not.

The state keeps totals (steps, model calls, tokens) and what each round did, but not which stage
spent what, how long a round took with its model calls, or where a review or a replan happened.
Every super-step leaves a checkpoint, so consecutive checkpoints say exactly that: the nodes that
ran between them, what the counters grew by, and the time between them. Reports and
``phasegraph show`` use it; the run itself never reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from phasegraph.state.state import STAGE_COUNTERS

# Stages in the order a run meets them; a chart lists them so. (Threads of versions whose tasks
# were ``run_task`` nodes are read with ``execute`` in their place: `graph.migrations`.)
STAGE_ORDER = (
    "analyse",
    "phase_plan",
    "plan",
    "execute",
    "judge",
    "replan",
    "human_review",
    "summarize",
)
COUNTERS = STAGE_COUNTERS
ROUND_NODES = frozenset({"plan", "execute", "judge"})


class HasHistory(Protocol):
    """A compiled graph with a checkpointer (anything with LangGraph's ``get_state_history``)."""

    def get_state_history(self, config: RunnableConfig) -> Iterable[StateSnapshot]:
        """Checkpoints of a thread, newest first."""
        ...


def run_history(graph: HasHistory, config: RunnableConfig) -> dict[str, Any]:
    """Model use by stage, wall time by round, and reviews and replans where they happened.

    Returns:
        Plain data: ``stages`` (stage, steps, llm_calls, prompt_tokens, completion_tokens,
        seconds), ``round_seconds`` (wall time of each round by its ``round_seq``, as a string
        key, model calls included) and ``events`` (kind ``review`` or ``replan``, with
        ``after_round_seq``: 0 before the first round).
    """
    snapshots = list(graph.get_state_history(config))[::-1]  # oldest first
    return history_of(snapshots)


def history_of(snapshots: list[StateSnapshot]) -> dict[str, Any]:
    """`run_history` from checkpoints, oldest first."""
    stages: dict[str, dict[str, Any]] = {}
    round_seconds: dict[str, float] = {}
    events: list[dict[str, Any]] = []
    for before, after in zip(snapshots, snapshots[1:], strict=False):
        names = sorted({task.name for task in before.tasks}) or sorted(before.next)
        if not names or names == ["__start__"]:
            continue
        a, b = before.values or {}, after.values or {}
        seconds = _seconds(before.created_at, after.created_at)
        grown = {key: max(0, int(b.get(key) or 0) - int(a.get(key) or 0)) for key in COUNTERS}
        if "human_review" in names:
            _add(stages, "+".join(names), grown, 0.0)
            events.append(_review(a, b, seconds))
            continue  # time spent waiting for a person is no stage's work
        for stage, use, took, round_seq in _split(names, a, b, grown, seconds):
            _add(stages, stage, use, took)
            if set(stage.split("+")) <= ROUND_NODES and round_seq:
                key = str(round_seq)
                round_seconds[key] = round_seconds.get(key, 0.0) + took
        if "replan" in names:
            events.append(_replan(a, b))
    order = {name: i for i, name in enumerate(STAGE_ORDER)}
    rows = sorted(stages.values(), key=lambda r: (order.get(r["stage"], len(order)), r["stage"]))
    for row in rows:
        row["steps"] = row.pop("step_count")
        row["seconds"] = round(row["seconds"], 3)
    return {
        "stages": rows,
        "round_seconds": {k: round(v, 3) for k, v in round_seconds.items()},
        "events": events,
    }


def _add(
    stages: dict[str, dict[str, Any]], stage: str, use: Mapping[str, int], took: float
) -> None:
    row = stages.setdefault(stage, {"stage": stage, "seconds": 0.0, **dict.fromkeys(COUNTERS, 0)})
    for key in COUNTERS:
        row[key] += use[key]
    row["seconds"] += took


def _split(
    names: list[str],
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    grown: dict[str, int],
    seconds: float,
) -> list[tuple[str, dict[str, int], float, Any]]:
    """A super-step's use and time, by stage, each with the round it belongs to.

    Each stage is its own step. Threads of versions that ran several stages in one step say
    what each but the last spent (``chained_use``); the last has the rest. Older ones have a
    judge's use in the round it judged (``judge_use``), and anything more is the next plan's
    (also a plan that came to nothing, which leaves the round number as it was) or the
    summary's.
    """
    chain = b.get("chained_use") or []
    if len(names) == 1 and chain and chain != a.get("chained_use") and chain[0]["stage"] in names:
        return _split_chain(chain, grown, seconds, a, b)
    judged = (b.get("rounds") or [{}])[-1]
    use = judged.get("judge_use")
    summarized = b.get("final_summary") is not None and a.get("final_summary") is None
    grown = {key: int(grown.get(key, 0)) for key in COUNTERS}  # a thread's older counters too
    planned = use and any(grown[key] > int(use.get(key, 0)) for key in COUNTERS)
    if names != ["judge"] or not use or not (planned or summarized):
        return [("+".join(names), grown, seconds, b.get("round_seq"))]
    mine = {key: min(grown[key], int(use.get(key, 0))) for key in COUNTERS}
    rest = {key: grown[key] - mine[key] for key in COUNTERS}
    took = min(seconds, float(use.get("seconds", 0.0)))
    after = ("summarize", None) if summarized else ("plan", b.get("round_seq"))
    return [
        ("judge", mine, took, judged.get("round_seq")),
        (after[0], rest, seconds - took, after[1]),
    ]


def _split_chain(
    chain: list[dict[str, Any]],
    grown: dict[str, int],
    seconds: float,
    a: Mapping[str, Any],
    b: Mapping[str, Any],
) -> list[tuple[str, dict[str, int], float, Any]]:
    """A step of chained stages: each but the last as it said, the rest the last's.

    A judge's part belongs to the round it judged, the one current before the step.
    """
    parts: list[tuple[str, dict[str, int], float, Any]] = []
    left, time_left = {key: int(grown.get(key, 0)) for key in COUNTERS}, seconds
    for said in chain[:-1]:
        mine = {key: min(left[key], int(said.get(key, 0))) for key in COUNTERS}
        took = min(time_left, float(said.get("seconds", 0.0)))
        judged = a.get("round_seq") if said["stage"] == "judge" else None
        parts.append((str(said["stage"]), mine, took, judged))
        left = {key: left[key] - mine[key] for key in COUNTERS}
        time_left -= took
    return [*parts, (str(chain[-1]["stage"]), left, time_left, b.get("round_seq"))]


def _seconds(start: str | None, end: str | None) -> float:
    if not start or not end:
        return 0.0
    return max(0.0, (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())


def _phase_id(values: Mapping[str, Any]) -> str:
    phases = values.get("phases") or []
    index = int(values.get("phase_index") or 0)
    return str(phases[index]["id"]) if index < len(phases) else ""


def _review(a: Mapping[str, Any], b: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    """A review the run paused for, and how it was answered."""
    pending = a.get("pending_review") or {}
    answered = b.get("last_review") or {}
    still = b.get("pending_review") or {}
    if still.get("error"):
        action = f"answer did not fit: {still['error']}"
    else:
        action = str(answered.get("action") or "answered")
    return {
        "kind": "review",
        "review": str(pending.get("kind") or answered.get("kind") or "review"),
        "action": action,
        "after_round_seq": int(a.get("round_seq") or 0),
        "phase_id": _phase_id(a),
        "waited_s": round(seconds, 3),
    }


def _replan(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """A replan: why it ran (as the replan node reads it) and what came of it."""
    judgement = a.get("judgement") or {}
    reason = (
        a.get("replan_reason")
        or a.get("reflection_note")
        or judgement.get("failed_reason")
        or judgement.get("user_summary")
        or ""
    )
    new_fallbacks = (b.get("fallbacks") or [])[len(a.get("fallbacks") or []) :]
    if b.get("stop_reason") == "done" and b.get("final_response"):
        outcome = "declared the work done"
    elif any(f.get("stage") == "replan" for f in new_fallbacks):
        outcome = "no usable answer: kept the remaining phases"
    elif b.get("phases") != a.get("phases"):
        index = int(b.get("phase_index") or 0)
        names = [f"{p['id']} {p['name']}" for p in (b.get("phases") or [])[index:]]
        outcome = "new phases: " + (", ".join(names) or "none")
    else:
        outcome = "no change"
    return {
        "kind": "replan",
        "after_round_seq": int(a.get("round_seq") or 0),
        "phase_id": _phase_id(a),
        "reason": str(reason),
        "outcome": outcome,
    }
