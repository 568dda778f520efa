"""The ``phasegraph`` command line: run, resume, threads, show, report and chat.

Threads live in a SQLite file, by default ``.phasegraph/threads.sqlite`` under the workspace.
Progress goes to stderr, results to stdout. Exit codes: 0 the run ended (its summary is
written), 3 it paused for a review, 2 bad usage or input (an unknown thread, an answer that
does not fit), 1 an internal error. Every error is one line; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sqlite3
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from langchain_core.runnables import RunnableConfig
from rich.console import Console
from rich.markdown import Markdown

from phasegraph.context import REVIEW_LEVELS, Context
from phasegraph.errors import PhasegraphError, redact, register_secret
from phasegraph.graph import PhaseGraph, build_graph
from phasegraph.models import describe_model, model_from_context, model_kind
from phasegraph.report import render, statistics
from phasegraph.review import resume
from phasegraph.storage.database import open_checkpointer, postgres_database, sqlite_database
from phasegraph.storage.integrity import checked_state
from phasegraph.storage.thread_index import ThreadIndex, ThreadRow, index_for

EXIT_DONE, EXIT_ERROR, EXIT_USAGE, EXIT_PAUSED = 0, 1, 2, 3
DEFAULT_DB = os.path.join(".phasegraph", "threads.sqlite")


class UsageError(Exception):
    """Bad usage or input: exit code 2."""


# ---------------------------------------------------------------------------------------------
# Arguments


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model",
        default=None,
        help="model name of an OpenAI-compatible endpoint, local:PATH.gguf, or "
        "scripted:FILE.json (default: PHASEGRAPH_MODEL, else the embedded local model)",
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="phasegraph",
        description="Plan-and-execute workflows: phases, rounds of plan -> execute -> judge, "
        "review pauses, and a written summary.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run a request")
    run.add_argument("request", help="what to do")
    run.add_argument("--thread", default=None, help="thread id (default: a new one)")
    run.add_argument("--review", choices=REVIEW_LEVELS, default=None, help="when to ask a person")
    run.add_argument("--max-steps", type=int, default=None, help="step budget")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_model_options(run)
    _add_store_options(run)

    res = commands.add_parser("resume", help="continue a paused, failed or crashed thread")
    res.add_argument("thread", help="thread id")
    answer = res.add_mutually_exclusive_group()
    answer.add_argument("--approve", action="store_true", help="approve the plan")
    answer.add_argument("--reject", metavar="REASON", help="reject, with a reason")
    answer.add_argument("--modify", metavar="TEXT", help="ask for a new plan along these lines")
    answer.add_argument("--edit", metavar="FILE", help="replace the phases with a JSON file")
    answer.add_argument("--answer", metavar="TEXT", help="answer a clarification")
    answer.add_argument("--allow", action="store_true", help="allow the requested tool")
    answer.add_argument("--deny", action="store_true", help="deny the requested tool")
    res.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_model_options(res)
    _add_store_options(res)

    threads = commands.add_parser("threads", help="list threads")
    threads.add_argument("--status", default=None, help="only threads with this status")
    threads.add_argument("--limit", type=int, default=50, help="at most this many (0: all)")
    threads.add_argument("--json", action="store_true", help="print JSON")
    _add_store_options(threads)

    show = commands.add_parser("show", help="show a thread in detail")
    show.add_argument("thread", help="thread id")
    show.add_argument("--json", action="store_true", help="print the state as JSON")
    _add_store_options(show)

    report = commands.add_parser("report", help="write a thread's run report")
    report.add_argument("thread", help="thread id")
    report.add_argument("--format", choices=("md", "html", "json"), default="md")
    report.add_argument("-o", "--output", default=None, help="file to write (default: stdout)")
    _add_store_options(report)

    chat = commands.add_parser("chat", help="an interactive session")
    chat.add_argument("--review", choices=REVIEW_LEVELS, default="plan", help="when to ask you")
    chat.add_argument("--max-steps", type=int, default=None, help="step budget of each request")
    _add_model_options(chat)
    _add_store_options(chat)
    return parser


# ---------------------------------------------------------------------------------------------
# Session: settings, database, graph


class Session:
    """What one command works with: settings, the threads database and the compiled graph."""

    def __init__(self, args: argparse.Namespace, err: Console) -> None:
        """Resolve the workspace, the database and the settings from the arguments."""
        self.args = args
        self.err = err
        workspace = args.workspace or os.environ.get("PHASEGRAPH_WORKSPACE") or "."
        self.workspace = Path(workspace).expanduser().resolve()
        if not self.workspace.is_dir():
            raise UsageError(f"workspace {str(self.workspace)!r} is not a folder")
        db = args.db or os.environ.get("PHASEGRAPH_DB") or str(self.workspace / DEFAULT_DB)
        self.url = ""
        """A PostgreSQL URL, or "" when the threads live in a SQLite file."""
        self.db = Path()
        """The SQLite file (when there is no URL)."""
        if "://" in db:
            self.url = postgres_url(db)
            self.where = _without_password(self.url)
        else:
            self.db = Path(db).expanduser().resolve()
            self.where = str(self.db)
        if getattr(args, "api_key", None):
            # Into this process's environment only: the key is never a setting or a state value.
            os.environ["PHASEGRAPH_API_KEY"] = args.api_key

    def context(self, thread_model: str = "") -> Context:
        """The run settings: flags first, then the thread's own model, then the environment."""
        settings: dict[str, Any] = {"workspace": str(self.workspace)}
        model = getattr(self.args, "model", None)
        if model is None and thread_model:
            model = thread_model
        if model is not None:
            settings["model"] = model
        if getattr(self.args, "base_url", None) is not None:
            settings["base_url"] = self.args.base_url
        for name in ("review", "max_steps"):
            value = getattr(self.args, name, None)
            if value is not None:
                settings[name] = value
        try:
            return Context(**settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    @contextmanager
    def graph(self, *, create: bool = True) -> Iterator[PhaseGraph]:
        """The compiled graph over the threads database."""
        if not self.url and not self.db.exists() and not create:
            raise UsageError(f"no threads database at {self.db} (use --db or --workspace)")
        with open_checkpointer(self.url or self.db) as saver:
            yield build_graph(checkpointer=saver)

    def exists(self) -> bool:
        """Whether the threads database may hold threads (a server is asked when used)."""
        return bool(self.url) or self.db.exists()

    def index(self) -> ThreadIndex:
        """The thread index of the database (made once per process)."""
        return index_for(postgres_database(self.url) if self.url else sqlite_database(str(self.db)))

    def values(self, graph: PhaseGraph, thread_id: str) -> dict[str, Any]:
        """A thread's state values; `UsageError` for an unknown thread."""
        values = dict(checked_state(graph, _config(thread_id)).values)
        if not values:
            raise UsageError(f"unknown thread {thread_id!r} in {self.where}")
        return values


def postgres_url(db: str) -> str:
    """A ``postgresql://`` database URL, its password masked in everything phasegraph prints."""
    parts = urlsplit(db)
    if parts.scheme not in ("postgres", "postgresql"):
        raise UsageError(
            f"--db {parts.scheme}://... is not a database phasegraph knows: "
            "give a SQLite file path or a postgresql:// URL"
        )
    for password in url_passwords(db):
        register_secret(password)
    return db


def url_passwords(url: str) -> list[str]:
    """The passwords a database URL carries (user part or ``password=``), raw and decoded."""
    parts = urlsplit(url)
    found = [parts.password or ""]
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k == "password"]
    return sorted({p for raw in found if raw for p in (raw, unquote(raw))}, key=len, reverse=True)


