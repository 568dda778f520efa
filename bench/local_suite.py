"""The embedded local model on small workspace tasks: phasegraph against `create_react_agent`.

Both systems get the same model (the embedded Qwen2.5-Coder-0.5B, one llama.cpp instance in this
process), the same six built-in workspace tools bound to a fresh copy of the task's files (a
tool's error comes back to the model as text in both), a SQLite checkpointer and the same budget
of model calls and tool actions together, `BUDGET`: the ReAct agent's recursion limit (a model
call and a tool step per action, plus its last answer) and phasegraph's `max_steps` (its phase
plan, plans, judges, replans and tool executions; the analysis and the summary are not counted).
A task succeeds when its checker accepts the workspace afterwards, however the run ended; a
ReAct run that spends its budget ends at the recursion limit, which is how that agent stops.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.errors import GraphRecursionError

from phasegraph import Context, build_graph
from phasegraph.models import model_from_context
from phasegraph.nodes.deps import workspace_settings
from phasegraph.tools.builtin import workspace_tools

with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.x; still shipped
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import ToolNode, create_react_agent

#: Tool actions the ReAct agent may make on one task.
ACTIONS = 8
#: Model calls and tool actions each system may spend on one task.
BUDGET = 2 * ACTIONS + 1


@dataclass(frozen=True)
class WorkspaceTask:
    """A request, the files it starts from, and what the workspace must hold afterwards."""

    name: str
    request: str
    files: dict[str, str]
    check: Callable[[Path], bool]

    def fresh(self, root: Path) -> Path:
        """A new workspace holding the task's files."""
        root.mkdir(parents=True)
        for rel, text in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return root


def _text(root: Path, rel: str) -> str:
    path = root / rel
    return path.read_text(errors="replace") if path.is_file() else ""


def _edited(root: Path) -> bool:
    text = _text(root, "config.ini")
    return "debug = false" in text and "debug = true" not in text and "port = 8080" in text


def _listed(root: Path) -> bool:
    return all(n in _text(root, "files.md") for n in ("notes.txt", "todo.txt", "plan.md"))


TASKS = (
    WorkspaceTask(
        "write",
        "Write a file named hello.txt containing exactly: Hello, world!",
        {},
        lambda root: _text(root, "hello.txt").strip() == "Hello, world!",
    ),
    WorkspaceTask(
        "list",
        "List the files in this folder and write their names to files.md, one per line.",
        {"notes.txt": "meeting notes\n", "todo.txt": "buy milk\n", "plan.md": "# Plan\n"},
        _listed,
    ),
    WorkspaceTask(
        "sum",
        "Read numbers.txt (one integer per line) and write their sum to sum.txt.",
        {"numbers.txt": "3\n4\n5\n"},
        lambda root: _text(root, "sum.txt").strip() == "12",
    ),
    WorkspaceTask(
        "edit",
        "In config.ini, change debug = true to debug = false; leave the other lines as they are.",
        {"config.ini": "name = demo\ndebug = true\nport = 8080\n"},
        _edited,
    ),
    WorkspaceTask(
        "find",
        "Find the file that defines the function parse_date and write its path to answer.txt.",
        {
            "src/app/main.py": "from util.dates import parse_date\n\nprint(parse_date('x'))\n",
            "src/util/dates.py": "def parse_date(text):\n    return text.split('-')\n",
            "src/util/text.py": "def shout(text):\n    return text.upper()\n",
        },
        lambda root: "src/util/dates.py" in _text(root, "answer.txt"),
    ),
)


def _phasegraph(model: BaseChatModel, root: Path, request: str, db: Path) -> str:
    context = Context(workspace=str(root), max_steps=BUDGET)
    config = {"configurable": {"thread_id": f"pg-{uuid.uuid4().hex[:8]}"}}
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=model, checkpointer=saver)
        out = graph.invoke({"request": request}, config, context=context)
    return str(out.get("status"))


def _react(model: BaseChatModel, root: Path, request: str, db: Path) -> str:
    tools = list(workspace_tools(workspace_settings(Context(workspace=str(root)))))
    config = {
        "configurable": {"thread_id": f"react-{uuid.uuid4().hex[:8]}"},
        "recursion_limit": BUDGET,
    }
    with SqliteSaver.from_conn_string(str(db)) as saver, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        # a tool's error goes back to the model as text, as phasegraph's judge gets it
        node = ToolNode(tools, handle_tool_errors=True)
        agent = create_react_agent(model, node, checkpointer=saver)
        try:
            agent.invoke({"messages": [("user", request)]}, config)
        except GraphRecursionError:
            return "recursion_limit"
    return "answered"


SYSTEMS: dict[str, Callable[[BaseChatModel, Path, str, Path], str]] = {
    "phasegraph": _phasegraph,
    "create_react_agent": _react,
}


def run_suite(
    work: Path,
    tasks: tuple[WorkspaceTask, ...] = TASKS,
    progress: Callable[[str], None] = lambda _text: None,
) -> dict[str, Any]:
    """Every task on every system; per run: ended how, checker verdict, wall seconds."""
    model = model_from_context(Context())
    runs: list[dict[str, Any]] = []
    for task in tasks:
        for system, run in SYSTEMS.items():
            root = task.fresh(work / f"local-{system}-{task.name}")
            started = time.perf_counter()
            try:
                ended = run(model, root, task.request, work / f"local-{system}.sqlite")
            except Exception as error:  # a crash is a failed task, with its reason kept
                ended = f"error: {type(error).__name__}: {error}"[:200]
            wall = time.perf_counter() - started
            runs.append(
                {
                    "system": system,
                    "task": task.name,
                    "ended": ended,
                    "success": task.check(root),
                    "wall_s": round(wall, 1),
                }
            )
            progress(f"local model: {system} {task.name}: {runs[-1]}")
    return {"model": type(model).__name__, "budget": BUDGET, "runs": runs, **totals(runs)}


def totals(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Success rate and wall time per system."""
    out: dict[str, Any] = {}
    for system in SYSTEMS:
        mine = [r for r in runs if r["system"] == system]
        out[system] = {
            "tasks": len(mine),
            "succeeded": sum(r["success"] for r in mine),
            "success_rate": round(sum(r["success"] for r in mine) / len(mine), 2) if mine else 0,
            "wall_s": round(sum(r["wall_s"] for r in mine), 1),
        }
    return out
