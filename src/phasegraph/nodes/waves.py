"""Picking a round's next wave (SPEC section 5), for `execute`.

A wave is the tasks whose dependencies have succeeded, up to ``max_parallel`` and what is left
of the step budget. Tasks that cannot run get their result here: skipped (a dependency failed,
a hold, or the budget is spent but for the judge's step), refused (a tool the task type or
phase may not use, recorded in ``tool_violations``), or timeout (the round's time is up). A
refused task that carries a justification asks the person first when tool-permission reviews
are on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, TypedDict

from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

from phasegraph.context import Context
from phasegraph.facts.tools import read_path, written_argument
from phasegraph.holding import RoundToRun, held_back
from phasegraph.nodes.deps import (
    Deps,
    context_of,
    phase_allowed_tools,
    task_result,
    thread_id,
)
from phasegraph.nodes.holds import (
    made_by,
    one_file_in_plan_order,
    programs_not_allowed,
    repeated_calls,
    writes_not_allowed,
    written_path,
)
from phasegraph.nodes.step_budget import JUDGE_STEPS, budget_left, limits_of
from phasegraph.progress import emit
from phasegraph.state import State, TaskInput, TaskResult, ToolViolation
from phasegraph.state.reading import current_phase, phase_window, planned_tasks, run_results
from phasegraph.state.references import references, resolved, taken
from phasegraph.storage.journal import journal_key
from phasegraph.tools.constraints import refusal_reason
from phasegraph.tools.workspace import Workspace


def round_elapsed(results: list[TaskResult]) -> float:
    """Time the round's waves took so far: waves run one after another, tasks within at once."""
    longest: dict[int, float] = {}
    for result in results:
        longest[result["wave"]] = max(longest.get(result["wave"], 0.0), result["duration_s"])
    return sum(longest.values())


class WavePick(TypedDict):
    """What `pick_wave` decides: the wave, its tasks and the writes of the tasks it settles."""

    wave: int
    """The wave's number in the round (unchanged when it sends nothing)."""
    sent: list[TaskInput]
    """The tasks that run in this wave."""
    results: list[TaskResult]
    """Results of the tasks it settles without running them (skipped, refused, timeout)."""
    tool_violations: list[ToolViolation]
    """Its refusals."""
    pending_review: dict[str, Any] | None
    """The question for the person, if a task asks one (nothing then runs)."""


def pick_wave(now: State, at: Runtime[Context], deps: Deps) -> WavePick:
    """The round's next wave, and the tasks settled without running, as of ``now``.

    Called as a LangGraph task (`execute.PICK_WAVE`), so that a node run again after a crash
    is handed the waves it picked before, not new ones picked from a workspace those waves
    changed.
    """
    wave = _Wave.of(now, context_of(at), deps)
    progress = True
    while progress and wave.asked is None:  # settling one task can settle those after it
        progress = False
        for task in wave.tasks:
            progress = wave.decide(task, at) or progress
            if wave.asked is not None:
                break
    return wave.picked()


def picks_read_files(tasks: list[dict[str, Any]], tools: Mapping[str, BaseTool]) -> bool:
    """Whether picking this round's waves reads files: a task reads a file, or may write one.

    What holds a task back looks at the workspace only for a round with a task whose tool
    declares it writes files (``writes``: its file, the reads beside it, a listing of the
    workspace) or that names a file a read-only tool reads (``reads``, else ``path``). Only
    then can a wave picked again after a crash differ from the one picked before, the earlier
    waves having changed the workspace, and only then is each pick saved
    (`execute.PICK_WAVE`). Else a pick reads the state, the run's settings and what its tools
    declare, which a node run again has as they were.
    """
    return any(
        read_path(task, tools) is not None or written_argument(tools.get(task["tool"]))
        for task in tasks
    )


def _holds(
    state: State, context: Context, available: Mapping[str, BaseTool], deps: Deps
) -> tuple[dict[str, str], dict[str, str]]:
    """The round's tasks held back and its repeated calls, each with why or the call repeated.

    What is held back is what the graph's holds say (`holding`, `Deps.hold_list`).
    """
    tasks = planned_tasks(state)
    round_ = RoundToRun(
        tasks=tasks,
        tools=available,
        space=Workspace(context.workspace, max_read_bytes=context.max_read_bytes),
        state=state,
        context=context,
        earlier=tuple(r for record in phase_window(state) for r in record["results"]),
        seen=run_results(state),
    )
    return held_back(deps.hold_list(), round_), repeated_calls(tasks, available)


