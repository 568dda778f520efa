"""`run_command`: an allowlisted program, no shell, in the workspace (SPEC section 5).

What keeps a command in bounds, in two lines:

1. the operating-system sandbox (`phasegraph.tools.sandbox`): the workspace the only writable
   place, ``.git/`` and ``.phasegraph/`` read-only, no network, no other process visible, the
   scrubbed environment, killed with its parent. Where the machine cannot give it, a command is
   refused, unless the setting ``command_sandbox="checks"`` accepts the second line alone;
2. the argument checks (`phasegraph.tools.argv_rules`): argv is a list run without a shell, the
   program is named, not given by path, and must be in the allowlist; programs that exist to run
   others (shells, ``env``, ``xargs``...) are refused unless the user listed them, interpreters
   run only inside the sandbox, and each default program's options are read as the program reads
   them, against a closed table.

Either way the process gets its own process group, killed whole on timeout and when it has
exited; its memory is capped (``max_memory_mb``, the data it may allocate); the environment keeps
only a few harmless variables; output is read into a capped buffer, and a command that floods it
is stopped.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from phasegraph.tools.argv_rules import check_arguments
from phasegraph.tools.base import TRUNCATION_MARKER
from phasegraph.tools.sandbox import (
    SandboxMode,
    SandboxUnavailable,
    absent_protected,
    require_sandbox,
    resolve_program,
    sandbox_argv,
    sandbox_environment,
    seccomp_fd,
    undo_created,
)
from phasegraph.tools.stopping import stopped_here
from phasegraph.tools.workspace import Workspace, WorkspaceError

DEFAULT_ALLOWED_COMMANDS: tuple[str, ...] = (
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "find",
    "sort",
    "uniq",
    "diff",
    "cut",
    "echo",
    # arithmetic with no file or program of its choosing: a sum or a count a tool shows, so a
    # number written from it is not a model's mental arithmetic (see facts.unsourced_numbers)
    "expr",
    "pwd",
    "date",
    "true",
    "false",
    "sleep",
    "stat",
    "file",
    "md5sum",
    "sha256sum",
)

# Programs whose job is to run another program or a script; never allowed by default.
COMMAND_RUNNERS = frozenset(
    {
        "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "env", "xargs", "sudo",
        "su", "doas", "nohup", "setsid", "timeout", "nice", "ionice", "stdbuf", "time",
        "watch", "busybox", "parallel", "script", "exec", "eval", "command", "chroot",
        "unshare", "nsenter", "strace", "gdb", "expect", "at", "batch", "crontab",
    }
)  # fmt: skip

#: Programs that run any code they are given: allowed only inside the sandbox.
INTERPRETERS = frozenset(
    {"python", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "tclsh", "awk",
     "gawk", "mawk", "sed", "make", "git"}
)  # fmt: skip

ENV_KEPT = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "USER", "LOGNAME", "HOME")
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASS|CRED|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE", re.IGNORECASE
)
# A flood is stopped once this many times the kept output has been read.
FLOOD_FACTOR = 16
#: Seconds between looks at a running command's output size and deadline.
FLOOD_POLL_S = 0.05

_READ_CHUNK = 65536


def scrubbed_environment(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a command sees: a short allowlist, minus anything named like a secret."""
    env = os.environ if source is None else source
    kept = {
        name: value
        for name, value in env.items()
        if (name in ENV_KEPT or name.startswith("LC_")) and not _SECRET_NAME.search(name)
    }
    kept.setdefault("PATH", os.defpath)
    return kept


@dataclass(frozen=True)
class CommandSettings:
    """How commands run: which programs, for how long, how much output is kept, and where."""

    allowed: tuple[str, ...] = DEFAULT_ALLOWED_COMMANDS
    timeout_s: float = 30.0
    max_chars: int = 4000
    sandbox: SandboxMode = "os"
    max_memory_mb: int = 1024
    """The data a command may allocate (its heap and private mappings), in MB; 0: no cap."""

    def capped(self, timeout_s: float | None) -> CommandSettings:
        """These settings with a caller's timeout, never beyond the set one."""
        if timeout_s and timeout_s > 0:
            return replace(self, timeout_s=min(timeout_s, self.timeout_s))
        return self


