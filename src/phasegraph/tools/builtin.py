"""The built-in workspace tools as LangChain tools, and the set of tools a run may use.

The built-in tools are bound to the workspace of the run's settings, so one compiled graph
serves runs in different workspaces; the tools of one configuration are built once and reused.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, model_validator

from phasegraph.errors import ConfigurationError
from phasegraph.state.result import renamed
from phasegraph.tools.base import tool_index
from phasegraph.tools.command_line import names_a_program
from phasegraph.tools.commands import CommandSettings
from phasegraph.tools.mcp import load_mcp_tools
from phasegraph.tools.pipeline import execute_command, program_write
from phasegraph.tools.workspace import MAX_WRITE_BYTES, Workspace, WorkspaceError

#: In the order the plan's prompt lists them: what reads, what computes, what writes. A small
#: model reaches for the first tool that fits; a program that makes a file's content comes
#: before the tools that write what the model types.
BUILTIN_TOOL_NAMES = (
    "list_files",
    "read_file",
    "search_text",
    "run_command",
    "write_file",
    "edit_file",
)


class _ListFiles(BaseModel):
    path: str = Field(".", description="Directory relative to the workspace root.")


class _ReadFile(BaseModel):
    path: str = Field(description="File relative to the workspace root.")
    start_line: int | None = Field(None, description="First line to show (1-based).")
    end_line: int | None = Field(None, description="Last line to show (inclusive).")


class _WriteFile(BaseModel):
    path: str = Field(description="File relative to the workspace root; created or replaced.")
    command: str | None = Field(
        None,
        description="A command line of allowed programs whose output becomes the whole "
        'content, written exactly (e.g. "sort names.txt"); null to give the content as text.',
    )
    content: str | None = Field(
        None, description="The whole new content of the file, as text (when no command)."
    )


class _EditFile(BaseModel):
    path: str = Field(description="File relative to the workspace root.")
    old_text: str = Field(
        description="Exact text to replace; must occur exactly once unless replace_all."
    )
    new_text: str = Field(description="Text to put in its place.")
    replace_all: bool = Field(False, description="Replace every occurrence of old_text.")


class _SearchText(BaseModel):
    pattern: str = Field(description="Regular expression searched line by line.")
    path: str = Field(".", description="File or directory relative to the workspace root.")


class _RunCommand(BaseModel):
    command: str | list[str] = Field(
        description="A command line as a shell user writes it, run without a shell: allowed "
        "programs joined by |, with < input and > or >> output files, e.g. "
        '"sort input.txt > out.txt"; or an argv list, run as it is.'
    )
    timeout_s: float | None = Field(None, description="Seconds before the command is killed.")
    input: str | None = Field(
        None,
        description='Text the first program reads as its input, in place of < file: "$t1" '
        "gives it task t1's whole output.",
    )

    @model_validator(mode="before")
    @classmethod
    def _argv(cls, data: Any) -> Any:
        # the argv list this tool took before it took a command line
        return renamed(data, argv="command")


@dataclass(frozen=True)
class WorkspaceSettings:
    """What the built-in tools are bound to (hashable: one tool set per distinct value)."""

    root: str
    commands: CommandSettings
    max_read_bytes: int
    max_write_bytes: int = MAX_WRITE_BYTES


def _commanding(space: Workspace, commands: CommandSettings) -> Callable[..., Any]:
    """run_command's body: the command's text, and the files it wrote and its programs' output."""

    def command(
        command: str | list[str], timeout_s: float | None = None, input: str | None = None
    ) -> tuple[str, dict[str, Any]]:
        done = execute_command(
            command, workspace=space, settings=commands.capped(timeout_s), text_input=input
        )
        reported = {"written": list(done.written), "value": done.output, "complete": done.whole}
        return done.text, reported

    return command


def _writing(space: Workspace, commands: CommandSettings) -> Callable[..., Any]:
    """write_file's body: the text given, or what a command prints, as the file's whole text."""

    def write(
        path: str, command: str | None = None, content: str | None = None
    ) -> tuple[str, dict[str, Any]]:
        given = command is not None and bool(command.strip())
        if given and (content is None or names_a_program(str(command), commands.runnable)):
            return program_write(space, commands, path, str(command))
        if content is None:
            raise WorkspaceError("give the file's content, or a command whose output it is")
        wrote = space.write_file(path, content)
        if given:  # a word in the command's place (the tool's own name), beside a real text
            wrote += f" (its content: {command!r} names no program that may run)"
        return wrote, {}

    return write


