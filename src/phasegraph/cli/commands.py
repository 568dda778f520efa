"""The commands ``run``, ``resume``, ``threads``, ``show`` and ``report``, and what chat shares.

Each takes the `Session` and the console for results (stdout) and returns the exit code.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from phasegraph.cli.render import (
    ANSWER_FLAGS,
    print_markdown,
    program,
    progress_printer,
    resume_command,
    review_prompt,
    show_text,
)
from phasegraph.cli.session import (
    EXIT_DONE,
    EXIT_ERROR,
    EXIT_PAUSED,
    EXIT_SHORT,
    Session,
    UsageError,
    thread_config,
)
from phasegraph.cli.tree import run_tree
from phasegraph.context import Context
from phasegraph.errors import CheckError, redact
from phasegraph.graph import PhaseGraph
from phasegraph.models import describe_model, embedded_choice, model_from_context
from phasegraph.report import build_report, render, statistics
from phasegraph.report.history import run_history
from phasegraph.review import can_resume, resume
from phasegraph.shown import visible
from phasegraph.state.reading import shown_status
from phasegraph.storage.thread_index import ThreadRow
from phasegraph.tools.checks import validate_checks


def unverified_note(values: Mapping[str, Any]) -> str:
    """For a completed run that a check does not vouch for in full, how to have code vouch."""
    evidence = values.get("evidence") or {}
    if values.get("status") != "completed" or not evidence or evidence.get("verified"):
        return ""
    unchecked = [f["path"] for f in evidence.get("files") or [] if f["vouched_by"] != "checks"]
    what = ", ".join(unchecked) if unchecked else "the outcome"
    return (
        f"note: completed on the judge's word for {what} (in full or in part); give --check "
        "that pins each file whole (equals:PATH:TEXT or copy:PATH:SOURCE) for code to verify it"
    )


def _finish(session: Session, thread_id: str, values: Mapping[str, Any], out: Console) -> int:
    """Print a run's outcome; the exit code says how it ended (0 only when completed)."""
    pending = values.get("pending_review")
    if session.args.json:
        result = {
            "thread_id": thread_id,
            "status": values.get("status"),
            "pending_review": pending,
            "final_summary": values.get("final_summary"),
            "shortfalls": values.get("shortfalls") or [],
            "checks": checks_of(values),
            "evidence": values.get("evidence"),
            "statistics": statistics(values),
        }
        print(json.dumps(result, indent=2, default=str))
    elif pending:
        out.print(review_prompt(thread_id, pending, session.location_flags()), markup=False)
    else:
        print_markdown(out, values.get("final_summary") or "(no summary)")
        if note := unverified_note(values):
            print(visible(note), file=sys.stderr)
    if pending:
        return EXIT_PAUSED
    if not values.get("final_summary"):
        return EXIT_ERROR
    return EXIT_DONE if values.get("status") == "completed" else EXIT_SHORT


def cmd_run(session: Session, out: Console) -> int:
    """`phasegraph run`: a new request on a new (or named, unused) thread."""
    args = session.args
    if not args.request.strip():
        raise UsageError("the request is empty")
    thread_id = args.thread or new_thread_id("t")
    session.thread_id = thread_id
    if thread_id.startswith("-") or not thread_id.strip():
        # the commands printed for it would read it as an option
        raise UsageError(f"a thread id must not be blank or start with '-': {thread_id!r}")
    context = session.context()
    try:  # a check that cannot be used is bad input: refused before the model or a thread
        validate_checks(args.check, context)
    except CheckError as exc:
        raise UsageError(str(exc)) from None
    announce_model(session, context)
    with session.graph() as graph:
        existing = graph.get_state(thread_config(thread_id)).values
        if existing:
            raise UsageError(_taken(graph, thread_id, existing, session.location_flags()))
        session.err.print(f"thread {thread_id}", markup=False, highlight=False)
        values = run_request(session, graph, thread_id, args.request, context, args.check)
    return _finish(session, thread_id, values, out)


def _taken(graph: PhaseGraph, thread_id: str, values: Mapping[str, Any], where: str) -> str:
    """Why a new run cannot start on a thread that exists, and the command that goes on with it.

    A paused thread is answered (its first answer shown, as `review_prompt` lists them all);
    one stopped by an error or a crash is resumed as it is; one that ended is done with.
    """
    status = shown_status(values)
    if not can_resume(graph, thread_config(thread_id)):
        return (
            f"thread {thread_id!r} already exists and has ended (status {status}); start the "
            "request on another --thread"
        )
    pending = values.get("pending_review") or {}
    answer = ""
    if pending:
        flags = ANSWER_FLAGS.get(str(pending.get("kind")), ["--approve"])
        answer = f" {flags[0]}"
        status += f", a {pending.get('kind')}: `{program()} show {shlex.quote(thread_id)}` asks it"
    command = resume_command(thread_id, f"{answer}{where}")
    return f"thread {thread_id!r} already exists ({status}); use `{command}` or another --thread"


def new_thread_id(prefix: str) -> str:
    """A new thread id: the prefix, the time and a random suffix."""
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def run_request(
    session: Session,
    graph: PhaseGraph,
    thread_id: str,
    request: str,
    context: Context,
    checks: list[str] | None = None,
) -> dict[str, Any]:
    """Run a request on a new thread, progress on stderr; returns the state it stopped in."""
    start: dict[str, Any] = {"request": request}
    if checks:
        start["checks"] = list(checks)
    config = thread_config(thread_id)
    with progress_printer(session.err) as show:
        for event in graph.stream(start, config, context=context, stream_mode="custom"):
            show(event)
    return session.values(graph, thread_id)


