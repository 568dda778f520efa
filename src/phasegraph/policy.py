"""The rules by which code reshapes what the model planned: named units a caller replaces.

Guards (`phasegraph.guards`) keep a phase open and holds (`phasegraph.holding`) hold a task
back; a `Policy` holds the other four kinds, each a list of small functions that read what the
run and its tools declare, never singling out a tool by its name (SPEC section 1):

- phase rules merge the phases a plan or replan gives (the first rule that merges wins);
- plan gates ask the model once more for a plan, saying why (the first reason is said);
- tool widenings keep tools in a phase that its own list of tools leaves out;
- check filters drop a check the analysis proposed, saying why (the first reason is said).

``build_graph(policy=...)`` replaces the defaults (`Policy()`); ``dataclasses.replace`` keeps
the other kinds, and ``[*Policy().plan_gates, yours]`` adds to a kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph import prompts
from phasegraph.errors import ConfigurationError
from phasegraph.facts.files import files_named
from phasegraph.facts.tools import read_only
from phasegraph.nodes.phase_shapes import fits_one_phase, named_after_tools, one_phase
from phasegraph.nodes.plan_gate import adds_nothing
from phasegraph.state import TaskResult
from phasegraph.tools.workspace import Workspace


@dataclass(frozen=True)
class PhasesToShape:
    """What a phase rule reads: the phases as planned, the request's analysis, the tools."""

    phases: list[dict[str, Any]]
    """The planned phases (id, name, goal, estimated_rounds, allowed_tools, checks)."""
    request: Mapping[str, Any]
    """The structured request (core_goal, requirements, complexity, ...)."""
    tool_names: Sequence[str]
    """The names of the run's tools."""


PhaseRule = Callable[[PhasesToShape], "tuple[list[dict[str, Any]], str] | None"]
"""A phase rule: the phases as the run works them, with why, or None to leave them."""


def tool_named_phases(shape: PhasesToShape) -> tuple[list[dict[str, Any]], str] | None:
    """Several phases named after tools are the tool list copied out: they become one phase."""
    copied = named_after_tools(shape.phases, shape.tool_names)
    if not copied:
        return None
    # asking again does not help a model that does this: decoding greedily, it answers the same
    merged = one_phase(shape.request, shape.phases, phase_id=_first_id(shape.phases))
    return [merged], prompts.TOOL_PHASES_NOTE.format(names=", ".join(copied))


def small_job_phases(shape: PhasesToShape) -> tuple[list[dict[str, Any]], str] | None:
    """A small job split into its tool calls becomes one phase, its steps in its goal."""
    if not fits_one_phase(shape.request, shape.phases):
        return None
    steps = [str(p["goal"]) for p in shape.phases]
    merged = one_phase(shape.request, shape.phases, steps, phase_id=_first_id(shape.phases))
    return [merged], prompts.ONE_PHASE_NOTE.format(count=len(shape.phases))


def _first_id(phases: list[dict[str, Any]]) -> str:
    return str(phases[0]["id"]) if phases else "p1"


@dataclass(frozen=True)
class PlanToGate:
    """What a plan gate reads: a valid plan's calls, the tools, and the run's rounds so far."""

    tasks: list[dict[str, Any]]
    """The plan's calls, each a tool and its arguments."""
    tools: Mapping[str, BaseTool]
    """The run's tools by name, with what each declares of itself."""
    rounds: Sequence[Sequence[TaskResult]]
    """The results of the run's rounds, in order."""


PlanGate = Callable[[PlanToGate], "str | None"]
"""A plan gate: why the plan is asked for again, or None to let it run."""


def plans_adding_nothing(plan: PlanToGate) -> str | None:
    """A plan each of whose calls would return what it returned before is asked for again."""
    return adds_nothing(plan.tasks, plan.tools, plan.rounds)


@dataclass(frozen=True)
class PhaseTools:
    """What a tool widening reads: the run's tools, the phase's place, the writers it needs."""

    tools: Mapping[str, BaseTool]
    """The run's tools by name, with what each declares of itself."""
    last_phase: bool
    """Whether the phase is the run's last: its end is the work's."""
    writers_needed: frozenset[str]
    """The tools that write files, while a file check fails or the request names files to write."""


ToolWidening = Callable[[PhaseTools], "set[str] | frozenset[str]"]
"""A tool widening: tools the phase keeps whatever its own list names."""


