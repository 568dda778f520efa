"""`plan`: one round of 1-8 tool calls for the current phase (one step per attempt).

The prompt is built from the structured request and the phase's rounds within a token budget
(SPEC section 7): the latest two rounds in full, a few older ones by their judge summaries, the
rest as one line; tool outputs are cut until the history fits. The last few finished phases
appear by their outcome, so what they found reaches the next phase's first plan.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from pydantic import ValidationError

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.facts.checks import (
    check_lines,
    owned_checks,
    to_do,
    write_readable,
    write_whole,
)
from phasegraph.facts.record import first_facts
from phasegraph.facts.tools import without_stray_command
from phasegraph.models.structured import StageCall, call_structured
from phasegraph.nodes.deps import Deps, context_of, phase_allowed_tools
from phasegraph.nodes.fallback import fell_back, stopped
from phasegraph.nodes.judgement import close_phase
from phasegraph.nodes.plan_schema import plan_parameters
from phasegraph.nodes.prompt_render import (
    dump,
    fit_to_budget,
    quoted,
    recent_outcomes,
    round_finding,
    tokens,
    unquoted,
)
from phasegraph.nodes.step_budget import (
    ROUND_MIN_STEPS,
    budget_spent,
    limits_of,
    retries_within_budget,
    round_limit,
)
from phasegraph.policy import PlanToGate, first_reason
from phasegraph.progress import emit
from phasegraph.state import (
    CheckRecord,
    PhaseOutcome,
    RoundPlan,
    RoundRecord,
    State,
    TaskResult,
)
from phasegraph.state.facts import RoundFacts
from phasegraph.state.reading import current_phase, is_last_phase, phase_window
from phasegraph.tools import describe_tools
from phasegraph.tools.base import truncate
from phasegraph.tools.checks import absent, failing
from phasegraph.tools.workspace import Workspace, workspace_path

# What a plan leaves room for: one tool execution and the round's judge.
AFTER_PLAN = ROUND_MIN_STEPS - 1

# Rounds shown in full, and older rounds shown by their judge summary (SPEC section 7).
FULL_ROUNDS = 2
SUMMARY_ROUNDS = 4


def render_history(rounds: Sequence[RoundRecord], budget_tokens: int) -> str:
    """Earlier rounds of a phase, within ``budget_tokens``.

    The latest rounds appear in full (tool calls, statuses, outputs), a few before them by
    their judge summary, the rest as one line; outputs are cut shorter until the text fits.
    """
    if not rounds:
        return ""
    full = list(rounds[-FULL_ROUNDS:])
    older = list(rounds[:-FULL_ROUNDS]) if len(rounds) > FULL_ROUNDS else []
    summarised = older[-SUMMARY_ROUNDS:]
    dropped = older[: len(older) - len(summarised)]
    head = []
    if dropped:
        rates = [float(r["judgement"].get("phase_completion_rate", 0)) for r in dropped]
        head.append(
            f"Rounds {dropped[0]['round']}-{dropped[-1]['round']}: {len(dropped)} earlier rounds, "
            f"completion {rates[0]:.2f} -> {rates[-1]:.2f}."
        )
    head += [f"Round {r['round']}: {r['judgement'].get('user_summary', '')}" for r in summarised]

    def render(limit: int) -> str:
        lines = list(head)
        for record in full:
            lines.append(f"Round {record['round']} ({_verdict(record)})")
            for result in record["results"]:
                output = truncate(result["output"], limit)
                lines.append(
                    f"  - {result['task_id']} {result['tool']}({_arguments(result, limit)}) "
                    f"-> {result['status']}: {quoted(output)}"
                )
        return prompts.HISTORY.format(rounds="\n".join(lines))

    return fit_to_budget(render, budget_tokens)


def _arguments(result: TaskResult, limit: int) -> str:
    """A call's arguments for the history; only the path of a call that did not run.

    A model may copy what it reads: shown the arguments of a call that did not run (a skipped
    write's placeholder content, say), it may plan that call again instead of one made from
    what the calls beside it returned.
    """
    if result["status"] in ("ok", "failed", "timeout"):
        return truncate(dump(result["arguments"]), limit)
    path = result["arguments"].get("path")
    return dump({"path": path}) if isinstance(path, str) else "..."


def _verdict(record: RoundRecord) -> str:
    """How a round was judged: by the judge, or by code where the facts overruled the judge.

    A verdict code overruled is not repeated (`round_finding`): a wrong "the phase was
    completed" can send the next plan back to the same call.
    """
    judgement = record["judgement"]
    finding = round_finding(judgement)
    return finding if judgement.get("overridden") else f"judged: {finding}"


# Finished phases a plan prompt names with their outcome; older ones are only counted.
EARLIER_PHASES_SHOWN = 3
PHASE_SUMMARY_CHARS = 400


def _earlier_phases(outcomes: list[PhaseOutcome]) -> str:
    """What the phases before this one found, so a new phase does not start blind."""
    lines = recent_outcomes(outcomes, EARLIER_PHASES_SHOWN, PHASE_SUMMARY_CHARS)
    if not lines:
        return ""
    return prompts.EARLIER_PHASES.format(phases="\n".join(f"- {line}" for line in lines))


def plan_checks(
    owned: list[CheckRecord],
    context: Context,
    unwritten: Sequence[str] = (),
    malformed: Mapping[str, str] | None = None,
    made: Sequence[str] = (),
) -> str:
    """The phase's checks for its plan: each with its result, and what is still to do.

    ``unwritten``: files the request writes or changes that the run has not written yet (see
    `unwritten_files`); each is a step of its own unless a check already asks for it.
    ``malformed``: written files that no longer read as their format (see `broken_formats`).
    ``made``: the files the request names that were not there when the run began (``new_files``).
    """
    space = Workspace(context.workspace)

    def missing(path: str) -> bool:
        rel = workspace_path(space, path)
        return rel is not None and not os.path.lexists(space.real_root / rel)

    made_here = {workspace_path(space, path) for path in made} - {None}

    def made_by_run(path: str) -> bool:
        return workspace_path(space, path) in made_here and not missing(path)

    steps = to_do(owned, missing, made_by_run)
    asked = {workspace_path(space, c["path"]) for c in failing(owned)}
    steps += [
        write_whole(path, absent(path))
        if missing(path)
        else f"change {path} as the request asks (this run has not written it yet)"
        for path in unwritten
        if workspace_path(space, path) not in asked
    ]
    steps += [write_readable(path, error) for path, error in (malformed or {}).items()]
    shown = prompts.PHASE_CHECKS.format(checks=check_lines(owned)) if owned else ""
    todo = "\n".join(f"- {step}" for step in steps)
    if not steps:
        return shown
    # the list opens a line of its own, after the checks or after the history's last output
    return shown.rstrip("\n") + prompts.STILL_TO_DO.format(todo=todo)


def _last_work(
    state: State, phase: Mapping[str, Any], facts: RoundFacts
) -> tuple[list[str], dict[str, str]]:
    """What the work must still write, from the facts: files not written yet, broken files.

    Files not written yet in the last phase only; in any phase, files to make readable as their
    format again (`facts.formats.broken_formats`). The facts decide, whichever guards hold
    the judge: a guard put in place of another loses the plan nothing.
    """
    broken = dict(facts.get("malformed") or {})
    if not is_last_phase(state, phase):
        return [], broken
    return list(facts["unwritten"]), broken


def plan(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Ask `plan_tool_call` for the next round of the current phase."""
    if budget_spent(state):  # routers check first; this keeps the node safe on its own
        return {"stop_reason": "budget"}
    context = context_of(runtime)
    phase = current_phase(state)
    round_no = state.get("phase_round", 0) + 1
    tools = phase_allowed_tools(state, phase, deps, context)
    available = deps.tools_for(context)
    asks_permission = limits_of(state)["review"] == "all"
    askable = [t for t in available if t not in tools] if asks_permission else []
    call = call_structured(
        deps.chat_model(runtime, state.get("run_id", "")),
        "plan_tool_call",
        RoundPlan,
        _messages(state, context, phase, tools, available),
        retries=retries_within_budget(state, context.max_parse_retries, keep=AFTER_PLAN),
        validation_context={"allowed_tools": tools, "max_tasks": context.max_tasks_per_round},
        parameters=plan_parameters([available[t] for t in tools], askable=askable),
        gate=lambda p: first_reason(
            deps.policy.plan_gates,
            PlanToGate(
                [{"tool": t.tool, "arguments": unquoted(t.arguments)} for t in p.tasks],
                available,
                [record["results"] for record in state.get("rounds") or []],
            ),
        ),
    )
    update: dict[str, Any] = call.counters(counted=True)
    round_plan = call.value or _insisting_plan(call.last_arguments, context)
    if round_plan is not None:
        for task in round_plan.tasks:
            # a model copying quoted output into a file copies the quotes too
            task.arguments = without_stray_command(
                unquoted(task.arguments),
                available.get(task.tool),
                context.command_settings.runnable,
            )
    if (
        round_plan is None
        and (stop := stopped("plan", call, state, runtime, keep=AFTER_PLAN)) is not None
    ):
        return update | stop
    if round_plan is None:
        return update | _no_plan(state, call, round_no, runtime)
    if round_no == 1:
        emit(
            runtime,
            "phase_started",
            phase_id=phase["id"],
            name=phase["name"],
            index=state["phase_index"] + 1,
            total=len(state["phases"]),
        )
    emit(
        runtime,
        "round_planned",
        phase_id=phase["id"],
        round=round_no,
        tasks=len(round_plan.tasks),
        asked_again=bool(call.gated),
    )
    asked_again = {"asked_again": call.gated} if call.gated else {}
    return update | {
        "current_plan": round_plan.model_dump() | asked_again,
        "phase_round": round_no,
        "round_seq": state.get("round_seq", 0) + 1,
        "results": [],  # the reducer's "new round": clears the previous round's results
        "wave": 0,
        # The note has been carried into this plan; the next trigger writes a new one.
        "reflection_note": None,
    }


def _messages(
    state: State,
    context: Context,
    phase: Mapping[str, Any],
    tools: list[str],
    available: Mapping[str, BaseTool],
) -> list[BaseMessage]:
    """The plan's prompt, its history of the phase's rounds within the token budget (SPEC 7).

    What is still to do and what the workspace holds come from the latest facts record.
    """
    facts = state.get("facts") or first_facts(state, context, available)
    request = state["structured_request"] or {}
    note = state.get("reflection_note")
    owned = owned_checks(state, phase["id"])
    last_work = _last_work(state, phase, facts)
    fields = {
        "core_goal": request.get("core_goal", ""),
        "requirements": dump(request.get("requirements", [])),
        "constraints": dump(request.get("constraints", [])),
        "earlier": _earlier_phases(state.get("phase_outcomes", [])),
        "phase_number": state["phase_index"] + 1,
        "phase_total": len(state["phases"]),
        "phase_name": phase["name"],
        "phase_id": phase["id"],
        "phase_goal": phase["goal"],
        "round": state.get("phase_round", 0) + 1,
        "round_limit": round_limit(phase, limits_of(state)),
        "checks": plan_checks(owned, context, *last_work, made=state.get("new_files") or []),
        "tools": describe_tools(available[t] for t in tools),
        "workspace": facts["workspace"],
        "named": facts["named"],
        "reflection": prompts.REFLECTION.format(note=note) if note else "",
    }
    fixed = tokens(prompts.PLAN_USER.format(history="", **fields))
    history = render_history(phase_window(state), max(0, context.prompt_token_budget - fixed))
    return [
        SystemMessage(prompts.PLAN_SYSTEM.format(max_tasks=context.max_tasks_per_round)),
        HumanMessage(prompts.PLAN_USER.format(history=history, **fields)),
    ]


def _no_plan(
    state: State, call: StageCall[RoundPlan], round_no: int, runtime: Runtime[Context]
) -> dict[str, Any]:
    """No usable plan after the retries: the phase ends short (SPEC section 1).

    The run goes on with the next phase or its summary instead of stopping.
    """
    phase = current_phase(state)
    action = f"ended phase {phase['id']} short: no usable round plan"
    previous = state.get("judgement") or {}
    same_phase = previous.get("phase_id") == phase["id"]
    closed = close_phase(
        state,
        ended_by="no_plan",
        completed=False,
        rate=float(previous.get("phase_completion_rate", 0.0)) if same_phase else 0.0,
        rounds=round_no - 1,
        summary=str(previous.get("user_summary", "")) if same_phase else action,
        runtime=runtime,
    )
    said = fell_back("plan", call, state, runtime, action, round_no=round_no)
    return closed | {"current_plan": None} | said


def _insisting_plan(arguments: dict[str, Any] | None, context: Context) -> RoundPlan | None:
    """A plan whose only fault, after every retry, is a tool it may not use.

    Such a plan goes ahead: `execute` refuses those tasks and records the violations, which is
    what SPEC section 5 asks for, instead of failing the whole run over a model's insistence.
    """
    if arguments is None:
        return None
    try:
        return RoundPlan.model_validate(
            arguments, context={"max_tasks": context.max_tasks_per_round}
        )
    except ValidationError:
        return None
