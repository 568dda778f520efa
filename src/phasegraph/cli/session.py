"""What every command works with: its settings, the threads database and the compiled graph.

Also the exit codes (0 completed, 4 ended otherwise, 3 paused, 2 bad usage or input, 1
internal error), `UsageError` (bad usage or input: exit 2) and the database URL helpers
that keep a PostgreSQL password out of everything phasegraph prints.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from langchain_core.runnables import RunnableConfig
from rich.console import Console

from phasegraph.context import Context
from phasegraph.errors import redact, register_secret
from phasegraph.graph import PhaseGraph, build_graph
from phasegraph.models.selection import with_absolute_path
from phasegraph.storage import open_checkpointer
from phasegraph.storage.database import (
    Database,
    per_database,
    postgres_database,
    sqlite_database,
)
from phasegraph.storage.integrity import checked_state
from phasegraph.storage.lease import TableLeaseStore
from phasegraph.storage.thread_index import ThreadIndex, index_for
from phasegraph.tools.boundary import workspace_refusal

EXIT_DONE, EXIT_ERROR, EXIT_USAGE, EXIT_PAUSED, EXIT_SHORT = 0, 1, 2, 3, 4
DEFAULT_DB = os.path.join(".phasegraph", "threads.sqlite")


class UsageError(Exception):
    """Bad usage or input: exit code 2."""


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
            if self.db != self.workspace / DEFAULT_DB and not self.db.parent.exists():
                raise UsageError(
                    f"the folder of the database {self.db} is not there: make it, or give "
                    "--db a file in a folder that is; nothing was changed"
                )
            if holds_other_tables(self.db):
                raise UsageError(
                    f"{self.db} is a SQLite database of something else (no threads in it): "
                    "give --db a threads database, or a new file; nothing was changed"
                )
        self.thread_id = ""
        """The thread a run or resume works on, once it is known."""
        if getattr(args, "api_key", None):
            # Into this process's environment only: the key is never a setting or a state value.
            os.environ["PHASEGRAPH_API_KEY"] = args.api_key

    def location_flags(self) -> str:
        """The flags that name this session's workspace and database, for a printed command.

        A command printed with them works as printed from any folder.
        """
        flags = f" --workspace {shlex.quote(str(self.workspace))}"
        if self.url or self.db != self.workspace / DEFAULT_DB:
            flags += f" --db {shlex.quote(self.where)}"
        return flags

    def context(self, thread_model: str = "", thread_workspace: str = "") -> Context:
        """The run settings: flags first, then the thread's own model and folder, then the rest.

        A thread goes on in the folder it ran in (``thread_workspace``), wherever the command
        is run from, unless ``--workspace`` names another (a project moved, say).
        """
        workspace = str(self.workspace)
        if thread_workspace and not getattr(self.args, "workspace", None):
            if not Path(thread_workspace).is_dir():
                raise UsageError(
                    f"the thread's workspace {thread_workspace!r} is not a folder any more; "
                    "name the folder to go on in with --workspace"
                )
            workspace = thread_workspace
        if why := workspace_refusal(Path(os.path.realpath(workspace))):
            raise UsageError(why)
        settings: dict[str, Any] = {"workspace": workspace}
        model = getattr(self.args, "model", None)
        if model is not None:  # recorded with the thread: the printed commands work anywhere
            model = with_absolute_path(model)
        elif thread_model:
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
            raise UsageError(
                f"no threads database at {self.db} (use --db or --workspace){self.elsewhere()}"
            )
        with contextlib.ExitStack() as stack:
            try:
                saver = stack.enter_context(open_checkpointer(self.url or self.db))
            except OSError as exc:  # a folder that cannot be written, a file that is a folder
                reason = _not_a_place(self.db) if not self.url else None
                reason = reason or exc.strerror or str(exc)
                raise UsageError(f"cannot use the database {self.where}: {reason}") from None
            yield build_graph(checkpointer=saver)

    def db_named(self) -> bool:
        """Whether ``--db`` named a file other than the workspace's own database.

        ``PHASEGRAPH_DB`` does not count: set once in a profile, it names a file that may not
        have been made yet.
        """
        return bool(getattr(self.args, "db", None)) and self.db != self.workspace / DEFAULT_DB

    def elsewhere(self) -> str:
        """Where threads are instead, said after a database that is not there, or "".

        Runs given ``--workspace DIR`` keep their threads in DIR's own database: the folders
        just below the workspace that hold one are named, as flags that work from here.
        """
        if self.url or self.db != self.workspace / DEFAULT_DB:
            return ""
        found = nearby_databases(self.workspace)
        if not found:
            return ""
        flags = ", ".join(f"--workspace {shlex.quote(os.path.relpath(f))}" for f in found)
        return f"; folders here with threads of their own: {flags}"

    def exists(self) -> bool:
        """Whether the threads database may hold threads (a server is asked when used)."""
        return bool(self.url) or self.db.exists()

    def index(self) -> ThreadIndex:
        """The thread index of the database (made once per process)."""
        return index_for(self._database())

    def _database(self) -> Database:
        return postgres_database(self.url) if self.url else sqlite_database(str(self.db))

    def shown_status(self, thread_id: str, status: str) -> str:
        """A thread's status as shown: ``interrupted`` for a run no runner holds any more.

        A run stopped by Ctrl-C, a kill or a crash keeps the status ``running`` in its state;
        shown so, it would look alive forever. Where no live process holds its lease, it is
        shown as ``interrupted``: `resume` goes on with it.
        """
        if status != "running":
            return status
        held = per_database(self._database(), TableLeaseStore).held(thread_id)
        return "running" if held else "interrupted"

    def values(self, graph: PhaseGraph, thread_id: str) -> dict[str, Any]:
        """A thread's state values, its status as shown; `UsageError` for an unknown thread."""
        values = dict(checked_state(graph, thread_config(thread_id)).values)
        if not values:
            raise UsageError(
                f"unknown thread {thread_id!r} in {self.where}; `phasegraph threads` lists them"
            )
        values["status"] = self.shown_status(thread_id, str(values.get("status") or "running"))
        return values


