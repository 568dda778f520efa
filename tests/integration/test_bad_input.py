"""Bad input at the storage end: each gives one clear error (exit 2) and changes nothing.

An unreadable database file, a database in a read-only folder, and a checkpoint tampered with
under ``LANGGRAPH_STRICT_MSGPACK=true``. (Unknown and finished threads, feedback for another
review kind, an edited plan that does not validate and a corrupt file are in test_cli.py.)
File permissions mean nothing to root, so as root the commands run as the user ``nobody``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from test_cli import MODEL, cli

pytestmark = pytest.mark.integration

# Root passes every permission check through these two capabilities; without them it is bound by
# file modes like any user. setpriv is util-linux's, on every Debian machine.
NO_OVERRIDE = "-dac_override,-dac_read_search"


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Path]:
    """A workspace whose modes the test changes, restored after so it can be removed."""
    (tmp_path / "notes.txt").write_text("notes\n")
    yield tmp_path
    for sub in tmp_path.rglob("*"):
        sub.chmod(0o755 if sub.is_dir() else 0o644)


def as_user(*args: str, cwd: Path):  # type: ignore[no-untyped-def]
    """The command line bound by file modes, as root is not."""
    if os.geteuid() != 0:
        return cli(*args, cwd=cwd)
    drop = ["setpriv", f"--inh-caps={NO_OVERRIDE}", f"--bounding-set={NO_OVERRIDE}"]
    return cli(*args, cwd=cwd, prefix=drop)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def settled_db(ws: Path) -> Path:
    """A finished thread and a paused one, the WAL folded into the file."""
    assert cli("run", "go", "--thread", "done", "--model", MODEL, cwd=ws).returncode == 0
    paused = cli("run", "go", "--thread", "p", "--review", "plan", "--model", MODEL, cwd=ws)
    assert paused.returncode == 3
    db = ws / ".phasegraph" / "threads.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def one_error_line(result, expected: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and expected in lines[-1], lines
    assert not any("Traceback" in line or line.startswith("error") for line in lines[:-1])


def test_an_unreadable_database_file(shared: Path) -> None:
    db = settled_db(shared)
    before = digest(db)
    db.chmod(0)
    for command in (["threads"], ["show", "done"], ["resume", "p", "--approve"]):
        one_error_line(as_user(*command, cwd=shared), f"cannot use the database {db}")
    db.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert digest(db) == before  # the paused thread did not go on


def test_a_database_in_a_read_only_folder(shared: Path) -> None:
    db = settled_db(shared)
    for leftover in db.parent.glob("threads.sqlite-*"):
        leftover.unlink()
    before = digest(db)
    db.chmod(0o444)
    db.parent.chmod(0o555)
    resumed = as_user("resume", "p", "--approve", cwd=shared)
    one_error_line(resumed, f"cannot use the database {db}")
    started = as_user("run", "go on", "--thread", "new", "--model", MODEL, cwd=shared)
    one_error_line(started, f"cannot use the database {db}")
    assert digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["threads.sqlite"]


@dataclasses.dataclass
class Intruder:
    """A type no phasegraph state holds: what a tampered checkpoint would carry."""

    command: str


def test_a_tampered_checkpoint_is_refused_under_strict_msgpack(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("notes\n")
    strict = {"LANGGRAPH_STRICT_MSGPACK": "true"}
    paused = cli("run", "go", "--thread", "t", "--review", "plan", "--model", MODEL, cwd=tmp_path)
    assert paused.returncode == 3
    db = tmp_path / ".phasegraph" / "threads.sqlite"
    serde = JsonPlusSerializer()
    with sqlite3.connect(db) as conn:
        checkpoint_id, kind, blob = conn.execute(
            "SELECT checkpoint_id, type, checkpoint FROM checkpoints WHERE thread_id = 't' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        checkpoint = serde.loads_typed((kind, blob))
        checkpoint["channel_values"]["request"] = Intruder("touch pwned")
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
            (serde.dumps_typed(checkpoint)[1], checkpoint_id),
        )
        count = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]

    expected = "a type the strict loader (LANGGRAPH_STRICT_MSGPACK) refused"
    for command in (
        ["resume", "t", "--approve"],
        ["show", "t"],
        ["report", "t"],
    ):
        refused = cli(*command, cwd=tmp_path, env=strict)
        one_error_line(refused, expected)
        assert "test_bad_input.Intruder" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) <= 2  # the model line, then the error
    again = cli("run", "again", "--thread", "t", "--model", MODEL, cwd=tmp_path, env=strict)
    one_error_line(again, "thread 't' already exists")  # refused before its state is read
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == count
    assert not (tmp_path / "files.md").exists() and not (tmp_path / "pwned").exists()


def test_a_checkpoint_of_random_bytes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("notes\n")
    db = settled_db(tmp_path)
    (tmp_path / "files.md").unlink()  # the finished thread's; the paused one must not write it
    with sqlite3.connect(db) as conn:
        (checkpoint_id,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'p' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
            (os.urandom(300), checkpoint_id),
        )
        count = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    for command in (["resume", "p", "--approve"], ["show", "p"], ["report", "p"]):
        one_error_line(cli(*command, cwd=tmp_path), "its latest checkpoint cannot be decoded")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == count
    assert not (tmp_path / "files.md").exists()


def _damage(db: Path) -> None:
    """Break one b-tree page of the file, as a disk or a copy cut short would."""
    page = 4096
    size = db.stat().st_size
    for number in range(2, size // page):
        copy = db.read_bytes()
        data = bytearray(copy)
        data[(number - 1) * page + 3 : (number - 1) * page + 5] = b"\xff\xff"  # its cell count
        db.write_bytes(bytes(data))
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                    return
        except sqlite3.DatabaseError:
            pass
        db.write_bytes(copy)
    raise AssertionError("no page whose damage quick_check reports")


def test_a_database_that_fails_its_integrity_check_is_not_written_to(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("notes\n")
    db = settled_db(tmp_path)
    (tmp_path / "files.md").unlink()  # the finished thread's; the paused one must not write it
    _damage(db)
    before = digest(db)
    for command in (
        ["resume", "p", "--approve"],
        ["run", "again", "--thread", "n", "--model", MODEL],
        ["show", "done"],
        ["threads"],
    ):
        one_error_line(cli(*command, cwd=tmp_path), "fails SQLite's integrity check")
    assert digest(db) == before
    assert not (tmp_path / "files.md").exists()


def test_a_missing_scripted_model_file_is_bad_input(tmp_path: Path) -> None:
    missing = cli("run", "go", "--model", "scripted:missing.json", cwd=tmp_path)
    # named where it was looked for: the folder the command ran in (2088722)
    where = Path(os.path.realpath(tmp_path)) / "missing.json"
    one_error_line(missing, f"cannot read scripted model file {where}")
    assert not (tmp_path / ".phasegraph").exists()  # nothing written: no thread, no database
