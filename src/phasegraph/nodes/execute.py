"""`execute`: run the round's tasks (one step per tool execution).

Independent tasks (no unmet depends_on) run at the same time, up to ``max_parallel``. A task
whose dependency did not succeed is skipped; a task naming a tool the phase may not use is
refused and recorded in ``tool_violations``; once the budget is spent no further tool runs.
Tasks still running at the per-task or per-round timeout are recorded as ``timeout`` and the
round goes on to the judge.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from langgraph.runtime import Runtime

from phasegraph.context import Context
from phasegraph.nodes._common import Deps, budget_left, context_of, current_phase
from phasegraph.nodes.plan import allowed_tools
from phasegraph.progress import emit
from phasegraph.state import State, TaskResult, ToolViolation
from phasegraph.tools import run_tool


def _result(task: dict[str, Any], status: Any, output: str, duration: float = 0.0) -> TaskResult:
    return {
        "task_id": task["id"],
        "tool": task["tool"],
        "arguments": task["arguments"],
        "status": status,
        "output": output,
        "duration_s": round(duration, 4),
    }


def execute(state: State, runtime: Runtime[Context], deps: Deps) -> dict[str, Any]:
    """Run every task of the current round plan and record one result per task."""
    context = context_of(runtime)
    phase = current_phase(state)
    tasks: list[dict[str, Any]] = (state.get("current_plan") or {}).get("tasks", [])
    permitted = set(allowed_tools(phase, deps))
    results: dict[str, TaskResult] = {}
    violations: list[ToolViolation] = []
    steps_left = budget_left(state)
    executed = 0
    round_deadline = time.monotonic() + context.round_timeout_s
    waiting = list(tasks)
    pool = ThreadPoolExecutor(max_workers=context.max_parallel, thread_name_prefix="phasegraph")
    running: dict[Future[tuple[bool, str]], tuple[dict[str, Any], float]] = {}
    try:
        while waiting or running:
            # Start every task whose dependencies are settled, while slots and budget last.
            for task in list(waiting):
                deps_status = [results[d]["status"] for d in task["depends_on"] if d in results]
                if len(deps_status) < len(task["depends_on"]):
                    continue
                waiting.remove(task)
                if any(s != "ok" for s in deps_status):
                    results[task["id"]] = _result(task, "skipped", "a task it depends on failed")
                elif task["tool"] not in permitted:
                    reason = (
                        f"tool {task['tool']!r} is not allowed in phase {phase['id']!r}"
                        if task["tool"] in deps.tools
                        else f"tool {task['tool']!r} does not exist"
                    )
                    results[task["id"]] = _result(task, "refused", reason)
                    violations.append(
                        {
                            "tool": task["tool"],
                            "phase_id": phase["id"],
                            "task_id": task["id"],
                            "reason": reason,
                        }
                    )
                elif executed >= steps_left:
                    results[task["id"]] = _result(task, "skipped", "the step budget is spent")
                else:
                    executed += 1
                    emit(runtime, "task_started", task_id=task["id"], tool=task["tool"])
                    future = pool.submit(
                        run_tool,
                        deps.tools[task["tool"]],
                        task["arguments"],
                        context.max_output_chars,
                    )
                    running[future] = (task, time.monotonic())
            if not running:
                continue
            now = time.monotonic()
            next_deadline = min(
                min(start + context.task_timeout_s for _, start in running.values()),
                round_deadline,
            )
            done, _ = wait(
                list(running), timeout=max(0.0, next_deadline - now), return_when=FIRST_COMPLETED
            )
            now = time.monotonic()
            for future in list(running):
                task, start = running[future]
                if future in done:
                    ok, output = future.result()
                    results[task["id"]] = _result(
                        task, "ok" if ok else "failed", output, now - start
                    )
                elif now >= round_deadline or now - start >= context.task_timeout_s:
                    future.cancel()
                    limit = min(context.task_timeout_s, round_deadline - start)
                    results[task["id"]] = _result(
                        task, "timeout", f"no result within {limit:.1f} s", now - start
                    )
                else:
                    continue
                del running[future]
                emit(
                    runtime,
                    "task_finished",
                    task_id=task["id"],
                    status=results[task["id"]]["status"],
                )
    finally:
        # A tool that ignores its timeout keeps its thread; the round does not wait for it.
        pool.shutdown(wait=False, cancel_futures=True)
    ordered = [results[t["id"]] for t in tasks]
    return {"results": ordered, "step_count": executed, "tool_violations": violations}
