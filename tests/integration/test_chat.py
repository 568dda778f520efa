"""`phasegraph chat` driven through a pseudo-terminal, as a person at a terminal drives it."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

from procs import phasegraph_argv

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).parents[2] / "examples" / "cli_script.json"


class Terminal:
    """A process on a pseudo-terminal, with expect/send."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm"}
        self.proc = subprocess.Popen(
            argv, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
        )
        os.close(slave)
        self.seen = ""
        self.pos = 0  # where the next expect starts reading

    def expect(self, text: str, timeout: float = 60.0) -> str:
        """Read until ``text`` appears; returns what was read since the last expect."""
        start = self.pos
        deadline = time.monotonic() + timeout
        while text not in self.seen[start:]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} not seen; got:\n{self.seen[start:]}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the process ended
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"ended before {text!r}; got:\n{self.seen[start:]}")
                self.seen += chunk.decode(errors="replace").replace("\r\n", "\n")
        self.pos = self.seen.index(text, start) + len(text)
        return self.seen[start : self.pos]

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=30)
        finally:
            os.close(self.master)


def test_chat_runs_a_request_answers_a_review_inline_and_keeps_it_across_slash_commands(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("meeting notes\n")
    (tmp_path / "todo.txt").write_text("buy milk\n")
    argv = phasegraph_argv()
    term = Terminal([*argv, "chat", "--review", "plan", "--model", f"scripted:{SCRIPT}"], tmp_path)
    try:
        term.expect("phasegraph> ")
        term.send("List the files and write their names to files.md")
        paused = term.expect("review> ")
        assert "Paused for plan_review" in paused and "p2. Write" in paused

        term.send("/status")  # slash commands while the review waits
        assert "waiting for plan_review" in term.expect("review> ")
        term.send("/plan")
        assert "p1. Survey: Know every file name" in term.expect("review> ")
        term.send("/threads")
        assert "awaiting_review" in term.expect("review> ")
        term.send("maybe")  # not an answer a plan review takes: still pending
        assert "error: a plan_review takes action" in term.expect("review> ")

        term.send("approve")
        done = term.expect("phasegraph> ")
        assert "Files listed" in done and "[completed]" in done
        assert (tmp_path / "files.md").read_text() == "notes.txt\ntodo.txt"
        term.send("/report")
        assert "Statistics" in term.expect("phasegraph> ")
        term.send("/quit")
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()


def test_leaving_chat_with_a_review_pending_prints_the_commands_that_answer_it(
    tmp_path: Path,
) -> None:
    argv = phasegraph_argv()
    term = Terminal([*argv, "chat", "--review", "plan", "--model", f"scripted:{SCRIPT}"], tmp_path)
    try:
        term.expect("phasegraph> ")
        term.send("/nonsense")
        assert "unknown command /nonsense" in term.expect("phasegraph> ")
        term.send("List the files")
        term.expect("review> ")
        term.send("/quit")
        said = term.expect("--approve")  # the commands that answer it, as run prints them
        assert re.search(r"phasegraph resume chat-\S+ --approve", said), said
        assert term.close() == 3  # paused for a review, as run says it
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
