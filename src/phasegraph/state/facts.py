"""The facts record of a round: what code knows once the round's tasks are in (SPEC section 1).

It is computed once, by the judge's node before the judge is asked, and kept in the state
(``facts``) and in the round's record; the judge, the guards, the next plan, the replan and the
summary read it and recompute nothing. Paths are as the tools were given them unless a field
says they are resolved.
"""

from typing import NotRequired

from typing_extensions import TypedDict


class RoundFacts(TypedDict):
    """What code knows of the run after one round, computed once."""

    phase_id: str
    """Phase of the round."""
    round: int
    """Round of the phase (1-based)."""
    last_phase: bool
    """Whether the round's phase is the plan's last: the one that ends the work."""
    tasks: int
    """Tasks the round planned."""
    succeeded: int
    """Tasks of the round whose execution succeeded."""
    phase_succeeded: int
    """Tasks of the phase (since it started or was last replanned) that succeeded."""
    writes: list[str]
    """The round's calls of tools of the ``@writes`` kind (`tool_kinds`), each as "id status"."""
    changed_files: list[str]
    """Files the phase's tools wrote."""
    written_files: list[str]
    """Files the run's tools wrote, as the workspace resolves them."""
    failing_checks: list[str]
    """The phase's checks that fail, each in words with what code saw."""
    malformed: NotRequired[dict[str, str]]
    """Written files no longer read as their format (JSON, INI, TOML), with why (resolved)."""
    to_write: list[str]
    """Files the request writes or changes, as the analysis names them (resolved)."""
    unwritten: list[str]
    """Those of them that no tool of the run has written."""
    files: str
    """The changed files as the judge reads them: size, how each begins, what changed."""
    workspace: str
    """The workspace's entries, listed by code (empty without the workspace tools)."""
    named: str
    """The files the request names, as they are now (empty without the workspace tools)."""
