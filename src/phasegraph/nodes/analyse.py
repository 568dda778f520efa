"""`analyse`: the raw request becomes a `StructuredRequest` (not counted in the step budget).

Here the run's checks are settled too (SPEC section 11): the caller's, given with the request,
and those the analysis proposes for the deliverables the request names. A proposal is kept only
if it is a fact about what the request itself names (its path, its text, its program) and does
not already hold before any work: otherwise it would check the model's guess, not the request.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.facts.checks import evaluate_checks, number_checks
from phasegraph.facts.files import file_originals, files_named
from phasegraph.models.structured import call_structured, function_spec
from phasegraph.nodes.deps import Deps, context_of
from phasegraph.nodes.fallback import fell_back, stopped
from phasegraph.nodes.human_review import person_available
from phasegraph.nodes.step_budget import limits_from
from phasegraph.policy import CheckFilter, CheckProposal, first_reason
from phasegraph.progress import emit
from phasegraph.state import CheckRecord, State, StructuredRequest
from phasegraph.state.checks import MAX_PROPOSED_CHECKS
from phasegraph.state.result import clip
from phasegraph.tools.checks import HAS_TEXT, label, parse_check, problem, record, with_baseline
from phasegraph.tools.workspace import Workspace, WorkspaceError

# A model that asks forever must not keep the run waiting: after this many answered rounds of
# questions, analyse works with what it has.
MAX_CLARIFICATION_ROUNDS = 2


def initial_values(context: Context) -> dict[str, Any]:
    """Every field a run reports, set once when it starts, so callers always find them."""
    return {
        "limits": limits_from(context),
        "workspace": context.root,
        "run_id": uuid.uuid4().hex,
        "status": "running",
        "stop_reason": None,
        "error": None,
        "structured_request": None,
        "phases": [],
        "execution_strategy": "",
        "phase_index": 0,
        "phase_round": 0,
        "current_plan": None,
        "results": [],
        "round_seq": 0,
        "phase_window_seq": 0,
        "wave": 0,
        "tool_decisions": {},
        "judgement": None,
        "replan_count": 0,
        "replan_reason": None,
        "reflection_note": None,
        "pending_review": None,
        "human_feedback": None,
        "last_review": None,
        "review_feedback": None,
        "final_response": None,
        "final_summary": None,
        "summary": None,
        "shortfalls": [],
    }


def named_workspace_files(request: str, context: Context) -> tuple[list[str], list[str]]:
    """File names the request mentions inside the workspace: all of them, and those not there.

    Those not there yet are likely deliverables; the others may be inputs or files to change.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    named, new = [], []
    for name in files_named(request, space):
        try:
            there = (space.real_root / space.relative(name)).exists()
        except WorkspaceError:
            continue
        named.append(name)
        if not there:
            new.append(name)
    return named, new


def analysis_parameters(named: list[str]) -> dict[str, Any]:
    """The analysis's schema, asking first which of the named files the request writes.

    ``files_to_write`` is required right after ``core_goal`` and, where the request names files
    (``named``), is a choice among them: choosing from the names the request gives is easier
    for a model than composing a check, and a run whose deliverable has no check can be judged
    done with no file written. Each new file chosen becomes a check that the file holds some
    text (see `proposed_checks`), and any file chosen keeps the tools that write files (see
    `facts.tools.writes_needed`).
    """
    spec = function_spec("request_analyser", StructuredRequest)
    parameters: dict[str, Any] = spec["function"]["parameters"]
    if named:
        parameters["properties"]["files_to_write"]["items"] = {"enum": named}
    required = [r for r in parameters.get("required", []) if r != "core_goal"]
    parameters["required"] = ["core_goal", "files_to_write", *required]
    return parameters


def new_files_line(files: list[str]) -> str:
    """A fact for the analysis: which files the request names are not there yet.

    The analysis proposes checks for the files a request asks to write, and a model may miss
    them; a run without a check can then be judged done with no file written. Code finds the
    names; the model decides which are deliverables. Empty when there are none.
    """
    return prompts.NEW_FILES.format(files=", ".join(files)) if files else ""


def is_record(check: object) -> bool:
    """Whether a value in ``checks`` is already a `CheckRecord`.

    A caller's check is a string or an object with a kind until the first analysis.
    """
    return isinstance(check, dict) and "source" in check and "label" in check


def caller_checks(given: list[Any], space: Workspace) -> list[CheckRecord]:
    """The caller's (and a person's) checks as records, numbered c1, c2, ... in order."""
    kept = [c for c in given if is_record(c) and c["source"] != "analysis"]
    raw = [with_baseline(parse_check(c), space) for c in given if not is_record(c)]
    return kept + [record(check, "", "caller") for check in raw]


