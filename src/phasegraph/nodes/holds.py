"""What `execute` holds back from a round before any tool runs, each with why (SPEC section 5).

Each is a policy of the round's plan against what the run has seen, read from what tools
declare of themselves (``read_only``, ``writes``, ``idempotent``): a write that cannot hold
what the reads beside it return, a whole-file write over a file the run has not seen, a call
that failed before with nothing changed since, a read repeated within the round.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph.context import Context
from phasegraph.facts.files import fully_shown_files
from phasegraph.facts.tools import (
    changed_files,
    command_writes,
    computed,
    given_command,
    read_only,
    read_path,
    runs_argument,
    tool_kinds,
    writes_files,
    written_argument,
)
from phasegraph.state import State, TaskResult
from phasegraph.tools.base import is_idempotent, truncate
from phasegraph.tools.command_line import CommandLineError, parse
from phasegraph.tools.workspace import Workspace, WorkspaceError, workspace_path


def reads_of_nothing(
    tasks: list[dict[str, Any]], tools: Mapping[str, BaseTool], space: Workspace
) -> set[str]:
    """The reads a round plans of a path in the workspace that is not there: they fail.

    Such a read can hold no write back, and its failure stops none that makes the file (see
    `made_by`): a plan may read a file it is about to write and make the write depend on the
    read, which would otherwise never let the write run.
    """
    reading = read_only(tools)
    return {t["id"] for t in tasks if t["tool"] in reading and _absent(space, read_path(t, tools))}


def _absent(space: Workspace, path: object) -> bool:
    rel = workspace_path(space, path)
    return rel is not None and not os.path.lexists(space.real_root / rel)


def writes_not_allowed(
    task: Mapping[str, Any], tools: Mapping[str, BaseTool], allowed: Set[str]
) -> str | None:
    """Why a command that writes files may not run where the work may write none, or None.

    A tool that runs programs may write files through its command line (``>``); where no
    tool that writes files is allowed (the task type's rules, a phase narrowed to reading),
    such a command is refused as a tool that writes would be, saying which file it names.
    """
    tool = tools.get(str(task.get("tool")))
    runs = runs_argument(tool)
    targets = command_writes((task.get("arguments") or {}).get(runs)) if runs else []
    if not targets or tool_kinds({n: tools[n] for n in allowed if n in tools})["writes"]:
        return None
    return (
        f"refused: the command writes {', '.join(targets)}, and this work may not write files "
        "(no tool that writes is allowed here); run it without >, or in work that writes"
    )


def programs_not_allowed(
    task: Mapping[str, Any], tools: Mapping[str, BaseTool], allowed: Set[str]
) -> str | None:
    """Why a write of a program's output may not run where no program may, or None.

    A write that takes its text from a command (`given_command`) runs that command's programs;
    where the task type's rules allow no tool that runs programs (``allowed``: their tools),
    it is refused as such a tool would be, and the text is to be given as text. A phase's own
    list of tools, a plan's narrowing, does not decide: a write it allows may still take a
    program's output, whose programs reach nothing beyond the workspace.
    """
    tool = tools.get(str(task.get("tool")))
    if given_command(task.get("arguments") or {}, tool) is None:
        return None
    if tool_kinds({n: tools[n] for n in allowed if n in tools})["runs"]:
        return None
    return (
        "refused: its text is a command's output, and this work may run no programs (no tool "
        "that runs them is allowed for it); give the text itself"
    )


def written_path(
    task: Mapping[str, Any], tools: Mapping[str, BaseTool], space: Workspace
) -> str | None:
    """The file ``task`` writes, as the workspace resolves it; None if it writes none there.

    The file is the argument the task's tool declares it writes (``writes``), or the file a
    command line it runs writes its output to (``>``).
    """
    tool = tools.get(str(task.get("tool")))
    arguments = task.get("arguments") or {}
    argument = written_argument(tool)
    if argument:
        return workspace_path(space, arguments.get(argument))
    runs = runs_argument(tool)
    targets = command_writes(arguments.get(runs)) if runs else []
    return workspace_path(space, targets[-1]) if targets else None


def path_read(
    task: Mapping[str, Any], tools: Mapping[str, BaseTool], space: Workspace
) -> str | None:
    """The file (or folder) ``task`` reads, as the workspace resolves it; `written_path`'s twin.

    The file is the argument a read-only tool declares it reads (`read_path`).
    """
    return workspace_path(space, read_path(task, tools))


def made_by(
    failed: TaskResult, task: Mapping[str, Any], tools: Mapping[str, BaseTool], space: Workspace
) -> bool:
    """Whether ``failed`` is a read of a file that is not there, and ``task`` writes that file."""
    written = written_path(task, tools, space)
    return (
        written is not None
        and failed["status"] == "failed"
        and failed["tool"] in read_only(tools)
        and _absent(space, read_path(failed, tools))
        and path_read(failed, tools, space) == written
    )


def unseen_overwrites(
    tasks: list[dict[str, Any]],
    tools: Mapping[str, BaseTool],
    seen: Sequence[TaskResult],
    state: State,
    context: Context,
) -> dict[str, str]:
    """Whole-file writes over a file that is there and that this run has not seen, with why.

    A tool that writes a whole file (it declares ``writes`` and is idempotent: the same bytes
    again), or a command line whose output goes to a file with ``>``, replaces what is there;
    over a file no read of this run returned, no write of this
    run made and no prompt showed whole, it is not run, and the plan is told to read the file
    first; unless it holds the very text being written (a round run again after a crash wrote
    it before its result was saved). A write over a file the run has not seen may lose a
    user's file for nothing. Edits (old text for new) are left to the tool, which refuses a
    text that is not there.
    """
    space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
    reading = read_only(tools)
    read = [r for r in seen if r["tool"] in reading and r["status"] == "ok"]
    known = {rel for r in read if (rel := path_read(r, tools, space))}
    shown = [*changed_files(seen, tools), *fully_shown_files(state["request"], context, tools)]
    known |= {rel for name in shown if (rel := workspace_path(space, name))}
    unseen: dict[str, str] = {}
    for task in tasks:
        tool = tools.get(task["tool"])
        if tool is None or not (is_idempotent(tool) or _replaces_with_output(task, tool)):
            continue
        rel = written_path(task, tools, space)
        if rel and rel not in known and (space.real_root / rel).is_file():
            arguments = task["arguments"]
            if not computed(arguments, tool) and _holds_already(space, rel, arguments):
                continue  # the same bytes again (a round re-run after a crash): nothing is lost
            unseen[task["id"]] = (
                f"not run: {rel} is there and this run has not read it, so writing it whole "
                "would lose what it holds; read it first, or write a new file"
            )
    return unseen


def _replaces_with_output(task: Mapping[str, Any], tool: BaseTool) -> bool:
    """Whether ``task`` runs a command line whose output replaces a file (``>``, not ``>>``)."""
    runs = runs_argument(tool)
    line = (task.get("arguments") or {}).get(runs) if runs else None
    if not isinstance(line, str):
        return False
    try:
        last = parse(line)[-1]
    except CommandLineError:
        return False
    return last.stdout is not None and not last.append


def _holds_already(space: Workspace, rel: str, arguments: Mapping[str, Any]) -> bool:
    """Whether the file already holds exactly one of the call's texts (its content)."""
    try:
        data, size = space.read_bytes(space.relative(rel), space.max_read_bytes)
    except (OSError, WorkspaceError):
        return False
    text = data.decode("utf-8", errors="replace")
    return size == len(data) and any(v == text for v in arguments.values() if isinstance(v, str))


def repeated_calls(
    tasks: Sequence[dict[str, Any]], tools: Mapping[str, BaseTool]
) -> dict[str, str]:
    """Calls that repeat an earlier identical call of the round, each with that call's id.

    Identical calls planned in one round run once (SPEC section 5): a read run again returns
    what it returned, and a call with effects (an append, a payment) run again acts twice.
    The repeat is not run, and the tasks that depend on it wait for the first. A call that
    waits for another that may change things, the first itself aside (a read that checks a
    write, a write after another write), runs: what it sees or does may differ.
    """
    reading = read_only(tools)
    tool_of = {t["id"]: t["tool"] for t in tasks}
    upstream = _upstream(tasks)
    first: dict[str, str] = {}
    same: dict[str, str] = {}
    for task in tasks:
        call = call_key(task["tool"], task["arguments"])
        same_as = first.setdefault(call, task["id"])
        if same_as == task["id"]:
            continue
        between = upstream(task["id"]) - {same_as} - upstream(same_as)
        if any(tool_of.get(d) not in reading for d in between):
            continue  # something it waits for may have changed the workspace since the first
        # a first that waits for its own repeat would wait for itself
        if task["id"] not in upstream(same_as):
            same[task["id"]] = same_as
    return same


def failed_before(
    tasks: Sequence[dict[str, Any]], tools: Mapping[str, BaseTool], earlier: Sequence[TaskResult]
) -> dict[str, str]:
    """Writes that failed in an earlier round, with nothing changed since, each with why.

    A tool that writes a file of the workspace fails on what the workspace holds, so the same
    call fails again while nothing has changed, each time a step of the budget: until a call
    of a tool that may change things succeeds, it is not run, and the plan is told why and what
    failed. Only the workspace's own refusals are held (a `WorkspaceError`: text not found, a
    path outside); other failures (a permission a person may fix, a service) and other tools (a
    command's timing) run again. A call of a tool that may change things and that ran, or may
    have (timeout, interrupted), releases every hold. ``earlier``: the run's results so far,
    this round's earlier waves too.
    """
    reading = read_only(tools)
    failed: dict[str, TaskResult] = {}
    for result in earlier:
        if result["status"] in MAY_HAVE_CHANGED and result["tool"] not in reading:
            failed.clear()  # something may have changed: a failed call may now succeed
        elif (
            result["status"] == "failed"
            and result["output"].startswith(WorkspaceError.__name__)
            and writes_files(tools.get(result["tool"]))
        ):
            failed[call_key(result["tool"], result["arguments"])] = result
    again: dict[str, str] = {}
    for task in tasks:
        if before := failed.get(call_key(task["tool"], task["arguments"])):
            error = truncate(" ".join(before["output"].split()), 160)
            again[task["id"]] = (
                f"not run: the same call failed before ({error}) and nothing has changed since; "
                "change its arguments or use another tool"
            )
    return again


#: Results of a call that ran, or may have: a tool that may change things changed them, perhaps.
MAY_HAVE_CHANGED = ("ok", "timeout", "interrupted")


def _upstream(tasks: Sequence[Mapping[str, Any]]) -> Callable[[str], set[str]]:
    """The tasks a task of the round waits for through its depends_on, directly or not."""
    needs = {t["id"]: [d for d in t.get("depends_on") or () if d != t["id"]] for t in tasks}

    def upstream(task_id: str) -> set[str]:
        seen: set[str] = set()
        todo = list(needs.get(task_id, []))
        while todo:
            other = todo.pop()
            if other not in seen:
                seen.add(other)
                todo.extend(needs.get(other, []))
        return seen

    return upstream


def one_file_in_plan_order(
    tasks: Sequence[Mapping[str, Any]], tools: Mapping[str, BaseTool], space: Workspace
) -> dict[str, list[str]]:
    """For each task that reads or writes a file, the round's earlier tasks it waits for.

    Tasks without a dependency between them run at once, in whatever order their threads
    take; two writes of one file would then leave it as chance has it, and a read beside a
    write of its file (a listing or a search of a folder beside a write in it) would return
    the file before or after, run after run. A write waits for the round's earlier writers
    and readers of its file, a read for its earlier writers, in the plan's order, whatever
    their results: the order is the plan's, not a dependency, so a failed task does not skip
    the next. An earlier task that itself waits for the task (its depends_on) comes after it.
    The file is the argument a tool declares it writes (``writes``) or reads (`read_path`),
    as the workspace resolves it.
    """
    upstream = _upstream(tasks)
    writes: list[tuple[str, str]] = []
    reads: list[tuple[str, str]] = []
    order: dict[str, list[str]] = {}
    for task in tasks:
        written = written_path(task, tools, space)
        read = None if written else path_read(task, tools, space)
        if written:
            earlier = [t for t, w in writes if w == written]
            earlier += [t for t, r in reads if _within(written, r)]
        elif read:
            earlier = [t for t, w in writes if _within(w, read)]
        else:
            continue
        first = [t for t in earlier if task["id"] not in upstream(t)]
        if first:
            order[str(task["id"])] = first
        (writes if written else reads).append((str(task["id"]), str(written or read)))
    return order


def _within(path: str, read: str) -> bool:
    """Whether a read of ``read`` (a file, or a folder listed or searched) sees ``path``."""
    return read in (".", path) or path.startswith(read.rstrip("/") + "/")


def call_key(tool: str, arguments: Mapping[str, Any]) -> str:
    """One call's identity: its tool and arguments, exactly."""
    # exact, unlike reflection.normalise_call: blank space in an edit's old text matters
    return json.dumps([tool, arguments], sort_keys=True, default=str)
