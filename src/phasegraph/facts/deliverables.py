"""What vouches for each deliverable of a run: a check of code, or only the judge's word.

A deliverable is a file the run wrote (with a tool that declares the file it writes) or a file
the request names that was not there when the run began. For each, `deliverable_evidence` says
which passing checks name it (SPEC sections 1 and 11); a run claims no more than that.
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

    The files written by tools that declare what they write, the files the request names that
    were not there when the run began (`State.new_files`), and the files checks the analysis
    proposed name. An input the request names and the run left alone is not one; a file a
    command wrote is one only if the request or a check names it.
    """
    proposed = [c["path"] for c in state.get("checks") or [] if c.get("source") == "analysis"]
    found = [*changed_files(run_results(state), tools), *(state.get("new_files") or []), *proposed]
    return list(dict.fromkeys(rel for p in found if (rel := workspace_path(space, p))))


def vouching(rel: str, checks: Sequence[CheckRecord], space: Workspace) -> DeliverableEvidence:
    """What vouches for one deliverable: ``checks`` where a passing check reads its content.

    A check reads a file's content when it wants a text or a pattern other than "holds some
    text", or when it is a command naming the file. Where only ``exists`` or "holds some text"
    pass, the file is there but its content rests on the judge's word (``presence``); where
    no passing check names it, ``judge``. A failing check that names it is listed too.
    """
    content, presence, failing = [], [], []
    for check in checks:
        if not _names(check, rel, space):
            continue
        if check.get("passed") is not True:
            failing.append(check["label"])
        elif check["kind"] == "exists" or check.get("pattern") == HAS_TEXT:
            presence.append(check["label"])
        else:
            content.append(check["label"])
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

    ``verified`` is true when every deliverable has a passing check that reads its content,
    or, for a run without a deliverable file, when it has checks and every one passes. A run
    with neither rests on the judge's word, and says so.
    """
    checks = list(state.get("checks") or [])
    files = [vouching(rel, checks, space) for rel in deliverables(state, tools, space)]
    if files:
        verified = all(f["vouched_by"] == "checks" for f in files)
    else:
        verified = bool(checks) and all(c.get("passed") is True for c in checks)
    return {"verified": verified, "files": files}


def evidence_parts(evidence: Mapping[str, Any]) -> list[str]:
    """The evidence, a phrase a deliverable (or one for a run without a deliverable file)."""
    files: Iterable[Mapping[str, Any]] = evidence.get("files") or []
    parts = [file_evidence(f) for f in files]
    if parts:
        return parts
    if evidence.get("verified"):
        return ["no deliverable file; every check passes"]
    return ["no deliverable file is known and no check passes: it rests on the judge's word"]


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
