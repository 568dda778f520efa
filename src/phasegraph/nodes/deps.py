"""What every node is handed and reads: its dependencies, its settings, the phase it works on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.errors import NodeError
from langgraph.runtime import Runtime

from phasegraph.context import Context
from phasegraph.errors import redact
from phasegraph.facts.tools import tool_kinds, writes_needed
from phasegraph.guards import Guard, default_guards
from phasegraph.holding import Hold, default_holds
from phasegraph.models import model_from_context
from phasegraph.policy import PhaseTools, Policy, widened
from phasegraph.state import RunError, State, TaskOutcome, TaskResult
from phasegraph.state.reading import is_last_phase
from phasegraph.storage.journal import ToolJournal, journal_for
from phasegraph.tools.builtin import Toolbox, WorkspaceSettings
from phasegraph.tools.constraints import (
    DEFAULT_TOOL_RULES,
    allowed_tools,
    resolved_rules,
    same_rules,
)


@dataclass
class Deps:
    """What `build_graph` hands to every node: model (None: from settings), tools, journal."""

    model: BaseChatModel | None = None
    toolbox: Toolbox = field(default_factory=lambda: Toolbox([], builtin=False))
    checkpointer: Any = None
    guards: tuple[Guard, ...] | None = None
    holds: tuple[Hold, ...] | None = None
    policy: Policy = field(default_factory=Policy)

    def tools_for(self, context: Context) -> dict[str, BaseTool]:
        """The tools of a run: the user's, plus built-in and MCP tools bound by its settings."""
        return self.toolbox.resolve(workspace_settings(context), context.mcp_servers or None)

    def guard_list(self) -> tuple[Guard, ...]:
        """The graph's guards: those given to `build_graph`, else the defaults for its tools."""
        if self.guards is not None:
            return self.guards
        return default_guards(workspace=self.toolbox.builtin)

    def hold_list(self) -> tuple[Hold, ...]:
        """The graph's holds: those given to `build_graph`, else `holding.default_holds`."""
        return default_holds() if self.holds is None else self.holds

    def journal(self) -> ToolJournal:
        """The tool journal of the run: `journal.journal_for` the checkpointer it runs on.

        That is the one LangGraph runs it on: the run's config names it (a LangGraph server's
        copy of the graph, a parent graph's for a subgraph), else the graph's own.
        """
        checkpointer = get_config().get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER)
        if checkpointer is None and isinstance(self.checkpointer, BaseCheckpointSaver):
            checkpointer = self.checkpointer
        return journal_for(checkpointer)

    def chat_model(self, runtime: Runtime[Context], run_id: str) -> BaseChatModel:
        """The model passed to `build_graph`, else the one the settings name, for run ``run_id``."""
        if self.model is not None:
            return self.model
        return model_from_context(context_of(runtime), thread_id(), run_id)


def workspace_settings(context: Context) -> WorkspaceSettings:
    """What the built-in tools of a run are bound to."""
    return WorkspaceSettings(
        root=context.workspace,
        commands=context.command_settings,
        max_read_bytes=context.max_read_bytes,
        max_write_bytes=context.max_write_bytes,
    )


def thread_id() -> str:
    """The id of the thread being run ("" when the graph runs without one)."""
    return str(get_config().get("configurable", {}).get("thread_id", ""))


def context_of(runtime: Runtime[Context]) -> Context:
    """The run's settings; a dict (Studio, the server) or nothing becomes a `Context`."""
    return Context.coerce(runtime.context)


def task_result(
    task: dict[str, Any],
    status: TaskOutcome,
    output: str,
    duration: float = 0.0,
    *,
    wave: int = 0,
    replayed: bool = False,
) -> TaskResult:
    """One task's result record."""
    return {
        "task_id": task["id"],
        "tool": task["tool"],
        "arguments": task["arguments"],
        "status": status,
        "output": output,
        "duration_s": round(duration, 4),
        "wave": wave,
        "replayed": replayed,
    }


def run_error(error: NodeError) -> RunError:
    """An exception a node raised, as the state records it: no secret in its message."""
    message = redact(str(error.error) or repr(error.error))
    return {"node": error.node, "type": type(error.error).__name__, "message": message}


def task_error(state: State) -> RunError | None:
    """The exception a task of the round in progress raised, if one did (see `on_task_error`).

    The tasks of a wave go on together to one node (execute or the judge); that node ends the
    round there and the run goes to summarize with the error (SPEC section 2).
    """
    return next((r["error"] for r in state.get("results", []) if r.get("error")), None)


def phase_allowed_tools(
    state: State, phase: Mapping[str, Any], deps: Deps, context: Context
) -> list[str]:
    """Tools the phase may use: its task type's rules, narrowed by the phase's own list.

    Tools that write files stay allowed while a check on a file fails or, under the built-in
    rules, when the analysis names files to write (see `allowed_tools`). The phase's own list
    narrows away none of the tools the graph's tool widenings keep (`Policy.tool_widenings`:
    by default the reading tools, and in the last phase those writers).
    """
    tools = deps.tools_for(context)
    request = state.get("structured_request") or {}
    task_type = str(request.get("task_type", ""))
    # The built-in rules forbid writing for research and analysis, where nothing changes; an
    # analysis that names files to write says its type guess was wrong. A user's rules stand.
    kinds = tool_kinds(tools)
    # the defaults, whether given by kind or by the names of the tools they stand for
    builtin_rules = same_rules(context.tool_rules, DEFAULT_TOOL_RULES, kinds)
    named = request.get("files_to_write") or [] if builtin_rules else []
    files = [str(f) for f in named]
    needed = writes_needed(state.get("checks") or [], tools, files)
    kept = widened(
        deps.policy.tool_widenings,
        PhaseTools(tools, is_last_phase(state, phase), frozenset(needed)),
    )
    return allowed_tools(
        tools,
        task_type,
        phase.get("allowed_tools") or [],
        resolved_rules(context.tool_rules, kinds),
        always=kept,
        needed=needed,
    )