def denied_in_phase(state: State, tool: str, phase_id: str) -> bool:
    """Whether a person denied ``tool`` earlier in the phase: the tool is not asked about again.

    A person who said no to a tool is not asked about it each round a plan names it again; the
    task is refused as the first was. A phase of another id asks afresh.
    """
    return any(
        v.get("denied") and v["tool"] == tool and v["phase_id"] == phase_id
        for v in state.get("tool_violations") or []
    )


@dataclass
class _Wave:
    """One pass of `execute` over the round: what it settles, what it sends, what it asks."""

    state: State
    context: Context
    available: Mapping[str, BaseTool]
    allowed: set[str]
    by_rules: set[str]
    """The tools the task type's rules allow, before the phase's own list narrows them."""
    space: Workspace
    root: str
    blind: dict[str, str]
    repeats: dict[str, str]
    after: dict[str, list[str]]
    number: int
    time_left: float
    steps_left: int
    done: dict[str, TaskResult]
    new: list[TaskResult] = field(default_factory=list)
    sent: list[TaskInput] = field(default_factory=list)
    violations: list[ToolViolation] = field(default_factory=list)
    asked: dict[str, Any] | None = None

    @classmethod
    def of(cls, state: State, context: Context, deps: Deps) -> _Wave:
        """The next wave of the round in progress."""
        available = deps.tools_for(context)
        space = Workspace(context.workspace, max_read_bytes=context.max_read_bytes)
        blind, repeats = _holds(state, context, available, deps)
        done = {r["task_id"]: r for r in state.get("results", [])}
        return cls(
            state=state,
            context=context,
            available=available,
            allowed=set(phase_allowed_tools(state, current_phase(state), deps, context)),
            by_rules=set(phase_allowed_tools(state, {}, deps, context)),
            space=space,
            root=context.root,  # resolved once, not for each task it sends
            blind=blind,
            repeats=repeats,
            after=one_file_in_plan_order(planned_tasks(state), available, space),
            number=state.get("wave", 0) + 1,
            time_left=context.round_timeout_s - round_elapsed(list(done.values())),
            # one step stays for the judge of this round: judging never passes the budget
            steps_left=budget_left(state) - JUDGE_STEPS,
            done=done,
        )

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """The round's planned tasks."""
        return planned_tasks(self.state)

    def settle(self, result: TaskResult) -> bool:
        """Give a task its result without running it."""
        self.done[result["task_id"]] = result
        self.new.append(result)
        return True

    def held_only(self, dependency: TaskResult, task: Mapping[str, Any]) -> bool:
        """Whether ``dependency`` was held before it ran, and ``task`` needs nothing it did.

        A hold stops one call for a reason of its own (a typed text beside reads...); a task
        planned after it had it only as an order to run in, and runs, unless it takes the
        held task's output (``$id``: there is none) or names the file the held task was to
        write anywhere but as the file it writes itself (it would read what that file held
        before). A dependency skipped for any other reason (its own dependency failed) is no
        hold's.
        """
        held_id = dependency["task_id"]
        why = self.blind.get(held_id)
        if why is None or dependency["status"] != "skipped" or dependency["output"] != why:
            return False
        arguments = task.get("arguments") or {}
        if held_id in references(arguments).values():
            return False
        planned = next((t for t in self.tasks if t["id"] == held_id), None)
        path = written_path(planned, self.available, self.space) if planned else None
        if path is None:
            return True
        own = written_argument(self.available.get(str(task.get("tool"))))
        named = [v for k, v in arguments.items() if isinstance(v, str) and k != own]
        return not any(PurePosixPath(path).name in text for text in named)

    def decide(self, task: dict[str, Any], runtime: Runtime[Context]) -> bool:
        """Settle, send or ask about one task, if it is ready; whether anything was decided."""
        if task["id"] in self.done or any(t["task"]["id"] == task["id"] for t in self.sent):
            return False
        needs = [self.repeats.get(d, d) for d in task["depends_on"]]
        deps_done = [self.done[d] for d in needs if d in self.done]
        if len(deps_done) < len(needs):
            return False
        if any(w not in self.done for w in self.after.get(task["id"], ())):
            return False  # an earlier write of its file runs first
        if task["id"] in self.repeats:
            same_as = self.repeats[task["id"]]
            why = f"not run: the same call as {same_as} in this round; its result is theirs"
            return self.settle(task_result(task, "skipped", why))
        if any(
            d["status"] != "ok"
            and not made_by(d, task, self.available, self.space)
            and not self.held_only(d, task)
            for d in deps_done
        ):
            return self.settle(task_result(task, "skipped", "a task it depends on did not succeed"))
        if task["id"] in self.blind:
            return self.settle(task_result(task, "skipped", self.blind[task["id"]]))
        phase = current_phase(self.state)
        key = journal_key(
            thread_id(),
            self.state.get("run_id", ""),
            phase["id"],
            self.state["round_seq"],
            task["id"],
        )
        decision = (self.state.get("tool_decisions") or {}).get(key)
        if task["tool"] not in self.allowed and decision != "allow":
            return self._refuse(task, key, decision, runtime)
        if barred := writes_not_allowed(task, self.available, self.allowed) or (
            programs_not_allowed(task, self.available, self.by_rules)
        ):
            return self.settle(task_result(task, "refused", barred))
        if self.time_left <= 0:
            return self.settle(
                task_result(task, "timeout", "the round's time limit was reached first")
            )
        if len(self.sent) >= self.steps_left:
            return self.settle(task_result(task, "skipped", "the step budget is spent"))
        if len(self.sent) >= self.context.max_parallel:
            return False  # the wave is full; the task waits for the next one
        arguments, unresolved = resolved(task["arguments"], self.done)
        if unresolved:
            return self.settle(task_result(task, "skipped", unresolved))
        sent: TaskInput = {
            "task": task,
            "phase_id": phase["id"],
            "round_seq": self.state["round_seq"],
            "journal_key": key,
            "wave": self.number,
            "timeout_s": min(self.context.task_timeout_s, self.time_left),
            "workspace": self.root,
        }
        if arguments != task["arguments"]:
            sent["arguments"] = arguments  # what the tool is given; the record keeps "$t1"
        if task["id"] in taken(self.tasks):
            sent["keep_value"] = True
        self.sent.append(sent)
        return True

    def _refuse(
        self, task: dict[str, Any], key: str, decision: str | None, runtime: Runtime[Context]
    ) -> bool:
        """A tool the task may not use: refused, or asked about (SPEC section 5)."""
        tool = task["tool"]
        phase_id = current_phase(self.state)["id"]
        task_type = str((self.state.get("structured_request") or {}).get("task_type", ""))
        reason = refusal_reason(tool, self.available, task_type, phase_id)
        if decision is None and denied_in_phase(self.state, tool, phase_id):
            decision = "deny"
        asks = limits_of(self.state)["review"] == "all"
        if decision is None and asks and task.get("justification") and tool in self.available:
            self.asked = {
                "kind": "tool_permission",
                "stage": "execute",
                "key": key,
                "task": task,
                "reason": reason,
                "justification": task["justification"],
            }
            emit(runtime, "awaiting_review", kind="tool_permission", tool=tool)
            return True
        if decision == "deny":
            reason += "; the person denied the request"
        self.violations.append(
            {
                "tool": tool,
                "phase_id": phase_id,
                "task_id": task["id"],
                "reason": reason,
                "denied": decision == "deny",
            }
        )
        return self.settle(task_result(task, "refused", reason))

    def picked(self) -> WavePick:
        """The pass's wave, the results it settled, its refusals and its question."""
        sent = [] if self.asked is not None else self.sent  # nothing starts until answered
        return {
            "wave": self.number if sent else self.state.get("wave", 0),
            "sent": sent,
            "results": self.new,
            "tool_violations": self.violations,
            "pending_review": self.asked,
        }