def deliverable(check: dict[str, Any]) -> dict[str, Any]:
    """A proposed check as the deliverable it stands for.

    A file the request asks to write must hold something, so "it exists" becomes "it has some
    text" (`HAS_TEXT`): an empty file passes an exists check, and a judge may then call the work
    done. Other checks are kept as they are.
    """
    if check["kind"] == "exists":
        return {"kind": "matches", "path": check["path"], "pattern": HAS_TEXT}
    return check


def proposed_checks(
    proposals: list[dict[str, Any]],
    request: str,
    taken: set[str],
    context: Context,
    filters: Sequence[CheckFilter],
) -> tuple[list[CheckRecord], list[str]]:
    """The analysis's proposals worth keeping, and a note for each one dropped.

    A proposal is dropped when it is no valid check, when one of ``filters`` refuses it
    (`Policy.check_filters`), past `MAX_PROPOSED_CHECKS`, or when it holds before any work.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    kept: list[CheckRecord] = []
    notes: list[str] = []
    for check in proposals:
        name = label(check)
        why = problem(check, space, context.command_settings) or first_reason(
            filters, CheckProposal(check, request, space)
        )
        if why:
            notes.append(f"dropped the proposed check {name}: {why}")
        elif len(kept) >= MAX_PROPOSED_CHECKS:
            notes.append(f"dropped the proposed check {name}: at most {len(kept)} are kept")
        elif name not in taken:
            taken.add(name)
            kept.append(record(deliverable(check), "", "analysis"))
    still: list[CheckRecord] = []
    for evaluated in evaluate_checks(kept, context):
        if evaluated["passed"]:
            notes.append(
                f"dropped the proposed check {evaluated['label']}: it holds before any work"
            )
        else:
            still.append(evaluated)
    return still, notes


def at_start(checks: list[CheckRecord]) -> list[CheckRecord]:
    """The checks as evaluated before any work, each saying whether it already held then.

    A check that held before the work shows nothing the work did (`facts.deliverables`); the
    mark is set once, by the first analysis, and kept by later ones.
    """
    return [{**c, "held_before": c.get("held_before", c["passed"] is True)} for c in checks]


def request_fallback(request: str) -> StructuredRequest:
    """The request itself as the goal, when the analysis gave nothing usable (SPEC section 1)."""
    goal = clip(request, 400)
    return StructuredRequest(
        core_goal=goal, requirements=[goal], complexity="medium", estimated_phases=1
    )


def analyse(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Ask `request_analyser` for the structured request; ask the person when it must."""
    context = context_of(runtime)
    update: dict[str, Any] = {} if state.get("limits") else initial_values(context)
    # looked up once: the prompt names the new files, and the schema offers all named ones
    named, new_files = named_workspace_files(state["request"], context)
    if not state.get("limits"):  # the files as they were before any work, once
        update["originals"] = file_originals(state["request"], context)
        update["new_files"] = new_files
    limits = state.get("limits") or update["limits"]
    clarifications = state.get("clarifications", [])
    pairs = "\n".join(f"Q: {c['question']}\nA: {c['answer']}" for c in clarifications)
    messages = [
        SystemMessage(prompts.ANALYSE_SYSTEM),
        HumanMessage(
            prompts.ANALYSE_USER.format(
                request=state["request"],
                new_files=new_files_line(new_files),
                clarifications=prompts.CLARIFICATIONS.format(pairs=pairs) if pairs else "",
            )
        ),
    ]
    call = call_structured(
        deps.chat_model(runtime, state.get("run_id") or update.get("run_id", "")),
        "request_analyser",
        StructuredRequest,
        messages,
        retries=context.max_parse_retries,
        parameters=analysis_parameters(named),
    )
    update |= call.counters(counted=False)
    if (stop := stopped("analyse", call, state, runtime)) is not None:
        return update | stop
    request = call.value
    if request is None:
        request = request_fallback(state["request"])
        action = "took the request itself as the goal, in one phase"
        update |= fell_back("analyse", call, state, runtime, action)
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    checks = caller_checks(list(state.get("checks") or []), space)
    proposals = [c.model_dump() for c in request.checks] + [
        {"kind": "exists", "path": name} for name in request.files_to_write if name in new_files
    ]
    added, notes = proposed_checks(
        proposals, state["request"], {c["label"] for c in checks}, context,
        deps.policy.check_filters,
    )  # fmt: skip
    update["checks"] = number_checks(at_start(evaluate_checks(checks, context) + added))
    update["structured_request"] = request.model_dump(exclude={"checks"}) | {
        "check_notes": [*request.check_notes, *notes]
    }
    emit(
        runtime,
        "analysed",
        goal=request.core_goal,
        task_type=request.task_type,
        checks=[c["label"] for c in update["checks"]],
    )
    if (
        request.clarification_needed
        and person_available(limits)
        and len(clarifications) < MAX_CLARIFICATION_ROUNDS
    ):
        update["pending_review"] = {
            "kind": "clarification",
            "stage": "analyse",
            "questions": request.clarification_questions,
        }
        update["status"] = "awaiting_review"
        emit(runtime, "awaiting_review", kind="clarification")
    return update
