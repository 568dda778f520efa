"""The `phasegraph` command line, run as a user runs it: a subprocess per command.

Every command and exit code: 0 completed, 4 ended otherwise, 3 paused, 2 bad usage or input, 1
internal error. A run pauses in one process and is resumed from another; a wrong answer changes
nothing; checks decide what completed means.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
from pathlib import Path

import pytest

import pgserver
from procs import PRINTED, cli_env, phasegraph_argv

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).parents[2] / "examples" / "cli_script.json"
MODEL = f"scripted:{SCRIPT}"


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = phasegraph_argv()
    return subprocess.run(
        [*(prefix or []), *argv, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(env),
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("meeting notes\n")
    (tmp_path / "todo.txt").write_text("buy milk\n")
    return tmp_path


def checkpoints(ws: Path, thread: str) -> int:
    with sqlite3.connect(ws / ".phasegraph" / "threads.sqlite") as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread,)
        ).fetchone()
    return int(count)


def test_a_run_pauses_and_a_second_process_resumes_it(ws: Path) -> None:
    paused = cli(
        "run", "List the files", "--thread", "t1", "--review", "plan", "--model", MODEL, cwd=ws
    )
    assert paused.returncode == 3, paused.stderr
    assert "Paused for plan_review (thread t1)" in paused.stdout
    assert "p1. Survey: Know every file name" in paused.stdout
    assert "phasegraph resume t1 --approve" in paused.stdout  # the exact command
    assert "model: the scripted model" in paused.stderr
    assert "phases: p1 Survey, p2 Write" in paused.stderr  # live progress on stderr
    assert (ws / ".phasegraph" / "threads.sqlite").is_file()  # the default database

    listed = cli("threads", "--status", "awaiting_review", cwd=ws)
    assert listed.returncode == 0 and "t1" in listed.stdout and "List the files" in listed.stdout

    done = cli("resume", "t1", "--approve", cwd=ws)  # the model comes from the thread's record
    assert done.returncode == 0, done.stderr
    assert "## Files listed" in done.stdout  # Markdown on stdout when piped
    assert "phase 2/2: Write" in done.stderr and "t2 write_file" in done.stderr
    assert (ws / "files.md").read_text() == "notes.txt\ntodo.txt"

    rows = json.loads(cli("threads", "--json", cwd=ws).stdout)
    assert [(r["thread_id"], r["status"], r["steps"]) for r in rows] == [("t1", "completed", 8)]
    assert cli("threads", "--status", "awaiting_review", cwd=ws).stdout.strip() == "no threads"

    shown = cli("show", "t1", cwd=ws)
    assert shown.returncode == 0
    for part in ("# Thread t1", "(p1, completed)", "## p2 round 1", "`write_file`", "## Summary"):
        assert part in shown.stdout
    state = json.loads(cli("show", "t1", "--json", cwd=ws).stdout)
    assert state["status"] == "completed" and state["pending_review"] is None


def test_the_readme_demo_writes_what_its_folder_holds(tmp_path: Path) -> None:
    # the README's folder holds notes.txt alone: the scripted demo's files.md must say so, and
    # a check pinning it whole then vouches for the run's completed
    (tmp_path / "notes.txt").write_text("meeting notes\n")
    done = cli("run", "List the files and write them to files.md", "--model", MODEL,
               "--check", "equals:files.md:notes.txt", "--json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "files.md").read_text() == "notes.txt"
    assert json.loads(done.stdout)["evidence"]["verified"] is True


def test_threads_of_a_workspace_folder_are_pointed_to_and_db_makes_no_folder(
    tmp_path: Path,
) -> None:
    # the README's run with --workspace demo keeps its threads in demo/: threads and show,
    # run where the README's commands were, say where they are
    demo = tmp_path / "demo"
    demo.mkdir()
    (demo / "notes.txt").write_text("meeting notes\n")
    ran = cli("run", "List the files", "--thread", "d", "--workspace", "demo", "--model", MODEL,
              cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    listed = cli("threads", cwd=tmp_path)
    assert listed.returncode == 0
    assert listed.stdout.strip() == "no threads; folders here with threads of their own: " \
        "--workspace demo"  # fmt: skip
    shown = cli("show", "d", cwd=tmp_path)
    assert shown.returncode == 2 and "folders here with threads of their own: --workspace demo" \
        in shown.stderr  # fmt: skip
    assert cli("show", "d", "--workspace", "demo", cwd=tmp_path).returncode == 0
    # a --db in a folder that is not there is a mistyped path: refused, and no folder made
    missing = tmp_path / "no" / "such" / "runs.sqlite"
    for command in (("threads",), ("run", "go", "--model", MODEL)):
        refused = cli(*command, "--db", str(missing), cwd=tmp_path)
        assert refused.returncode == 2, refused.stderr
        assert "the folder of the database" in refused.stderr
    assert not (tmp_path / "no").exists()


def test_reports_in_three_formats(ws: Path) -> None:
    assert cli("run", "List the files", "--thread", "r", "--model", MODEL, cwd=ws).returncode == 0
    md = cli("report", "r", "--format", "md", cwd=ws).stdout
    assert "## Summary" in md and "## Statistics" in md and "| 2/2 | 2 | 3/3 | 8 | 7 |" in md
    data = json.loads(cli("report", "r", "--format", "json", cwd=ws).stdout)
    assert data["statistics"]["tasks_ok"] == 3 and data["highlights"] == [
        "files listed",
        "files.md written from the listing",
    ]
    out = ws / "report.html"
    wrote = cli("report", "r", "--format", "html", "-o", str(out), cwd=ws)
    assert wrote.returncode == 0 and f"wrote {out}" in wrote.stderr
    page = out.read_text()
    assert page.startswith("<!doctype html>") and "<script" not in page and "http" not in page
    assert "<h2>Statistics</h2>" in page and "<table>" in page
    # the timeline, and the chart the thread's checkpoints make possible
    assert "<h2>Timeline</h2>" in page and "<h2>Model use by stage</h2>" in page
    tree = cli("show", "r", "--tree", cwd=ws)
    assert tree.returncode == 0, tree.stderr
    assert tree.stdout.startswith("Thread r  completed  8/40 steps")
    assert "├── ✓ p1 Survey  completed" in tree.stdout and "checks:" not in tree.stdout


def test_a_wrong_answer_changes_nothing(ws: Path) -> None:
    assert (
        cli("run", "go", "--thread", "w", "--review", "plan", "--model", MODEL, cwd=ws).returncode
        == 3
    )
    before = checkpoints(ws, "w")
    state_before = cli("show", "w", "--json", cwd=ws).stdout

    wrong = cli("resume", "w", "--answer", "yes", cwd=ws)  # a plan review takes no answer
    assert wrong.returncode == 2
    assert wrong.stderr.strip().splitlines()[-1].startswith("error: a plan_review takes action")
    assert "Traceback" not in wrong.stderr

    bad_edit = ws / "phases.json"
    bad_edit.write_text(json.dumps([{"id": "p1", "name": "x", "estimated_rounds": 9}]))
    edited = cli("resume", "w", "--edit", str(bad_edit), cwd=ws)
    assert edited.returncode == 2 and "edit does not fit the pending plan_review" in edited.stderr

    not_json = ws / "broken.json"
    not_json.write_text("{")
    assert cli("resume", "w", "--edit", str(not_json), cwd=ws).returncode == 2

    blank = cli("resume", "w", "--reject", "   ", cwd=ws)  # says nothing, as "" does
    assert blank.returncode == 2 and "reject.reason" in blank.stderr
    assert cli("resume", "w", "--modify", " \t", cwd=ws).returncode == 2

    assert checkpoints(ws, "w") == before
    assert cli("show", "w", "--json", cwd=ws).stdout == state_before
    # shown later, the paused thread says how to answer it
    assert "phasegraph resume w --approve" in cli("show", "w", cwd=ws).stdout
    # a new run named onto it is refused with a command that answers it, as printed
    taken = cli("run", "other", "--thread", "w", "--model", MODEL, cwd=ws)
    assert taken.returncode == 2 and "a plan_review" in taken.stderr
    command = taken.stderr.split("use `")[1].split("`")[0]
    assert command.startswith(f"{PRINTED} resume w --approve")
    # and the thread still takes the right answer, by the command as printed
    assert subprocess.run(shlex.split(command), cwd=ws, env=cli_env()).returncode == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("resume", "nope", "--approve"), "error: unknown thread 'nope'"),
        (("show", "nope"), "error: unknown thread 'nope'"),
        (("report", "nope"), "error: unknown thread 'nope'"),
        (("run", "   "), "error: the request is empty"),
        (("run", "go", "--thread=-x"), "error: a thread id must not be blank or start with '-'"),
        (("run", "go", "--max-steps", "0"), "max_steps"),
        (("run", "go", "--workspace", "/nonexistent/dir"), "is not a folder"),
        (("run", "go", "--model", "gpt-x"), "needs an API key"),
        (("frobnicate",), "invalid choice"),
        (("resume", "x", "--approve", "--deny"), "not allowed with argument"),
        (("threads", "--status", "done"), "argument --status: invalid choice: 'done'"),
        (("run", "go", "--model", MODEL, "--db", "notes.txt/x.sqlite"), "is a file, not a folder"),
        (("run", "go", "--model", MODEL, "--db", "."), "is a folder: name a file in it"),
    ],
)
def test_bad_usage_and_input_exit_2_with_one_line(
    ws: Path, args: tuple[str, ...], message: str
) -> None:
    (ws / ".phasegraph").mkdir()
    sqlite3.connect(ws / ".phasegraph" / "threads.sqlite").close()
    env = {"OPENAI_API_KEY": "", "PHASEGRAPH_API_KEY": "", "OPENAI_BASE_URL": ""}
    done = cli(*args, cwd=ws, env=env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_finished_thread_cannot_be_run_again_or_resumed(ws: Path) -> None:
    assert cli("run", "go", "--thread", "f", "--model", MODEL, cwd=ws).returncode == 0
    again = cli("run", "again", "--thread", "f", "--model", MODEL, cwd=ws)
    assert again.returncode == 2 and "thread 'f' already exists and has ended" in again.stderr
    assert "phasegraph resume" not in again.stderr  # it would say "has ended" in turn
    resumed = cli("resume", "f", "--approve", cwd=ws)
    assert resumed.returncode == 2 and "has ended" in resumed.stderr


def test_run_json_and_a_database_that_is_not_one(ws: Path) -> None:
    done = cli("run", "go", "--thread", "j", "--model", MODEL, "--json", cwd=ws)
    assert done.returncode == 0
    result = json.loads(done.stdout)
    assert result["status"] == "completed" and result["statistics"]["steps"] == 8

    corrupt = ws / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not a database" * 100)
    before = corrupt.read_bytes()
    for command in (["threads"], ["show", "j"], ["run", "go", "--model", MODEL]):
        broken = cli(*command, "--db", str(corrupt), cwd=ws)
        assert broken.returncode == 2
        lines = broken.stderr.strip().splitlines()
        assert lines[-1] == f"error: cannot use the database {corrupt}: file is not a database"
        assert not any("Traceback" in line or "error" in line for line in lines[:-1])
    assert corrupt.read_bytes() == before  # left as it was
    debug = cli("threads", "--db", str(corrupt), "--debug", cwd=ws)
    assert debug.returncode == 2 and "Traceback" in debug.stderr

    # a database named but not there is a mistyped path, not a database without threads
    missing = ws / "typo.sqlite"
    listed = cli("threads", "--db", str(missing), cwd=ws)
    assert listed.returncode == 2 and f"no threads database at {missing}" in listed.stderr
    assert not missing.exists()
    fresh = ws / "fresh"
    fresh.mkdir()
    assert cli("threads", cwd=fresh).stdout.strip() == "no threads"  # the workspace's own: none yet
    profile = {"PHASEGRAPH_DB": str(fresh / "later.sqlite")}  # set once, made by the first run
    assert cli("threads", cwd=fresh, env=profile).stdout.strip() == "no threads"


def test_an_internal_error_is_one_line_and_a_traceback_with_debug(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from phasegraph import cli as cli_module

    def broken(session: object, out: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setitem(cli_module.COMMANDS, "threads", broken)
    assert cli_module.main(["threads", "--workspace", str(ws)]) == 1
    assert capsys.readouterr().err.strip() == "internal error (RuntimeError): a bug"
    assert cli_module.main(["threads", "--workspace", str(ws), "--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_the_api_key_flag_never_reaches_the_database(ws: Path) -> None:
    key = "sk-cli-flag-secret-0123456789"
    done = cli("run", "go", "--thread", "k", "--model", MODEL, "--api-key", key, cwd=ws)
    assert done.returncode == 0
    assert key.encode() not in (ws / ".phasegraph" / "threads.sqlite").read_bytes()
    assert key not in done.stdout + done.stderr


def test_threads_written_without_the_index_are_listed(ws: Path) -> None:
    assert cli("run", "go", "--thread", "old", "--model", MODEL, cwd=ws).returncode == 0
    with sqlite3.connect(ws / ".phasegraph" / "threads.sqlite") as conn:
        conn.execute("DELETE FROM phasegraph_threads")  # as a database from other code has it
    rows = json.loads(cli("threads", "--json", cwd=ws).stdout)
    assert [(r["thread_id"], r["status"], r["steps"]) for r in rows] == [("old", "completed", 8)]


def test_threads_in_postgresql_with_the_password_never_shown(ws: Path, postgres_url: str) -> None:
    password = pgserver.PASSWORD
    shown_url = postgres_url.replace(f":{password}@", "@")
    paused = cli(
        "run", "List the files", "--thread", "pg1", "--review", "plan", "--model", MODEL,
        "--db", postgres_url, cwd=ws,
    )  # fmt: skip
    assert paused.returncode == 3, paused.stderr
    # the printed command names the database without its password (libpq reads PGPASSWORD)
    assert f"phasegraph resume pg1 --approve --workspace {ws} --db {shown_url}" in paused.stdout
    assert not (ws / ".phasegraph").exists()  # nothing went to the default SQLite file

    done = cli(
        "resume", "pg1", "--approve", "--db", shown_url, cwd=ws, env={"PGPASSWORD": password}
    )
    assert done.returncode == 0, done.stderr
    assert (ws / "files.md").read_text() == "notes.txt\ntodo.txt"
    rows = json.loads(cli("threads", "--json", "--db", postgres_url, cwd=ws).stdout)
    assert [(r["thread_id"], r["status"], r["steps"]) for r in rows] == [("pg1", "completed", 8)]
    shown = cli("show", "pg1", "--db", postgres_url, cwd=ws)
    assert shown.returncode == 0 and "Survey" in shown.stdout
    wrong = cli("resume", "nope", "--approve", "--db", postgres_url, cwd=ws)
    assert wrong.returncode == 2 and f"unknown thread 'nope' in {shown_url}" in wrong.stderr
    for result in (paused, done, shown, wrong):
        assert password not in result.stdout + result.stderr

    refused = postgres_url.replace(password, "wrong-password")
    bad = cli("threads", "--db", refused, cwd=ws)
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"error: cannot use the database {shown_url}:")
    assert "password authentication failed" in bad.stderr
    assert "wrong-password" not in bad.stderr
    # a password given as a query parameter is left out of what is printed too
    in_query = f"{shown_url}?password={password}"
    missing = cli("resume", "nope", "--approve", "--db", in_query, cwd=ws)
    hint = "; `phasegraph threads` lists them\n"
    assert missing.returncode == 2
    assert f"unknown thread 'nope' in {shown_url}{hint}" in missing.stderr
    # a URL libpq cannot read is one line too, and its short password is masked
    malformed = cli("threads", "--db", "postgresql://u:pw%zz@127.0.0.1:1/db", cwd=ws)
    assert malformed.returncode == 2 and "pw%zz" not in malformed.stderr
    assert malformed.stderr.startswith("error: cannot use the database postgresql://u@127.0.0.1")
    unknown = cli("threads", "--db", "mysql://localhost/x", cwd=ws)
    assert unknown.returncode == 2 and "give a SQLite file path or a postgresql:// URL" in (
        unknown.stderr
    )


def test_checks_decide_the_exit_code(ws: Path) -> None:
    # 0 only when every phase completed and every check passed
    done = cli("run", "go", "--thread", "ok", "--model", MODEL, "--check", "exists:files.md",
               "--check", "contains:files.md:notes.txt", "--json", cwd=ws)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed" and result["shortfalls"] == []
    assert [(c["label"], c["passed"]) for c in result["checks"]] == [
        ("exists:files.md", True),
        ("contains:files.md:notes.txt", True),
    ]
    # a name found in the file: whether one is missing rests on the judge's word
    (files_md,) = result["evidence"]["files"]
    assert files_md["vouched_by"] == "partial" and result["evidence"]["verified"] is False
    (ws / "files.md").unlink()  # a check that held before the work would vouch for nothing
    every = cli("run", "go", "--thread", "every", "--model", MODEL, "--check",
                r"matches:files.md:^\S+\.txt$", "--json", cwd=ws)  # fmt: skip
    (files_md,) = json.loads(every.stdout)["evidence"]["files"]
    assert every.returncode == 0 and files_md["vouched_by"] == "partial", every.stderr
    # the whole text pinned: code vouches for it
    (ws / "files.md").unlink()
    whole = cli("run", "go", "--thread", "whole", "--model", MODEL, "--check",
                "equals:files.md:notes.txt\ntodo.txt", "--json", cwd=ws)  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    (files_md,) = json.loads(whole.stdout)["evidence"]["files"]
    assert files_md["vouched_by"] == "checks"
    assert json.loads(whole.stdout)["evidence"]["verified"] is True
    # without a check that reads it, completed says on whose word it rests, and how to verify
    (ws / "files.md").unlink()  # else the demo's unread overwrite of it is held
    plain = cli("run", "go", "--thread", "plain", "--model", MODEL, cwd=ws)
    assert plain.returncode == 0 and "files.md rests on the judge's word alone" in plain.stdout
    note = "note: completed on the judge's word for files.md (in full or in part)"
    assert note in plain.stderr and "give --check that pins each file whole" in plain.stderr
    # 4: the run ended, but a check fails; the summary says which, and what code saw
    # (no replan: the script's replanner would repeat the same plan until the step budget)
    no_replan = {"PHASEGRAPH_MAX_REPLANS": "0"}
    short = cli("run", "go", "--thread", "short", "--model", MODEL, "--check",
                "contains:files.md:plan.md", cwd=ws, env=no_replan)  # fmt: skip
    assert short.returncode == 4, short.stderr
    assert "Status: incomplete" in short.stdout
    assert "check contains:files.md:plan.md fails: files.md" in short.stdout
    rows = json.loads(cli("threads", "--json", cwd=ws).stdout)
    statuses = {r["thread_id"]: r["status"] for r in rows}
    assert statuses == {
        "ok": "completed",
        "every": "completed",
        "whole": "completed",
        "plain": "completed",
        "short": "incomplete",
    }
    shown = cli("show", "short", cwd=ws)
    assert shown.returncode == 0 and "## Checks" in shown.stdout
    assert "contains:files.md:plan.md: FAILS" in shown.stdout


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ("size:files.md", "unknown check 'size:files.md'"),
        ("exists:../outside.txt", "resolves outside the workspace"),
        ("cmd:rm files.md", "'rm' is not an allowed command"),
        ("contains:files.md", "needs a path and a text"),
    ],
)
def test_a_bad_check_is_refused_before_anything_runs(ws: Path, check: str, message: str) -> None:
    refused = cli("run", "go", "--thread", "bad", "--model", MODEL, "--check", check, cwd=ws)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip().splitlines()[-1].startswith("error: ")
    assert message in refused.stderr and "Traceback" not in refused.stderr
    assert not (ws / "files.md").exists()
    assert not (ws / ".phasegraph" / "threads.sqlite").exists() or checkpoints(ws, "bad") == 0


def test_the_printed_resume_command_works_as_printed_from_another_folder(
    ws: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    paused = cli("run", "List the files", "--thread", "far", "--review", "plan", "--model",
                 MODEL, cwd=ws)  # fmt: skip
    assert paused.returncode == 3, paused.stderr
    printed = next(line.strip() for line in paused.stdout.splitlines() if "--approve" in line)
    assert printed == f"{PRINTED} resume far --approve --workspace {ws}"
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    # as printed, program included: a user who runs .venv/bin/phasegraph has no bare name
    done = subprocess.run(shlex.split(printed), cwd=elsewhere, env=cli_env(), capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (ws / "files.md").read_text() == "notes.txt\ntodo.txt"
    assert not (elsewhere / ".phasegraph").exists()
    # with a database of its own, the command names it too
    (ws / "files.md").unlink()  # else the demo's unread overwrite of it is held
    db = tmp_path_factory.mktemp("dbs") / "runs.sqlite"
    again = cli("run", "List the files", "--thread", "far2", "--review", "plan", "--model",
                MODEL, "--db", str(db), cwd=ws)  # fmt: skip
    printed = next(line.strip() for line in again.stdout.splitlines() if "--approve" in line)
    assert printed.endswith(f"--workspace {ws} --db {db}")
    assert cli(*shlex.split(printed)[1:], cwd=elsewhere).returncode == 0
    # a model file named relative to the folder the run was started in (README's example)
    (ws / "files.md").unlink()
    relative = f"scripted:{SCRIPT.relative_to(SCRIPT.parents[1])}"
    third = cli("run", "List the files", "--thread", "far3", "--review", "plan", "--model",
                relative, "--workspace", str(ws), cwd=SCRIPT.parents[1])  # fmt: skip
    assert third.returncode == 3, third.stderr
    printed = next(line.strip() for line in third.stdout.splitlines() if "--approve" in line)
    resumed = cli(*shlex.split(printed)[1:], cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr


def test_a_reader_that_stops_early_is_not_an_error(ws: Path) -> None:
    """``phasegraph show t | head -1``: the pipe closes under the output, as a shell's does."""
    assert cli("run", "go", "--thread", "p", "--model", MODEL, cwd=ws).returncode == 0
    argv = phasegraph_argv()
    for command in (["show", "p"], ["show", "p", "--json"], ["threads"], ["threads", "--json"]):
        shown = subprocess.Popen(
            [*argv, *command], cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert shown.stdout is not None
        shown.stdout.close()  # the reader is gone before the first line is written
        _, err = shown.communicate(timeout=120)
        assert shown.returncode == 141, err
        assert "error" not in err and "Traceback" not in err and "Exception" not in err


def test_a_thread_resumed_from_another_folder_goes_on_in_its_own(
    ws: Path, tmp_path_factory
) -> None:
    paused = cli(
        "run", "List the files", "--thread", "t9", "--review", "plan", "--model", MODEL, cwd=ws
    )
    assert paused.returncode == 3, paused.stderr
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    db = str(ws / ".phasegraph" / "threads.sqlite")
    done = cli("resume", "t9", "--approve", "--db", db, cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert (ws / "files.md").read_text() == "notes.txt\ntodo.txt"
    assert list(elsewhere.iterdir()) == []


def test_a_run_whose_progress_reader_stops_early_still_runs_to_its_end(ws: Path) -> None:
    """``phasegraph run ... 2>&1 | head -2``: the progress lines are lost, not the run."""
    argv = phasegraph_argv()
    ran = subprocess.Popen(
        [*argv, "run", "List the files", "--thread", "pipe", "--model", MODEL],
        cwd=ws,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert ran.stderr is not None
    ran.stderr.close()  # the reader of the progress is gone
    assert ran.wait(timeout=120) == 0
    assert (ws / "files.md").read_text() == "notes.txt\ntodo.txt"
    rows = json.loads(cli("threads", "--json", cwd=ws).stdout)
    assert [(r["thread_id"], r["status"]) for r in rows] == [("pipe", "completed")]


def test_a_database_of_something_else_is_refused_and_left_as_it_was(ws: Path) -> None:
    foreign = ws / "shop.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("PRAGMA journal_mode=WAL")  # another program's, in WAL mode
    conn.execute("CREATE TABLE customers (name TEXT)")
    conn.commit()
    conn.close()
    before = foreign.read_bytes()
    for command in (["show", "x"], ["threads"], ["report", "x"], ["run", "go", "--model", MODEL]):
        done = cli(*command, "--db", str(foreign), cwd=ws)
        assert done.returncode == 2 and "a SQLite database of something else" in done.stderr
    assert foreign.read_bytes() == before
    assert sorted(p.name for p in ws.glob("shop.sqlite*")) == ["shop.sqlite"]


def test_a_place_that_cannot_be_written_is_a_usage_error(ws: Path) -> None:
    assert cli("run", "go", "--thread", "w", "--model", MODEL, cwd=ws).returncode == 0
    missing = cli("report", "w", "-o", str(ws / "no" / "such" / "r.md"), cwd=ws)
    assert missing.returncode == 2 and "cannot write" in missing.stderr, missing.stderr
    (ws / "a-file").write_text("not a folder")  # where the database's folder would go
    refused = cli("run", "go", "--model", MODEL, "--db", str(ws / "a-file" / "t.sqlite"), cwd=ws)
    assert refused.returncode == 2 and "cannot use the database" in refused.stderr, refused.stderr


def test_printed_commands_name_the_program_as_it_can_be_typed(ws: Path) -> None:
    args = ("run", "List the files", "--review", "plan", "--model", MODEL)
    by_path = cli(*args, "--thread", "p1", cwd=ws)
    assert by_path.returncode == 3 and f"  {PRINTED} resume p1 --approve" in by_path.stdout
    script = Path(phasegraph_argv()[0])
    if script.name != "phasegraph":  # started as a module: there is no script to find
        return
    path = f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    by_name = subprocess.run([*phasegraph_argv(), *args, "--thread", "p2"], cwd=ws,
                             env=cli_env({"PATH": path}), capture_output=True,
                             text=True)  # fmt: skip
    assert by_name.returncode == 3 and "\n  phasegraph resume p2 --approve" in by_name.stdout


def test_ctrl_c_ends_the_run_now_and_stops_the_command_it_runs(ws: Path) -> None:
    import signal
    import time

    script = json.loads(SCRIPT.read_text())
    script["request_analyser"][0]["task_type"] = "data"  # work that may run programs
    script["phase_planner"][0]["phases"][0]["allowed_tools"] = ["run_command"]
    seconds = f"{40 + int.from_bytes(os.urandom(2), 'big') / 1e5:.5f}"  # this test's own
    script["plan_tool_call"][0]["tasks"] = [
        {"id": "t1", "tool": "run_command", "arguments": {"argv": ["sleep", seconds]},
         "purpose": "wait"}  # fmt: skip
    ]
    (ws / "script.json").write_text(json.dumps(script))
    env = cli_env({"PHASEGRAPH_COMMAND_SANDBOX": "checks",
                   "PHASEGRAPH_ALLOWED_COMMANDS": "sleep,ls"})  # fmt: skip

    def sleeping() -> bool:
        return any(seconds.encode() in line for line in _command_lines())

    argv = [*phasegraph_argv(), "run", "wait", "--model", f"scripted:{ws / 'script.json'}"]
    # SIGINT as a terminal sends it (a test runner may start children with it ignored)
    def terminal_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(argv, cwd=ws, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=terminal_sigint)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not sleeping():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)  # the command had 40 s to go
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted" in err
    assert not sleeping()
    # the message names the command that goes on with the thread, as it can be typed
    said = next(line for line in err.splitlines() if line.startswith("interrupted"))
    command = said.split("go on where the thread stopped with: ")[1]
    assert command.startswith(f"{PRINTED} resume t-") and f"--workspace {ws}" in command
    thread = shlex.split(command)[len(shlex.split(PRINTED)) + 1]
    # no process runs it any more: it reads interrupted, not running, wherever it is shown
    shown = cli("show", thread, "--json", cwd=ws)
    assert shown.returncode == 0 and json.loads(shown.stdout)["status"] == "interrupted"
    listed = cli("threads", "--json", cwd=ws)
    assert [(r["thread_id"], r["status"]) for r in json.loads(listed.stdout)] == [
        (thread, "interrupted")
    ]
    for status, expected in (("interrupted", [thread]), ("running", [])):
        chosen = cli("threads", "--status", status, "--json", cwd=ws)
        assert [r["thread_id"] for r in json.loads(chosen.stdout)] == expected, chosen.stderr


def _command_lines() -> list[list[bytes]]:
    """The arguments of every process of this machine (those gone while read, left out)."""
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines.append((entry / "cmdline").read_bytes().split(b"\0"))
            except OSError:
                continue
    return lines
