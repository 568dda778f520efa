"""Holds on writes of typed text: what the model wrote into a call's arguments (SPEC 5).

A program's output, and a task's output passed by reference (``$t1``), are what they are; text
the model typed into a write is its guess. Three such guesses are held before they run: one
planned beside the reads it could not have seen (`blind_writes`), one planned over a file a
program of the same round writes (`typed_over_program_output`), and one that retypes a whole
file the request names into another (`typed_copies`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph.facts.files import copy_of
from phasegraph.facts.tools import (
    computed,
    computing_argument,
    read_only,
    replaces_found_text,
    runs_argument,
    typed,
    writes_files,
)
from phasegraph.nodes.holds import written_path
from phasegraph.state import TaskResult
from phasegraph.tools.base import is_idempotent
from phasegraph.tools.workspace import Workspace


def blind_writes(
    tasks: list[dict[str, Any]],
    tools: Mapping[str, BaseTool],
    earlier: Iterable[TaskResult] = (),
    nothing: Set[str] = frozenset(),
) -> dict[str, str]:
    """The typed writes a round plans beside reads, each with why it waits for a round of its own.

    A plan's typed arguments are fixed when it is made, so a file written in the round that
    reads cannot hold what the reads return, with or without a depends_on between them. Such a
    write is not run; the next plan has the reads' output, and the reason names the forms that
    carry it in the same round: the read's output by reference (``$t1``), or a command that
    writes its own output (``>``). A write that takes a read's output by reference holds what
    it returns, and runs; so does a command, whose program reads what it needs itself. A round
    of writes alone runs as planned, and so does a call that declares neither, and an edit that
    writes only where the text it replaces is found (``replaces``): its typed text is a change
    the request states, checked against the file by the tool itself. Once an earlier
    round of the phase has read (in ``earlier``), a write beside reads runs: its plan had those
    outputs, and a model that plans a read beside every write would otherwise never write. A
    read whose output the prompt already showed (the workspace's listing, a file shown whole)
    holds the typed writes beside it too: what the read returns is what the write may need, and
    the form that passes it exactly is one argument away. ``nothing``: reads that can return
    nothing (see `reads_of_nothing`), which hold nothing back. Returns each held write's task
    id with why.
    """
    reading = read_only(tools)
    readers = [t["id"] for t in tasks if t["tool"] in reading and t["id"] not in nothing]
    if not readers or any(r["tool"] in reading and r["status"] == "ok" for r in earlier):
        return {}
    def why(tool: BaseTool | None) -> str:
        return (
            f"not run: it was planned beside reads ({', '.join(readers)}) whose output its typed "
            f'text could not hold. To write what {readers[0]} returns, give "${readers[0]}" as '
            f"the text; to write what a program computes from files, {by_program(tool)}; else "
            "plan it alone next round, written from what the reads returned"
        )

    return {
        t["id"]: why(tools.get(t["tool"]))
        for t in tasks
        if writes_files(tool := tools.get(t["tool"]))
        and not replaces_found_text(tool)
        and typed(t.get("arguments") or {}, tool)
    }


def typed_over_program_output(
    tasks: Sequence[Mapping[str, Any]], tools: Mapping[str, BaseTool], space: Workspace
) -> dict[str, str]:
    """Whole-file writes of typed text over a file a program of the round writes, with why.

    A program's output written by the program (``sort a > b``) is exact; a whole-file write
    planned after it, to the same file, would replace it with what the model typed. Such a
    write is not run. A write that takes a task's output by reference (``$t1``) is not typed,
    and an edit changes a part: both run.
    """
    made: dict[str, str] = {}
    held: dict[str, str] = {}
    for task in tasks:
        tool = tools.get(str(task.get("tool")))
        path = written_path(task, tools, space)
        if not path:
            continue
        arguments = task.get("arguments") or {}
        if runs_argument(tool) or computed(arguments, tool):
            made[path] = str(task["id"])
        elif path in made and tool is not None and is_idempotent(tool) and typed(arguments, tool):
            held[str(task["id"])] = (
                f"not run: {path} is written by {made[path]}'s program in this round; a typed "
                "text over it would replace what the program made"
            )
    return held


def typed_copies(
    tasks: Sequence[Mapping[str, Any]],
    tools: Mapping[str, BaseTool],
    space: Workspace,
    originals: Mapping[str, str],
) -> dict[str, str]:
    """Writes whose typed text is the whole text another file held, each with why it waits.

    ``originals``: what the files the request names held when the run began. A file's whole
    text typed into another is either a copy, which a read's output passed by reference
    (``$t1``) or a program's ``>`` makes exactly, or the input where what is computed from it
    was asked; neither is a typed text's to make. A write that takes a reference runs, and
    so does an edit, which writes only where its old text is found. A text of one word runs
    too: a file that holds one number or name holds what may be the answer itself (the sum of
    one number).
    """
    held: dict[str, str] = {}
    for task in tasks:
        tool = tools.get(str(task.get("tool")))
        arguments = task.get("arguments") or {}
        path = written_path(task, tools, space)
        if not path or not writes_files(tool) or replaces_found_text(tool):
            continue
        if not typed(arguments, tool):
            continue
        texts = (v.strip() for v in arguments.values() if isinstance(v, str) and len(v.split()) > 1)
        source = next((src for text in texts if (src := copy_of(path, text, originals))), None)
        if source is not None:
            held[str(task["id"])] = (
                f"not run: its text is the whole text of {source}, typed. Pass a read's output "
                f'exactly as "$t1"; if {path} is to hold something worked out from {source}, '
                f"{by_program(tool)}"
            )
    return held


def by_program(tool: BaseTool | None) -> str:
    """How a write held for typed text gets a program's output instead, in words.

    A tool that declares a command argument (`computing_argument`) takes the command there;
    for any other, a command line writes the file with ``>``.
    """
    argument = computing_argument(tool)
    if argument:
        return f"give the write a {argument} whose output is the text (not the text itself)"
    return "let a program work it out and write it with >"
