"""`human_review`: apply the person's answer to the pending review (SPEC section 6).

The graph is compiled with ``interrupt_before=["human_review"]``: the run pauses before this
node with ``pending_review`` in the state. The answer arrives as ``human_feedback`` (written by
the `resume` helper, ``update_state(..., as_node=...)`` or Studio's state editor), or as
LangGraph's own ``Command(resume=answer)``: with no ``human_feedback``, the node asks with
``interrupt()``, whose value is the answer. Feedback that does not fit asks again the same way,
the error beside the question, and the run stays paused in this node; `resume` makes the same
check (`parse_feedback`) before it runs.

Which reviews a run asks for is one of its limits, fixed when it starts: `person_available`,
`plan_review_on` and `replan_review_on` read it for the nodes that may ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.errors import GraphInterrupt
from langgraph.runtime import Runtime
from langgraph.types import interrupt
from pydantic import TypeAdapter, ValidationError

from phasegraph.context import Context
from phasegraph.errors import CheckError, FeedbackError, ThreadStateError
from phasegraph.facts.checks import assign_checks, evaluate_checks, number_checks
from phasegraph.models.structured import describe_validation_error
from phasegraph.nodes.deps import context_of
from phasegraph.progress import emit
from phasegraph.state import CheckRecord, Limits, State
from phasegraph.state.feedback import (
    ACTIONS_BY_KIND,
    Allow,
    Answer,
    Approve,
    Deny,
    Edit,
    Feedback,
    Modify,
    Reject,
)
from phasegraph.tools.checks import BASELINE_KINDS, label, record, validate_checks


def person_available(limits: Limits) -> bool:
    """Whether anyone answers reviews (clarifications, asks after failures)."""
    return limits["review"] != "none"


def plan_review_on(limits: Limits) -> bool:
    """Whether the phase plan waits for approval."""
    return limits["review"] in ("plan", "plan+replan", "all")


def replan_review_on(limits: Limits) -> bool:
    """Whether every replan waits for approval."""
    return limits["review"] in ("plan+replan", "all")


_FEEDBACK: TypeAdapter[Any] = TypeAdapter(Feedback)


def parse_feedback(
    pending: Mapping[str, Any],
    feedback: Any,
    state: Mapping[str, Any],
    context: Context,
) -> Any:
    """Validate ``feedback`` against the pending review; `FeedbackError` if it does not fit.

    An action alone may be given as its word (``Command(resume="approve")``).
    """
    kind = pending.get("kind", "")
    actions = ACTIONS_BY_KIND.get(kind, ())
    expected = f"a {kind} takes action " + " / ".join(actions)
    if isinstance(feedback, str):
        feedback = {"action": feedback.strip()}
    if feedback is None:
        raise FeedbackError(no_answer(pending))
    if not isinstance(feedback, Mapping):
        raise FeedbackError(
            f'{expected}, given as {{"action": ...}}; got a {type(feedback).__name__}'
        )
    action = feedback.get("action")
    if action is None and len(feedback) == 1:
        (key, value), = feedback.items()
        # {id: answer} for an id no question here has; not a field of an answer without action
        if key not in ANSWER_FIELDS and isinstance(value, str | Mapping):
            raise FeedbackError(
                f"{expected}; the answer is keyed by {key!r}, the id of no question this "
                "thread asks: give the answer itself, or key it by the id in interrupts"
            )
    if action not in actions:
        raise FeedbackError(f"{expected}; got {action!r}")
    done_ids = [p["id"] for p in state.get("phases", [])[: state.get("phase_index", 0)]]
    try:
        parsed = _FEEDBACK.validate_python(
            dict(feedback),
            context={"max_phases": context.max_phases, "done_phase_ids": done_ids},
        )
    except ValidationError as exc:
        msg = describe_validation_error(exc)
        raise FeedbackError(f"{action} does not fit the pending {kind}: {msg}") from None
    if isinstance(parsed, Edit) and parsed.checks is not None:
        try:
            validate_checks(parsed.checks, context)
        except CheckError as exc:
            raise FeedbackError(f"edit does not fit the pending {kind}: {exc}") from None
    return parsed


def kept_baselines(
    parsed: list[dict[str, Any]], earlier: list[CheckRecord]
) -> list[dict[str, Any]]:
    """Edited checks, each ``keeps`` or ``copy`` check given again keeping its first baseline.

    A person edits checks by their labels; the lines a keeps check guards (the digest a copy
    check wants) were read when it was first set, before any work, and re-reading them now
    would take in what the work has done since.
    """
    first = {c["label"]: c["text"] for c in earlier if c["kind"] in BASELINE_KINDS}
    return [{**c, "text": first.get(label(c), c.get("text", ""))} for c in parsed]


def review_question(pending: Mapping[str, Any], error: str = "") -> dict[str, Any]:
    """What a paused run asks, as its interrupt carries it: the review and the answers it takes."""
    question = {k: v for k, v in pending.items() if k != "error"}
    question["actions"] = list(ACTIONS_BY_KIND.get(str(pending.get("kind")), ()))
    if error:
        question["error"] = error
    return question


def continued(runtime: Runtime[Context]) -> bool:
    """Whether this run continues a paused one (resumed), rather than reaching the review now.

    A graph run on its own pauses before ``human_review`` (a static breakpoint), so it reaches
    the node resumed; run as a node of another graph (its checkpoint namespace nested in the
    parent's), it reaches it at once (`graph.compiled.PhaseGraph._as_run`), and its first
    question is no error.
    """
    info = runtime.execution_info
    return info is None or "|" not in info.checkpoint_ns


def answer_of(state: State, runtime: Runtime[Context]) -> Any:
    """The person's answer that fits the pending review, asking (``interrupt``) until one does.

    A resumed run continued with no answer at all asks too, saying so.
    """
    pending = state.get("pending_review")
    if not pending:
        raise ThreadStateError("human_review ran with no pending review")
    context = context_of(runtime)
    feedback = state.get("human_feedback")
    error = no_answer(pending) if feedback is None and continued(runtime) else ""
    while True:
        if feedback is None:
            try:
                feedback = by_question_id(interrupt(review_question(pending, error)))
            except GraphInterrupt:
                emit(runtime, "awaiting_review", kind=pending["kind"], error=error)
                raise
        try:
            return parse_feedback(pending, feedback, state, context)
        except FeedbackError as exc:
            error, feedback = str(exc), None


#: The fields an answer may have: a one-key answer of another key is keyed by a question's id.
ANSWER_FIELDS = frozenset(
    name
    for model in (Approve, Reject, Edit, Modify, Answer, Allow, Deny)
    for name in model.model_fields
)

#: The id of the question a paused run shows before it asks (`graph.compiled`), by its prefix.
QUESTION_ID_PREFIX = "review-"


def by_question_id(answer: Any) -> Any:
    """An answer given as ``{question id: answer}`` (``Command(resume={id: ...})``), unwrapped."""
    if isinstance(answer, Mapping) and len(answer) == 1:
        (key, value), = answer.items()
        if isinstance(key, str) and key.startswith(QUESTION_ID_PREFIX):
            return value
    return answer


def no_answer(pending: Mapping[str, Any]) -> str:
    """What a review says to a run continued without an answer."""
    kind = str(pending.get("kind", ""))
    return f"no answer given: a {kind} takes action " + " / ".join(ACTIONS_BY_KIND.get(kind, ()))


def human_review(state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
    """Turn the person's decision into state: approved, edited, replanned, answered, stopped."""
    feedback = answer_of(state, runtime)
    pending = state["pending_review"] or {}
    context = context_of(runtime)

    kind, stage = pending["kind"], pending.get("stage", "")
    update: dict[str, Any] = {
        "pending_review": None,
        "human_feedback": None,
        "status": "running",
        "last_review": {"kind": kind, "action": feedback.action, "stage": stage},
    }
    if isinstance(feedback, Reject):
        update["last_review"]["reason"] = feedback.reason
        update["stop_reason"] = "rejected"
    elif isinstance(feedback, Edit):
        # The person's phases replace what was proposed: the whole plan before any work,
        # the remaining part after a replan.
        index = state.get("phase_index", 0)
        phases = state["phases"][:index] + [p.model_dump() for p in feedback.phases]
        checks = list(state.get("checks") or [])
        if feedback.checks is not None:
            parsed = kept_baselines(validate_checks(feedback.checks, context), checks)
            given = [record(check, "", "review") for check in parsed]
            checks = evaluate_checks(number_checks(given), context)
        update["checks"] = assign_checks(checks, phases)
        update["phases"] = phases
        update["phase_round"] = 0
        update["phase_window_seq"] = state.get("round_seq", 0)
    elif isinstance(feedback, Modify):
        update["review_feedback"] = feedback.feedback
        update["replan_reason"] = "the person asked for changes to the proposed plan"
    elif isinstance(feedback, Answer):
        question = "\n".join(pending.get("questions", []))
        update["clarifications"] = [{"question": question, "answer": feedback.answer}]
        if stage != "analyse":
            update["replan_reason"] = f"the person answered a question: {feedback.answer}"
    elif isinstance(feedback, Allow | Deny):
        decisions = dict(state.get("tool_decisions") or {})
        decisions[pending["key"]] = feedback.action
        update["tool_decisions"] = decisions
    emit(runtime, "review_answered", kind=kind, action=feedback.action)
    return update
