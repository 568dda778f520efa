"""Pydantic schemas of every stage's structured result (SPEC section 1) and of review feedback.

Each LLM stage is one forced function call; the function's parameters are the JSON schema of one
of these models and its arguments are validated with it. Limits that depend on the settings
(which tools exist, how many tasks or phases a run allows) are checked against a validation
context, so the model is re-asked with the exact complaint.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence, Set
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

MAX_PHASES = 5
MAX_TASKS_PER_ROUND = 8

NextAction = Literal["continue_phase", "end_phase", "retry_failed", "replan", "ask_user"]


def _at_most(chars: int) -> dict[str, Any]:
    """A length the JSON schema states for a free-text field, without validation enforcing it.

    Decoded under a grammar, a small model can repeat itself inside a string until the answer is
    cut off (the 0.5B default once filled a judge's user_summary to its token limit, three
    attempts running); with ``maxLength`` the grammar closes the string. A longer answer from a
    model that reads the schema as a hint is still taken: refusing it would cost a step.
    """
    return {"maxLength": chars}


class _Result(BaseModel):
    """Base of the stage results: extra fields a model adds are tolerated and dropped."""

    model_config = ConfigDict(extra="ignore")


class StructuredRequest(_Result):
    """What `analyse` makes of the raw request; later stages see only this."""

    core_goal: str = Field(
        min_length=1,
        description="The goal of the request in one sentence.",
        json_schema_extra=_at_most(400),
    )
    requirements: list[str] = Field(default_factory=list, description="What must be delivered.")
    constraints: list[str] = Field(default_factory=list, description="Limits the work must keep.")
    complexity: Literal["simple", "medium", "complex"] = Field(description="Overall difficulty.")
    task_type: str = Field(
        min_length=1, description="Kind of work, e.g. research, coding, writing, analysis."
    )
    estimated_phases: int = Field(ge=1, le=MAX_PHASES, description="Phases the work needs.")
    clarification_needed: bool = Field(
        default=False, description="True only if the request cannot be worked without an answer."
    )
    clarification_questions: list[str] = Field(
        default_factory=list, description="Questions for the person, when clarification is needed."
    )

    @model_validator(mode="after")
    def _questions_when_needed(self) -> StructuredRequest:
        if self.clarification_needed and not self.clarification_questions:
            raise ValueError("clarification_needed is true but clarification_questions is empty")
        return self


class Phase(_Result):
    """One phase of the work."""

    id: str = Field(min_length=1, description="Short unique id, e.g. p1.")
    name: str = Field(min_length=1, description="Short name.", json_schema_extra=_at_most(100))
    goal: str = Field(
        min_length=1, description="What the phase must achieve.", json_schema_extra=_at_most(400)
    )
    estimated_rounds: int = Field(ge=1, le=4, description="Plan-execute-judge rounds expected.")
    dependencies: list[str] = Field(
        default_factory=list, description="Ids of earlier phases this one needs."
    )
    allowed_tools: list[str] = Field(
        default_factory=list, description="Tools this phase may use; empty means all allowed."
    )


def _check_phase_list(
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
    # An id used twice, or already a finished phase's (small models restart at p1 when they
    # replan), is numbered rather than sent back: asked again, a small model answers the same.
    # Ids must stay unique because reports and prompts group rounds and outcomes by them.
    # Dependencies only order phases, and both phases of a shared id come earlier, so the name
    # a dependency gives keeps a meaning whichever it meant.
    if number_repeats:
        _number_repeated_ids(phases, reserved=done_ids)
    listed = {phase.id for phase in phases}
    seen: set[str] = set()
    for phase in phases:
        if phase.id in seen or phase.id in done_ids:
            raise ValueError(f"phase id {phase.id!r} is used twice")
        # Phases run in list order, so a dependency only checks that order. A name that is no
        # phase at all (small models put tool names here) orders nothing and is dropped; one
        # on a later phase means the order is wrong, and the model is asked again.
        phase.dependencies = [d for d in phase.dependencies if d in listed or d in done_ids]
        later = [d for d in phase.dependencies if d not in seen and d not in done_ids]
        if later:
            raise ValueError(f"phase {phase.id!r} depends on later phases {later}")
        seen.add(phase.id)
    return phases


class PhasePlan(_Result):
    """What `phase_plan` returns: the phases of the work."""

    phases: list[Phase] = Field(min_length=1, max_length=MAX_PHASES)
    execution_strategy: str = Field(default="", description="How the phases fit together.")

    @field_validator("phases")
    @classmethod
    def _phases_ok(cls, phases: list[Phase], info: ValidationInfo) -> list[Phase]:
        return _check_phase_list(phases, info)


class Task(_Result):
    """One tool call planned for a round."""

    id: str = Field(min_length=1, description="Unique id within the round, e.g. t1.")
    # Before the tool: a model that decodes in order says what it wants done, then picks the
    # tool for it (see `phasegraph.nodes.plan.plan_parameters`).
    purpose: str = Field(
        default="",
        description="Why this call helps the phase goal.",
        json_schema_extra=_at_most(200),
    )
    tool: str = Field(min_length=1, description="Name of one of the listed tools.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")
    depends_on: list[str] = Field(
        default_factory=list, description="Ids of tasks of this round that must finish first."
    )
    justification: str | None = Field(
        default=None, description="Only to ask a person for a tool outside the allowed list."
    )


class RoundPlan(_Result):
    """What `plan` returns: the tool calls of one round."""

    tasks: list[Task] = Field(min_length=1, max_length=MAX_TASKS_PER_ROUND)
    reasoning: str = Field(
        default="",
        description="Why these tasks, in a sentence or two.",
        json_schema_extra=_at_most(400),
    )

    @field_validator("tasks")
    @classmethod
    def _tasks_ok(cls, tasks: list[Task], info: ValidationInfo) -> list[Task]:
        ctx = info.context or {}
        limit = min(int(ctx.get("max_tasks", MAX_TASKS_PER_ROUND)), MAX_TASKS_PER_ROUND)
        if len(tasks) > limit:
            raise ValueError(f"at most {limit} tasks per round, got {len(tasks)}")
        # Within a round, depends_on decides what waits for what, so a dependency on a
        # repeated id cannot be resolved by numbering and is sent back.
        counts = Counter(t.id for t in tasks)
        named = {d for t in tasks for d in t.depends_on if counts[d] > 1}
        if named:
            raise ValueError(
                f"task ids must be unique; depends_on names repeated ids {sorted(named)}"
            )
        _number_repeated_ids(tasks, reserved=set())
        ids = {t.id for t in tasks}
        for task in tasks:
            # As with phases: a name that is no other task of the round (small models put phase
            # ids and tool names here) orders nothing, so it is dropped, not sent back.
            task.depends_on = [d for d in task.depends_on if d in ids and d != task.id]
        _reject_cycles(tasks)
        allowed = ctx.get("allowed_tools")
        if allowed is not None:
            for task in tasks:
                # A justified request for another tool is the permission path of SPEC
                # section 5, decided at execution; anything else is re-asked here.
                if task.tool not in allowed and not task.justification:
                    raise ValueError(
                        f"task {task.id!r} names tool {task.tool!r}, which is not available; "
                        f"use one of {sorted(allowed)}"
                    )
        return tasks


def _number_repeated_ids(items: Sequence[Phase] | Sequence[Task], reserved: Set[str]) -> None:
    """Give each id already used (earlier in the list, or in ``reserved``) a free suffix: t1-2."""
    taken = set(reserved) | {item.id for item in items}
    seen = set(reserved)
    for item in items:
        if item.id in seen:
            base, n = item.id, 2
            while f"{base}-{n}" in taken:
                n += 1
            item.id = f"{base}-{n}"
            taken.add(item.id)
        seen.add(item.id)


def _reject_cycles(tasks: list[Task]) -> None:
    deps = {t.id: set(t.depends_on) for t in tasks}
    resolved: set[str] = set()
    while deps:
        ready = [tid for tid, d in deps.items() if d <= resolved]
        if not ready:
            raise ValueError(f"depends_on forms a cycle among tasks {sorted(deps)}")
        for tid in ready:
            resolved.add(tid)
            del deps[tid]


class TaskEvaluation(_Result):
    """The judge's view of one task."""

    task_id: str
    status: Literal["done", "failed", "partial"]
    quality: int = Field(ge=0, le=10)
    comment: str = Field(default="", json_schema_extra=_at_most(200))


