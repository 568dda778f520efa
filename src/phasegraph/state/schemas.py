"""Pydantic schemas of every stage's structured result (SPEC section 1).

Each LLM stage is one forced function call; the function's parameters are the JSON schema of one
of these models and its arguments are validated with it. Limits that depend on the settings
(which tools exist, how many tasks or phases a run allows) are checked against a validation
context, so the model is re-asked with the exact complaint.

Here: the run's stages (analyse, phase_plan, replan, summarize). A round's two stages (plan's
`RoundPlan`, judge's `Judgement`) are in ``round_schemas.py`` and re-exported here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from phasegraph.state.checks import (
    MAX_PROPOSED_CHECKS,
    PROPOSED,
    ProposedCheck,
    first_error,
    normalise_check,
)
from phasegraph.state.result import (
    Result,
    at_most,
    clip,
    list_at_most,
    number_repeated_ids,
    phase_ids,
    renamed,
    whole_sentences,
)

# The round's schemas were here before they had a module of their own: this import path keeps
# working for code written against it.
from phasegraph.state.round_schemas import MAX_TASKS_PER_ROUND as MAX_TASKS_PER_ROUND
from phasegraph.state.round_schemas import NEXT_ACTIONS as NEXT_ACTIONS
from phasegraph.state.round_schemas import QUALITY_BY_STATUS as QUALITY_BY_STATUS
from phasegraph.state.round_schemas import Judgement as Judgement
from phasegraph.state.round_schemas import NextAction as NextAction
from phasegraph.state.round_schemas import RoundPlan as RoundPlan
from phasegraph.state.round_schemas import Task as Task
from phasegraph.state.round_schemas import TaskEvaluation as TaskEvaluation

MAX_PHASES = 5
#: Rounds a phase is given when its plan does not say, and the most a plan may give it.
DEFAULT_ROUNDS = 2
MAX_ROUNDS = 4
#: How long a phase's name may be (the schema states it; a goal standing in for a name is cut).
NAME_CHARS = 100


class StructuredRequest(Result):
    """What `analyse` makes of the raw request; later stages see only this."""

    core_goal: str = Field(
        min_length=1,
        description="The goal of the request in one sentence.",
        json_schema_extra=at_most(400),
    )
    files_to_write: list[str] = Field(
        default_factory=list,
        description="The files the request asks to create, write or change; empty if none.",
    )
    requirements: list[str] = Field(default_factory=list, description="What must be delivered.")
    constraints: list[str] = Field(default_factory=list, description="Limits the work must keep.")
    complexity: Literal["simple", "medium", "complex"] = Field(description="Overall difficulty.")
    task_type: str = Field(
        default="other",
        min_length=1,
        description="Kind of work, e.g. research, coding, writing, analysis.",
    )
    estimated_phases: int = Field(ge=1, le=MAX_PHASES, description="Phases the work needs.")
    clarification_needed: bool = Field(
        default=False, description="True only if the request cannot be worked without an answer."
    )
    clarification_questions: list[str] = Field(
        default_factory=list, description="Questions for the person, when clarification is needed."
    )
    checks: list[ProposedCheck] = Field(
        default_factory=list,
        description="Facts that show the deliverables the request names are there: a file it "
        "asks to write exists, or contains a text the request gives. Empty if it names none.",
        # stated to the model; the analysis keeps at most this many usable ones
        json_schema_extra={"maxItems": MAX_PROPOSED_CHECKS},
    )
    check_notes: SkipJsonSchema[list[str]] = Field(default_factory=list, exclude=True)
    """Why proposed checks were dropped; filled by validation, never asked of the model."""

    @model_validator(mode="before")
    @classmethod
    def _usable_checks(cls, data: Any) -> Any:
        # A proposed check that cannot be read is dropped with a note, not a reason to ask the
        # whole analysis again (SPEC section 11): the request is still understood without it.
        if not isinstance(data, dict) or not isinstance(data.get("checks"), list):
            return data
        kept, notes = [], []
        for item in data["checks"]:
            try:
                kept.append(PROPOSED.validate_python(normalise_check(item)))
            except (ValidationError, TypeError, AttributeError) as exc:
                notes.append(f"dropped the proposed check {item!r}: {first_error(exc)}")
        return {**data, "checks": kept, "check_notes": notes}

    @model_validator(mode="after")
    def _questions_when_needed(self) -> StructuredRequest:
        if self.clarification_needed and not self.clarification_questions:
            raise ValueError("clarification_needed is true but clarification_questions is empty")
        return self


class Phase(Result):
    """One phase of the work."""

    id: str = Field(min_length=1, description="Short unique id, e.g. p1.")
    name: str = Field(
        min_length=1, description="Short name.", json_schema_extra=at_most(NAME_CHARS)
    )
    goal: str = Field(
        min_length=1, description="What the phase must achieve.", json_schema_extra=at_most(400)
    )
    estimated_rounds: int = Field(
        default=DEFAULT_ROUNDS,
        ge=1,
        le=MAX_ROUNDS,
        description="Plan-execute-judge rounds expected.",
    )
    dependencies: list[str] = Field(
        default_factory=list, description="Ids of earlier phases this one needs."
    )
    allowed_tools: list[str] = Field(
        default_factory=list, description="Tools this phase may use; empty means all allowed."
    )
    checks: list[str] = Field(
        default_factory=list, description="Ids of the checks this phase must make true."
    )

    @model_validator(mode="before")
    @classmethod
    def _natural(cls, data: Any) -> Any:
        # A phase given as a sentence (the seeds' replanner lists steps as strings) is a phase
        # with that goal; a name or a goal alone stands for both.
        if isinstance(data, str):
            data = {"goal": data}
        if isinstance(data, dict):
            data = dict(data)
            if not data.get("name") and data.get("goal"):
                data["name"] = clip(str(data["goal"]), NAME_CHARS)
            if not data.get("goal") and data.get("name"):
                data["goal"] = data["name"]
        return data


def check_phase_list(
    phases: list[Phase], info: ValidationInfo, *, number_repeats: bool = True
) -> list[Phase]:
    """Shared checks of a phase list: count, unique ids, dependencies on earlier phases only.

    A model's repeated ids are numbered (``number_repeats``); a person's are an error to fix.
    """
    ctx = info.context or {}
    limit = min(int(ctx.get("max_phases", MAX_PHASES)), MAX_PHASES)
    if len(phases) > limit:
        raise ValueError(f"at most {limit} phases are allowed, got {len(phases)}")
    done_ids = set(ctx.get("done_phase_ids", ()))
    # An id used twice, or already a finished phase's (a model may restart at p1 when it
    # replans), is numbered rather than sent back: asked again, a model decoding greedily
    # answers the same.
    # Ids must stay unique because reports and prompts group rounds and outcomes by them.
    # Dependencies only order phases, and both phases of a shared id come earlier, so the name
    # a dependency gives keeps a meaning whichever it meant.
    if number_repeats:
        number_repeated_ids(phases, reserved=done_ids)
    listed = {phase.id for phase in phases}
    seen: set[str] = set()
    for phase in phases:
        if phase.id in seen or phase.id in done_ids:
            raise ValueError(f"phase id {phase.id!r} is used twice")
        # Phases run in list order, so a dependency only checks that order. A name that is no
        # phase at all (a model may put tool names here) orders nothing and is dropped; one
        # on a later phase means the order is wrong, and the model is asked again.
        phase.dependencies = [d for d in phase.dependencies if d in listed or d in done_ids]
        later = [d for d in phase.dependencies if d not in seen and d not in done_ids]
        if later:
            raise ValueError(f"phase {phase.id!r} depends on later phases {later}")
        seen.add(phase.id)
    return phases


class PhasePlan(Result):
    """What `phase_plan` returns: the phases of the work."""

    phases: list[Phase] = Field(min_length=1, max_length=MAX_PHASES)
    execution_strategy: str = Field(default="", description="How the phases fit together.")

    @field_validator("phases", mode="before")
    @classmethod
    def _numbered(cls, phases: Any) -> Any:
        return phase_ids(phases)

    @field_validator("phases")
    @classmethod
    def _phases_ok(cls, phases: list[Phase], info: ValidationInfo) -> list[Phase]:
        return check_phase_list(phases, info)


class Replan(Result):
    """What `replan` returns: new remaining phases, or the work is done."""

    status: Literal["replanned", "done"]
    phases: list[Phase] = Field(default_factory=list, description="New remaining phases.")
    response: str | None = Field(default=None, description="The answer, when status is done.")

    @model_validator(mode="before")
    @classmethod
    def _natural(cls, data: Any) -> Any:
        # seed 002's replanner answers {"status", "plan": [steps as sentences], "response"}
        return renamed(data, plan="phases")

    @field_validator("phases", mode="before")
    @classmethod
    def _numbered(cls, phases: Any) -> Any:
        return phase_ids(phases)

    @field_validator("phases")
    @classmethod
    def _phases_ok(cls, phases: list[Phase], info: ValidationInfo) -> list[Phase]:
        return check_phase_list(phases, info)

    @model_validator(mode="after")
    def _status_fields(self) -> Replan:
        if self.status == "replanned" and not self.phases:
            raise ValueError("status replanned needs a non-empty phases list")
        if self.status == "done" and not (self.response and self.response.strip()):
            raise ValueError("status done needs a response")
        return self


# Bounds of a summary's parts, in characters (see `at_most`): unbounded, a summary decoded under
# a grammar can run to the token limit inside final_summary, attempt after attempt, before the
# plain-text fallback. All parts at their longest (about 860 characters, some
# 220 tokens) fit in one answer of the 1,024-token limit, so a grammar closes them in time; each
# is below the most a grammar takes (`local_format.GRAMMAR_MAX_BOUND`). The summary says what the
# facts mean; code adds the facts themselves, so its prose is bounded short: a local model's
# answer costs a second for every fifteen or so tokens on 2 cores (docs/benchmarks.md). A part
# the bound cut mid-sentence keeps its whole sentences (`whole_sentences`).
SUMMARY_CHARS = 300
SUMMARY_ITEMS, SUMMARY_ITEM_CHARS = 2, 80
ASSESSMENT_CHARS = 80


class Summary(Result):
    """What `summarize` returns: the final written summary."""

    final_summary: str = Field(
        min_length=1,
        description="The summary in Markdown.",
        json_schema_extra=at_most(SUMMARY_CHARS),
    )
    highlights: list[str] = Field(
        default_factory=list, json_schema_extra=list_at_most(SUMMARY_ITEMS, SUMMARY_ITEM_CHARS)
    )
    unfinished: list[str] = Field(
        default_factory=list, json_schema_extra=list_at_most(SUMMARY_ITEMS, SUMMARY_ITEM_CHARS)
    )
    next_steps: list[str] = Field(
        default_factory=list, json_schema_extra=list_at_most(SUMMARY_ITEMS, SUMMARY_ITEM_CHARS)
    )
    quality_assessment: str = Field(default="", json_schema_extra=at_most(ASSESSMENT_CHARS))

    @model_validator(mode="after")
    def _ends_at_whole_sentences(self) -> Summary:
        """Each part cut at its bound mid-sentence ends at its last whole sentence."""
        self.final_summary = whole_sentences(self.final_summary, SUMMARY_CHARS)
        for items in (self.highlights, self.unfinished, self.next_steps):
            items[:] = [whole_sentences(item, SUMMARY_ITEM_CHARS) for item in items]
        self.quality_assessment = whole_sentences(self.quality_assessment, ASSESSMENT_CHARS)
        return self