def _without_password(url: str) -> str:
    """The URL to print: its password left out (libpq reads PGPASSWORD instead)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        host = netloc.rsplit("@", 1)[1]
        netloc = f"{parts.username}@{host}" if parts.username else host
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "password"])
    return urlunsplit(parts._replace(netloc=netloc, query=query))


@contextmanager
def database_errors(where: str, url: str) -> Iterator[None]:
    """A database that cannot be used, as one clear line: missing extra, server, bad file."""
    try:
        yield
    except ImportError as exc:
        if not url:
            raise
        raise UsageError(
            'a postgresql:// database needs the postgres extra: pip install "phasegraph[postgres]"'
        ) from exc
    except sqlite3.DatabaseError as exc:  # not a database, unreadable, read-only, locked
        raise UsageError(f"cannot use the database {where}: {exc}") from exc
    except Exception as exc:
        if not (url and _connection_failed(exc)):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        for password in url_passwords(url):  # short ones too, which redact() leaves alone
            first = first.replace(password, "***")
        raise UsageError(f"cannot use the database {where}: {redact(first)}") from exc


def _connection_failed(exc: Exception) -> bool:
    """Whether a PostgreSQL error is about the URL, the server or the login, not a run."""
    from psycopg import OperationalError, ProgrammingError

    return isinstance(exc, OperationalError | ProgrammingError)


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


# ---------------------------------------------------------------------------------------------
# Progress and results


def describe_event(event: Mapping[str, Any]) -> str:
    """One progress event as a short line for a person."""
    name = event.get("event", "")
    match name:
        case "analysed":
            return f"analysed: {event.get('goal')} ({event.get('task_type')})"
        case "phases_planned":
            names = ", ".join(f"{p['id']} {p['name']}" for p in event.get("phases", []))
            return f"phases: {names}"
        case "phase_started":
            return f"phase {event.get('index')}/{event.get('total')}: {event.get('name')}"
        case "round_planned":
            return f"  round {event.get('round')}: {event.get('tasks')} task(s) planned"
        case "task_started":
            return f"    {event.get('task_id')} {event.get('tool')} ..."
        case "task_finished":
            return f"    {event.get('task_id')} {event.get('status')}"
        case "judged":
            rate = event.get("completion_rate")
            done = f"{rate:.0%}" if isinstance(rate, int | float) else "?"
            return f"  judged: {done} done, next {event.get('next_action')}"
        case "phase_ended":
            return f"phase {event.get('phase_id')} ended: {event.get('ended_by')}"
        case "reflection_triggered":
            return f"  reflection ({event.get('trigger')}): {event.get('reason')}"
        case "replanned":
            return f"replanned: {event.get('status')}"
        case "awaiting_review":
            return f"waiting for a person: {event.get('kind')}"
        case "review_answered":
            return f"review answered: {event.get('action')}"
        case "stage_failed":
            return f"{event.get('node')} failed: {event.get('reason')}"
        case "summary_ready":
            return f"summary ready ({event.get('status')})"
    details = " ".join(f"{k}={v}" for k, v in event.items() if k != "event")
    return f"{name} {details}".strip()


def _progress_printer(err: Console) -> Callable[[dict[str, Any]], None]:
    def show(event: dict[str, Any]) -> None:
        err.print(redact(describe_event(event)), markup=False, highlight=False)

    return show


def _phase_line(phase: Mapping[str, Any]) -> str:
    return f"  {phase['id']}. {phase['name']}: {phase.get('goal', '')}"


def pending_lines(pending: Mapping[str, Any]) -> list[str]:
    """What a pending review asks, one line per phase, question or tool."""
    lines = []
    if pending.get("error"):
        lines.append(f"The last answer did not fit: {pending['error']}")
    lines += [_phase_line(phase) for phase in pending.get("phases") or []]
    if pending.get("reason"):
        lines.append(f"Why: {pending['reason']}")
    lines += [f"  ? {q}" for q in pending.get("questions") or []]
    if pending.get("tool"):
        lines.append(f"  tool {pending['tool']}: {pending.get('justification', '')}")
    return lines


ANSWER_FLAGS = {
    "plan_review": ["--approve", '--reject "REASON"', '--modify "TEXT"', "--edit PHASES.json"],
    "replan_review": ["--approve", '--reject "REASON"', '--modify "TEXT"', "--edit PHASES.json"],
    "clarification": ['--answer "TEXT"', '--reject "REASON"'],
    "tool_permission": ["--allow", "--deny"],
}


def review_prompt(thread_id: str, pending: Mapping[str, Any], db: str, default_db: str) -> str:
    """What a paused run asks, and the exact commands that answer it."""
    kind = pending.get("kind", "review")
    lines = [f"Paused for {kind} (thread {thread_id}).", *pending_lines(pending)]
    answers = ANSWER_FLAGS.get(kind, ["--approve", '--reject "REASON"'])
    where = "" if db == default_db else f" --db {shlex.quote(db)}"
    lines.append("Answer with one of:")
    lines += [f"  phasegraph resume {shlex.quote(thread_id)} {a}{where}" for a in answers]
    return "\n".join(lines)


def _finish(session: Session, thread_id: str, values: Mapping[str, Any], out: Console) -> int:
    """Print a run's outcome; the exit code says whether it ended or paused."""
    pending = values.get("pending_review")
    if session.args.json:
        result = {
            "thread_id": thread_id,
            "status": values.get("status"),
            "pending_review": pending,
            "final_summary": values.get("final_summary"),
            "statistics": statistics(values),
        }
        print(json.dumps(result, indent=2, default=str))
    elif pending:
        default_db = str(session.workspace / DEFAULT_DB)
        out.print(review_prompt(thread_id, pending, session.where, default_db), markup=False)
    else:
        _print_markdown(out, values.get("final_summary") or "(no summary)")
    if pending:
        return EXIT_PAUSED
    return EXIT_DONE if values.get("final_summary") else EXIT_ERROR


