"""What vouches for a run's deliverables (SPEC section 1): records made by code."""

from typing import Literal

# pydantic reads only typing_extensions' TypedDict on Python 3.11 (the output schema holds these)
from typing_extensions import TypedDict

VouchedBy = Literal["checks", "partial", "presence", "judge"]


class DeliverableEvidence(TypedDict):
    """One deliverable and what vouches for it."""

    path: str
    """The file, relative to the workspace."""
    vouched_by: VouchedBy
    """checks: a passing check pins its whole content; partial: passing checks find texts in it
    (whether anything is missing rests on the judge's word); presence: checks say only that it
    is there (its content rests on the judge's word); judge: no passing check names it."""
    checks: list[str]
    """The passing checks that name it, content checks first."""
    failing: list[str]
    """The checks that name it and fail."""
    exists: bool
    """Whether the file is there when the run ends."""


class Evidence(TypedDict):
    """What vouches for a run's outcome, deliverable by deliverable."""

    verified: bool
    """True when checks of code pin the whole content of every deliverable and all pass (for a run
    without a deliverable file: a command check reads its output); false when any rests on the
    judge's word."""
    files: list[DeliverableEvidence]
    """Each deliverable: a file the run wrote, or one the request names that was not there."""
