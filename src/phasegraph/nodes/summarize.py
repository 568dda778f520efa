"""`summarize`: the written summary that ends every run (not counted in the step budget).

It always runs, whatever stopped the run. First every check is evaluated once more, and the
run's status is decided from facts (SPEC section 1): ``completed`` only when every phase was
completed and every check passes, ``incomplete`` when the work ran to its end but a phase ended
short or a check fails, and the stop reason's status otherwise. The summary comes from the
`summarizer` function; if that fails, from a plain-text answer of the model; if that fails too,
it is written by code from the state. Whichever wrote it, the facts (status, what fell short,
checks, counts) are appended by code. This node never raises.
"""

from __future__ import annotations

from typing import Any, cast

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.errors import redact
from phasegraph.facts.checks import check_lines, evaluate_checks, number_checks, shortfalls
from phasegraph.facts.deliverables import deliverable_evidence, evidence_line
from phasegraph.models.structured import call_structured
from phasegraph.nodes.analyse import caller_checks, is_record
from phasegraph.nodes.deps import Deps, context_of
from phasegraph.nodes.prompt_render import bullet_list, outcome_line, round_finding, tokens
from phasegraph.nodes.said_once import said_once
from phasegraph.nodes.step_budget import ROUND_MIN_STEPS, budget_left
from phasegraph.progress import emit
from phasegraph.report import statistics
from phasegraph.state import (
    CheckRecord,
    Evidence,
    RoundRecord,
    RunStatus,
    State,
    StopReason,
    Summary,
)
from phasegraph.state.reading import last_judgements
from phasegraph.tools.workspace import Workspace

STATUS_BY_STOP: dict[str, RunStatus] = {
    "done": "completed",
    "budget": "budget_exhausted",
    "rejected": "rejected",
    "error": "failed",
    "stage_failed": "failed",
}


def render_rounds(rounds: list[RoundRecord], budget_tokens: int) -> list[str]:
    """Every round by what it found (`round_finding`), newest kept first, within ``budget_tokens``.

    The rounds are what the run found; the report should be able to name all of it, so rounds are
    dropped only when the prompt budget cannot hold them, oldest first.
    """
    kept: list[str] = []
    used = 0
    for record in reversed(rounds):
        line = f"{record['phase_id']} round {record['round']}: " + round_finding(
            record["judgement"]
        )
        used += tokens(line)
        if used > budget_tokens:
            break
        kept.append(line)
    dropped = len(rounds) - len(kept)
    return ([f"({dropped} earlier rounds not shown)"] if dropped else []) + kept[::-1]


def stop_reason_of(state: State) -> StopReason:
    """Why the run stopped, from facts: a recorded reason, else all phases done or budget."""
    recorded = state.get("stop_reason")
    if recorded:
        return recorded
    phases = state.get("phases") or []
    if phases and state.get("phase_index", 0) >= len(phases):
        return "done"
    # The routers stop before a round the budget cannot hold (a plan, a tool and its judge).
    if state.get("limits") and budget_left(state) < ROUND_MIN_STEPS:
        return "budget"
    return "error"  # summarize was reached with no recorded reason: say so, do not guess


REJECTED = {
    "plan_review": "rejected the plan",
    "replan_review": "rejected the new plan",
    "clarification": "declined the question",
}
"""What a person's reject did, by the kind of review it answered."""


def explain_stop(state: State, reason: StopReason) -> str:
    """The stop reason as a sentence for a person."""
    error = state.get("error")
    limits = state.get("limits")
    review = state.get("last_review") or {}
    match reason:
        case "done":
            if state.get("final_response"):
                return "a replan declared the work done"
            return "the work ran to its end: every phase ran"
        case "budget":
            spent = state.get("step_count", 0)
            budget = limits["max_steps"] if limits else "?"
            left = budget_left(state)
            if not left:
                return f"the step budget of {budget} steps was spent ({spent} counted)"
            return (
                f"the step budget of {budget} steps was spent but for {left} (a round needs "
                f"{ROUND_MIN_STEPS}: a plan, a tool and its judge)"
            )
        case "rejected":
            what = REJECTED.get(str(review.get("kind")), "rejected the work")
            return f"the person {what}: {review.get('reason', 'no reason given')}"
        case _:
            if error:
                return f"{error['type']} in {error['node']}: {error['message']}"
            return "an error stopped the run"


def _phase_lines(state: State) -> tuple[list[str], list[str]]:
    """Finished phases by what their last round found (`round_finding`), then the phases left."""
    last = last_judgements(state)
    done = [
        outcome_line(
            {**o, "summary": round_finding(last[o["phase_id"]])}
            if not o["completed"] and last.get(o["phase_id"], {}).get("overridden")
            else o
        )
        for o in state.get("phase_outcomes", [])
    ]
    phases = state.get("phases") or []
    todo = [f"{p['name']} ({p['id']}): {p['goal']}" for p in phases[state.get("phase_index", 0) :]]
    return done, todo


