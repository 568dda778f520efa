"""What vouches for each deliverable of a run: a check of code, or only the judge's word.

A deliverable is a file the run wrote (with a tool that declares the file it writes), a file
the request names that was not there when the run began, or a file a check names. For each,
`deliverable_evidence` says which passing checks name it (SPEC sections 1 and 11); a run
claims no more than that.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph.facts.tools import changed_files
from phasegraph.state import CheckRecord, DeliverableEvidence, Evidence, State
from phasegraph.state.evidence import VouchedBy
from phasegraph.state.reading import run_results
from phasegraph.tools.checks import HAS_TEXT
from phasegraph.tools.workspace import Workspace, workspace_path


def deliverables(state: State, tools: Mapping[str, BaseTool], space: Workspace) -> list[str]:
    """The run's deliverables by workspace path, in the order the run met them, each once.

    The files written by tools that declare what they write (a file written and gone again is
    a scratch file, unless named below), the files the request names that were not there when
    the run began (`State.new_files`), and the files any file check names, whoever set it. An
    input the request names and the run left alone is not one; a file a command wrote is one
    only if the request or a check names it.
    """
    named = [
        *(state.get("new_files") or []),
        *(c["path"] for c in state.get("checks") or [] if c.get("kind") != "command"),
    ]
    named_rel = {rel for p in named if (rel := workspace_path(space, p))}
    written = [
        rel
        for p in changed_files(run_results(state), tools)
        if (rel := workspace_path(space, p))
        and (rel in named_rel or os.path.lexists(space.real_root / rel))
    ]
    found = [*written, *(rel for p in named if (rel := workspace_path(space, p)))]
    return list(dict.fromkeys(found))


def reads_content(check: CheckRecord) -> bool:
    """Whether a passing ``check`` says what its file holds, not only that it is there.

    ``contains``, ``matches`` (other than "holds some text"), ``equals`` and ``copy`` do.
    ``exists`` does not, nor ``number``, which says the file holds a number, not that it is the
    right one, nor ``keeps``, which says the lines a file had are still there, not that the
    change asked of it was made. A command does when its output must hold a text (``expect``):
    a program that succeeds on any file (``cat``, ``wc``) says nothing of what the file holds by
    its exit code.
    """
    if check["kind"] in ("exists", "number", "keeps"):
        return False
    if check["kind"] == "command":
        return bool(check.get("expect"))
    return check.get("pattern") != HAS_TEXT


def pins_whole(check: CheckRecord) -> bool:
    """Whether a passing ``check`` that reads content says what its file holds in full.

    ``equals`` (the whole text) and ``copy`` (the same bytes as its source) do. ``contains`` and
    ``matches`` do not, however much of the file they match: they say a text is there, never
    that nothing is missing (a file that holds only the one value a check names, where the
    request asks for several, passes every such check). Nor does a command: its output holding
    a text says no more of a file than ``contains`` does (``cat out.txt => 42``), and what else
    a program reads of the file code cannot see.
    """
    return check["kind"] in PINNING_KINDS


#: The kinds of check that pin a file's whole content (`pins_whole`).
PINNING_KINDS = ("equals", "copy")


def pinned_paths(checks: Iterable[CheckRecord], space: Workspace) -> set[str]:
    """The workspace paths whose whole content a passing check pins: what a caller asked for."""
    return {
        rel
        for c in checks
        if c.get("passed") is True and pins_whole(c) and (rel := workspace_path(space, c["path"]))
    }


def vouching(rel: str, checks: Sequence[CheckRecord], space: Workspace) -> DeliverableEvidence:
    """What vouches for one deliverable: ``checks`` where a passing check pins its whole content.

    A check reads a file's content as `reads_content` says, and vouches for the work only if it
    did not already pass before the work began (``held_before``): a text an input held all
    along says nothing of the change asked of it. Where one of them pins the whole content
    (`pins_whole`), ``checks``; where they only find texts in it, ``partial`` (whether anything
    is missing or more is there rests on the judge's word). Where the passing checks that name
    it say only that it is there, or held before, ``presence``; where no passing check names
    it, ``judge``. Failing checks are listed too.
    """
    content, presence, failing = [], [], []
    for check in checks:
        if not _names(check, rel, space):
            continue
        if check.get("passed") is not True:
            failing.append(check)
        elif reads_content(check) and not check.get("held_before"):
            content.append(check)
        else:
            presence.append(check)
    vouched_by: VouchedBy = "presence" if presence else "judge"
    if content:
        vouched_by = "checks" if any(pins_whole(c) for c in content) else "partial"
    return {
        "path": rel,
        "vouched_by": vouched_by,
        "checks": [c["label"] for c in [*content, *presence]],
        "failing": [c["label"] for c in failing],
        "exists": os.path.lexists(space.real_root / rel),
    }


def _names(check: CheckRecord, rel: str, space: Workspace) -> bool:
    if check["kind"] == "command":
        return any(workspace_path(space, arg) == rel for arg in check.get("argv") or [])
    return workspace_path(space, check.get("path")) == rel


def deliverable_evidence(state: State, tools: Mapping[str, BaseTool], space: Workspace) -> Evidence:
    """Each deliverable with what vouches for it, and whether checks of code vouch for all.

    ``verified`` is true only when the run was analysed (and knows which files the request
    names: a thread from before that was recorded does not), every check passes, every
    deliverable is there and a passing check pins its whole content (`vouching`), no write the run
    made lies outside the workspace; for a run without a deliverable file, when a passing
    command check reads some output (``expect``) it did not already read before the work
    (``held_before``: it shows nothing of the work). Anything else rests on the judge's word,
    and says so.
    """
    checks = list(state.get("checks") or [])
    files = [vouching(rel, checks, space) for rel in deliverables(state, tools, space)]
    sound = (
        bool(state.get("structured_request"))
        and state.get("new_files") is not None
        and all(c.get("passed") is True for c in checks)
        and not _written_outside(state, tools, space)
    )
    if files:
        verified = all(f["vouched_by"] == "checks" and f["exists"] for f in files)
    else:
        verified = any(
            c["kind"] == "command" and reads_content(c) and not c.get("held_before") for c in checks
        )
    return {"verified": sound and verified, "files": files}


def _written_outside(state: State, tools: Mapping[str, BaseTool], space: Workspace) -> bool:
    """Whether a tool reported writing a file the workspace does not hold (a path outside)."""
    return any(workspace_path(space, p) is None for p in changed_files(run_results(state), tools))


def evidence_parts(evidence: Mapping[str, Any]) -> list[str]:
    """The evidence as phrases: one for each deliverable, or one for a run without any."""
    files: Iterable[Mapping[str, Any]] = evidence.get("files") or []
    parts = [file_evidence(f) for f in files]
    if parts:
        return parts
    if evidence.get("verified"):
        return ["no deliverable file; every check passes, one reading the output of a command"]
    return [
        "no deliverable file is known and no check reads a result of the work: the judge's word"
    ]


def evidence_line(evidence: Mapping[str, Any]) -> str:
    """The evidence in one sentence, for the facts line of the summary."""
    return "Evidence: " + "; ".join(evidence_parts(evidence))


def file_evidence(f: Mapping[str, Any]) -> str:
    """What vouches for one deliverable, as a phrase."""
    path, checks = f["path"], ", ".join(f.get("checks") or [])
    if not f.get("exists"):
        return f"{path} is not there"
    match f["vouched_by"]:
        case "checks":
            return f"{path} checked by code ({checks})"
        case "partial":
            return (
                f"{path} partly checked by code ({checks}); whether anything is missing or "
                "more is there rests on the judge's word"
            )
        case "presence":
            return f"{path} is there ({checks}); its content rests on the judge's word alone"
        case _:
            return f"{path} rests on the judge's word alone (no check reads it)"