def _print_markdown(out: Console, text: str) -> None:
    if out.is_terminal:
        out.print(Markdown(text))
    else:  # piped: the Markdown itself, for the next program
        print(text)


# ---------------------------------------------------------------------------------------------
# Commands


def cmd_run(session: Session, out: Console) -> int:
    """`phasegraph run`: a new request on a new (or named, unused) thread."""
    args = session.args
    if not args.request.strip():
        raise UsageError("the request is empty")
    thread_id = args.thread or _new_thread_id("t")
    context = session.context()
    _announce_model(session, context)
    with session.graph() as graph:
        existing = graph.get_state(_config(thread_id)).values
        if existing:
            raise UsageError(
                f"thread {thread_id!r} already exists (status {existing.get('status')}); "
                f"use `phasegraph resume {thread_id}` or another --thread"
            )
        session.err.print(f"thread {thread_id}", markup=False, highlight=False)
        values = _start(session, graph, thread_id, args.request, context)
    return _finish(session, thread_id, values, out)


def _new_thread_id(prefix: str) -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def _start(
    session: Session, graph: PhaseGraph, thread_id: str, request: str, context: Context
) -> dict[str, Any]:
    """Run a request on a new thread, progress on stderr; returns the state it stopped in."""
    show = _progress_printer(session.err)
    for event in graph.stream(
        {"request": request}, _config(thread_id), context=context, stream_mode="custom"
    ):
        show(event)
    return session.values(graph, thread_id)