def holds_other_tables(db: Path) -> bool:
    """Whether ``db`` is a SQLite file with tables, none of them LangGraph's or phasegraph's.

    Opened read-only: setting such a file up for threads would add tables to it and switch
    its journal, in a database that is someone else's. A file that is not SQLite is left to
    the command, which says so.
    """
    if not db.is_file():
        return False
    try:
        # immutable: read without locks or a WAL index, so the file and its folder stay as
        # they are, and a writer holding the file cannot make the look wait
        where = f"{db.as_uri()}?mode=ro&immutable=1"
        with contextlib.closing(sqlite3.connect(where, uri=True)) as conn:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error:
        return False
    ours = {"checkpoints"} | {t for t in tables if t.startswith("phasegraph_")}
    return bool(tables) and not tables & ours


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


#: How many entries of a folder `nearby_databases` looks at, and how many it names.
NEARBY_ENTRIES, NEARBY_NAMED = 500, 3


def nearby_databases(folder: Path) -> list[Path]:
    """The folders just below ``folder`` that hold a threads database, by name, at most 3.

    Reads at most `NEARBY_ENTRIES` entries, skipping hidden ones, so a large folder costs
    little; a folder that cannot be read has none.
    """
    found: list[Path] = []
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= NEARBY_ENTRIES:
                    break
                if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
                    if os.path.isfile(os.path.join(entry.path, DEFAULT_DB)):
                        found.append(Path(entry.path))
    except OSError:
        return []
    return sorted(found)[:NEARBY_NAMED]


@contextmanager
def database_errors(where: str, url: str) -> Iterator[None]:
    """A database that cannot be used, as one clear line: missing extra, server, bad file."""
    try:
        yield
    except ImportError as exc:
        if not url:
            raise
        raise UsageError(
            'a postgresql:// database needs the postgres extra: pip install -e ".[postgres]" '
            "in your clone of phasegraph"
        ) from exc
    except sqlite3.DatabaseError as exc:  # not a database, unreadable, read-only, locked
        reason = _not_a_place(Path(where)) if not url else None
        raise UsageError(f"cannot use the database {where}: {reason or exc}") from exc
    except Exception as exc:
        if not (url and _connection_failed(exc)):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        for password in url_passwords(url):  # short ones too, which redact() leaves alone
            first = first.replace(password, "***")
        raise UsageError(f"cannot use the database {where}: {redact(first)}") from exc


def _not_a_place(db: Path) -> str | None:
    """Why a SQLite file cannot be at ``db``, where a folder or a file is in its way."""
    if db.is_dir():
        return f"{db} is a folder: name a file in it (--db {db / 'threads.sqlite'})"
    for parent in db.parents:
        if parent.exists() and not parent.is_dir():
            return f"{parent} is a file, not a folder"
    return None


def _connection_failed(exc: Exception) -> bool:
    """Whether a PostgreSQL error is about the URL, the server or the login, not a run."""
    from psycopg import OperationalError, ProgrammingError

    return isinstance(exc, OperationalError | ProgrammingError)


def thread_config(thread_id: str) -> RunnableConfig:
    """The run config that names a thread."""
    return {"configurable": {"thread_id": thread_id}}
