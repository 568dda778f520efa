"""What a person answers to a pending review (SPEC section 6), validated before it is applied."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from phasegraph.state.schemas import MAX_PHASES, Phase, check_phase_list

#: A person's words: blanks alone say nothing, and are refused as an empty text is.
Words = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class _Feedback(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Approve(_Feedback):
    """Accept the proposed plan as it is."""

    action: Literal["approve"]


class Reject(_Feedback):
    """Stop the run; the summary says why."""

    action: Literal["reject"]
    reason: Words


class Edit(_Feedback):
    """Replace the proposed phases with the person's own list, and the checks if given."""

    action: Literal["edit"]
    phases: list[Phase] = Field(min_length=1, max_length=MAX_PHASES)
    checks: list[str | dict[str, Any]] | None = Field(
        default=None,
        description="The checks that replace the run's (as a caller gives them), numbered "
        "c1, c2, ... in order; None keeps the run's checks.",
    )

    @field_validator("phases")
    @classmethod
    def _phases_ok(cls, phases: list[Phase], info: ValidationInfo) -> list[Phase]:
        return check_phase_list(phases, info, number_repeats=False)


class Modify(_Feedback):
    """Ask for a new plan that takes the feedback into account."""

    action: Literal["modify"]
    feedback: Words


class Answer(_Feedback):
    """Answer a clarification question."""

    action: Literal["answer"]
    answer: Words


class Allow(_Feedback):
    """Permit a tool the constraints would refuse, for this task."""

    action: Literal["allow"]


class Deny(_Feedback):
    """Keep the tool refused."""

    action: Literal["deny"]


Feedback = Annotated[
    Approve | Reject | Edit | Modify | Answer | Allow | Deny, Field(discriminator="action")
]

ReviewKind = Literal["plan_review", "clarification", "replan_review", "tool_permission"]

#: Which answers each review kind accepts.
ACTIONS_BY_KIND: dict[str, tuple[str, ...]] = {
    "plan_review": ("approve", "edit", "modify", "reject"),
    "replan_review": ("approve", "edit", "modify", "reject"),
    "clarification": ("answer", "reject"),
    "tool_permission": ("allow", "deny"),
}
