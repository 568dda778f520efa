"""What may hold a planned task back before it runs: named units a caller can replace.

A hold reads a round's plan against what the run has seen (`RoundToRun`) and returns the tasks
it holds back, each with why; a held task does not run, its result says why, and the next plan
reads it. The defaults (`default_holds`) read what tools declare of themselves, never a tool's
name, so they hold for a caller's tools too; ``build_graph(holds=...)`` replaces them (add to
``default_holds()`` to keep them). Identical calls of one round run once whatever the holds
(SPEC section 5): that is not a policy, and is not among them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph.context import Context
from phasegraph.errors import ConfigurationError
from phasegraph.nodes.holds import failed_before, reads_of_nothing, unseen_overwrites
from phasegraph.nodes.typed_writes import blind_writes, typed_copies, typed_over_program_output
from phasegraph.state import State, TaskResult
from phasegraph.tools.workspace import Workspace


@dataclass(frozen=True)
class RoundToRun:
    """What a hold reads of a round before its tasks run."""

    tasks: list[dict[str, Any]]
    """The round's planned tasks (id, tool, arguments, depends_on)."""
    tools: Mapping[str, BaseTool]
    """The run's tools by name, with what each declares of itself."""
    space: Workspace
    """The run's workspace, as the built-in tools see it."""
    state: State
    """The run's state as the round starts."""
    context: Context
    """The run's settings."""
    earlier: Sequence[TaskResult]
    """The results of the phase's earlier rounds."""
    seen: Sequence[TaskResult]
    """Every result of the run so far, this round's earlier waves included."""


Hold = Callable[[RoundToRun], dict[str, str]]
"""A hold: the tasks of a round it holds back, by id, each with why."""


def writes_beside_reads(round_: RoundToRun) -> dict[str, str]:
    """A typed write planned beside the reads it could not have seen waits a round."""
    nothing = reads_of_nothing(round_.tasks, round_.tools, round_.space)
    return blind_writes(round_.tasks, round_.tools, round_.earlier, nothing)


def overwrites_unseen(round_: RoundToRun) -> dict[str, str]:
    """A whole-file write over a file there that the run has not seen waits for a read."""
    return unseen_overwrites(round_.tasks, round_.tools, round_.seen, round_.state, round_.context)


def fails_again(round_: RoundToRun) -> dict[str, str]:
    """A write the workspace refused, with nothing changed since, is not tried again."""
    return failed_before(round_.tasks, round_.tools, round_.seen)


def typed_over_programs(round_: RoundToRun) -> dict[str, str]:
    """A typed whole-file write over a file a program of the round writes does not run."""
    return typed_over_program_output(round_.tasks, round_.tools, round_.space)


def typed_file_copies(round_: RoundToRun) -> dict[str, str]:
    """A file the request names, retyped whole into another, waits for a program or a reference."""
    originals = round_.state.get("originals") or {}
    return typed_copies(round_.tasks, round_.tools, round_.space, originals)


def default_holds() -> tuple[Hold, ...]:
    """The holds a graph has unless given its own, in the order they are asked."""
    return (writes_beside_reads, overwrites_unseen, fails_again, typed_over_programs,
            typed_file_copies)  # fmt: skip


def checked_holds(holds: Sequence[Hold]) -> tuple[Hold, ...]:
    """``holds`` as a graph keeps them; `ConfigurationError` for one that is not a function."""
    kept = tuple(holds)
    for hold in kept:
        if not callable(hold):
            raise ConfigurationError(
                f"build_graph(holds=...) takes functions of a RoundToRun, got {hold!r}"
            )
    return kept


def held_back(holds: Sequence[Hold], round_: RoundToRun) -> dict[str, str]:
    """Every task some hold holds back, with the reason of the last hold that holds it."""
    held: dict[str, str] = {}
    for hold in holds:
        held.update(hold(round_))
    return held
