"""What code may overrule: guards that keep a phase open its judge called done (SPEC section 1).

A guard is a small function of the round's facts record (`RoundFacts`) that returns a reason to
keep the phase open, or None. When the judge claims the phase done (``phase_completed``, or
``end_phase`` at a rate that says the goal is met), the guards are asked in order; the first
reason overrules the judgement: the phase goes on (``continue_phase``) and the judgement says
why (``overridden``), which the next plan reads. The round limit and the budget still end it.

`DEFAULT_GUARDS` hold for any tools, the caller's included, and read only what tools declare of
themselves. `WORKSPACE_GUARDS` serve the built-in workspace tools and are on when those are.
``build_graph(guards=...)`` replaces the list; add to `default_guards` to keep them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from phasegraph import prompts
from phasegraph.errors import ConfigurationError
from phasegraph.state.facts import RoundFacts

Guard = Callable[[RoundFacts], str | None]

#: The least completion rate at which a judge's "phase completed" is taken.
COMPLETED_RATE = 0.5


def claims_done(judgement: dict[str, Any]) -> bool:
    """``phase_completed``, or ``end_phase`` at a rate that claims the goal is met.

    An ``end_phase`` at a low rate (the goal cannot be met) still ends the phase, short of it.
    """
    return bool(judgement["phase_completed"]) or (
        judgement["next_action"] == "end_phase"
        and judgement["phase_completion_rate"] >= COMPLETED_RATE
    )


def hold(judgement: dict[str, Any], facts: RoundFacts, guards: Sequence[Guard]) -> None:
    """Overrule a judgement that claims the phase done where a guard gives a reason."""
    if not claims_done(judgement):
        return
    for guard in guards:
        why = guard(facts)
        if why:
            judgement["phase_completed"] = False
            judgement["next_action"] = "continue_phase"
            judgement["overridden"] = why
            return


# -- for any tools ------------------------------------------------------------------------------


def checks_fail(facts: RoundFacts) -> str | None:
    """A check the phase owns fails: the phase is not done (SPEC section 11)."""
    if facts["failing_checks"]:
        return "checks fail: " + "; ".join(facts["failing_checks"])
    return None


def writes_never_ran(facts: RoundFacts) -> str | None:
    """The round planned writes (tools of the ``@writes`` kind), none ran, no file changed.

    Those are tools that declare a file they write, or that they change things without
    running programs (`facts.tools.tool_kinds`): a key-value store's put counts.
    """
    writes = facts["writes"]
    if writes and not facts["changed_files"] and not any(w.endswith(" ok") for w in writes):
        return f"no file changed: the writes planned ({', '.join(writes)}) did not run"
    return None


def nothing_succeeded(facts: RoundFacts) -> str | None:
    """No task of the phase has succeeded: whatever the judge saw, the phase did nothing."""
    if facts["phase_succeeded"] == 0:
        return prompts.NOTHING_SUCCEEDED
    return None


# -- for the built-in workspace tools ---------------------------------------------------------


def broken_format(facts: RoundFacts) -> str | None:
    """A file the run wrote no longer reads as its format (JSON, INI, TOML) by its own parser.

    Only a file the request names that read as its format when the run began, or that the run
    made (`facts.formats.broken_formats`): whatever the request asked, the file is broken. A
    Python file that now uses a name nothing in it binds is one (`facts.python_names`).
    """
    broken = facts.get("malformed") or {}
    if broken:
        return "; ".join(
            prompts.BROKEN_FORMAT.format(path=path, error=error) for path, error in broken.items()
        )
    return None


def files_unwritten(facts: RoundFacts) -> str | None:
    """The last phase, and no file the request writes or changes was written."""
    named = facts["to_write"]
    if facts["last_phase"] and named and len(facts["unwritten"]) == len(named):
        return (
            f"no file the request writes or changes was written ({', '.join(named)}): the work "
            "is not done"
        )
    return None


DEFAULT_GUARDS: tuple[Guard, ...] = (checks_fail, writes_never_ran, nothing_succeeded)
WORKSPACE_GUARDS: tuple[Guard, ...] = (broken_format, files_unwritten)


def checked_guards(guards: Sequence[Guard]) -> tuple[Guard, ...]:
    """``guards`` as a graph keeps them; `ConfigurationError` for one that is not a function.

    Refused when the graph is built, not when a judge first asks the guard, after the run's
    tools have already run.
    """
    if isinstance(guards, str) or not isinstance(guards, Sequence):
        raise ConfigurationError(
            f"guards takes a list of functions; got {type(guards).__name__}: give "
            "[phasegraph.guards.checks_fail, ...] (or add to default_guards(...))"
        )
    for guard in guards:
        if not callable(guard):
            raise ConfigurationError(
                f"guards are functions of the round's facts, returning a reason or None; got "
                f"{guard!r}: give the function itself (phasegraph.guards.checks_fail, say)"
            )
    return tuple(guards)


def default_guards(workspace: bool) -> tuple[Guard, ...]:
    """The guards a graph has unless given its own: the workspace set when ``workspace``.

    No task succeeded is asked last: where another guard knows better what is missing, its
    reason is the one the next plan reads.
    """
    checks, writes, nothing = DEFAULT_GUARDS
    return (checks, writes, *(WORKSPACE_GUARDS if workspace else ()), nothing)
