"""`run_command`: an allowlisted program, no shell, in the workspace (SPEC section 5).

What keeps a command in bounds:

- argv is a list run without a shell, so no quoting, globbing, pipes or ``;`` exist;
- the program is named, not given by path, and must be in ``Context.allowed_commands``;
  programs that exist to run other programs (shells, ``env``, ``xargs``...) are refused unless
  the user listed them, and arguments that make an allowed program run or write something
  else (``find -exec``, ``sort -o``...) are refused;
- arguments that are paths must stay in the workspace (same checks as the file tools);
- the process gets its own process group, killed whole on timeout or when it has exited, so a
  background child cannot outlive the call;
- the environment keeps only a few harmless variables, never keys, tokens or secrets;
- output is read into a capped buffer, and a command that floods it is stopped.

This is a guard against a model's mistakes, not an operating-system sandbox: a user who adds an
interpreter such as ``python`` to the allowlist hands the model that interpreter.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

from phasegraph.tools.base import TRUNCATION_MARKER
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

# Options that make an allowed program run a command or write a file of its choosing.
DANGEROUS_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf", "-fls"),
    "sort": ("-o", "--output", "--compress-program"),
    "grep": ("--devices",),
    "diff": ("--to-file", "--from-file"),
}

# Programs that open no file: their arguments are operands ("expr 6 / 2"), never paths.
NO_FILE_ARGUMENTS = frozenset({"expr"})

ENV_KEPT = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "USER", "LOGNAME", "HOME")
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASS|CRED|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE", re.IGNORECASE
)
# A flood is stopped once this many times the kept output has been read.
FLOOD_FACTOR = 16
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


def check_argv(argv: object, allowed: Sequence[str], workspace: Workspace) -> list[str]:
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
    if program not in allowed:
        why = " (it runs other commands)" if program in COMMAND_RUNNERS else ""
        raise WorkspaceError(
            f"{program!r} is not an allowed command{why}; allowed: {', '.join(allowed) or 'none'}"
        )
    for arg in argv[1:]:
        option = arg.split("=", 1)[0]
        if option in DANGEROUS_OPTIONS.get(program, ()) or (
            program == "sort" and arg.startswith("-o")
        ):
            raise WorkspaceError(f"{program} {option} is not allowed (it runs or writes elsewhere)")
        for candidate in () if program in NO_FILE_ARGUMENTS else _path_like(arg):
            workspace.relative(candidate)  # raises for a path that leaves the workspace
    return list(argv)


def _path_like(arg: str) -> list[str]:
    """The parts of an argument that name a path outside the workspace if anything does."""
    values = [arg, arg.split("=", 1)[1]] if "=" in arg else [arg]
    return [
        v
        for v in values
        if v.startswith(("/", "~"))
        or v == ".."
        or v.startswith("../")
        or "/../" in v
        or v.endswith("/..")
    ]


def run_command(
    argv: list[str],
    *,
    workspace: Workspace,
    allowed: Sequence[str],
    timeout_s: float,
    max_chars: int,
) -> str:
    """Run ``argv`` in the workspace; its exit code and (capped) output, or a WorkspaceError."""
    args = check_argv(argv, allowed, workspace)
    try:
        process = subprocess.Popen(
            args,
            cwd=workspace.real_root,
            env=scrubbed_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise WorkspaceError(f"{args[0]!r} is not installed on this machine") from None
    buffer = _CappedBuffer(max_chars)
    reader = threading.Thread(target=buffer.drain, args=(process,), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout_s
    stopped = ""
    while process.poll() is None:
        if time.monotonic() >= deadline:
            stopped = f"[stopped: no exit within {timeout_s:g} s]"
            break
        if buffer.flooded:
            stopped = f"[stopped: more than {buffer.flood_limit} bytes of output]"
            break
        time.sleep(0.02)
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