def _announce_model(session: Session, context: Context) -> None:
    """Say which model runs, and fail before the run if it cannot be built."""
    model_from_context(context)  # a ConfigurationError here is bad input: exit 2, no thread
    session.err.print(f"model: {describe_model(context)}", markup=False, highlight=False)
    if model_kind(context) == "local" and not context.model.strip():
        from phasegraph.models.local import default_model_path

        default_model_path(
            on_progress=lambda text: session.err.print(text, markup=False, highlight=False)
        )


def feedback_from_args(args: argparse.Namespace) -> dict[str, Any] | None:
    """The review answer the resume flags give, or None to just continue."""
    if args.approve:
        return {"action": "approve"}
    if args.reject is not None:
        return {"action": "reject", "reason": args.reject}
    if args.modify is not None:
        return {"action": "modify", "feedback": args.modify}
    if args.answer is not None:
        return {"action": "answer", "answer": args.answer}
    if args.allow:
        return {"action": "allow"}
    if args.deny:
        return {"action": "deny"}
    if args.edit is not None:
        return {"action": "edit", "phases": _phases_file(args.edit)}
    return None


def _phases_file(path: str) -> list[Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None
    phases = data.get("phases") if isinstance(data, dict) else data
    if not isinstance(phases, list):
        raise UsageError(f'{path} must hold a list of phases or {{"phases": [...]}}')
    return phases


def cmd_resume(session: Session, out: Console) -> int:
    """`phasegraph resume`: answer the pending review, or continue after an error or a crash."""
    thread_id = session.args.thread
    feedback = feedback_from_args(session.args)
    with session.graph(create=False) as graph:
        session.values(graph, thread_id)
        row = session.index().get(thread_id)
        context = session.context(thread_model=row.model if row else "")
        _announce_model(session, context)
        values = resume(
            graph,
            _config(thread_id),
            feedback,
            context=context,
            on_progress=_progress_printer(session.err),
        )
    return _finish(session, thread_id, values, out)


def thread_rows(session: Session, status: str | None, limit: int | None) -> list[ThreadRow]:
    """Threads of the database, indexing (once) any written without the index."""
    if not session.exists():
        return []
    index = session.index()
    missing = index.unindexed()
    if missing:
        with session.graph(create=False) as graph:
            for thread_id in missing:
                values = graph.get_state(_config(thread_id)).values
                if values:
                    index.record(thread_id, values)
    return index.rows(status=status, limit=limit)


def cmd_threads(session: Session, out: Console) -> int:
    """`phasegraph threads`: id, status, request, steps and last update of each thread."""
    rows = thread_rows(session, session.args.status, session.args.limit or None)
    if session.args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return EXIT_DONE
    if not rows:
        out.print("no threads", markup=False)
        return EXIT_DONE
    width = max(len(r.thread_id) for r in rows)
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.updated_at))
        request = " ".join(r.request.split())[:60]
        out.print(
            f"{r.thread_id:<{width}}  {r.status:<16} {r.steps:>4} steps  {when}  {request}",
            markup=False,
            highlight=False,
        )
    return EXIT_DONE


