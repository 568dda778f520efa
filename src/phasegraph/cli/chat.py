"""``phasegraph chat``: requests and review answers typed in one session."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from phasegraph.cli.commands import (
    announce_model,
    edit_file,
    new_thread_id,
    run_request,
    thread_rows,
)
from phasegraph.cli.render import (
    pending_lines,
    phase_line,
    print_markdown,
    progress_printer,
    review_prompt,
)
from phasegraph.cli.session import EXIT_DONE, EXIT_PAUSED, Session, UsageError, thread_config
from phasegraph.errors import PhasegraphError
from phasegraph.graph import PhaseGraph
from phasegraph.report import render, statistics
from phasegraph.review import resume

CHAT_HELP = """Type a request to run it. While a review is pending, answer it:
  approve | reject REASON | modify TEXT | edit FILE | answer TEXT | allow | deny
  (for a clarification, any other text is the answer)
Slash commands: /status  /plan  /threads  /report  /help  /quit"""


def parse_chat_answer(line: str, kind: str) -> dict[str, Any]:
    """A typed answer to a pending review, as feedback."""
    word, _, rest = line.strip().partition(" ")
    word, rest = word.lower(), rest.strip()
    if kind == "clarification":  # any text but the two actions is the answer, "yes" too
        if word == "reject":
            return {"action": "reject", "reason": rest}
        return {"action": "answer", "answer": rest if word == "answer" else line.strip()}
    if word in ("approve", "a", "y", "yes", "ok"):
        return {"action": "allow" if kind == "tool_permission" else "approve"}
    if word in ("allow", "deny"):
        return {"action": word}
    if word == "reject":
        return {"action": "reject", "reason": rest}
    if word == "modify":
        return {"action": "modify", "feedback": rest}
    if word == "edit":
        return {"action": "edit", **edit_file(rest)}
    if word == "answer":
        return {"action": "answer", "answer": rest}
    return {"action": word}  # refused by resume() with the actions this review takes


def cmd_chat(session: Session, out: Console) -> int:
    """`phasegraph chat`: requests and review answers typed in one session."""
    out.print(CHAT_HELP, markup=False)
    with session.graph() as graph:
        context = session.context()
        announce_model(session, context)
        thread_id: str | None = None
        while True:
            pending = _pending(graph, thread_id)
            try:
                line = input("review> " if pending else "phasegraph> ")
            except EOFError:
                _stays_paused(session, pending, thread_id, out)
                break
            if not line.strip():
                continue
            if line.startswith("/"):
                if _chat_command(line.strip(), session, graph, thread_id, out) == "quit":
                    break
                continue
            try:
                if pending is not None and thread_id is not None:
                    with progress_printer(session.err) as show:
                        values = resume(
                            graph,
                            thread_config(thread_id),
                            parse_chat_answer(line, pending.get("kind", "")),
                            context=context,
                            on_progress=show,
                        )
                else:
                    thread_id = new_thread_id("chat")
                    values = run_request(session, graph, thread_id, line, context)
            except (PhasegraphError, UsageError, ValueError) as exc:
                out.print(f"error: {exc}", markup=False, highlight=False)
                continue
            _chat_outcome(thread_id, values, out)
        # left with a review unanswered: the exit code says so, as run's does
        return EXIT_PAUSED if _pending(graph, thread_id) else EXIT_DONE


def _pending(graph: PhaseGraph, thread_id: str | None) -> dict[str, Any] | None:
    if thread_id is None:
        return None
    pending = graph.get_state(thread_config(thread_id)).values.get("pending_review")
    return dict(pending) if pending else None


def _chat_outcome(thread_id: str, values: Mapping[str, Any], out: Console) -> None:
    pending = values.get("pending_review")
    if pending:
        out.print(f"Paused for {pending.get('kind')} (thread {thread_id}):", markup=False)
        for line in pending_lines(pending):
            out.print(line, markup=False)
        return
    print_markdown(out, values.get("final_summary") or "(no summary)")
    out.print(f"[{values.get('status')}] thread {thread_id}", markup=False, highlight=False)


def _stays_paused(
    session: Session, pending: Mapping[str, Any] | None, thread_id: str | None, out: Console
) -> None:
    """On leaving with a review pending: the thread waits, and the commands that answer it."""
    if pending and thread_id:
        out.print(review_prompt(thread_id, pending, session.location_flags()), markup=False)


def _chat_command(
    line: str, session: Session, graph: PhaseGraph, thread_id: str | None, out: Console
) -> str:
    command = line.split()[0].lower()
    values = graph.get_state(thread_config(thread_id)).values if thread_id else {}
    if command in ("/quit", "/exit", "/q"):
        _stays_paused(session, values.get("pending_review"), thread_id, out)
        return "quit"
    if command == "/help":
        out.print(CHAT_HELP, markup=False)
    elif command == "/threads":
        rows = thread_rows(session, None, 20) or []
        for row in rows:
            out.print(f"{row.thread_id}  {row.status}  {row.request[:50]}", markup=False)
        if not rows:
            out.print("no threads yet", markup=False)
    elif command not in ("/status", "/plan", "/report"):
        out.print(f"unknown command {command}; /help lists them", markup=False)
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
            out.print(phase_line(phase), markup=False)
        if not phases:
            out.print("no plan yet", markup=False)
    else:
        print_markdown(out, render(thread_id or "", values, "md"))
    return "ok"
