"""Pydantic schemas of every stage's structured result (SPEC section 1).

Each LLM stage is one forced function call; the function's parameters are the JSON schema of one
of these models and its arguments are validated with it. Limits that depend on the settings
(which tools exist, how many tasks or phases a run allows) are checked against a validation
context, so the model is re-asked with the exact complaint.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal, get_args

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from phasegraph.state.checks import (
    CHECK,
    MAX_PROPOSED_CHECKS,
    AnyCheck,
    first_error,
    normalise_check,
)
from phasegraph.state.result import (
    Result,
    at_most,
    clip,
    number_repeated_ids,
    phase_ids,
    renamed,
)

MAX_PHASES = 5
MAX_TASKS_PER_ROUND = 8
#: Rounds a phase is given when its plan does not say, and the most a plan may give it.
DEFAULT_ROUNDS = 2
MAX_ROUNDS = 4

NextAction = Literal["continue_phase", "end_phase", "retry_failed", "replan", "ask_user"]
NEXT_ACTIONS: tuple[str, ...] = get_args(NextAction)


class StructuredRequest(Result):
    """What `analyse` makes of the raw request; later stages see only this."""

    core_goal: str = Field(
        min_length=1,
        description="The goal of the request in one sentence.",
        json_schema_extra=at_most(400),
    )
    files_to_write: list[str] = Field(
        default_factory=list,
        description="The files the request asks to create or write, by name; empty if none.",
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
    checks: list[AnyCheck] = Field(
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
                kept.append(CHECK.validate_python(normalise_check(item)))
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
    name: str = Field(min_length=1, description="Short name.", json_schema_extra=at_most(100))
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
                data["name"] = clip(str(data["goal"]), 100)
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
    # An id used twice, or already a finished phase's (small models restart at p1 when they
    # replan), is numbered rather than sent back: asked again, a small model answers the same.
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
        # phase at all (small models put tool names here) orders nothing and is dropped; one
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


class Task(Result):
    """One tool call planned for a round."""

    id: str = Field(min_length=1, description="Unique id within the round, e.g. t1.")
    tool: str = Field(min_length=1, description="Name of one of the listed tools.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")
    depends_on: list[str] = Field(
        default_factory=list, description="Ids of tasks of this round that must finish first."
    )
    # After the call: the round's reasoning, written first, says what it wants done (see
    # `phasegraph.nodes.plan.plan_parameters`).
    purpose: str = Field(
        default="",
        description="Why this call helps the phase goal.",
        json_schema_extra=at_most(200),
    )
    justification: str | None = Field(
        default=None, description="Only to ask a person for a tool outside the allowed list."
    )

    @model_validator(mode="before")
    @classmethod
    def _natural(cls, data: Any) -> Any:
        # seed 003 writes a task's arguments as "args"
        return renamed(data, args="arguments")


class RoundPlan(Result):
    """What `plan` returns: the tool calls of one round."""

    # Before the tasks: a model that decodes in order first says what the earlier rounds and the
    # checks show and what is still missing, then picks the calls for it (see `plan`).
    reasoning: str = Field(
        default="",
        description="What earlier rounds and the checks show, and what this round must do next, "
        "in a sentence or two.",
        json_schema_extra=at_most(300),
    )
    tasks: list[Task] = Field(min_length=1, max_length=MAX_TASKS_PER_ROUND)

    @model_validator(mode="before")
    @classmethod
    def _natural(cls, data: Any) -> Any:
        # seed 000 calls a round's tasks "steps" and gives them no ids: they are numbered.
        data = renamed(data, steps="tasks")
        if isinstance(data, dict) and isinstance(data.get("tasks"), list):
            data = {
                **data,
                "tasks": [
                    {**t, "id": str(n)} if isinstance(t, dict) and t.get("id") in (None, "") else t
                    for n, t in enumerate(data["tasks"], start=1)
                ],
            }
        return data

    @field_validator("tasks")
    @classmethod
    def _tasks_ok(cls, tasks: list[Task], info: ValidationInfo) -> list[Task]:
        ctx = info.context or {}
        limit = min(int(ctx.get("max_tasks", MAX_TASKS_PER_ROUND)), MAX_TASKS_PER_ROUND)
        if len(tasks) > limit:
            raise ValueError(f"at most {limit} tasks per round, got {len(tasks)}")
        # Small models give every task of a round the same id (often the phase's) and name it
        # in depends_on. Read the way a person would: a dependency on a repeated id means the
        # tasks of that id listed before this one; the ids are then numbered apart.
        counts = Counter(t.id for t in tasks)
        before: list[list[Task]] = []
        for n, task in enumerate(tasks):
            before.append(
                [
                    other
                    for d in dict.fromkeys(task.depends_on)
                    for other in (tasks[:n] if counts[d] > 1 else tasks)
                    if other.id == d and other is not task
                ]
            )
        number_repeated_ids(tasks, reserved=set())
        for task, waits_for in zip(tasks, before, strict=True):
            # As with phases: a name that is no other task of the round (small models put phase
            # ids and tool names here) orders nothing, so it is dropped, not sent back.
            task.depends_on = [other.id for other in waits_for]
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


#: A task's quality when the judge gives none: what its status says.
QUALITY_BY_STATUS = {"done": 10, "partial": 5, "failed": 0}


class TaskEvaluation(Result):
    """The judge's view of one task."""

    task_id: str
    status: Literal["done", "failed", "partial"]
    quality: int = Field(ge=0, le=10)
    comment: str = Field(default="", json_schema_extra=at_most(200))

    @model_validator(mode="before")
    @classmethod
    def _natural(cls, data: Any) -> Any:
        # The seeds name it quality_score, a number from 0 to 10 (8.5 included).
        data = renamed(data, quality_score="quality")
        if not isinstance(data, dict):
            return data
        quality = data.get("quality")
        if quality is None:
            quality = QUALITY_BY_STATUS.get(str(data.get("status")), 0)
        elif isinstance(quality, float):
            quality = round(quality)
        return {**data, "quality": quality}


