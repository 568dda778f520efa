"""Progress events, sent through LangGraph's custom stream mode (SPEC section 9).

Every event is a dict with an ``event`` name and its data; read them with
``graph.stream(..., stream_mode="custom")`` (or together with other modes). The CLI, Studio and
code all see the same events.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

ProgressEvent = Literal[
    "stage_started",
    "analysed",
    "phases_planned",
    "phase_started",
    "round_planned",
    "task_started",
    "task_finished",
    "judged",
    "phase_ended",
    "reflection_triggered",
    "replanned",
    "awaiting_review",
    "review_answered",
    "stage_failed",
    "stage_fallback",
    "checks_evaluated",
    "summary_ready",
]


def emit(runtime: Runtime[Any] | None, event: ProgressEvent, **data: Any) -> None:
    """Send one progress event; a no-op when nobody streams custom events."""
    if runtime is None:
        return
    runtime.stream_writer({"event": event, **data})
