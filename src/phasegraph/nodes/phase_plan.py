"""`phase_plan`: the structured request becomes 1-5 phases (one step per attempt).

The planned phases pass the graph's phase rules (`Policy.phase_rules`: by default, a plan of
one-tool phases, or several phases for a small job, becomes one phase whose goal names the
planned steps in order). Each check goes to the phase the plan names for it, else the last
(SPEC section 11).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from phasegraph import prompts
from phasegraph.context import Context
from phasegraph.facts.checks import assign_checks, check_lines
from phasegraph.models.structured import call_structured
from phasegraph.nodes.deps import Deps, context_of
from phasegraph.nodes.fallback import fell_back, stopped
from phasegraph.nodes.human_review import plan_review_on
from phasegraph.nodes.phase_shapes import one_phase
from phasegraph.nodes.prompt_render import request_facts
from phasegraph.nodes.step_budget import limits_of, retries_within_budget
from phasegraph.policy import PhasesToShape, shape_phases
from phasegraph.progress import emit
from phasegraph.state import CheckRecord, PhasePlan, State


def shaped(
    state: State, phases: list[dict[str, Any]], tool_names: Iterable[str], deps: Deps
) -> tuple[list[dict[str, Any]], str | None]:
    """Planned phases as the run works them (`Policy.phase_rules`), and why, if a rule merged.

    The phase planner's and the replanner's phases alike: a model that splits a job into tool
    calls may do it again when it replans.
    """
    facts = PhasesToShape(phases, state.get("structured_request") or {}, tuple(tool_names))
    return shape_phases(deps.policy.phase_rules, facts)


def phase_plan(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Plan the phases with the model; hold them for review when it is on."""
    context = context_of(runtime)
    checks = list(state.get("checks") or [])
    messages = [
        SystemMessage(prompts.PHASE_PLAN_SYSTEM.format(max_phases=context.max_phases)),
        HumanMessage(
            prompts.PHASE_PLAN_USER.format(
                structured_request=request_facts(state),
                tools=", ".join(deps.tools_for(context)) or "(none)",
                checks=prompts.PHASE_PLAN_CHECKS.format(checks=check_lines(checks))
                if checks
                else "",
            )
        ),
    ]
    call = call_structured(
        deps.chat_model(runtime, state.get("run_id", "")),
        "phase_planner",
        PhasePlan,
        messages,
        retries=retries_within_budget(state, context.max_parse_retries),
        validation_context={"max_phases": context.max_phases},
    )
    update: dict[str, Any] = call.counters(counted=True)
    if (stop := stopped("phase_plan", call, state, runtime)) is not None:
        return update | stop
    if call.value is None:
        action = "planned the whole request as one phase"
        phases, strategy = [one_phase(state["structured_request"] or {}, [])], action
        update |= fell_back("phase_plan", call, state, runtime, action)
    else:
        phases, merged = shaped(
            state, [p.model_dump() for p in call.value.phases], deps.tools_for(context), deps
        )
        strategy = merged or call.value.execution_strategy
    return update | _planned(state, phases, strategy, checks, runtime)


def _planned(
    state: State,
    phases: list[dict[str, Any]],
    strategy: str,
    checks: list[CheckRecord],
    runtime: Runtime[Context],
) -> dict[str, Any]:
    """The phases as the run keeps them, each check with its phase, and the review if on."""
    checks = assign_checks(checks, phases)
    update: dict[str, Any] = {
        "phases": phases,
        "execution_strategy": strategy,
        "phase_index": 0,
        "phase_round": 0,
        "checks": checks,
    }
    emit(runtime, "phases_planned", phases=[{"id": p["id"], "name": p["name"]} for p in phases])
    if plan_review_on(limits_of(state)):
        update["pending_review"] = {
            "kind": "plan_review",
            "stage": "phase_plan",
            "phases": phases,
            "execution_strategy": strategy,
            "checks": review_checks(checks, phases),
        }
        update["status"] = "awaiting_review"
        emit(runtime, "awaiting_review", kind="plan_review")
    return update


def review_checks(checks: list[CheckRecord], phases: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The checks as a plan review shows them: each beside the phase that must make it true."""
    last = phases[-1]["id"] if phases else ""
    return [{"id": c["id"], "check": c["label"], "phase": c["phase_id"] or last} for c in checks]