def _reading(space: Workspace) -> Callable[..., Any]:
    """read_file's body: the text with its notes, and the text alone (for a ``$id``)."""

    def read(
        path: str, start_line: int | None = None, end_line: int | None = None
    ) -> tuple[str, dict[str, Any]]:
        text, notes, whole = space.read_text(path, start_line, end_line)
        return text + "".join(f"\n[{n}]" for n in notes), {"value": text, "complete": whole}

    return read


@lru_cache(maxsize=32)
def workspace_tools(settings: WorkspaceSettings) -> tuple[BaseTool, ...]:
    """The six built-in tools bound to one workspace."""
    space = Workspace(
        settings.root,
        max_read_bytes=settings.max_read_bytes,
        max_write_bytes=settings.max_write_bytes,
    )

    command, read = _commanding(space, settings.commands), _reading(space)
    write = _writing(space, settings.commands)

    # What each tool declares (SPEC 5 and 11): "idempotent" (running it twice does no more than
    # once), "read_only" (it changes nothing, so no phase is narrowed away from it), "writes"
    # (the argument naming the one file it writes, which the judge is told has changed), "runs"
    # (the argument holding the argv it runs), "lists" (it lists the workspace) and "workspace"
    # (it works on the run's workspace, whose facts code may then read and show).
    reads = {"idempotent": True, "read_only": True}
    specs: list[tuple[str, object, type[BaseModel], str, dict[str, Any]]] = [
        (
            "list_files",
            space.list_files,
            _ListFiles,
            "List files under a directory.",
            reads | {"lists": "path"},
        ),
        ("read_file", read, _ReadFile, "Read a text file, or some of its lines.", reads),
        (
            "write_file",
            write,
            _WriteFile,
            "Create or replace a whole file with a text, or with what a command prints.",
            # "computes": the argument whose command's output, when given, is the text written
            {"idempotent": True, "writes": "path", "computes": "command"},
        ),
        (
            "edit_file",
            space.edit_file,
            _EditFile,
            "Replace an exact text with new_text in a file: its one occurrence, or every "
            "occurrence with replace_all.",
            {"idempotent": False, "writes": "path", "replaces": "old_text"},
        ),
        (
            "search_text",
            space.search_text,
            _SearchText,
            "Search files for lines matching a regular expression.",
            reads,
        ),
        (
            "run_command",
            command,
            _RunCommand,
            "Run a command line of allowed programs in the workspace (a pipeline; > writes a "
            "program's output to a file exactly): " + ", ".join(settings.commands.runnable),
            # a command's effects are unknown: not idempotent; "runs" names the argument that
            # holds the command line; the files it writes it reports (its artifact's "written")
            {"runs": "command"},
        ),
    ]
    tools: list[BaseTool] = []
    for name, func, schema, description, metadata in specs:
        tools.append(
            StructuredTool.from_function(
                func=func,  # type: ignore[arg-type]
                name=name,
                description=description,
                args_schema=schema,
                metadata={**metadata, "workspace": True},
                # a read's and a command's value, and the files a program wrote, beside the text
                response_format="content_and_artifact"
                if func in (read, command, write)
                else "content",
            )
        )
    tools.sort(key=lambda tool: BUILTIN_TOOL_NAMES.index(tool.name))
    return tuple(tools)


class Toolbox:
    """The tools of a graph: the user's, plus the built-in and MCP tools the settings bind."""

    def __init__(self, tools: Sequence[BaseTool] | None, *, builtin: bool | None) -> None:
        """Keep the user's tools; ``builtin=None`` means built-in tools only when none given."""
        self.user = tool_index(tools or [])
        self.builtin = (tools is None) if builtin is None else builtin
        if self.builtin:
            clash = sorted(set(self.user) & set(BUILTIN_TOOL_NAMES))
            if clash:
                raise ConfigurationError(
                    f"tools {clash} have the names of built-in tools; rename them or pass "
                    "builtin_tools=False"
                )
        self._lock = threading.Lock()

    def resolve(
        self, settings: WorkspaceSettings | None, mcp_servers: Mapping[str, Any] | None = None
    ) -> dict[str, BaseTool]:
        """Tools by name for a run with these settings."""
        found: list[BaseTool] = []
        if self.builtin and settings is not None:
            found.extend(workspace_tools(settings))
        found.extend(self.user.values())
        if mcp_servers:
            with self._lock:
                found.extend(load_mcp_tools(json.dumps(mcp_servers, sort_keys=True)))
        return tool_index(found)
