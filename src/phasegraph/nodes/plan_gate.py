"""What a round's plan is asked again for, once, before it runs (SPEC section 1).

A gate refuses a valid plan with a reason the model reads when asked again; if the model plans
the same again (or gives nothing usable), its first plan runs as it was: a gate spends a model
call, never the round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph import prompts
from phasegraph.facts.tools import declares, read_only
from phasegraph.nodes.holds import MAY_HAVE_CHANGED, call_key, failed_before
from phasegraph.state import TaskResult
from phasegraph.tools.base import is_idempotent
from phasegraph.tools.workspace import WorkspaceError

#: The most of earlier outputs the gate's reason quotes, all calls together; a plan whose
#: calls returned more is not refused, since the reason could not show what they returned.
QUOTED_CHARS = 1500


def adds_nothing(
    tasks: Sequence[Mapping[str, Any]],
    tools: Mapping[str, BaseTool],
    rounds: Sequence[Sequence[TaskResult]],
) -> str | None:
    """Why a plan would add nothing: each of its calls ran before and would do the same again.

    A call adds nothing when the same tool, with the same arguments, succeeded before, and its
    tool declares that it works on the run's workspace (``workspace``) and that running it
    twice does no more than once (``idempotent``): while nothing has changed since, a read
    returns what it returned and a whole-file write writes the same bytes. Anything may have
    changed after a call of a tool that is not ``read_only`` ran, or may have (a timeout, a
    failure other than the workspace's own refusal), and calls of the same wave ran at once,
    in no known order. So does a call `execute` would not run, having failed before with
    nothing changed since (`holds.failed_before`). A plan made only of such calls would spend a
    round to learn nothing; the reason quotes, whole, what each returned, or why it would not
    run, which the prompt may no longer show. None when any call may add something, or what
    they returned is longer than `QUOTED_CHARS`. ``rounds``: the results of the run's rounds,
    in order.
    """
    if not tasks or not all(_ran_before(task, rounds) for task in tasks):
        return None  # a call never made adds something: the common case, decided cheaply
    ran = _returned_since_last_change(tools, rounds)
    planned = [{**t, "id": str(n)} for n, t in enumerate(tasks)]
    held = failed_before(planned, tools, [r for results in rounds for r in results])
    lines: dict[str, str] = {}
    for task in planned:
        key = call_key(str(task["tool"]), task.get("arguments") or {})
        call = f"{task['tool']}({_dump(task.get('arguments') or {})})"
        if key in ran:
            lines.setdefault(key, f"- {call} returned:\n{ran[key]['output'].rstrip()}")
        elif task["id"] in held:
            lines.setdefault(key, f"- {call}: {held[task['id']]}")
        else:
            return None
    if not lines or sum(len(line) for line in lines.values()) > QUOTED_CHARS:
        return None
    return prompts.ADDS_NOTHING.format(calls="\n".join(lines.values()))


def _ran_before(task: Mapping[str, Any], rounds: Sequence[Sequence[TaskResult]]) -> bool:
    """Whether a call of the same tool with the same arguments was made before."""
    tool, arguments = task["tool"], task.get("arguments") or {}
    return any(
        r["tool"] == tool and r["arguments"] == arguments for results in rounds for r in results
    )


def _returned_since_last_change(
    tools: Mapping[str, BaseTool], rounds: Sequence[Sequence[TaskResult]]
) -> dict[str, TaskResult]:
    """The calls that would return the same again, by `call_key`: those after the last change."""
    reading = read_only(tools)
    ran: dict[str, TaskResult] = {}
    for results in rounds:
        waves: dict[int, list[TaskResult]] = {}
        for result in results:
            waves.setdefault(int(result.get("wave", 0)), []).append(result)
        for _, wave in sorted(waves.items()):
            if any(_may_have_changed(r, reading) for r in wave):
                ran.clear()  # a call made before may now return otherwise
            for result in wave:
                tool = tools.get(result["tool"])
                if (
                    result["status"] == "ok"
                    and tool is not None
                    and is_idempotent(tool)
                    and declares(tool, "workspace")
                    and not any(_may_have_changed(r, reading) for r in wave if r is not result)
                ):
                    ran[call_key(result["tool"], result["arguments"])] = result
    return ran


def _may_have_changed(result: TaskResult, reading: set[str]) -> bool:
    """Whether a call may have changed things: it is not read-only and ran, or may have."""
    if result["tool"] in reading:
        return False
    if result["status"] == "failed":
        return not result["output"].startswith(WorkspaceError.__name__)
    return result["status"] in MAY_HAVE_CHANGED


def _dump(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in arguments.items())
