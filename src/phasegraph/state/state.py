"""The typed state of a phasegraph run.

Everything in the state is plain JSON-like data (dicts, lists, strings, numbers) so that it
round-trips through any checkpointer with ``LANGGRAPH_STRICT_MSGPACK=true``, through the LangGraph
server and Studio's state editor alike. Stage results are stored as the ``model_dump()`` of their
pydantic schema (see ``schemas.py`` and ``round_schemas.py``); records made by code have
TypedDicts here.

Counters that several writers may bump in one step use an ``operator.add`` reducer, so nodes
return what they spent, not a new total.

The run's history (rounds, phase outcomes, reflections, refusals, clarifications) only ever
grows. A plain reducer channel would store the whole list again in every checkpoint, so a
thread's database would grow with the square of its steps; these lists are `DeltaChannel`s
(`history()`), whose checkpoints keep only what each step appended plus a periodic snapshot.
"""

# No postponed annotations here: LangGraph asks get_type_hints of State for every router and
# node when a graph is built, and string annotations were compiled and evaluated anew each time
# (half of build_graph's time, measured in bench's short-phase shape).
import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired

from langgraph.channels import DeltaChannel

# pydantic, which draws the input and output forms Studio shows, reads only typing_extensions'
# TypedDict on Python 3.11
from typing_extensions import TypedDict

from phasegraph.state.evidence import Evidence
from phasegraph.state.facts import RoundFacts

RunStatus = Literal["running", "awaiting_review", "completed", "incomplete",
                    "budget_exhausted", "rejected", "failed"]  # fmt: skip
StopReason = Literal["done", "budget", "rejected", "error", "stage_failed"]

TaskOutcome = Literal["ok", "failed", "timeout", "refused", "skipped", "interrupted"]


class Limits(TypedDict):
    """The run's contract, fixed when the run starts so a resume cannot widen it (SPEC 8)."""

    max_steps: int
    """Step budget of the whole run (SPEC section 3)."""
    review: str
    """Which reviews pause the run: none, plan, plan+replan or all."""
    max_replans: int
    """Cap on replans; past it a trigger asks the person or ends the phase."""
    extra_rounds_per_phase: int
    """A phase may run estimated_rounds plus this many rounds."""
    settings: NotRequired[dict[str, Any]]
    """Settings the run started with beyond the defaults: a resume that names none keeps them."""


class RunError(TypedDict):
    """An exception raised inside a node; the run then goes to `summarize` (SPEC section 2)."""

    node: str
    """Node that raised."""
    type: str
    """Exception class name."""
    message: str
    """Exception message, secrets never included."""


class TaskResult(TypedDict):
    """The outcome of one planned task, written by `execute` or `run_task`."""

    task_id: str
    """Id of the task in its round plan."""
    tool: str
    """Tool the task named."""
    arguments: dict[str, Any]
    """Arguments the task gave the tool."""
    status: TaskOutcome
    """What happened: ok, failed, timeout, refused, skipped or interrupted."""
    output: str
    """Tool output or error text, truncated with a marker."""
    duration_s: float
    """Wall time of the execution, 0 when it did not run."""
    wave: int
    """Which dispatch of the round ran it (tasks of one wave run at the same time)."""
    replayed: bool
    """True when the result came from the tool journal instead of a new execution."""
    written: NotRequired[list[str]]
    """Files the tool reported it wrote (a command's redirections), beside its declared one."""
    value: NotRequired[str]
    """The tool's whole value, kept when a later task of the round takes it (``$id``)."""
    error: NotRequired[RunError]
    """The exception the task's node raised: the run stops at the node after the wave."""


class TaskInput(TypedDict):
    """What `execute` gives one `run_task`: a task and where it belongs."""

    task: dict[str, Any]
    """The dumped `Task`."""
    phase_id: str
    """Phase of the round."""
    round_seq: int
    """Sequence number of the round in the run."""
    journal_key: NotRequired[str]
    """Key the task's execution is journalled under (`storage.journal.journal_key`)."""
    wave: int
    """Dispatch number within the round."""
    timeout_s: float
    """Seconds the tool may take: the per-task limit, cut to what is left of the round's."""
    workspace: NotRequired[str]
    """The folder the run works in, for a task whose run names none (`graph.folder`)."""
    arguments: NotRequired[dict[str, Any]]
    """The arguments the tool is given, where they differ from the task's (``$id`` resolved)."""
    keep_value: NotRequired[bool]
    """Whether a later task of the round takes this one's output as an argument (``$id``)."""


def merge_results(old: list[TaskResult], new: list[TaskResult]) -> list[TaskResult]:
    """Reducer of `results`: an empty list clears (a new round); results replace by task id."""
    if not new:
        return []
    merged = {r["task_id"]: r for r in old}
    merged.update({r["task_id"]: r for r in new})
    return list(merged.values())


