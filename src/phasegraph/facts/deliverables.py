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
from phasegraph.state import CheckRecord, DeliverableEvidence, Evidence, State, TaskResult
from phasegraph.state.evidence import VouchedBy
from phasegraph.tools.checks import HAS_TEXT
from phasegraph.tools.workspace import Workspace, workspace_path


def run_results(state: State) -> list[TaskResult]:
    """Every task result of the run: its finished rounds', then the round under way."""
    done = [r for record in state.get("rounds") or [] for r in record.get("results") or []]
    return [*done, *(state.get("results") or [])]


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

    ``contains``, ``matches`` (other than "holds some text") and ``copy`` do. ``exists`` does
    not, nor ``number``, which says the file holds a number, not that it is the right one, nor
    ``keeps``, which says the lines a file had are still there, not that the change asked of it
    was made. A command does when its output must hold a text (``expect``): a program that
    succeeds on any file (``cat``, ``wc``) says nothing of what the file holds by its exit code.
    """
    if check["kind"] in ("exists", "number", "keeps"):
        return False
    if check["kind"] == "command":
        return bool(check.get("expect"))
    return check.get("pattern") != HAS_TEXT


def vouching(rel: str, checks: Sequence[CheckRecord], space: Workspace) -> DeliverableEvidence:
    """What vouches for one deliverable: ``checks`` where a passing check reads its content.

    A check reads a file's content as `reads_content` says, and vouches for the work only if it
    did not already pass before the work began (``held_before``): a text an input held all
    along says nothing of the change asked of it. Where the passing checks that name it say
    only that it is there, or held before, its content rests on the judge's word
    (``presence``); where no passing check names it, ``judge``. Failing checks are listed too.
    """
    content, presence, failing = [], [], []
    for check in checks:
        if not _names(check, rel, space):
            continue
        if check.get("passed") is not True:
            failing.append(check["label"])
        elif reads_content(check) and not check.get("held_before"):
            content.append(check["label"])
        else:
            presence.append(check["label"])
    vouched_by: VouchedBy = "checks" if content else "presence" if presence else "judge"
    return {
        "path": rel,
        "vouched_by": vouched_by,
        "checks": content + presence,
        "failing": failing,
        "exists": os.path.lexists(space.real_root / rel),
    }


def _names(check: CheckRecord, rel: str, space: Workspace) -> bool:
    if check["kind"] == "command":
        return any(workspace_path(space, arg) == rel for arg in check.get("argv") or [])
    return workspace_path(space, check.get("path")) == rel


def deliverable_evidence(
    state: State, tools: Mapping[str, BaseTool], space: Workspace
) -> Evidence:
    """Each deliverable with what vouches for it, and whether checks of code vouch for all.

    ``verified`` is true only when the run was analysed (and knows which files the request
    names: a thread from before that was recorded does not), every check passes, every
    deliverable is there with a passing check that reads its content, and no write the run
    made lies outside the workspace; for a run without a deliverable file, when a passing
    command check reads some output (``expect``). Anything else rests on the judge's word,
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
        verified = any(c["kind"] == "command" and reads_content(c) for c in checks)
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
    return ["no deliverable file is known and no check reads a result: the judge's word"]


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
        case "presence":
            return f"{path} is there ({checks}); its content rests on the judge's word alone"
        case _:
            return f"{path} rests on the judge's word alone (no check reads it)"