def show_text(thread_id: str, values: Mapping[str, Any]) -> str:
    """A thread in detail, as Markdown."""
    lines = [f"# Thread {thread_id}", f"**Status:** {values.get('status')}"]
    lines.append(f"**Request:** {values.get('request')}")
    structured = values.get("structured_request")
    if structured:
        lines += ["## Structured request", f"- goal: {structured.get('core_goal')}"]
        for key in ("requirements", "constraints"):
            if structured.get(key):
                lines.append(f"- {key}: " + "; ".join(structured[key]))
        lines.append(f"- type: {structured.get('task_type')}, {structured.get('complexity')}")
    phases = values.get("phases") or []
    if phases:
        lines.append("## Phases")
        current = values.get("phase_index", 0)
        for i, phase in enumerate(phases):
            mark = "done" if i < current else ("current" if i == current else "to do")
            lines.append(f"{i + 1}. **{phase['name']}** ({phase['id']}, {mark}): {phase['goal']}")
    for rnd in values.get("rounds") or []:
        judgement = rnd.get("judgement") or {}
        lines.append(f"## {rnd['phase_id']} round {rnd['round']}")
        for result in rnd.get("results", []):
            output = " ".join(str(result.get("output", "")).split())[:160]
            args = json.dumps(result.get("arguments", {}), ensure_ascii=False)[:120]
            lines.append(f"- `{result['tool']}` {args}: **{result['status']}** {output}")
        if judgement:
            lines.append(
                f"- judge: {judgement.get('phase_completion_rate', 0):.0%} done, next "
                f"{judgement.get('next_action')}: {judgement.get('user_summary', '')}"
            )
    for title, key, fmt in (
        ("Reflections", "reflections", "{trigger} ({phase_id} round {round}): {reason}"),
        ("Tool violations", "tool_violations", "{tool} in {phase_id}/{task_id}: {reason}"),
    ):
        items = values.get(key) or []
        if items:
            lines.append(f"## {title}")
            lines += ["- " + fmt.format_map(_Missing(item)) for item in items]
    pending = values.get("pending_review")
    if pending:
        lines += ["## Pending review", "```", json.dumps(pending, indent=2, default=str), "```"]
    if values.get("final_summary"):
        lines += ["## Summary", values["final_summary"]]
    # list items stay together; headings and paragraphs are separated by a blank line
    text, last = "", ""
    for line in lines:
        if text:
            text += "\n" if _list_item(line) and _list_item(last) else "\n\n"
        text, last = text + line, line
    return redact(text)


def _list_item(line: str) -> bool:
    return line.startswith("- ") or line[:1].isdigit()


