"""Pydantic schemas of a round's two stages: `plan`'s `RoundPlan` and `judge`'s `Judgement`.

A round plans tool calls (`Task`s), runs them and is judged task by task (`TaskEvaluation`);
the run's other stages (analyse, phase_plan, replan, summarize) are in ``schemas.py``. As there,
limits that depend on the settings (which tools exist, how many tasks a round allows, whether a
person can be asked) are checked against a validation context, so the model is re-asked with the
exact complaint.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal, get_args

from pydantic import Field, ValidationInfo, field_validator, model_validator

from phasegraph.state.references import linked
from phasegraph.state.result import Result, at_most, number_repeated_ids, renamed

MAX_TASKS_PER_ROUND = 8

NextAction = Literal["continue_phase", "end_phase", "retry_failed", "replan", "ask_user"]
NEXT_ACTIONS: tuple[str, ...] = get_args(NextAction)


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
        linked(tasks, [tasks] * len(tasks))  # an argument "$t1" is t1's output: t1 goes first
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