def code_summary(state: State, reason: StopReason) -> str:
    """A summary written from the state alone, for when the model cannot write one."""
    request = state.get("structured_request") or {}
    goal = request.get("core_goal") or state.get("request", "(no request)")
    done, todo = _phase_lines(state)
    response = state.get("final_response")
    next_steps = (
        ["Run the request again with a larger step budget (max_steps) to finish the rest."]
        if reason == "budget"
        else ["Fix the cause named above and run the request again."]
        if STATUS_BY_STOP[reason] == "failed"
        else ["Review the results above."]
    )
    left = "Nothing." if state.get("phases") else "No phase was planned."
    parts = [
        "# Summary",
        f"**Goal:** {goal}",
        f"**Why the run stopped:** {explain_stop(state, reason)}.",
        "## Completed",
        bullet_list(done) if done else "Nothing.",
        "## Not completed",
        bullet_list(todo) if todo else left,
    ]
    if state.get("shortfalls"):
        parts += ["## What fell short", bullet_list(list(state["shortfalls"]))]
    if state.get("checks"):
        parts += ["## Checks", check_lines(list(state["checks"]))]
    if response:
        parts += ["## Answer", response]
    parts += ["## Next steps", bullet_list(next_steps)]
    return "\n\n".join(parts)


def facts_footer(state: State, status: RunStatus, reason: StopReason) -> str:
    """The facts line every summary ends with, written by code.

    It gives the status and why, what fell short, the checks, the stages code stood in for, the
    counts, and the folder the run worked in.
    """
    stats = statistics(state)
    short = state.get("shortfalls") or []
    checks = state.get("checks") or []
    passed = sum(1 for c in checks if c.get("passed") is True)
    fallbacks = state.get("fallbacks") or []
    parts = [f"Status: {status} ({explain_stop(state, reason)})"]
    if short:
        parts.append("Fell short: " + "; ".join(short))
    if checks:
        parts.append(f"Checks {passed}/{len(checks)} pass")
    if state.get("evidence") and status in ("completed", "incomplete"):
        parts.append(evidence_line(state["evidence"]))
    if fallbacks:
        parts.append(
            "Decided by code after unusable answers: "
            + ", ".join(f"{f['stage']}" + (f" ({f['phase_id']})" if f["phase_id"] else "")
                        for f in fallbacks)  # fmt: skip
        )
    parts.append(
        f"Phases {stats['phases_completed']}/{stats['phases']} completed"
        + (f" ({stats['phases_ended']} ended)" if stats["phases_ended"] > stats["phases_completed"]
           else "")  # fmt: skip
        + f", rounds {stats['rounds']}, "
        f"tasks {stats['tasks_ok']}/{stats['tasks']} ok, steps {stats['steps']}"
        f"{'/' + str(stats['max_steps']) if stats['max_steps'] else ''}, "
        f"LLM calls {stats['llm_calls']}"
    )
    if state.get("workspace"):
        parts.append(f"Workspace: {state['workspace']}")
    return "\n\n---\n*" + ". ".join(parts) + ".*"


def final_checks(state: State, context: Context) -> list[CheckRecord]:
    """Every check, evaluated once more before the summary.

    A caller's checks are still as given if the run stopped before its analysis.
    """
    given = list(state.get("checks") or [])
    records = [c for c in given if is_record(c)] if all(is_record(c) for c in given) else None
    if records is None:
        space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
        records = number_checks(caller_checks(given, space))
    return evaluate_checks(records, context)


def run_evidence(state: State, runtime: Runtime[Context], deps: Deps) -> Evidence:
    """What vouches for each deliverable (`deliverable_evidence`); none known if it fails."""
    context = context_of(runtime)
    try:
        space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
        return deliverable_evidence(state, deps.tools_for(context), space)
    except Exception:  # the summary must come; an unreadable workspace vouches for nothing
        return {"verified": False, "files": []}


def unfinished_work(state: State, reason: StopReason) -> list[str]:
    """What a run stopped before its end left undone, and why, for its shortfalls.

    A run the budget, an error or a person stopped has phases it never finished (or never
    planned), which no phase outcome names: without this line its shortfalls could be empty
    beside a status that is not ``completed``. A run that ran to its end adds nothing.
    """
    if reason == "done":
        return []
    phases = state.get("phases") or []
    left = [f"{p['name']} ({p['id']})" for p in phases[state.get("phase_index", 0) :]]
    undone = f"phases not finished: {', '.join(left)}" if left else "the work was not planned"
    return [f"the run stopped before its end ({explain_stop(state, reason)}); {undone}"]


