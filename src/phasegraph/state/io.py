"""What a caller gives a run and what it gets back: the graph's declared input and output.

LangGraph Studio draws its forms from these (pydantic reads their attribute docstrings), and
``invoke`` gives back the output's fields; the whole state is ``get_state(config).values``.
"""

from typing import Any, NotRequired

from pydantic import ConfigDict

# pydantic reads only typing_extensions' TypedDict on Python 3.11
from typing_extensions import TypedDict

from phasegraph.state.evidence import Evidence
from phasegraph.state.state import CheckRecord, PhaseOutcome, RunError, RunStatus


class InputState(TypedDict):
    """What a caller gives to start a run."""

    __pydantic_config__ = ConfigDict(use_attribute_docstrings=True)  # type: ignore[misc]

    request: str
    """What to do, in words (only the analysis reads it; every later stage reads its goal)."""
    checks: NotRequired[list[str | dict[str, Any]]]
    """What done means, checked by code: exists:PATH, contains:PATH:TEXT, matches:PATH:REGEX,
    equals:PATH:TEXT (its whole text), number:PATH, keeps:PATH, copy:PATH:SOURCE or cmd:COMMAND
    (optionally cmd:COMMAND => TEXT), or the same as objects."""


class OutputState(TypedDict, total=False):
    """What a run gives back: how it ended, its summary, its checks, its phases."""

    __pydantic_config__ = ConfigDict(use_attribute_docstrings=True)  # type: ignore[misc]

    status: RunStatus
    """Where the run stands: completed, incomplete, budget_exhausted, rejected, failed, or
    running / awaiting_review while it has not ended."""
    final_summary: str | None
    """The written summary in Markdown; present whenever the run ended."""
    summary: dict[str, Any] | None
    """The summary's parts: highlights, unfinished, next steps, and how it was made."""
    shortfalls: list[str]
    """What kept an ended run from `completed`: why it stopped before its end, if it did, and
    the phases it left; phases that ended short; checks that fail."""
    checks: list[CheckRecord]
    """Every check with its latest result and what code saw."""
    evidence: Evidence
    """What vouches for each deliverable: a check of code, or only the judge's word."""
    phase_outcomes: list[PhaseOutcome]
    """How each finished phase ended."""
    pending_review: dict[str, Any] | None
    """What the person is asked while the run is paused, else None."""
    workspace: str
    """The folder the run works in."""
    error: RunError | None
    """The exception that stopped the run, if one did."""
    request: str
    """The request the run was given."""
    step_count: int
    """Steps the run spent of its budget."""
