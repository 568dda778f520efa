"""`execute`: run the round's tasks in waves, in one step (SPEC section 5).

Each of a wave's tasks is a `run_task`, a LangGraph task called from this node, so the tasks of
a wave run at the same time, and what each returns is saved as it comes (on resume the node runs
again and is handed it); each wave is picked by a `waves.pick_wave`, saved so too where files
can change it. When a wave is done, the next is picked from what it left, until every task has
its result; the round then goes to the judge. A task that asks the person a question (a tool
permission) ends the node there, with what it ran; the node runs again with the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from langgraph.func import task as langgraph_task
from langgraph.runtime import Runtime

from phasegraph.context import Context
from phasegraph.nodes.deps import (
    Deps,
    context_of,
    task_error,
)
from phasegraph.nodes.judgement import round_stopped
from phasegraph.nodes.run_task import executed, run_task
from phasegraph.nodes.waves import WavePick, pick_wave, picks_read_files
from phasegraph.state import State, TaskInput, TaskResult, ToolViolation
from phasegraph.state.reading import planned_tasks
from phasegraph.state.state import merge_results
from phasegraph.tools.stopping import stopped_here


def execute(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Run the round's waves; its results, each task counted once (SPEC section 3).

    Each of a wave's tasks is run by a `run_task`, a LangGraph task whose answer is saved as
    it comes, so that after a crash the node, run again, is handed the results it had instead
    of running the tasks anew. Each wave is picked by a `pick_wave`: saved so too where the
    workspace's files can change a pick (`waves.picks_read_files`), else picked here again.
    """
    if (raised := task_error(state)) is not None:
        return round_stopped(state, raised)
    writes, now = _Writes(), state
    saved = picks_read_files(planned_tasks(state), deps.tools_for(context_of(runtime)))
    while not stopped_here():  # a cancelled async run picks no further wave
        picked = PICK_WAVE(now, runtime, deps).result() if saved else pick_wave(now, runtime, deps)
        writes.add(picked, _run_wave(picked["sent"], runtime, deps))
        now = writes.applied(state)
        if (raised := task_error(now)) is not None:
            return writes.update() | round_stopped(now, raised)
        if not picked["sent"] or _all_have_results(now):
            break
    return writes.update()


def _all_have_results(state: State) -> bool:
    """Whether every task of the round has its result: no wave is left to pick."""
    done = {r["task_id"] for r in state.get("results") or []}
    return all(t["id"] in done for t in planned_tasks(state))


def _run_wave(sent: list[TaskInput], runtime: Runtime[Context], deps: Deps) -> list[TaskResult]:
    """The results of a wave's tasks, each a `run_task` of its own, run at the same time.

    A result LangGraph hands back from a process before must be the task's: should the node,
    run again, send its tasks in another order (its tools now declaring other things), a
    result saved for another task is not taken for this one's, which runs here instead (its
    journal replays it if it finished).
    """
    futures = [RUN_TASK(item, runtime, deps) for item in sent]
    results = [future.result()["results"][0] for future in futures]
    return [
        result if result["task_id"] == item["task"]["id"] else executed(item, runtime, deps)
        for item, result in zip(sent, results, strict=True)
    ]


def _merged(old: list[TaskResult], new: list[TaskResult]) -> list[TaskResult]:
    """``old`` with ``new`` merged in as the state's reducer does (`merge_results`)."""
    return merge_results(old, new) if new else old


RUN_TASK = langgraph_task(run_task)
"""`run_task` as a LangGraph task: called, it returns a future of its result."""
PICK_WAVE = langgraph_task(pick_wave)
"""`pick_wave` as a LangGraph task: called, it returns a future of the wave."""


@dataclass
class _Writes:
    """What one `execute` writes over its waves, and the state as each wave sees it."""

    results: list[TaskResult] = field(default_factory=list)
    violations: list[ToolViolation] = field(default_factory=list)
    wave: int | None = None
    asked: dict[str, Any] | None = None
    ran: int = 0

    def add(self, picked: WavePick, ran: list[TaskResult]) -> None:
        """A wave's writes, and the results of the tasks it ran."""
        self.results = _merged(self.results, picked["results"] + ran)
        self.violations += picked["tool_violations"]
        self.wave = picked["wave"]
        self.asked = picked["pending_review"]
        self.ran += len(ran)

    def applied(self, state: State) -> State:
        """``state`` with the writes so far."""
        if self.wave is None:
            return state
        results = _merged(list(state.get("results") or []), self.results)
        steps = state.get("step_count", 0) + self.ran
        violations = [*(state.get("tool_violations") or []), *self.violations]
        return cast(
            State,
            {
                **state,
                "results": results,
                "wave": self.wave,
                "step_count": steps,
                "tool_violations": violations,
            },
        )

    def update(self) -> dict[str, Any]:
        """The node's update: each execution counts a step, replayed ones too (SPEC 3)."""
        update: dict[str, Any] = {} if self.wave is None else {"wave": self.wave}
        if self.results:
            update["results"] = self.results
        if self.violations:
            update["tool_violations"] = self.violations
        if self.asked is not None:
            update |= {"pending_review": self.asked, "status": "awaiting_review"}
        if self.ran:
            update["step_count"] = self.ran
        return update