#: The counters every stage adds to (`report.history` tells them by stage).
STAGE_COUNTERS = (
    "step_count",
    "llm_calls",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "prompt_ms",
    "answer_ms",
)


class RoundRecord(TypedDict):
    """One finished round: its plan, its results and the judge's view."""

    phase_id: str
    """Phase the round belonged to."""
    round: int
    """1-based number of the round within its phase."""
    round_seq: int
    """1-based number of the round within the run."""
    tasks: list[dict[str, Any]]
    """The round's planned tasks (dumped `Task`s)."""
    results: list[TaskResult]
    """One result per task."""
    judgement: dict[str, Any]
    """The normalised `Judgement`."""
    asked_again: NotRequired[str]
    """Why its first plan was sent back once before this one (`nodes.plan_gate`)."""
    judge_use: NotRequired[dict[str, float]]
    """Its judge's use, in threads of versions whose judge shared its step with the next stage."""


class PhaseOutcome(TypedDict):
    """How a phase ended."""

    phase_id: str
    """Id of the phase."""
    name: str
    """Name of the phase."""
    completed: bool
    """Whether the judge declared the goal met."""
    ended_by: str
    """completed; replanned (new phases replaced it); else why it ended short (ENDED_SHORT)."""
    completion_rate: float
    """Last phase_completion_rate the judge gave."""
    rounds: int
    """Rounds the phase ran."""
    summary: str
    """The judge's last user_summary for the phase."""


class Reflection(TypedDict):
    """A reflection trigger that fired (SPEC section 4)."""

    trigger: str
    """Name of the trigger."""
    phase_id: str
    """Phase in which it fired."""
    round: int
    """Round after which it fired."""
    reason: str
    """Why it fired, with the guidance given to the next prompts."""


class ToolViolation(TypedDict):
    """A task refused by the tool constraints (SPEC section 5)."""

    tool: str
    """The tool the task named."""
    phase_id: str
    """Phase of the task."""
    task_id: str
    """Id of the task."""
    reason: str
    """Why it was refused."""
    denied: NotRequired[bool]
    """Whether a person denied it (their answer holds for the tool for the rest of the phase)."""


CheckSource = Literal["caller", "analysis", "review"]


class CheckRecord(TypedDict):
    """A check (SPEC section 11) with its owner and its latest result, evaluated by code."""

    id: str
    """Short id, c1, c2, ...; phases name the checks they own by it."""
    kind: str
    """exists, contains, matches, equals, number, keeps, copy or command."""
    path: str
    """File the check reads (empty for a command)."""
    text: str
    """Text a contains check wants, an equals check's whole text, the lines a keeps check keeps."""
    pattern: str
    """Regular expression a matches check wants."""
    argv: list[str]
    """Program and arguments of a command check."""
    line: NotRequired[str]
    """A command check's pipeline, as written (``|``, ``<``), where it is one."""
    expect: str
    """Text a command's output must contain (empty: any)."""
    of: NotRequired[str]
    """File a copy check compares with (absent in threads from before copy checks)."""
    held_before: NotRequired[bool]
    """Whether it already passed when the run began, before any work (set by the analysis)."""
    label: str
    """The check in its command-line form, e.g. contains:sum.txt:12."""
    source: CheckSource
    """Who set it: the caller, the request analysis or the person at plan review."""
    phase_id: str
    """Phase that must make it true; empty means the last phase."""
    passed: bool | None
    """Latest result; None until it is first evaluated."""
    detail: str
    """What code saw, e.g. "sum.txt holds '11', not '12'"."""


class Fallback(TypedDict):
    """A stage that gave no usable answer after its retries, and what code did in its place."""

    stage: str
    """The node whose model answer could not be used: analyse, phase_plan, plan, judge, replan."""
    phase_id: str
    """Phase the run was in ("" before the phases exist)."""
    round: int
    """Round of that phase (0 outside a round)."""
    reason: str
    """Why the answers could not be used (the last validation error)."""
    action: str
    """What code decided from the facts instead (SPEC section 1)."""


class CodeAnswer(TypedDict):
    """A stage code answered without asking the model (read from threads that recorded one)."""

    stage: str
    """The node whose question code answered."""
    reason: str
    """What made the answer known."""
    action: str
    """What code answered."""


