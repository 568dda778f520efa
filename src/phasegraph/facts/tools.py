"""What tools declare of themselves, and what the run's results show through it.

Facts read a tool's ``metadata``, never its name: ``read_only`` (it changes nothing),
``reads`` (the argument naming the file it reads, ``path`` unless said), ``writes`` (the
argument naming the file it writes), ``replaces`` (the argument holding the text it
replaces, which must be in the file for it to write), ``runs`` (the argument holding the argv it
runs), ``idempotent``, ``lists`` (it lists the workspace), ``workspace`` (it works on the run's
workspace: the built-in tools).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from langchain_core.tools import BaseTool

from phasegraph.state import CheckRecord, TaskResult
from phasegraph.state.references import references
from phasegraph.tools.argv_specs import WORDS_ONLY
from phasegraph.tools.command_line import (
    CommandLineError,
    names_a_program,
    parse,
    written_targets,
)

FILE_KINDS = ("exists", "contains", "matches", "equals", "number", "keeps", "copy")


def declares(tool: BaseTool | None, key: str) -> object:
    """What a tool declares under ``key`` in its metadata (None when it declares nothing)."""
    return (tool.metadata or {}).get(key) if tool is not None else None


def on_workspace(tools: Mapping[str, BaseTool]) -> bool:
    """Whether the run has tools that work on its workspace (the built-in ones declare it)."""
    return any(declares(tool, "workspace") for tool in tools.values())


def replaces_found_text(tool: BaseTool | None) -> bool:
    """Whether a tool writes only where a text it is given is found in the file (``replaces``).

    Such a write cannot put a guess of what the file holds in place of its content: a text the
    model typed that is not in the file changes nothing.
    """
    return bool(declares(tool, "replaces"))


def listing_tools(tools: Mapping[str, BaseTool]) -> set[str]:
    """Tools that declare they list the workspace (``metadata={"lists": ...}``)."""
    return {name for name, tool in tools.items() if declares(tool, "lists")}


def writes_needed(
    checks: Iterable[CheckRecord], tools: Mapping[str, BaseTool], files_to_write: Sequence[str] = ()
) -> set[str]:
    """Every tool that writes files, while a file check fails or the request names files to write.

    Empty when no file check fails and no file is to be written. The analysis's task type may
    be wrong (a change to a file taken for analysis work, which may not write), while a failing
    file check, or a file the analysis names to write, says the work writes files: without
    these tools it can only try other means until the budget runs out.
    """
    failing = any(c["kind"] in FILE_KINDS and c["passed"] is not True for c in checks)
    if not failing and not files_to_write:
        return set()
    return {name for name, tool in tools.items() if writes_files(tool)}


def writes_files(tool: BaseTool | None) -> bool:
    """Whether a tool declares that it writes files (``metadata={"writes": "path"}``)."""
    return bool(written_argument(tool))


def written_argument(tool: BaseTool | None) -> str | None:
    """The argument naming the file a tool writes, as it declares it, if it writes one."""
    return (tool.metadata or {}).get("writes") if tool is not None else None


def read_only(tools: Mapping[str, BaseTool]) -> set[str]:
    """Tools that declare they change nothing (``metadata={"read_only": True}``).

    A tool that also declares a file it writes or a program it runs is not one: what it says it
    changes outweighs the claim that it changes nothing.
    """
    return {name for name, tool in tools.items() if is_read_only(tool)}


def is_read_only(tool: BaseTool | None) -> bool:
    """Whether one tool is read-only, as `read_only` reads its declarations."""
    return bool(declares(tool, "read_only")) and not (writes_files(tool) or runs_programs(tool))


def read_argument(tool: BaseTool | None) -> str | None:
    """The argument naming the file a read-only tool reads: as it declares it, else ``path``.

    ``metadata={"read_only": True, "reads": "filename"}``; None for a tool that is not
    read-only (`read_only`).
    """
    if not is_read_only(tool):
        return None
    declared = declares(tool, "reads")
    return declared if isinstance(declared, str) and declared else "path"


def read_path(call: Mapping[str, Any], tools: Mapping[str, BaseTool]) -> object:
    """The file a planned task or a result of a read-only tool reads, as the model gave it."""
    argument = read_argument(tools.get(str(call.get("tool"))))
    return (call.get("arguments") or {}).get(argument) if argument else None


def computing_argument(tool: BaseTool | None) -> str | None:
    """The argument of a writing tool that names a command whose output it writes, if declared.

    ``metadata={"writes": "path", "computes": "command"}``: a call that gives that argument
    writes what a program printed, not a text the model typed.
    """
    argument = declares(tool, "computes") if writes_files(tool) else None
    return argument if isinstance(argument, str) and argument else None


def given_command(arguments: Mapping[str, Any], tool: BaseTool | None) -> str | None:
    """The command a call of a writing tool gives for its text (its ``computes`` argument)."""
    argument = computing_argument(tool)
    value = arguments.get(argument) if argument else None
    return value if isinstance(value, str) and value.strip() else None


def without_stray_command(
    arguments: dict[str, Any], tool: BaseTool | None, programs: Collection[str]
) -> dict[str, Any]:
    """A write's arguments without a command that names none of ``programs``, beside a text.

    A small model puts a word (the tool's own name) in the command's place and the text it
    means beside it; such a word is no command, and the call is the typed write it is. A
    command alone, or one that names a program, is left to run or be refused.
    """
    argument, command = computing_argument(tool), given_command(arguments, tool)
    if argument is None or command is None or names_a_program(command, programs):
        return arguments
    path = written_argument(tool)
    if not any(isinstance(v, str) for k, v in arguments.items() if k not in (argument, path)):
        return arguments
    return {key: value for key, value in arguments.items() if key != argument}


def computed(arguments: Mapping[str, Any], tool: BaseTool | None) -> bool:
    """Whether a call's written text is a program's output.

    Its ``computes`` argument is given, and is not a command that prints its own words alone
    (`own_words`): what ``echo 50`` writes is the model's as much as a typed ``50``. Whether
    programs run at all is `given_command`'s to say.
    """
    command = given_command(arguments, tool)
    return command is not None and not own_words(command)


def own_words(command: object) -> bool:
    """Whether a command line's output is made of its own words: nothing it reads is a file's.

    It is one program, one that prints its arguments alone (`argv_specs.WORDS_ONLY`), given
    no ``<`` and no ``$(...)``. A pipeline is not one (a later program may read a file:
    ``echo | sort names.txt``), nor is a line that cannot be parsed.
    """
    if not isinstance(command, str):
        return False
    try:
        stages = parse(command)
    except CommandLineError:
        return False
    first = stages[0]
    if len(stages) > 1 or first.stdin is not None or not first.words:
        return False
    if any(word.commands for word in first.words):
        return False
    return PurePosixPath(first.words[0].text).name in WORDS_ONLY


def typed(arguments: Mapping[str, Any], tool: BaseTool | None) -> bool:
    """Whether a write's text is the model's own: neither another task's output nor a program's."""
    return not references(arguments) and not computed(arguments, tool)


def runs_argument(tool: BaseTool | None) -> str | None:
    """The argument holding the argv a tool runs, as it declares it (``runs``), if it runs one."""
    return (tool.metadata or {}).get("runs") if tool is not None else None


def runs_programs(tool: BaseTool | None) -> bool:
    """Whether a tool declares that it runs programs."""
    return bool(runs_argument(tool))


def declares_changes(tool: BaseTool | None) -> bool:
    """Whether a tool says it may change things, without naming a file or a program.

    ``metadata={"read_only": False}``, or MCP's annotations as langchain-mcp-adapters keeps them
    (``readOnlyHint`` false, ``destructiveHint`` true).
    """
    meta = (tool.metadata or {}) if tool is not None else {}
    return (
        meta.get("read_only") is False
        or meta.get("readOnlyHint") is False
        or meta.get("destructiveHint") is True
    )


def tool_kinds(tools: Mapping[str, BaseTool]) -> dict[str, set[str]]:
    """The tools of each kind a tool rule may name (``@writes``, ``@runs``), by what they declare.

    ``writes``: tools that declare a file they write, and those that say they change things
    without saying they run programs (`declares_changes`); ``runs``: tools that run programs.
    A tool that declares nothing is of no kind: nothing says it changes anything.
    """
    return {
        "writes": {
            name
            for name, tool in tools.items()
            if writes_files(tool) or (declares_changes(tool) and not runs_programs(tool))
        },
        "runs": {name for name, tool in tools.items() if runs_programs(tool)},
    }


def changed_files(results: Iterable[TaskResult], tools: Mapping[str, BaseTool]) -> list[str]:
    """Files the given results wrote, in order, each once.

    They are the ok results of tools that declare the argument naming the file they write
    (``metadata={"writes": "path"}``), and the files a result reports it wrote (``written``:
    a command's redirections).
    """
    seen: dict[str, None] = {}
    for result in results:
        if result["status"] != "ok":
            continue
        for name in [declared_write(result, tools), *(result.get("written") or [])]:
            if isinstance(name, str) and name.strip():
                seen[name.strip()] = None
    return list(seen)


def declared_write(result: TaskResult, tools: Mapping[str, BaseTool]) -> str | None:
    """The file a result's tool declares it wrote (its ``writes`` argument), as given; or None."""
    argument = written_argument(tools.get(result["tool"]))
    path = result["arguments"].get(argument) if argument else None
    return path.strip() if isinstance(path, str) and path.strip() else None


def how_written(results: Iterable[TaskResult], tools: Mapping[str, BaseTool]) -> dict[str, str]:
    """How the last ok write of each file the results wrote made its text, by path.

    A file a command reports it wrote (``written``), or a write took from a program's output
    (`computed`), was made by that program, unless the command prints only its own words
    (`own_words`: ``echo 50 > n.txt`` typed it); one a write took from another task's output by
    reference (``$t1``) holds that output; one an edit of found text changed was edited; any
    other write typed its text into its arguments. A command finds the files it wrote by their
    state before and after it, so a file another task of its wave wrote at the same time is
    that task's, not the command's.
    """
    how: dict[str, str] = {}
    done = [r for r in results if r["status"] == "ok"]
    declared = {(r["wave"], path) for r in done if (path := declared_write(r, tools))}
    for result in done:
        tool, task = tools.get(result["tool"]), result["task_id"]
        if path := declared_write(result, tools):
            if computed(result["arguments"], tool):
                how[path] = f"{task}'s program wrote it"
            elif references(result["arguments"]):
                how[path] = f"{task} wrote another task's output into it"
            elif replaces_found_text(tool):
                how[path] = f"{task} edited it"
            else:
                how[path] = f"{task} typed its text"
        runs = runs_argument(tool)
        typing = bool(runs) and own_words(result["arguments"].get(str(runs)))
        made = f"{task} typed its text" if typing else f"{task}'s program wrote it"
        for name in result.get("written") or []:
            if (result["wave"], name.strip()) not in declared:
                how[name.strip()] = made
    return how


def command_writes(command: object) -> list[str]:
    """The files a command line names to write (its ``>``, ``>>`` and ``2>`` targets)."""
    if not isinstance(command, str):
        return []
    try:
        stages = parse(command)
    except CommandLineError:
        return []
    return written_targets(stages)