class _Missing(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def cmd_show(session: Session, out: Console) -> int:
    """`phasegraph show`: everything about one thread."""
    with session.graph(create=False) as graph:
        values = session.values(graph, session.args.thread)
    if session.args.json:
        print(redact(json.dumps(values, indent=2, default=str)))
    else:
        _print_markdown(out, show_text(session.args.thread, values))
    return EXIT_DONE


def cmd_report(session: Session, out: Console) -> int:
    """`phasegraph report`: the run report as Markdown, HTML or JSON."""
    with session.graph(create=False) as graph:
        values = session.values(graph, session.args.thread)
    text = render(session.args.thread, values, session.args.format)
    if session.args.output:
        Path(session.args.output).write_text(text, encoding="utf-8")
        session.err.print(f"wrote {session.args.output}", markup=False, highlight=False)
    else:
        sys.stdout.write(text)
    return EXIT_DONE


# ---------------------------------------------------------------------------------------------
# chat


CHAT_HELP = """Type a request to run it. While a review is pending, answer it:
  approve | reject REASON | modify TEXT | edit FILE | answer TEXT | allow | deny
  (for a clarification, any other text is the answer)
Slash commands: /status  /plan  /threads  /report  /help  /quit"""


def parse_chat_answer(line: str, kind: str) -> dict[str, Any]:
    """A typed answer to a pending review, as feedback."""
    word, _, rest = line.strip().partition(" ")
    word, rest = word.lower(), rest.strip()
    if word in ("approve", "a", "y", "yes", "ok"):
        return {"action": "approve"}
    if word in ("allow", "deny"):
        return {"action": word}
    if word == "reject":
        return {"action": "reject", "reason": rest}
    if word == "modify":
        return {"action": "modify", "feedback": rest}
    if word == "edit":
        return {"action": "edit", "phases": _phases_file(rest)}
    if word == "answer":
        return {"action": "answer", "answer": rest}
    if kind == "clarification":
        return {"action": "answer", "answer": line.strip()}
    return {"action": word}  # refused by resume() with the actions this review takes


def cmd_chat(session: Session, out: Console) -> int:
    """`phasegraph chat`: requests and review answers typed in one session."""
    out.print(CHAT_HELP, markup=False)
    with session.graph() as graph:
        context = session.context()
        _announce_model(session, context)
        thread_id: str | None = None
        show = _progress_printer(session.err)
        while True:
            pending = _pending(graph, thread_id)
            try:
                line = input("review> " if pending else "phasegraph> ")
            except EOFError:
                break
            if not line.strip():
                continue
            if line.startswith("/"):
                if _chat_command(line.strip(), session, graph, thread_id, out) == "quit":
                    break
                continue
            try:
                if pending is not None and thread_id is not None:
                    values = resume(
                        graph,
                        _config(thread_id),
                        parse_chat_answer(line, pending.get("kind", "")),
                        context=context,
                        on_progress=show,
                    )
                else:
                    thread_id = _new_thread_id("chat")
                    values = _start(session, graph, thread_id, line, context)
            except (PhasegraphError, UsageError, ValueError) as exc:
                out.print(f"error: {exc}", markup=False, highlight=False)
                continue
            _chat_outcome(thread_id, values, out)
    return EXIT_DONE


def _pending(graph: PhaseGraph, thread_id: str | None) -> dict[str, Any] | None:
    if thread_id is None:
        return None
    pending = graph.get_state(_config(thread_id)).values.get("pending_review")
    return dict(pending) if pending else None


def _chat_outcome(thread_id: str, values: Mapping[str, Any], out: Console) -> None:
    pending = values.get("pending_review")
    if pending:
        out.print(f"Paused for {pending.get('kind')} (thread {thread_id}):", markup=False)
        for line in pending_lines(pending):
            out.print(line, markup=False)
        return
    _print_markdown(out, values.get("final_summary") or "(no summary)")
    out.print(f"[{values.get('status')}] thread {thread_id}", markup=False, highlight=False)


def _chat_command(
    line: str, session: Session, graph: PhaseGraph, thread_id: str | None, out: Console
) -> str:
    command = line.split()[0].lower()
    values = graph.get_state(_config(thread_id)).values if thread_id else {}
    if command in ("/quit", "/exit", "/q"):
        if values.get("pending_review") and thread_id:
            out.print(
                f"thread {thread_id} stays paused: phasegraph resume {thread_id}", markup=False
            )
        return "quit"
    if command == "/help":
        out.print(CHAT_HELP, markup=False)
    elif command == "/threads":
        for row in thread_rows(session, None, 20):
            out.print(f"{row.thread_id}  {row.status}  {row.request[:50]}", markup=False)
    elif not values:
        out.print("no request yet in this session", markup=False)
    elif command == "/status":
        stats = statistics(values)
        pending = (values.get("pending_review") or {}).get("kind")
        out.print(
            f"thread {thread_id}: {values.get('status')}"
            + (f", waiting for {pending}" if pending else "")
            + f"; steps {stats['steps']}, rounds {stats['rounds']}, tasks {stats['tasks']}",
            markup=False,
            highlight=False,
        )
    elif command == "/plan":
        phases = values.get("phases") or (values.get("pending_review") or {}).get("phases") or []
        for phase in phases:
            out.print(_phase_line(phase), markup=False)
        if not phases:
            out.print("no plan yet", markup=False)
    elif command == "/report":
        _print_markdown(out, render(thread_id or "", values, "md"))
    else:
        out.print(f"unknown command {command}; /help lists them", markup=False)
    return "ok"


# ---------------------------------------------------------------------------------------------
# Entry point

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
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = Console(highlight=False, soft_wrap=True)
    try:
        session = Session(args, err)
        with database_errors(session.where, session.url):
            return COMMANDS[args.command](session, out)
    except (UsageError, PhasegraphError) as exc:
        _fail(err, exc, args.debug)
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.print("interrupted; the thread can be resumed", markup=False)
        return 130
    except Exception as exc:  # one line for the user; the traceback with --debug
        _fail(err, exc, args.debug, internal=True)
        return EXIT_ERROR


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


if __name__ == "__main__":
    sys.exit(main())