def _append_all(current: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    """Reducer of a history list: each write appends its items, in order.

    Folding in batches gives the same list as folding one write at a time, which is what a
    `DeltaChannel` needs to rebuild the value from the writes since its last snapshot.
    """
    merged = list(current)
    for items in writes:
        merged.extend(items)
    return merged


# Rebuilding a history replays at most this many appends since the last full snapshot.
HISTORY_SNAPSHOT_EVERY = 100


def history() -> DeltaChannel[list[Any]]:
    """A channel for an append-only list whose checkpoints grow linearly, not quadratically."""
    return DeltaChannel(_append_all, list, snapshot_frequency=HISTORY_SNAPSHOT_EVERY)






class State(TypedDict, total=False):
    """The whole state of one run (one thread)."""

    request: str
    """The raw request; only `analyse` reads it (SPEC section 7)."""
    limits: Limits
    """The run's limits, fixed at its start."""
    workspace: str
    """The folder the run works in, fixed at its start."""
    run_id: str
    """This run of the thread, fixed at its start: the tool journal's keys carry it."""
    status: RunStatus
    """Where the run stands."""
    stop_reason: StopReason | None
    """Why the run stopped (set when it goes to summarize)."""
    error: RunError | None
    """The exception that stopped the run, if one did."""
    structured_request: dict[str, Any] | None
    """The dumped `StructuredRequest`."""
    clarifications: Annotated[list[dict[str, str]], history()]
    """Questions asked of the person and their answers, in order."""
    checks: list[CheckRecord]
    """Every check with its owner and latest result (the caller's as given until analysed)."""
    originals: dict[str, str]
    """What the files the request names held when the run began (small ones), by path."""
    new_files: list[str]
    """The files the request names that were not there when the run began."""
    evidence: Evidence
    """What vouches for each deliverable: a check of code, or only the judge's word."""
    phases: list[dict[str, Any]]
    """The phase list (dumped `Phase`s); replans replace the part from `phase_index` on."""
    execution_strategy: str
    """How the phases fit together, from the phase plan."""
    phase_index: int
    """Index of the current phase in `phases`; equal to its length once all are done."""
    phase_round: int
    """Rounds planned so far in the current phase."""
    current_plan: dict[str, Any] | None
    """The dumped `RoundPlan` of the round in progress."""
    results: Annotated[list[TaskResult], merge_results]
    """Results of the round in progress, each task's once (`execute` writes them)."""
    round_seq: int
    """Rounds planned so far in the whole run; numbers the journal keys."""
    phase_window_seq: int
    """`round_seq` before the first round of the current phase or of its latest replan."""
    wave: int
    """Waves run so far in the current round."""
    tool_decisions: dict[str, str]
    """A person's allow / deny for justified tool requests, by journal key."""
    judgement: dict[str, Any] | None
    """The latest normalised `Judgement`."""
    facts: RoundFacts | None
    """The facts record of the latest judged round, computed once (`facts.record`)."""
    rounds: Annotated[list[RoundRecord], history()]
    """Every finished round."""
    phase_outcomes: Annotated[list[PhaseOutcome], history()]
    """How each finished phase ended."""
    step_count: Annotated[int, operator.add]
    """Steps spent against `limits.max_steps` (SPEC section 3)."""
    llm_calls: Annotated[int, operator.add]
    """Model calls made, every stage and attempt included."""
    prompt_tokens: Annotated[int, operator.add]
    """Prompt tokens the model reported."""
    completion_tokens: Annotated[int, operator.add]
    """Completion tokens the model reported."""
    cached_tokens: Annotated[int, operator.add]
    """Prompt tokens the model did not read again: its prefix cache held them."""
    prompt_ms: Annotated[int, operator.add]
    """Milliseconds the model spent reading prompts (where it reports it: the local model)."""
    answer_ms: Annotated[int, operator.add]
    """Milliseconds the model spent writing answers (where it reports it)."""
    parse_failures: Annotated[int, operator.add]
    """Structured results that failed validation or never came."""
    replan_count: int
    """Replans done so far."""
    replan_reason: str | None
    """Why the next replan happens."""
    reflection_note: str | None
    """Guidance from the last reflection, carried by the next replan and plan prompts."""
    reflections: Annotated[list[Reflection], history()]
    """Every reflection trigger that fired."""
    tool_violations: Annotated[list[ToolViolation], history()]
    """Every task refused by the tool constraints."""
    fallbacks: Annotated[list[Fallback], history()]
    """Every stage whose answers could not be used, and what code decided instead."""
    code_answers: Annotated[list[CodeAnswer], history()]
    """Stages code answered unasked, in threads of versions that did (kept: they resume)."""
    shortfalls: list[str]
    """What kept an ended run from `completed`: phases that ended short, checks that fail."""
    pending_review: dict[str, Any] | None
    """What the person is asked while the run is paused (kind and payload), else None."""
    human_feedback: dict[str, Any] | None
    """The person's answer to `pending_review`, written on resume."""
    last_review: dict[str, str] | None
    """The review just answered: kind, action and the stage that asked."""
    review_feedback: str | None
    """A person's modify text, for the next replan."""
    final_response: str | None
    """The answer a replan gave when it declared the work done."""
    final_summary: str | None
    """The written summary in Markdown; present whenever the run ended."""
    summary: dict[str, Any] | None
    """The dumped `Summary` (highlights, unfinished, next steps), and how it was made."""
    chained_use: list[dict[str, Any]]
    """In threads of versions that ran several stages in one step: what each spent (reports)."""