def announce_model(session: Session, context: Context) -> None:
    """Say which model runs, and fail before the run if it cannot be built."""
    model_from_context(context)  # a ConfigurationError here is bad input: exit 2, no thread
    session.err.print(f"model: {describe_model(context)}", markup=False, highlight=False)
    chosen = embedded_choice(context)
    if chosen is not None:
        from phasegraph.models.embedded import model_path

        model_path(chosen, lambda text: session.err.print(text, markup=False, highlight=False))


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
        return {"action": "edit", **edit_file(args.edit)}
    return None


def edit_file(path: str) -> dict[str, Any]:
    """The phases (and checks) a JSON file holds; `UsageError` if it holds no phases.

    The file is a list of phases, or ``{"phases": [...]}`` with an optional ``"checks": [...]``.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None
    phases = data.get("phases") if isinstance(data, dict) else data
    if not isinstance(phases, list):
        raise UsageError(f'{path} must hold a list of phases or {{"phases": [...]}}')
    edit: dict[str, Any] = {"phases": phases}
    if isinstance(data, dict) and "checks" in data:
        edit["checks"] = data["checks"]
    return edit


def checks_of(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A run's checks as results show them: label, result, what code saw, owner, source."""
    return [
        {k: c.get(k) for k in ("id", "label", "passed", "detail", "phase_id", "source")}
        for c in values.get("checks") or []
        if isinstance(c, Mapping)
    ]


def cmd_resume(session: Session, out: Console) -> int:
    """`phasegraph resume`: answer the pending review, or continue after an error or a crash."""
    thread_id = session.args.thread
    session.thread_id = thread_id
    feedback = feedback_from_args(session.args)
    with session.graph(create=False) as graph:
        values = session.values(graph, thread_id)
        row = session.index().get(thread_id)
        context = session.context(
            thread_model=row.model if row else "",
            thread_workspace=str(values.get("workspace") or ""),
        )
        announce_model(session, context)
        with progress_printer(session.err) as show:
            values = resume(
                graph, thread_config(thread_id), feedback, context=context, on_progress=show
            )
    return _finish(session, thread_id, values, out)


def thread_rows(session: Session, status: str | None, limit: int | None) -> list[ThreadRow]:
    """Threads of the database, indexing (once) any written without the index.

    None where the database is not there yet; a file ``--db`` names that is not there is a
    `UsageError` (`Session.db_named`: a mistyped path would list nothing).
    """
    if not session.exists():
        if session.db_named():
            raise UsageError(f"no threads database at {session.db}")
        return []
    index = session.index()
    missing = index.unindexed()
    if missing:
        with session.graph(create=False) as graph:
            for thread_id in missing:
                values = graph.get_state(thread_config(thread_id)).values
                if values:
                    index.record(thread_id, values)
    # a stored "running" is shown as "interrupted" where no process holds it: filter as shown
    stored = "running" if status == "interrupted" else status
    rows = index.rows(status=stored, limit=None if stored == "running" else limit)
    shown = [
        dataclasses.replace(row, status=session.shown_status(row.thread_id, row.status))
        for row in rows
    ]
    shown = [row for row in shown if status is None or row.status == status]
    return shown[:limit] if limit else shown


def cmd_threads(session: Session, out: Console) -> int:
    """`phasegraph threads`: id, status, request, steps and last update of each thread."""
    rows = thread_rows(session, session.args.status, session.args.limit or None)
    if session.args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return EXIT_DONE
    if not rows:
        out.print("no threads" + session.elsewhere(), markup=False)
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


def cmd_show(session: Session, out: Console) -> int:
    """`phasegraph show`: everything about one thread; a tree on a terminal (or with --tree)."""
    thread_id = session.args.thread
    as_tree = not session.args.json and (session.args.tree or out.is_terminal)
    with session.graph(create=False) as graph:
        values = session.values(graph, thread_id)
        history = run_history(graph, thread_config(thread_id)) if as_tree else None
    if session.args.json:
        print(redact(json.dumps(values, indent=2, default=str)))
    elif history is not None:
        report = build_report(thread_id, values, history)
        # the tree's guides only hold when rich wraps its long lines itself
        tree = run_tree(report, values.get("request", ""))
        out.print(tree, highlight=False, soft_wrap=False)
        if values.get("final_summary"):
            print_markdown(out, redact("## Summary\n\n" + values["final_summary"]))
    else:
        print_markdown(out, show_text(thread_id, values))
    if (pending := values.get("pending_review")) and not session.args.json:
        out.print(review_prompt(thread_id, pending, session.location_flags()), markup=False)
    return EXIT_DONE


def cmd_report(session: Session, out: Console) -> int:
    """`phasegraph report`: the run report as Markdown, HTML or JSON."""
    thread_id = session.args.thread
    with session.graph(create=False) as graph:
        values = session.values(graph, thread_id)
        history = run_history(graph, thread_config(thread_id))
    text = render(thread_id, values, session.args.format, history)
    if session.args.output:
        try:
            Path(session.args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {session.args.output}: {exc.strerror or exc}") from None
        session.err.print(f"wrote {session.args.output}", markup=False, highlight=False)
    else:
        sys.stdout.write(text)
    return EXIT_DONE
