"""Run settings, passed as LangGraph's runtime context (``context=Context(...)``).

Every field has a description (Studio shows them as a form) and an environment-variable
fallback, ``PHASEGRAPH_<FIELD NAME IN CAPITALS>``, read when the Context is created. Secrets are
never a field here: an API key is read from the environment by the model factory only, so it can
not end up in a checkpoint or a Studio form.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar, cast, get_args

from phasegraph.tools.commands import DEFAULT_ALLOWED_COMMANDS, CommandSettings
from phasegraph.tools.constraints import DEFAULT_TOOL_RULES, validate_rules
from phasegraph.tools.sandbox import SANDBOX_MODES, SandboxMode

# The largest budget a run may have; LangGraph's super-step limit is set from it.
MAX_STEPS_LIMIT = 10_000

ReviewLevel = Literal["none", "plan", "plan+replan", "all"]
REVIEW_LEVELS: tuple[str, ...] = get_args(ReviewLevel)

_T = TypeVar("_T")


def _env(name: str, default: _T, cast_fn: Callable[[str], _T]) -> Callable[[], _T]:
    """Default factory that reads ``PHASEGRAPH_<name>`` and falls back to ``default``."""

    def factory() -> _T:
        raw = os.environ.get(f"PHASEGRAPH_{name}")
        if raw is None or raw == "":
            return default
        try:
            return cast_fn(raw)
        except ValueError as exc:
            raise ValueError(f"PHASEGRAPH_{name}={raw!r} is not valid: {exc}") from None

    return factory


class EnvironmentFolder(str):
    """A workspace taken from ``PHASEGRAPH_WORKSPACE``: a default, as the current folder is.

    A thread that already works in a folder goes on there (`Context.names_workspace`).
    """


def _name_list(raw: str) -> list[str]:
    """A JSON list of names, or names separated by commas."""
    value = json.loads(raw) if raw.lstrip().startswith("[") else raw.split(",")
    if not isinstance(value, list):
        raise ValueError("expected a list of names")
    return [str(v).strip() for v in value if str(v).strip()]


def _json_object(raw: str) -> dict[str, Any]:
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


BOUNDS: dict[str, tuple[float, float]] = {
    "max_steps": (1, MAX_STEPS_LIMIT),
    "max_parallel": (1, 64),
    "max_replans": (0, 100),
    "max_parse_retries": (0, 10),
    "max_phases": (1, 5),
    "max_tasks_per_round": (1, 8),
    "extra_rounds_per_phase": (0, 20),
    "task_timeout_s": (0.001, 86_400),
    "round_timeout_s": (0.001, 86_400),
    "llm_timeout_s": (0.001, 86_400),
    "max_output_chars": (100, 10_000_000),
    "prompt_token_budget": (200, 1_000_000),
    "max_read_bytes": (1_000, 1_000_000_000),
    "command_memory_mb": (0, 1_048_576),
    "command_file_mb": (0, 1_048_576),
    "command_processes": (0, 100_000),
    "max_write_bytes": (1_000, 1_000_000_000),
}
"""Each numeric setting's least and greatest value: refused outside them, shown in Studio's form."""


#: The step budget of a run where nothing sets one (``PHASEGRAPH_MAX_STEPS``).
DEFAULT_MAX_STEPS = 40

@dataclass(kw_only=True)
class Context:
    """Settings of one run. Limits are checked on creation; a bad value fails with its name."""

    model: str = field(
        default_factory=_env("MODEL", "", str),
        metadata={
            "description": "Model to use when none was passed to build_graph: a model name of "
            "an OpenAI-compatible endpoint (key from PHASEGRAPH_API_KEY, else OPENAI_API_KEY), "
            "local:PATH.gguf for a GGUF "
            "file run in-process, or scripted:FILE.json for the scripted model. Empty (and no base "
            "URL): the embedded local model."
        },
    )
    base_url: str = field(
        default_factory=_env("BASE_URL", "", str),
        metadata={
            "description": "Base URL of an OpenAI-compatible endpoint (empty: OPENAI_BASE_URL, "
            "else OpenAI's)."
        },
    )
    workspace: str = field(
        default_factory=_env("WORKSPACE", "", EnvironmentFolder),
        metadata={
            "description": "Folder the built-in tools work in, and are confined to. Empty: the "
            "current folder from code and the CLI; on the LangGraph server, a folder of the "
            "thread's own (PHASEGRAPH_WORKSPACES)."
        },
    )
    review: ReviewLevel = field(
        default_factory=_env("REVIEW", "none", lambda s: cast(ReviewLevel, s)),
        metadata={
            "description": "Which reviews pause the run for a person: none, plan (plan approval "
            "and clarification questions), plan+replan (also every replan), all (also tool "
            "permission requests)."
        },
    )
    max_steps: int = field(
        default_factory=_env("MAX_STEPS", DEFAULT_MAX_STEPS, int),
        metadata={
            "description": "Step budget of the run: phase plan, plans, judges, replans (every "
            "attempt) and tool executions count one each."
        },
    )
    max_parallel: int = field(
        default_factory=_env("MAX_PARALLEL", 4, int),
        metadata={"description": "Independent tasks of a round that run at the same time."},
    )
    max_replans: int = field(
        default_factory=_env("MAX_REPLANS", 3, int),
        metadata={"description": "Replans allowed; past it a trigger asks or ends the phase."},
    )
    max_parse_retries: int = field(
        default_factory=_env("MAX_PARSE_RETRIES", 2, int),
        metadata={
            "description": "Times a stage is re-asked after an invalid structured result "
            "(each failed attempt counts as a step)."
        },
    )
    max_phases: int = field(
        default_factory=_env("MAX_PHASES", 5, int),
        metadata={"description": "Most phases a plan may have (1-5)."},
    )
    max_tasks_per_round: int = field(
        default_factory=_env("MAX_TASKS_PER_ROUND", 8, int),
        metadata={"description": "Most tasks a round may plan (1-8)."},
    )
    extra_rounds_per_phase: int = field(
        default_factory=_env("EXTRA_ROUNDS_PER_PHASE", 2, int),
        metadata={
            "description": "A phase ends as incomplete after its estimated rounds plus this many."
        },
    )
    task_timeout_s: float = field(
        default_factory=_env("TASK_TIMEOUT_S", 60.0, float),
        metadata={"description": "Seconds one tool execution may take before it is a timeout."},
    )
    round_timeout_s: float = field(
        default_factory=_env("ROUND_TIMEOUT_S", 60.0, float),
        metadata={
            "description": "Seconds a round's executions may take together; tasks still "
            "running then are cancelled and recorded as timeout."
        },
    )
    llm_timeout_s: float = field(
        default_factory=_env("LLM_TIMEOUT_S", 120.0, float),
        metadata={
            "description": "Seconds one request to a model endpoint may take (each of its "
            "retries has as long); a model passed to build_graph keeps its own timeout."
        },
    )
    prompt_token_budget: int = field(
        default_factory=_env("PROMPT_TOKEN_BUDGET", 1500, int),
        metadata={
            "description": "Tokens a prompt's history may take: the latest two rounds in full, "
            "older ones by their judge summaries, tool outputs cut to fit."
        },
    )
    tool_rules: dict[str, dict[str, list[str]]] = field(
        default_factory=_env(
            "TOOL_RULES", DEFAULT_TOOL_RULES, lambda s: validate_rules(json.loads(s))
        ),
        metadata={
            "description": "Tools allowed and forbidden by task type, by name or by kind "
            "(@writes: tools that declare a file they write; @runs: tools that run programs), "
            'e.g. {"research": {"forbidden": ["@writes", "@runs"]}}; a phase may narrow '
            "them further."
        },
    )
    allowed_commands: list[str] = field(
        default_factory=_env("ALLOWED_COMMANDS", list(DEFAULT_ALLOWED_COMMANDS), _name_list),
        metadata={
            "description": "Programs run_command may start (by name, no shell), e.g. "
            '["ls", "grep", "pytest"]. An interpreter listed here is handed to the model.'
        },
    )
    command_sandbox: SandboxMode = field(
        default_factory=_env("COMMAND_SANDBOX", "os", lambda s: cast(SandboxMode, s)),
        metadata={
            "description": "Where run_command and command checks run: os, in an "
            "operating-system sandbox (Linux namespaces via bubblewrap: the workspace the only "
            "writable place, no network, no other process visible), refused where the machine "
            "cannot give one; checks, with the argument checks alone (weaker; no interpreter)."
        },
    )
    command_memory_mb: int = field(
        default_factory=_env("COMMAND_MEMORY_MB", 1024, int),
        metadata={
            "description": "Memory (MB of data) a command run by run_command or a command check "
            "may allocate; past it the program fails with memory exhausted. 0: no cap."
        },
    )
    command_file_mb: int = field(
        default_factory=_env("COMMAND_FILE_MB", 256, int),
        metadata={
            "description": "Largest file (MB) a command may write; past it the command is "
            "stopped and its redirected output not written. 0: no cap."
        },
    )
    command_processes: int = field(
        default_factory=_env("COMMAND_PROCESSES", 256, int),
        metadata={
            "description": "Processes a command may run at once, inside the sandbox (the "
            "kernel does not apply it to root). 0: no cap."
        },
    )
    max_read_bytes: int = field(
        default_factory=_env("MAX_READ_BYTES", 1_000_000, int),
        metadata={"description": "Bytes read_file, edit_file and search_text read of one file."},
    )
    max_write_bytes: int = field(
        default_factory=_env("MAX_WRITE_BYTES", 1_000_000, int),
        metadata={"description": "Bytes write_file and edit_file may write to one file."},
    )
    mcp_servers: dict[str, dict[str, Any]] = field(
        default_factory=_env("MCP_SERVERS", cast(dict[str, Any], {}), _json_object),
        metadata={
            "description": "MCP servers whose tools the plan may use (needs phasegraph[mcp]), "
            'e.g. {"notes": {"transport": "stdio", "command": "python", "args": ["srv.py"]}}.'
        },
    )
    max_output_chars: int = field(
        default_factory=_env("MAX_OUTPUT_CHARS", 4000, int),
        metadata={"description": "Tool output kept per task; the rest is cut with a marker."},
    )

    def __post_init__(self) -> None:
        """Reject settings that cannot work, naming the field."""
        self._check_kinds()
        if self.command_sandbox not in SANDBOX_MODES:
            raise ValueError(
                f"command_sandbox must be one of {', '.join(SANDBOX_MODES)}; "
                f"got {self.command_sandbox!r}"
            )
        if self.review not in REVIEW_LEVELS:
            raise ValueError(
                f"review must be one of {', '.join(REVIEW_LEVELS)}; got {self.review!r}"
            )
        if not isinstance(self.allowed_commands, list) or not all(
            isinstance(c, str) and c and "/" not in c for c in self.allowed_commands
        ):
            raise ValueError("allowed_commands must be a list of program names (no paths)")
        if not isinstance(self.mcp_servers, dict) or not all(
            isinstance(c, dict) and c.get("transport") for c in self.mcp_servers.values()
        ):
            raise ValueError(
                "mcp_servers must map server names to connection settings, each with its "
                'transport (e.g. {"transport": "stdio", "command": ..., "args": [...]})'
            )
        self.tool_rules = validate_rules(self.tool_rules)
        for name, (low, high) in BOUNDS.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise ValueError(f"{name} must be between {low:g} and {high:g}; got {value!r}")

    def _check_kinds(self) -> None:
        """Refuse a text, whole-number or number setting given as something else, naming it.

        A number of seconds may be written as a whole number; a bool, a string of digits, or a
        float where a whole number goes is refused.
        """
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.type == "str" and isinstance(value, os.PathLike):
                setattr(self, spec.name, value := os.fspath(value))  # a folder given as a Path
            if spec.type == "str" and not isinstance(value, str):
                raise ValueError(f"{spec.name} must be text; got {value!r}")
            if spec.type == "int" and type(value) is not int:
                raise ValueError(f"{spec.name} must be a whole number; got {value!r}")
            if spec.type == "float":
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"{spec.name} must be a number; got {value!r}")
                setattr(self, spec.name, float(value))

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        """The settings' JSON schema (Studio's form): each field's default as it stands, its bounds.

        Defaults come from a factory each (environment fallbacks), which a schema does not show
        by itself; here they are the values a run would get now.
        """
        schema = handler.resolve_ref_schema(handler(core_schema))
        try:
            defaults = cls()
        except ValueError:
            return schema  # an environment fallback that cannot work: no defaults to show
        for name, prop in schema.get("properties", {}).items():
            prop.setdefault("default", getattr(defaults, name))
            if name in BOUNDS:
                prop["minimum"], prop["maximum"] = BOUNDS[name]
        return schema

    @property
    def root(self) -> str:
        """The workspace as an absolute path (the current folder when none is set)."""
        return os.path.realpath(os.path.expanduser(self.workspace or "."))

    @property
    def names_workspace(self) -> bool:
        """Whether these settings name a folder of their own choice.

        The environment's folder (``PHASEGRAPH_WORKSPACE``, read when these settings were made:
        an `EnvironmentFolder`) is a default, as the current folder is: a thread that already
        works in a folder goes on there (`thread_folder`), wherever the environment points.
        """
        return bool(self.workspace) and not isinstance(self.workspace, EnvironmentFolder)

    @property
    def command_settings(self) -> CommandSettings:
        """How this run's commands and command checks run."""
        return CommandSettings(
            allowed=tuple(self.allowed_commands),
            # under the task timeout, so a command is killed before its task is given up on
            timeout_s=self.task_timeout_s * 0.9,
            max_chars=self.max_output_chars,
            sandbox=self.command_sandbox,
            max_memory_mb=self.command_memory_mb,
            max_file_mb=self.command_file_mb,
            max_processes=self.command_processes,
        )

    @property
    def person_available(self) -> bool:
        """Whether a person answers reviews at all."""
        return self.review != "none"

    @classmethod
    def coerce(cls, value: Context | dict[str, Any] | None) -> Context:
        """Build a Context from a dict (Studio, the server), or the defaults from None."""
        if value is None:
            return cls()
        if isinstance(value, Context):
            return value
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown settings {unknown}; known: {sorted(known)}")
        return cls(**value)
