"""`run_command`: a command line of allowed programs, run in the workspace (SPEC section 5).

A command is an argv list (one program, no shell) or a line as a shell user writes it: a
pipeline of allowed programs with ``<``, ``>`` and ``>>`` into workspace files, read by
`command_line.parse` (never ``sh -c``). Each program's argv is checked as one alone
(`commands.check_argv`), patterns are expanded against the workspace, and redirections go
through the file tools' rules: ``<`` reads a regular file of the workspace, ``>`` and ``>>``
write one the file tools may write. The output goes to a temporary file beside its target,
renamed over it once the command has ended by itself, so a stopped command leaves the file as
it was and ``sort a > a`` sorts ``a``. The files written are reported (`CommandResult.written`),
those its programs wrote themselves included (`changed.changed_files`):
the task's result records them as writes.

A program the argument checks cannot see into (an interpreter, a caller's own) may write
anywhere in the workspace, so the git metadata in it is scanned before (bound read-only; a tree
too large to scan refuses the command) and after: what the command laid out as a repository,
or a Python startup module, is taken away, and the call fails saying so.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shlex
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from phasegraph.tools import processes
from phasegraph.tools.argv_rules import confined_by_checks
from phasegraph.tools.cgroups import joined, pids_cgroup
from phasegraph.tools.changed import changed_files, file_states
from phasegraph.tools.command_line import (
    SUBSTITUTED,
    CommandLineError,
    Stage,
    Word,
    parse,
    written_targets,
)
from phasegraph.tools.commands import CommandSettings, check_argv, scrubbed_environment
from phasegraph.tools.planted import git_before, take_away
from phasegraph.tools.processes import collect, limited, start
from phasegraph.tools.redirections import DEV_NULL, Planned, Redirected, closing_fd
from phasegraph.tools.sandbox import (
    SandboxUnavailable,
    absent_protected,
    require_sandbox,
    resolve_program,
    sandbox_argv,
    sandbox_environment,
    seccomp_fd,
)
from phasegraph.tools.workspace import Workspace, WorkspaceError

#: Why a command whose first program read the input it was not given is refused; nothing it
#: wrote is kept, so what it made of no input (``wc -l`` counts no lines) reaches no file.
READ_WITHOUT_INPUT = (
    "[the first program read its input, and it was given none: name the file it reads as its "
    'operand, give it with <, or give an earlier task\'s output as input ("$t1")]'
)
#: The same for a write's command, which takes no input but a file's.
WRITE_READ_WITHOUT_INPUT = (
    "[the first program read its input, and it was given none: name the file it reads as its "
    "operand, or give it with <]"
)
#: The most files one pattern may expand to, and the most arguments a command's programs take.
MAX_EXPANDED = 1000
MAX_ARGUMENTS = 4000
#: The exit status of a program killed by SIGXFSZ, as bubblewrap reports it, and as Python does.
FILE_CAP_STATUSES = (128 + 25, -25)


@dataclass(frozen=True)
class CommandResult:
    """What a command printed (its exit code first), the files it wrote, its programs' output.

    ``output``: what its programs printed, and ``whole``: whether all of it is kept (the output
    cap cut none): the value a later task may take (``$id``).
    """

    text: str
    written: tuple[str, ...] = ()
    output: str = ""
    whole: bool = True


def run_command(
    command: list[str] | str, *, workspace: Workspace, settings: CommandSettings
) -> str:
    """Run ``command`` in the workspace; its exit code and capped output (`execute_command`)."""
    return execute_command(command, workspace=workspace, settings=settings).text


def execute_command(
    command: list[str] | str,
    *,
    workspace: Workspace,
    settings: CommandSettings,
    text_input: str | None = None,
    all_or_nothing: bool = False,
) -> CommandResult:
    """Run ``command``; what it printed and wrote, or a WorkspaceError saying why not.

    ``text_input``: text the first program reads as its input (an earlier task's output
    passed by reference), given instead of a file ``<`` names, never beside one.
    ``all_or_nothing``: its redirections are written only when every program ends with 0.
    """
    planned = plan_command(command, settings, workspace)
    if text_input is not None:
        if planned.reads is not None or planned.stages[0].stdin is not None:
            raise WorkspaceError(
                "the command is given its input twice, by < and as input; give one of them"
            )
        planned.text_input = text_input
    root = workspace.real_root
    free = [argv[0] for argv in planned.argvs if not confined_by_checks(argv[0])]
    if planned.writes:  # the files a line writes together may lay out what none does alone
        free.append("a command line that writes files")
    before = git_before(root, workspace, free)
    states = file_states(root, workspace.directory) if free else None
    absent = absent_protected(root) if settings.sandbox == "os" else []
    try:
        with contextlib.ExitStack() as stack:
            files = Redirected(workspace, planned, stack)
            codes, text, stopped, whole = _launch(planned, files, root, settings, before, stack)
            if not stopped and any(code in FILE_CAP_STATUSES for code in codes):
                stopped = (
                    f"[stopped: a program wrote a file past the {settings.max_file_mb} MB cap "
                    "(the setting command_file_mb)]"
                )
            if not stopped and files.input_was_read():
                stopped = f"exit code: {codes[-1]} {READ_WITHOUT_INPUT}"
            if stopped:
                raise WorkspaceError(f"{stopped}\n{text}".rstrip() + _unwritten(planned))
            written = [] if all_or_nothing and any(codes) else files.keep()
    finally:
        take_away(root, workspace, absent, before)
    if states is not None:  # what its programs wrote themselves (sed -i), not through >
        named = {rel for rel, _ in written}
        after = file_states(root, workspace.directory)
        written += [(rel, size) for rel, size in changed_files(states, after) if rel not in named]
    head = f"exit code: {codes[-1]}"
    if len(codes) > 1 and any(codes[:-1]):
        head += f" (each program's: {' '.join(map(str, codes))})"
    body = f"{head}\n{text}"
    if written:
        notes = "\n".join(f"[wrote {size} bytes to {rel}]" for rel, size in written)
        body = f"{body.rstrip()}\n{notes}"
    names = tuple(rel for rel, _ in written)
    return CommandResult(body, names, text, whole)


def program_write(
    workspace: Workspace, settings: CommandSettings, path: str, command: str
) -> tuple[str, dict[str, Any]]:
    """Write what ``command`` prints as ``path``'s whole text; its report, or a WorkspaceError.

    The command runs as `execute_command` runs one, its output going to ``path`` as ``>``
    sends it (the program's bytes exactly, what it says on stderr aside), kept only when every
    program of the line ends with exit code 0; otherwise nothing is written to ``path``. The
    command itself names no file to write. The report's ``written`` lists every file the
    command changed, those its programs wrote themselves (``sed -i``) included.
    """
    try:
        stages = parse(command)
    except CommandLineError as exc:
        raise WorkspaceError(f"{command!r}: {exc}") from None
    if written_targets(stages):
        raise WorkspaceError(
            f"the command's output is the text written to {path}: give the command without its "
            "> redirection"
        )
    rel = workspace.relative(path, for_write=True)  # refused before the command runs
    line = f"{command} > {shlex.quote(str(rel))}"
    try:
        done = execute_command(line, workspace=workspace, settings=settings, all_or_nothing=True)
    except WorkspaceError as exc:
        said = str(exc).replace(READ_WITHOUT_INPUT, WRITE_READ_WITHOUT_INPUT)
        raise WorkspaceError(said) from None
    if str(rel) not in done.written:
        also = f"; its programs changed {', '.join(done.written)}" if done.written else ""
        raise WorkspaceError(
            f"{done.text.rstrip()}\n[a program did not succeed: nothing was written to "
            f"{path}{also}]"
        )
    size = os.path.getsize(workspace.real_root / rel)
    report = f"wrote {size} bytes to {rel}: the output of {command}"
    return report, {"written": list(done.written)}


def plan_command(
    command: object, settings: CommandSettings, workspace: Workspace
) -> Planned:
    """``command`` checked: its programs' argvs and its redirections, or a WorkspaceError."""
    if isinstance(command, str):
        try:
            stages = parse(command)
        except CommandLineError as exc:
            raise WorkspaceError(f"{command!r}: {exc}") from None
        stages = [_substituted(stage, workspace, settings) for stage in stages]
        argvs = [_expanded(stage, workspace) for stage in stages]
    elif isinstance(command, list):
        argvs, stages = [command], [Stage()]  # an argv: run as given, no pattern expanded
    else:
        raise WorkspaceError('give the command as a line ("sort a.txt > b.txt") or an argv list')
    planned = Planned([check_argv(argv, settings, workspace) for argv in argvs], stages)
    if sum(len(argv) for argv in planned.argvs) > MAX_ARGUMENTS:
        raise WorkspaceError(
            f"the command has more than {MAX_ARGUMENTS} arguments (patterns expanded); narrow "
            "its patterns"
        )
    first, last = stages[0], stages[-1]
    if first.stdin is not None and first.stdin != DEV_NULL:
        planned.reads = workspace.relative(first.stdin)
    if last.stdout is not None and last.stdout != DEV_NULL:
        planned.writes["out"] = (workspace.relative(last.stdout, for_write=True), last.append)
    for index, stage in enumerate(stages):
        if stage.stderr not in (None, "&1", DEV_NULL):
            target = workspace.relative(str(stage.stderr), for_write=True)
            planned.writes[f"err{index}"] = (target, stage.stderr_append)
    targets = [rel for rel, _ in planned.writes.values()]
    if len(set(targets)) < len(targets):
        raise WorkspaceError("two redirections name the same file; name each file once")
    return planned


def _substituted(stage: Stage, workspace: Workspace, settings: CommandSettings) -> Stage:
    """``stage`` with each ``$(...)`` of its words run and replaced by what it printed.

    Each is a command line run as any is, checked the same way; it may write no file (its
    output is an argument). What it printed, its last newlines dropped, is the argument's text,
    not a pattern; a command that fails stops the whole line, saying so.
    """
    words = []
    for word in stage.words:
        text = word.text
        for number, command in enumerate(word.commands):
            inner = plan_command(command, settings, workspace)
            if inner.writes:
                raise WorkspaceError(f"$({command}) may write no file: its output is an argument")
            done = execute_command(command, workspace=workspace, settings=settings)
            code = done.text.partition("\n")[0]
            if code != "exit code: 0":
                raise WorkspaceError(f"$({command}) did not succeed ({code}): {done.output}")
            text = text.replace(f"{SUBSTITUTED}{number}", done.output.rstrip("\n"), 1)
        words.append(Word(text, word.pattern and not word.commands))
    return replace(stage, words=words)


def _expanded(stage: Stage, workspace: Workspace) -> list[str]:
    """A stage's argv, each pattern word replaced by the workspace files it matches, sorted.

    A pattern that matches nothing stays as written (as a shell leaves it); one that would look
    outside the workspace is refused before anything is listed.
    """
    argv: list[str] = []
    root = workspace.real_root
    for word in stage.words:
        if not word.pattern:
            argv.append(word.text)
            continue
        if word.text.startswith(("/", "~")) or ".." in PurePosixPath(word.text).parts:
            raise WorkspaceError(f"{word.text!r}: a pattern names files inside the workspace")
        folder = os.path.dirname(word.text)
        if folder and not glob.has_magic(folder):
            workspace.relative(folder)  # raises for a folder that resolves outside
        elif folder:
            raise WorkspaceError(f"{word.text!r}: a pattern may match names in one folder only")
        found = sorted(glob.glob(word.text, root_dir=root))
        if len(found) > MAX_EXPANDED:
            raise WorkspaceError(f"{word.text!r} matches more than {MAX_EXPANDED} files")
        argv.extend(found or [word.text])
    return argv


def _unwritten(planned: Planned) -> str:
    if not planned.writes:
        return ""
    names = ", ".join(str(rel) for rel, _ in planned.writes.values())
    return f"\n[nothing was written to {names}]"


def _launch(
    planned: Planned,
    files: Redirected,
    root: Path,
    settings: CommandSettings,
    before: frozenset[str] | None,
    stack: contextlib.ExitStack,
) -> tuple[list[int], str, str, bool]:
    """Start the command's programs, sandboxed or not, and wait for them (`collect`)."""
    env = scrubbed_environment()
    stderr: list[int | str | None] = []
    for index, stage in enumerate(planned.stages):
        target = files.fd(f"err{index}")
        stderr.append(target if target is not None else "&1" if stage.stderr == "&1" else None)
        if stage.stderr == DEV_NULL:
            stderr[-1] = stack.enter_context(closing_fd(os.open(os.devnull, os.O_WRONLY)))
    stdout = files.fd("out")
    if stdout is None and planned.stages[-1].stdout == DEV_NULL:
        stdout = stack.enter_context(closing_fd(os.open(os.devnull, os.O_WRONLY)))
    argvs, passed, first = planned.argvs, [], None
    try:
        if settings.sandbox == "os":
            binary = require_sandbox()
            inner = _inside_limits(settings)
            if not inner:  # no prlimit: the limits are set before bubblewrap starts
                first = limited([binary], env, settings.limits)[1]
            argvs = []
            for argv in planned.argvs:
                fd = stack.enter_context(seccomp_fd())
                passed.append(fd)
                argvs.append(
                    sandbox_argv(
                        binary, resolve_program(argv[0]), argv[1:], root, fd,
                        git_metadata=before or (), inner=inner,
                    )
                )  # fmt: skip
            env = sandbox_environment(env)
        else:
            private = stack.enter_context(tempfile.TemporaryDirectory(prefix="phasegraph-cmd-"))
            env["TMPDIR"] = private  # a program's temporary files go with the call
            launched = [limited(argv, env, settings.limits) for argv in argvs]
            argvs, first = [a for a, _ in launched], launched[0][1]
        # root, whom RLIMIT_NPROC does not bound: a pids cgroup does, for a program that may
        # start others (a program the checks confine starts none); it costs a sandboxed
        # command about 12 ms (docs/sandbox.md)
        confined = all(confined_by_checks(argv[0]) for argv in planned.argvs)
        procs = stack.enter_context(pids_cgroup(0 if confined else settings.max_processes))
        if procs is not None:
            argvs = [joined(procs, argv) for argv in argvs]
        started = start(
            argvs, cwd=str(root), env=env, stdin=files.stdin, stdout=stdout, stderr=stderr,
            pass_fds=passed, before_exec=first,
        )  # fmt: skip
    except SandboxUnavailable as exc:
        raise WorkspaceError(str(exc)) from None
    except FileNotFoundError as exc:
        missing = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
        raise WorkspaceError(missing or f"{argvs[0][0]!r} is not installed") from None
    except OSError as exc:  # E2BIG: a command line longer than the system takes, say
        raise WorkspaceError(f"the command could not start: {exc.strerror or exc}") from None
    return collect(started, settings.timeout_s, settings.max_chars)


def _inside_limits(settings: CommandSettings) -> list[str]:
    """``prlimit`` with the command's limits, run inside the sandbox before the program."""
    options = settings.limits.options(inside_sandbox=True)
    if not options or processes.prlimit_binary() is None:
        return []
    inside = resolve_program("prlimit")
    return [inside, *options, "--"]