def check_argv(argv: object, settings: CommandSettings, workspace: Workspace) -> list[str]:
    """The argv to run, or a WorkspaceError that says why it is refused."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise WorkspaceError('argv must be a non-empty list of strings, e.g. ["ls", "-l"]')
    if any("\x00" in arg for arg in argv):
        raise WorkspaceError("a command argument may not contain a NUL byte")
    program = argv[0]
    if "/" in program or program.startswith("~"):
        raise WorkspaceError(
            f"{program!r}: give the command by name (e.g. {os.path.basename(program)!r}); paths "
            "to programs are not allowed"
        )
    allowed = settings.allowed
    if program not in allowed:
        why = " (it runs other commands)" if program in COMMAND_RUNNERS else ""
        raise WorkspaceError(
            f"{program!r} is not an allowed command{why}; allowed: {', '.join(allowed) or 'none'}"
        )
    if settings.sandbox == "checks" and program in INTERPRETERS:
        raise WorkspaceError(
            f"{program!r} runs any code it is given, so it runs only inside the operating-system "
            "sandbox, which the setting command_sandbox='checks' turned off"
        )
    check_arguments(program, argv[1:], workspace)
    return list(argv)


def run_command(
    argv: list[str],
    *,
    workspace: Workspace,
    settings: CommandSettings,
) -> str:
    """Run ``argv`` in the workspace; its exit code and (capped) output, or a WorkspaceError."""
    args = check_argv(argv, settings, workspace)
    root = workspace.real_root
    env = scrubbed_environment()
    absent = absent_protected(root) if settings.sandbox == "os" else []
    try:
        with contextlib.ExitStack() as stack:
            passed: tuple[int, ...] = ()
            if settings.sandbox == "os":
                binary = require_sandbox()
                passed = (stack.enter_context(seccomp_fd()),)
                args = sandbox_argv(binary, resolve_program(args[0]), args[1:], root, passed[0])
                env = sandbox_environment(env)
            args, first = capped_launch(args, env, settings.max_memory_mb)
            process = subprocess.Popen(
                args,
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=passed,
                preexec_fn=first,
            )
    except SandboxUnavailable as exc:
        raise WorkspaceError(str(exc)) from None
    except FileNotFoundError as exc:
        missing = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
        raise WorkspaceError(missing or f"{args[0]!r} is not installed on this machine") from None
    except OSError as exc:  # E2BIG: a command line longer than the system takes, say
        raise WorkspaceError(f"the command could not start: {exc.strerror or exc}") from None
    try:
        return _collect(process, settings)
    finally:
        undone = undo_created(root, absent) if absent else []
        if undone:
            raise WorkspaceError(
                f"the command made {', '.join(n + '/' for n in undone)}, which commands may "
                "not write; it was taken away"
            )


def capped_launch(
    args: list[str], env: Mapping[str, str], megabytes: int
) -> tuple[list[str], Callable[[], None] | None]:
    """The argv to start and what the child runs first: the command under its memory cap.

    ``RLIMIT_DATA`` (a process's heap, private writable mappings and threads' stacks, inherited
    by the sandbox's program and by any process it starts, each its own): a command that grows
    past it gets "memory exhausted" from its allocator, not the machine's memory. Address space
    reserved and not written is not counted, so runtimes that reserve much (a JIT) still start.
    A lower hard limit of this process is kept. The cap is set by util-linux's ``prlimit``,
    which then runs the command, where the machine has it: Python starts it without copying this
    process (a copy of one that holds a model costs milliseconds a command); elsewhere between
    fork and exec. No cap for 0.
    """
    if megabytes <= 0:
        return args, None
    limit = int(megabytes) << 20
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:  # a lower cap the machine set stays, and is no error
        limit = min(limit, hard)
    wrapper = prlimit_binary()
    if wrapper is None:

        def cap() -> None:  # in the child between fork and exec: a system call, nothing to lock
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

        return args, cap
    program = args[0] if "/" in args[0] else shutil.which(args[0], path=env.get("PATH"))
    if program is None:
        raise FileNotFoundError(f"{args[0]!r} is not installed on this machine")
    return [wrapper, f"--data={limit}:{limit}", "--", program, *args[1:]], None


@functools.cache
def prlimit_binary() -> str | None:
    """util-linux's ``prlimit``, which sets a limit and runs a program, if the machine has it."""
    return shutil.which("prlimit")


def _collect(process: subprocess.Popen[bytes], settings: CommandSettings) -> str:
    """The exit code and capped output of a started command, which is gone when this returns."""
    buffer = _CappedBuffer(settings.max_chars)
    reader = threading.Thread(target=buffer.drain, args=(process,), daemon=True)
    reader.start()
    deadline = time.monotonic() + settings.timeout_s
    stopped = ""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            stopped = f"[stopped: no exit within {settings.timeout_s:g} s]"
            break
        if stopped_here():
            stopped = "[stopped: its task was given up on (timed out, or its run stopped)]"
            break
        if buffer.flooded:
            stopped = f"[stopped: more than {buffer.flood_limit} bytes of output]"
            break
        try:  # Popen.wait polls from half a millisecond up: a quick command returns at once
            process.wait(timeout=min(left, FLOOD_POLL_S))
            break
        except subprocess.TimeoutExpired:
            continue
    # the group goes whole, also after a normal exit: a background child must not outlive us
    _kill_group(process.pid)
    process.wait()
    reader.join(timeout=5)
    code = process.returncode
    lines = [f"exit code: {code}" if not stopped else stopped, buffer.text()]
    if stopped:
        raise WorkspaceError("\n".join(lines))
    return "\n".join(lines)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _CappedBuffer:
    """Keeps the first ``limit`` characters of output and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.flood_limit = limit * FLOOD_FACTOR
        self.head = bytearray()
        self.total = 0

    @property
    def flooded(self) -> bool:
        return self.total > self.flood_limit

    def drain(self, process: subprocess.Popen[bytes]) -> None:
        stream = process.stdout
        assert stream is not None
        while chunk := os.read(stream.fileno(), _READ_CHUNK):
            self.total += len(chunk)
            room = self.limit - len(self.head)
            if room > 0:
                self.head += chunk[:room]

    def text(self) -> str:
        text = self.head.decode("utf-8", errors="replace")
        if self.total > len(self.head):
            cut = self.total - len(self.head)
            text += TRUNCATION_MARKER.format(cut=cut, total=self.total).replace(
                "characters", "bytes"
            )
        return text
