"""Outputs by reference: a task's argument that is an earlier task's output (SPEC section 1).

A string argument written as ``$t1`` (or ``${t1}``) is the output of task ``t1`` of the same
round, as LLMCompiler's ``$1`` and ReWOO's ``#E1`` are: the plan names it, code passes it. The
earlier task becomes a dependency (`linked`, when the plan is read); when the task is sent, the
argument is replaced by that task's whole value (`resolved`: a read's text, a command's output),
never retyped by the model. A reference to a task that failed, or whose value is not whole (a
read cut at the read cap, a command's output cut at the output cap), is not passed: the task
does not run, and says why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

#: A whole argument that names a task of the round: ``$t1``, ``${t1}``, ``$1``.
REFERENCE = re.compile(r"\s*\$\{?([A-Za-z0-9][A-Za-z0-9_.-]*)\}?\s*")


class _Task(Protocol):
    id: str
    arguments: dict[str, Any]
    depends_on: list[str]


def reference(value: object) -> str | None:
    """The task id ``value`` names, when it is a reference as a whole; else None."""
    if not isinstance(value, str):
        return None
    found = REFERENCE.fullmatch(value)
    return found.group(1) if found else None


def references(arguments: Mapping[str, Any]) -> dict[str, str]:
    """Each argument that is a reference, with the task id it names."""
    return {name: ref for name, value in arguments.items() if (ref := reference(value))}


#: A task id read for its number: ``t2``, ``p2``, ``task_2``, ``2``.
NUMBERED = re.compile(r"[A-Za-z_]*-?0*(\d+)")


def target(name: str, ids: Sequence[str]) -> str | None:
    """The task a reference ``name`` means among the round's ``ids``.

    Its id when one is ``name``; else the one task whose id has the number ``name`` has, as a
    person reads ``$t2`` in a round of tasks p1, p2 and p3, or ``$1`` beside ``t1``. None when
    no task, or more than one, has it.
    """
    if name in ids:
        return name
    if name.isdigit() and f"t{name}" in ids:  # the prompt's own form
        return f"t{name}"
    number = NUMBERED.fullmatch(name)
    if number is None:
        return None
    same = [i for i in ids if (m := NUMBERED.fullmatch(i)) and m.group(1) == number.group(1)]
    return same[0] if len(same) == 1 else None


def linked(tasks: Sequence[_Task], before: Sequence[Sequence[_Task]]) -> None:
    """Point each reference at its task, and make that task a dependency; ValueError if none.

    ``before``: for each task, the tasks it may name (the round's other tasks, or those before
    it where ids repeat). References are rewritten to the ids as they stand after numbering.
    """
    for task, others in zip(tasks, before, strict=True):
        for name, ref in references(task.arguments).items():
            meant = target(ref, [o.id for o in others if o is not task])
            found = [o for o in others if o is not task and o.id == meant]
            if not found:
                raise ValueError(
                    f"task {task.id!r}: argument {name} is ${ref}, which names no other task of "
                    "this round; name an earlier task's id, as $t1"
                )
            task.arguments = {**task.arguments, name: f"${found[-1].id}"}
            if found[-1].id not in task.depends_on:
                task.depends_on = [*task.depends_on, found[-1].id]


def resolved(
    arguments: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, Any], str | None]:
    """``arguments`` with each reference replaced by its task's value, or why it cannot be.

    ``results``: the round's results by task id; a result holds its value (``value``) when it
    was kept for a reference.
    """
    out = dict(arguments)
    for name, ref in references(arguments).items():
        result = results.get(ref)
        if result is None:
            return out, f"not run: {name} is ${ref}, which has no result"
        if result.get("status") != "ok":
            return out, f"not run: {name} is ${ref}, which did not succeed"
        if not isinstance(result.get("value"), str):
            return out, (
                f"not run: {name} is ${ref}, whose output is not whole (cut at a cap); write "
                "it with a command's > instead, or read it in parts"
            )
        out[name] = result["value"]
    return out, None


def taken(tasks: Sequence[Mapping[str, Any]]) -> set[str]:
    """The ids of the round's tasks whose output a task takes as an argument."""
    return {ref for task in tasks for ref in references(task.get("arguments") or {}).values()}