def readers_everywhere(phase: PhaseTools) -> set[str]:
    """Every phase keeps the tools that only read: a phase that cannot look cannot do its part."""
    return read_only(phase.tools)


def writers_in_the_last_phase(phase: PhaseTools) -> frozenset[str]:
    """The last phase keeps the tools that write the files the work still needs written."""
    return phase.writers_needed if phase.last_phase else frozenset()


@dataclass(frozen=True)
class CheckProposal:
    """What a check filter reads: one check the analysis proposed, the request, the workspace."""

    check: Mapping[str, Any]
    """The proposed check (kind, path, text, pattern, ...), valid as a check."""
    request: str
    """The request as the person wrote it."""
    space: Workspace
    """The run's workspace as it is before any work."""


CheckFilter = Callable[[CheckProposal], "str | None"]
"""A check filter: why a proposed check is dropped, or None to keep it."""

#: Kinds of check the analysis's schema offers but `guessed_results` drops, and why: a kind
#: whose proposals are wrong more often than right (`python -m bench.proposals` counts them on
#: requests with a known right result; docs/benchmarks.md) holds right work open.
REFUSED_KINDS = {
    "matches": "a pattern is a guess about the result, not something the request gives",
    "contains": "a text the file must hold is a guess at the result; a caller pins it with a check",
    "command": "a command that must succeed is the caller's to give, as a check",
}


def guessed_results(proposed: CheckProposal) -> str | None:
    """A proposed check of what a file holds, or of a command, is a guess, and is dropped."""
    return REFUSED_KINDS.get(str(proposed.check["kind"]))


def inputs_and_unnamed_files(proposed: CheckProposal) -> str | None:
    """A proposed file check stands only on a file the request names that is not there yet."""
    if not proposed.check.get("path"):
        return None  # not a file check
    path = str(proposed.check["path"]).strip().removeprefix("./")
    if path not in files_named(proposed.request, proposed.space):
        return f"the request does not name {path}"
    if (proposed.space.real_root / proposed.space.relative(path)).exists():
        return f"{path} is there before any work: an input, not a deliverable"
    return None


@dataclass(frozen=True)
class Policy:
    """The rules a graph applies to what the model plans, besides its guards and holds."""

    phase_rules: tuple[PhaseRule, ...] = (tool_named_phases, small_job_phases)
    """Rules that merge planned phases, asked in order; the first that merges wins."""
    plan_gates: tuple[PlanGate, ...] = (plans_adding_nothing,)
    """Gates a round's valid plan passes before it runs; the model is asked again once."""
    tool_widenings: tuple[ToolWidening, ...] = (readers_everywhere, writers_in_the_last_phase)
    """Tools a phase keeps whatever its own list names, all rules together."""
    check_filters: tuple[CheckFilter, ...] = (guessed_results, inputs_and_unnamed_files)
    """Filters of the checks the analysis proposes; a check any of them refuses is dropped."""


def checked_policy(policy: object) -> Policy:
    """``policy`` as a graph keeps it, each kind a tuple; `ConfigurationError` if it is not one."""
    if not isinstance(policy, Policy):
        raise ConfigurationError(
            f"build_graph(policy=...) takes a phasegraph.policy.Policy, got {policy!r}"
        )
    kinds: dict[str, tuple[Any, ...]] = {}
    for kind in fields(policy):
        units = getattr(policy, kind.name)
        if not isinstance(units, tuple | list) or not all(callable(u) for u in units):
            raise ConfigurationError(f"Policy.{kind.name} takes a list of functions, got {units!r}")
        kinds[kind.name] = tuple(units)
    return replace(policy, **kinds)


def shape_phases(
    rules: Sequence[PhaseRule], shape: PhasesToShape
) -> tuple[list[dict[str, Any]], str | None]:
    """The phases as the first rule that merges them gives them, and why; else as planned."""
    for rule in rules:
        if (merged := rule(shape)) is not None:
            return merged
    return shape.phases, None


def first_reason(units: Sequence[Callable[[Any], str | None]], facts: Any) -> str | None:
    """The reason the first of ``units`` gives for ``facts``, or None when none gives one."""
    return next((why for unit in units if (why := unit(facts))), None)


def widened(widenings: Sequence[ToolWidening], phase: PhaseTools) -> set[str]:
    """Every tool some widening keeps in the phase."""
    return {name for widening in widenings for name in widening(phase)}