class Judgement(Result):
    """What `judge` returns after a round."""

    task_evaluation: list[TaskEvaluation] = Field(default_factory=list)
    # What the round achieved comes before the verdict: a model that decodes in order states
    # the facts, then rates them.
    user_summary: str = Field(
        min_length=10,
        description="What the round achieved, for a person.",
        json_schema_extra=at_most(300),
    )
    phase_completion_rate: float = Field(
        ge=0.0, le=1.0, description="How much of the phase goal is done, from 0.0 to 1.0."
    )
    phase_completed: bool
    internal_analysis: str = Field(default="", json_schema_extra=at_most(600))
    next_action: NextAction
    failed_reason: str | None = None
    question: str | None = Field(default=None, description="Required when next_action is ask_user.")

    @model_validator(mode="before")
    @classmethod
    def _natural(cls, data: Any) -> Any:
        # The seeds' judge lists completed_tasks and failed_tasks instead of evaluations, and
        # may leave out the completion rate: it is then what the lists and the verdict say.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        done = data.get("completed_tasks") or []
        failed = data.get("failed_tasks") or []
        if not data.get("task_evaluation") and (done or failed):
            data["task_evaluation"] = [
                *({"task_id": t, "status": "done"} for t in done if not isinstance(t, dict)),
                *({"task_id": t, "status": "failed"} for t in failed if not isinstance(t, dict)),
            ]
        if data.get("phase_completion_rate") is None:
            if data.get("phase_completed") is True:
                data["phase_completion_rate"] = 1.0
            elif isinstance(done, list) and isinstance(failed, list) and (done or failed):
                data["phase_completion_rate"] = round(len(done) / (len(done) + len(failed)), 2)
            else:
                data["phase_completion_rate"] = 0.0
        return data

    @field_validator("phase_completion_rate", mode="before")
    @classmethod
    def _percent_as_fraction(cls, value: Any) -> Any:
        # Models often answer a rate as a percentage (80 for 0.8); that is unambiguous above 1.
        if isinstance(value, int | float) and not isinstance(value, bool) and 1 < value <= 100:
            return value / 100
        return value

    @model_validator(mode="after")
    def _question_for_ask_user(self, info: ValidationInfo) -> Judgement:
        if self.next_action != "ask_user" or (self.question and self.question.strip()):
            return self
        if (info.context or {}).get("can_ask", True):
            raise ValueError("next_action ask_user needs a question")
        # Nobody can be asked in this run: the answer means "this plan does not fit".
        self.next_action = "replan"
        return self


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


class Summary(Result):
    """What `summarize` returns: the final written summary."""

    final_summary: str = Field(min_length=1, description="The summary in Markdown.")
    highlights: list[str] = Field(default_factory=list)
    unfinished: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    quality_assessment: str = ""


