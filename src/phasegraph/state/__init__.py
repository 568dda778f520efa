"""Typed state of a run and the pydantic schemas of every stage's result."""

from phasegraph.state.checks import AnyCheck, Check
from phasegraph.state.evidence import DeliverableEvidence, Evidence
from phasegraph.state.facts import RoundFacts
from phasegraph.state.feedback import ACTIONS_BY_KIND, Feedback
from phasegraph.state.io import InputState, OutputState
from phasegraph.state.round_schemas import Judgement, RoundPlan, Task
from phasegraph.state.schemas import (
    Phase,
    PhasePlan,
    Replan,
    StructuredRequest,
    Summary,
)
from phasegraph.state.state import (
    CheckRecord,
    CheckSource,
    Fallback,
    Limits,
    PhaseOutcome,
    Reflection,
    RoundRecord,
    RunError,
    RunStatus,
    State,
    StopReason,
    TaskInput,
    TaskOutcome,
    TaskResult,
    ToolViolation,
)

__all__ = [
    "ACTIONS_BY_KIND",
    "AnyCheck",
    "Check",
    "DeliverableEvidence",
    "Evidence",
    "CheckRecord",
    "CheckSource",
    "Fallback",
    "Feedback",
    "InputState",
    "Judgement",
    "Limits",
    "OutputState",
    "Phase",
    "PhaseOutcome",
    "PhasePlan",
    "Reflection",
    "Replan",
    "RoundFacts",
    "RoundPlan",
    "RoundRecord",
    "RunError",
    "RunStatus",
    "State",
    "StopReason",
    "StructuredRequest",
    "Summary",
    "Task",
    "TaskInput",
    "TaskOutcome",
    "TaskResult",
    "ToolViolation",
]
