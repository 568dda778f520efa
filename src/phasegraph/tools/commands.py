"""What a command may run: the allowlist, its argument checks and its settings (SPEC section 5).

`phasegraph.tools.pipeline` runs a command line; what keeps a command in bounds, in two lines:

1. the operating-system sandbox (`phasegraph.tools.sandbox`): the workspace the only writable
   place, ``.git/`` and ``.phasegraph/`` read-only, no network, no other process visible, the
   scrubbed environment, killed with its parent. Where the machine cannot give it, a command is
   refused, unless the setting ``command_sandbox="checks"`` accepts the second line alone;
2. the argument checks (`phasegraph.tools.argv_rules`, `check_argv`): each program's argv is
   run without a shell, the program is named, not given by path, and must be in the
   allowlist; programs that exist to run others (shells, ``env``, ``xargs``...) are refused
   unless the user listed them, interpreters run only inside the sandbox, and each default
   program's options are read as the program reads them, against a closed table.

Either way the command's processes share one process group, killed whole on timeout and when
the command has exited; each process's memory, file size and (in the sandbox) process count are
capped (`CommandSettings.limits`); the environment keeps only a few harmless variables; output
is read into a capped buffer, and a command that floods it is stopped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from phasegraph.tools.argv_rules import check_arguments
from phasegraph.tools.processes import Limits
from phasegraph.tools.sandbox import SandboxMode
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
    # programs that make a file's content from another's, their output written with > (tr, tac,
    # nl, paste, comm, rev, seq read no option that writes or runs anything)
    "tr",
    "tac",
    "nl",
    "paste",
    "comm",
    "rev",
    "seq",
    # languages of text processing: they run only inside the operating-system sandbox
    "awk",
    "sed",
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
    max_file_mb: int = 256
    """The largest file a command may write, in MB; 0: no cap."""
    max_processes: int = 256
    """The processes a command may run at once (inside the sandbox, not as root); 0: no cap."""

    def capped(self, timeout_s: float | None) -> CommandSettings:
        """These settings with a caller's timeout, never beyond the set one."""
        if timeout_s and timeout_s > 0:
            return replace(self, timeout_s=min(timeout_s, self.timeout_s))
        return self

    @property
    def runnable(self) -> tuple[str, ...]:
        """The allowed programs that can run here: no interpreter without the sandbox."""
        if self.sandbox == "checks":
            return tuple(p for p in self.allowed if p not in INTERPRETERS)
        return self.allowed

    @property
    def limits(self) -> Limits:
        """What each process of a command may take."""
        return Limits(self.max_memory_mb, self.max_file_mb, self.max_processes)


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