def final_status(state: State, reason: StopReason, short: list[str]) -> RunStatus:
    """The run's status from facts (SPEC section 1).

    Work that ran to its end is ``completed`` only if nothing fell short.
    """
    status = STATUS_BY_STOP[reason]
    return "incomplete" if status == "completed" and short else status


def _model_summary(
    state: State, runtime: Runtime[Context], deps: Deps, reason: StopReason
) -> tuple[dict[str, Any] | None, str, dict[str, int]]:
    """Ask the model: the summarizer function first, then plain text. (summary, source, costs)."""
    context = context_of(runtime)
    request = state.get("structured_request") or {}
    done, todo = _phase_lines(state)
    response = state.get("final_response")
    fields = {
        "goal": request.get("core_goal") or "(the request could not be analysed)",
        "stop": explain_stop(state, reason),
        "phases": "Finished:\n" + bullet_list(done) + "\nNot finished:\n" + bullet_list(todo),
        "response": f"\nAnswer given when the work was declared done: {response}\n"
        if response
        else "",
        "short": bullet_list(list(state.get("shortfalls") or [])),
        "checks": check_lines(list(state.get("checks") or [])) or "-",
    }
    room = context.prompt_token_budget - tokens(prompts.SUMMARIZE_USER.format(rounds="", **fields))
    rounds = render_rounds(state.get("rounds", []), max(0, room))
    user = prompts.SUMMARIZE_USER.format(rounds=bullet_list(rounds), **fields)
    messages = [SystemMessage(prompts.SUMMARIZE_SYSTEM), HumanMessage(user)]
    model = deps.chat_model(runtime, state.get("run_id", ""))
    call = call_structured(
        model, "summarizer", Summary, messages, retries=context.max_parse_retries
    )
    costs = call.counters(counted=False)
    if call.value is not None:
        return said_once(call.value.model_dump()), "summarizer", costs
    reply = model.invoke([SystemMessage(prompts.SUMMARY_TEXT_FALLBACK), HumanMessage(user)])
    costs["llm_calls"] += 1
    usage = getattr(reply, "usage_metadata", None) or {}
    costs["prompt_tokens"] += usage.get("input_tokens", 0)
    costs["completion_tokens"] += usage.get("output_tokens", 0)
    text = reply.text.strip() if hasattr(reply, "text") else str(reply.content).strip()
    if text:
        return said_once({"final_summary": text}), "plain_text", costs
    return None, "", costs


def summarize(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Write the final summary and the run's final status."""
    reason = stop_reason_of(state)
    update: dict[str, Any] = {"stop_reason": reason, "pending_review": None}
    if not state.get("workspace"):  # a run stopped before it started still names its folder
        update["workspace"] = context_of(runtime).root
    try:
        checks = final_checks(state, context_of(runtime))
        outcomes, rounds = state.get("phase_outcomes", []), state.get("rounds") or []
        short = shortfalls(outcomes, checks, last_judgements(state), rounds)
        short = [*unfinished_work(state, reason), *short]
        update |= {"checks": checks, "shortfalls": short}
    except Exception as exc:  # checks that cannot be read leave the status to the stop reason
        short = [f"the checks could not be evaluated: {redact(f'{type(exc).__name__}: {exc}')}"]
        update["shortfalls"] = short
    update["evidence"] = run_evidence(cast(State, {**state, **update}), runtime, deps)
    status = final_status(state, reason, short)
    update["status"] = status
    state = cast(State, {**state, **update})  # the summary reads the final facts
    summary: dict[str, Any] | None = None
    source, model_error = "code", None
    try:
        summary, source, costs = _model_summary(state, runtime, deps, reason)
        update |= {k: v for k, v in costs.items() if k != "step_count"}
    except Exception as exc:  # the summary must come; the model's failure is only noted
        model_error = redact(f"{type(exc).__name__}: {exc}")
    if summary is None:
        try:
            summary = {"final_summary": code_summary(state, reason)}
        except Exception as exc:  # a state too damaged to describe still gets its facts
            summary = {"final_summary": f"# Summary\n\nThe run stopped: {reason}."}
            model_error = redact(f"{type(exc).__name__}: {exc}")
        source = "code"
    summary |= {"source": source, "model_error": model_error}
    try:
        # the footer counts the summarizer's own calls too, as the reports do
        spent = {"llm_calls": state.get("llm_calls", 0) + update.get("llm_calls", 0)}
        footer = facts_footer(cast(State, {**state, **spent}), status, reason)
    except Exception:
        footer = f"\n\n---\n*Status: {status}.*"
    update["summary"] = summary
    update["final_summary"] = summary["final_summary"] + footer
    emit(runtime, "summary_ready", status=status, source=source)
    return update