class Judgement(_Result):
    """What `judge` returns after a round."""

    task_evaluation: list[TaskEvaluation] = Field(default_factory=list)
    phase_completion_rate: float = Field(
        ge=0.0, le=1.0, description="How much of the phase goal is done, from 0.0 to 1.0."
    )
    phase_completed: bool
    internal_analysis: str = Field(default="", json_schema_extra=_at_most(600))
    user_summary: str = Field(
        min_length=10,
        description="What the round achieved, for a person.",
        json_schema_extra=_at_most(600),
    )
    next_action: NextAction
    failed_reason: str | None = None
    question: str | None = Field(default=None, description="Required when next_action is ask_user.")

    @field_validator("phase_completion_rate", mode="before")
    @classmethod
    def _percent_as_fraction(cls, value: Any) -> Any:
        # Models often answer a rate as a percentage (80 for 0.8); that is unambiguous above 1.
        if isinstance(value, int | float) and not isinstance(value, bool) and 1 < value <= 100:
            return value / 100
        return value

    @model_validator(mode="after")
    def _question_for_ask_user(self) -> Judgement:
        if self.next_action == "ask_user" and not (self.question and self.question.strip()):
            raise ValueError("next_action ask_user needs a question")
        return self


class Replan(_Result):
    """What `replan` returns: new remaining phases, or the work is done."""

    status: Literal["replanned", "done"]
    phases: list[Phase] = Field(default_factory=list, description="New remaining phases.")
    response: str | None = Field(default=None, description="The answer, when status is done.")

    @field_validator("phases")
    @classmethod
    def _phases_ok(cls, phases: list[Phase], info: ValidationInfo) -> list[Phase]:
        return _check_phase_list(phases, info)

    @model_validator(mode="after")
    def _status_fields(self) -> Replan:
        if self.status == "replanned" and not self.phases:
            raise ValueError("status replanned needs a non-empty phases list")
        if self.status == "done" and not (self.response and self.response.strip()):
            raise ValueError("status done needs a response")
        return self


class Summary(_Result):
    """What `summarize` returns: the final written summary."""

    final_summary: str = Field(min_length=1, description="The summary in Markdown.")
    highlights: list[str] = Field(default_factory=list)
    unfinished: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    quality_assessment: str = ""


# --- review feedback (SPEC section 6) ---------------------------------------------------------


class _Feedback(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Approve(_Feedback):
    """Accept the proposed plan as it is."""

    action: Literal["approve"]


class Reject(_Feedback):
    """Stop the run; the summary says why."""

    action: Literal["reject"]
    reason: str = Field(min_length=1)


class Edit(_Feedback):
    """Replace the proposed phases with the person's own list."""

    action: Literal["edit"]
    phases: list[Phase] = Field(min_length=1, max_length=MAX_PHASES)

    @field_validator("phases")
    @classmethod
    def _phases_ok(cls, phases: list[Phase], info: ValidationInfo) -> list[Phase]:
        return _check_phase_list(phases, info, number_repeats=False)


class Modify(_Feedback):
    """Ask for a new plan that takes the feedback into account."""

    action: Literal["modify"]
    feedback: str = Field(min_length=1)


class Answer(_Feedback):
    """Answer a clarification question."""

    action: Literal["answer"]
    answer: str = Field(min_length=1)


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
