"""Starting a command's programs, bounded, and collecting what they print (SPEC section 5).

Each program of a pipeline is its own process, in a session of its own whose process group is
killed whole when the command ends (a background child does not outlive it) or is stopped (its
timeout, an output flood, its task given up on). Under the operating-system sandbox each runs
in a sandbox of its own (`sandbox.sandbox_argv`), connected to the next by a pipe; its limits
are set inside its namespaces by util-linux's ``prlimit`` (`Limits`), which then runs the
program.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from phasegraph.tools.base import TRUNCATION_MARKER
from phasegraph.tools.stopping import stopped_here

# A flood is stopped once this many times the kept output has been read.
FLOOD_FACTOR = 16
#: Seconds between looks at a running command's output size and deadline.
FLOOD_POLL_S = 0.05
_READ_CHUNK = 65536


@dataclass(frozen=True)
class Limits:
    """What each process of a command may take: data memory, file size, processes (0: none).

    ``processes`` counts the command's processes in its own user namespace, so it is set only
    inside the sandbox, and only where the kernel applies it: not to root, whom the kernel
    exempts (`sandbox` docs say what bounds a command run as root).
    """

    memory_mb: int = 1024
    file_mb: int = 256
    processes: int = 256

    def options(self, *, inside_sandbox: bool) -> list[str]:
        """``prlimit`` options for these limits, a lower hard limit of this process kept."""
        wanted = [(resource.RLIMIT_DATA, "data", self.memory_mb << 20)]
        wanted.append((resource.RLIMIT_FSIZE, "fsize", self.file_mb << 20))
        if inside_sandbox and os.geteuid() != 0:
            wanted.append((resource.RLIMIT_NPROC, "nproc", self.processes))
        options = []
        for kind, name, value in wanted:
            if value <= 0:
                continue
            _soft, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:  # a lower cap the machine set stays
                value = min(value, hard)
            options.append(f"--{name}={value}:{value}")
        return options


@functools.cache
def prlimit_binary() -> str | None:
    """util-linux's ``prlimit``, which sets limits and runs a program, if the machine has it."""
    return shutil.which("prlimit")


def limited(
    args: list[str], env: Mapping[str, str], limits: Limits
) -> tuple[list[str], Callable[[], None] | None]:
    """A command outside any sandbox, run under its limits: its argv, and what runs before exec.

    ``prlimit`` runs it where the machine has it: Python then starts it without copying this
    process (a copy of one that holds a model costs milliseconds a command); elsewhere the
    limits are set between fork and exec.
    """
    options = limits.options(inside_sandbox=False)
    if not options:
        return args, None
    wrapper = prlimit_binary()
    if wrapper is None:
        values = [(o.split("=")[0][2:], int(o.split("=")[1].split(":")[0])) for o in options]
        kinds = {"data": resource.RLIMIT_DATA, "fsize": resource.RLIMIT_FSIZE}

        def cap() -> None:  # in the child between fork and exec: system calls, nothing to lock
            for name, value in values:
                resource.setrlimit(kinds[name], (value, value))

        return args, cap
    program = args[0] if "/" in args[0] else shutil.which(args[0], path=env.get("PATH"))
    if program is None:
        raise FileNotFoundError(f"{args[0]!r} is not installed on this machine")
    return [wrapper, *options, "--", program, *args[1:]], None


@dataclass
class Started:
    """A command's running processes and where its output comes from."""

    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    output: int = -1
    """The read end of the pipe its output (and error output) goes to."""


def start(
    stages: Sequence[list[str]],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdin: int | None,
    stdout: int | None,
    stderr: Sequence[int | str | None],
    pass_fds: Sequence[int] = (),
    before_exec: Callable[[], None] | None = None,
) -> Started:
    """Start the stages as one pipeline, each program in a new session of its own.

    A session of its own: no controlling terminal to read or write, and a process group that
    `stop` kills whole.

    ``stdin``/``stdout``: descriptors for the first stage's input and the last one's output
    (None: nothing, and the collected output). ``stderr``: per stage, a descriptor, ``"&1"``
    (its own output) or None (the collected output).
    """
    started = Started()
    read, write = os.pipe()
    started.output = read
    previous = stdin
    try:
        for index, argv in enumerate(stages):
            last = index == len(stages) - 1
            if last:
                out, next_read = (stdout if stdout is not None else write), None
            else:
                next_read, out = os.pipe()
            err = stderr[index]
            error_to = write if err is None else out if isinstance(err, str) else err
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=previous if previous is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=error_to,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
                preexec_fn=before_exec,
            )
            started.processes.append(process)
            if previous is not None and previous != stdin:
                os.close(previous)
            if not last:
                os.close(out)
            previous = next_read
    except BaseException:
        stop(started)
        raise
    finally:
        os.close(write)
    return started


def stop(started: Started) -> None:
    """Kill each program's session (its process group) and wait for its processes."""
    for process in started.processes:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for process in started.processes:
        process.wait()


def collect(
    started: Started, timeout_s: float, max_chars: int
) -> tuple[list[int], str, str, bool]:
    """Wait for the command: exit codes, capped output, why it was stopped, whether all is kept.

    Each stage's exit code; the reason is "" when the command ended by itself; the output is
    whole unless the cap cut it. The processes are gone on return.
    """
    buffer = CappedBuffer(max_chars)
    reader = threading.Thread(target=buffer.drain, args=(started.output,), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout_s
    stopped = ""
    last = started.processes[-1]
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            stopped = f"[stopped: no exit within {timeout_s:g} s]"
            break
        if stopped_here():
            stopped = "[stopped: its task was given up on (timed out, or its run stopped)]"
            break
        if buffer.flooded:
            stopped = f"[stopped: more than {buffer.flood_limit} bytes of output]"
            break
        try:  # Popen.wait polls from half a millisecond up: a quick command returns at once
            last.wait(timeout=min(left, FLOOD_POLL_S))
            if all(p.poll() is not None for p in started.processes):
                break
        except subprocess.TimeoutExpired:
            continue
    stop(started)  # also after a normal exit: a background child must not outlive the call
    reader.join(timeout=5)
    os.close(started.output)
    whole = buffer.total <= len(buffer.head)
    return [p.returncode for p in started.processes], buffer.text(), stopped, whole


class CappedBuffer:
    """Keeps the first ``limit`` bytes of output and counts the rest."""

    def __init__(self, limit: int) -> None:
        """A buffer keeping ``limit`` bytes; a flood is `FLOOD_FACTOR` times that."""
        self.limit = limit
        self.flood_limit = limit * FLOOD_FACTOR
        self.head = bytearray()
        self.total = 0

    @property
    def flooded(self) -> bool:
        """Whether more than the flood limit has been read."""
        return self.total > self.flood_limit

    def drain(self, fd: int) -> None:
        """Read ``fd`` to its end, keeping the head."""
        while chunk := os.read(fd, _READ_CHUNK):
            self.total += len(chunk)
            room = self.limit - len(self.head)
            if room > 0:
                self.head += chunk[:room]

    def text(self) -> str:
        """The kept output, with a marker saying how much was cut."""
        text = self.head.decode("utf-8", errors="replace")
        if self.total > len(self.head):
            cut = self.total - len(self.head)
            text += TRUNCATION_MARKER.format(cut=cut, total=self.total).replace(
                "characters", "bytes"
            )
        return text
