"""The argument checks, the second line behind the sandbox (SPEC section 5).

Each attack is refused by the checks alone (``command_sandbox="checks"``) and, the checks being
the second line either way, inside the sandbox too; the ordinary uses of the same programs run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phasegraph.tools.commands import DEFAULT_ALLOWED_COMMANDS, CommandSettings
from phasegraph.tools.pipeline import run_command
from phasegraph.tools.workspace import Workspace, WorkspaceError


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".phasegraph").mkdir()
    (root / ".phasegraph" / "threads.sqlite").write_text("db")
    (root / "in.txt").write_text("b\na\nb\n")
    (root / "s.txt").write_text("sh -c 'echo pwned > pwned.txt'\n")
    (root / "data.csv").write_text("id,name\n2,bob\n1,ann\n")
    (root / "l").write_text("/etc/passwd\x00")
    (root / "list.txt").write_text("/etc/passwd\n")
    (root / "sums").write_text("0 /etc/passwd\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    os.symlink(tmp_path / "outside.txt", root / "lnk")
    os.symlink(tmp_path / "victim.txt", root / "vlnk")
    os.symlink(tmp_path / "outside.txt", root / "in.txt ")  # the blank is part of its name
    (root / "sub").mkdir()
    os.mkfifo(root / "fifo")
    return root


def run(root: Path, argv: list[str], sandbox: str = "checks") -> str:
    settings = CommandSettings(
        allowed=DEFAULT_ALLOWED_COMMANDS, timeout_s=5, max_chars=4000, sandbox=sandbox  # type: ignore[arg-type]
    )
    return run_command(argv, workspace=Workspace(str(root)), settings=settings)


ATTACKS = [
    # from the report: option prefixes, glued short options, file lists, writes, symlinks
    (["sort", "--compress-prog=sh", "-S", "1K", "-T", "t", "s.txt"], "runs another program"),
    (["date", "-f/etc/passwd"], "date -f is not allowed"),
    (["sort", "-z", "--files0-from=l"], "list of paths"),
    (["wc", "--files0-from=l"], "list of paths"),
    (["file", "-f", "list.txt"], "list of paths"),
    (["uniq", "in.txt", ".git/config"], "writes a file"),
    (["find", ".", "-fprint0", ".git/HEAD"], "writes a file"),
    (["sort", "-ro", ".git/x", "in.txt"], "writes a file"),
    (["sort", "--outp=.phasegraph/threads.sqlite", "in.txt"], "writes a file"),
    (["cat", "lnk"], "outside the workspace"),
    (["uniq", "in.txt", "vlnk"], "writes a file"),
    # more of each kind
    (["sort", "--o", "x", "in.txt"], "writes a file"),  # the shortest prefix of --output
    (["sort", "--compress=sh", "in.txt"], "runs another program"),
    (["sort", "-T/tmp", "in.txt"], "writes a file"),
    (["sort", "--temp=.", "in.txt"], "writes a file"),
    (["sort", "--random-source=/dev/urandom", "in.txt"], "absolute path"),
    (["wc", "--files0=l"], "list of paths"),
    (["md5sum", "-c", "sums"], "list of paths"),
    (["sha256sum", "--ch", "sums"], "list of paths"),
    (["diff", "-l", "in.txt", "data.csv"], "runs another program"),
    (["diff", "--pag", "in.txt", "data.csv"], "runs another program"),
    (["diff", "-r", ".", "lnk"], "follows symlinks"),
    (["diff", "--from-file=/etc/passwd", "in.txt"], "absolute path"),
    (["grep", "-R", "x", "."], "follows symlinks"),
    (["grep", "--dereference-r", "x", "."], "follows symlinks"),
    (["grep", "-rf/etc/passwd", "."], "absolute path"),
    (["grep", "--exclude-from=../outside.txt", "x", "."], "outside the workspace"),
    (["grep", "-D", "read", "x", "fifo"], "devices and FIFOs"),
    (["tail", "-f", "in.txt"], "waits for the file"),
    (["tail", "-5f", "in.txt"], "waits for the file"),
    (["tail", "--fo=name", "in.txt"], "waits for the file"),
    (["file", "-m", "magic:/etc/magic", "in.txt"], "magic files"),
    (["file", "-C", "in.txt"], "writes a file"),
    (["file", "-p", "in.txt"], "access times"),
    (["file", "-L", "lnk"], "follows symlinks"),
    (["date", "-s", "2020-01-01"], "sets the clock"),
    (["date", "--se=2020-01-01"], "sets the clock"),
    (["date", "010100002020"], "sets the clock"),
    (["date", "--reference=lnk"], "outside the workspace"),
    (["ls", "-L", "lnk"], "follows symlinks"),
    (["ls", "--dereference-command-line-s", "lnk"], "follows symlinks"),
    (["stat", "-L", "lnk"], "follows symlinks"),
    (["find", "-L", "."], "follows symlinks"),
    (["find", ".", "-follow"], "follows symlinks"),
    (["find", ".", "-exec", "sh", "-c", "id", ";"], "runs another program"),
    (["find", ".", "-fls", "out"], "writes a file"),
    (["find", ".", "-delete"], "deletes files"),
    (["find", ".", "-newer", "/etc/passwd"], "absolute path"),
    (["find", "/", "-name", "passwd"], "absolute path"),
    (["find", ".", "-files0-from", "l"], "list of paths"),
    (["find", ".", "-nosuchpredicate"], "not a predicate"),
    (["cat", "fifo"], "not a regular file"),
    (["head", "-c5", "--", "/etc/passwd"], "absolute path"),
    (["cut", "-f1", "../outside.txt"], "outside the workspace"),
    (["cat", "lnk/../in.txt"], "outside the workspace"),
    (["sort", "--zzz", "in.txt"], "not an option"),
    (["sort", "-Q", "in.txt"], "not an option"),
    (["ls", "--d", "."], "ambiguous"),
    (["cat", "in.txt "], "outside the workspace"),  # checked as written, not as "in.txt"
    (["diff", "sub", "in.txt"], "is a folder"),  # reads what a folder's symlinks point to
    # --from-file/--to-file are operands too: a folder there is read entry by entry, links
    # followed, and a missing operand with -N stands for an empty folder
    (["diff", "-aN", "--from-file=.", "no-such-name"], "is a folder"),
    (["diff", "--to-file", "sub", "in.txt"], "is a folder"),
    (["diff", "--from=.", "in.txt"], "is a folder"),
    (["file", "-z", "in.txt"], "runs another program"),
    (["file", "--uncompress", "in.txt"], "runs another program"),
]


@pytest.mark.parametrize(("argv", "message"), ATTACKS, ids=[" ".join(a[0]) for a in ATTACKS])
def test_an_attack_is_refused_by_the_checks_alone(ws: Path, argv: list[str], message: str) -> None:
    before = {p.name: p.read_bytes() for p in ws.iterdir() if p.is_file() and not p.is_symlink()}
    with pytest.raises(WorkspaceError, match=message):
        run(ws, argv)
    after = {p.name: p.read_bytes() for p in ws.iterdir() if p.is_file() and not p.is_symlink()}
    assert after == before and not (ws.parent / "victim.txt").exists()


def test_the_attacks_are_refused_inside_the_sandbox_too(ws: Path) -> None:
    for argv, message in ATTACKS[:12]:
        with pytest.raises(WorkspaceError, match=message):
            run(ws, argv, sandbox="os")


@pytest.mark.parametrize("prlimit", [True, False], ids=["prlimit", "between-fork-and-exec"])
@pytest.mark.parametrize("sandbox", ["checks", "os"])
def test_a_command_that_grows_past_its_memory_cap_fails_alone(
    ws: Path, sandbox: str, prlimit: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from phasegraph.tools import processes

    if not prlimit:  # a machine without util-linux's prlimit
        monkeypatch.setattr(processes, "prlimit_binary", lambda: None)
    elif processes.prlimit_binary() is None:
        pytest.fail("this machine has no prlimit (util-linux): the test needs it")
    # a regular expression whose matcher grows for ever: gigabytes within seconds uncapped
    (ws / "a.txt").write_text("a" * 50 + "\n")
    argv = ["grep", "-E", "((a{1,100}){1,100}){1,100}", "a.txt"]
    capped = CommandSettings(timeout_s=5, sandbox=sandbox, max_memory_mb=64)  # type: ignore[arg-type]
    out = run_command(argv, workspace=Workspace(str(ws)), settings=capped)
    assert out.startswith("exit code: 2") and "memory exhausted" in out.lower()


def test_a_lower_hard_memory_limit_of_the_machine_is_kept_not_refused(ws: Path) -> None:
    import subprocess
    import sys

    # a process whose hard limit is under the cap: raising to the cap would fail in the child
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_DATA, (900 << 20, 900 << 20))\n"
        "from phasegraph.tools.commands import CommandSettings\n"
        "from phasegraph.tools.pipeline import run_command\n"
        "from phasegraph.tools.workspace import Workspace\n"
        "for mode in ('checks', 'os'):\n"
        "    print(run_command(['wc', '-l', 'in.txt'], workspace=Workspace(sys.argv[1]),\n"
        "                      settings=CommandSettings(sandbox=mode)).splitlines()[0])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", code, str(ws)], capture_output=True, text=True,
                          env=env, timeout=60)  # fmt: skip
    assert done.stdout.split() == ["exit", "code:", "0"] * 2, done.stderr


def test_a_command_line_the_system_refuses_is_a_workspace_error(ws: Path) -> None:
    with pytest.raises(WorkspaceError, match="could not start: Argument list too long"):
        run(ws, ["echo", "x" * 200_000] * 20)


def test_the_memory_cap_is_a_setting_a_served_run_may_only_lower() -> None:
    from phasegraph import Context
    from phasegraph.errors import ConfigurationError
    from phasegraph.graph.served import within_operator

    assert Context().command_settings.max_memory_mb == 1024
    assert Context(command_memory_mb=0).command_settings.max_memory_mb == 0  # no cap
    for bad in (-1, 1024.0, True):
        with pytest.raises(ValueError, match="command_memory_mb"):
            Context(command_memory_mb=bad)
    operator = Context(command_memory_mb=512)
    for narrower in (512, 100):
        within_operator(Context(command_memory_mb=narrower), operator, "/srv/threads")
    for wider in (513, 0):
        with pytest.raises(ConfigurationError, match="command_memory_mb"):
            within_operator(Context(command_memory_mb=wider), operator, "/srv/threads")
    within_operator(Context(command_memory_mb=4096), Context(command_memory_mb=0), "/srv/t")


def test_there_are_at_least_50_attacks() -> None:
    assert len(ATTACKS) >= 50


ORDINARY = [
    (["sort", "-t,", "-k1,1n", "data.csv"], "id,name\n1,ann\n2,bob"),
    (["sort", "--numeric", "-r", "in.txt"], "b\nb\na"),
    (["uniq", "-c", "in.txt"], "1 b"),
    (["grep", "-c", "b", "in.txt"], "2"),
    (["grep", "-e", "a", "-e", "b", "--", "in.txt"], "b\na\nb"),
    (["grep", "-rn", "ann", "."], "data.csv:3:1,ann"),
    (["head", "-n1", "in.txt"], "b"),
    (["head", "-2", "in.txt"], "b\na"),
    (["tail", "-n", "1", "in.txt"], "b"),
    (["wc", "-l", "in.txt"], "3 in.txt"),
    (["cut", "-d,", "-f2", "data.csv"], "name\nbob\nann"),
    (["find", ".", "-name", "*.csv", "-type", "f"], "./data.csv"),
    (["ls", "-1", "--hide=*.txt"], "data.csv"),
    (["date", "-u", "+%Y"], "20"),
    (["date", "-d", "2026-01-02", "+%d"], "02"),
    (["diff", "in.txt", "in.txt"], "exit code: 0"),
    (["diff", "--from-file=in.txt", "in.txt", "data.csv"], "exit code: 1"),
    (["expr", "17", "+", "25"], "42"),
    (["echo", "--output=/etc/passwd"], "--output=/etc/passwd"),
    (["md5sum", "in.txt"], "in.txt"),
    (["stat", "-c", "%s", "in.txt"], "6"),
    (["cat", "-n", ".git/config"], "[core]"),
]


@pytest.mark.parametrize(("argv", "shown"), ORDINARY, ids=[" ".join(a[0]) for a in ORDINARY])
def test_ordinary_uses_run(ws: Path, argv: list[str], shown: str) -> None:
    for sandbox in ("checks", "os"):
        out = run(ws, argv, sandbox=sandbox)
        assert shown in out, (sandbox, out)


def test_an_interpreter_runs_only_inside_the_sandbox(ws: Path) -> None:
    weaker = CommandSettings(allowed=("python3",), sandbox="checks")
    with pytest.raises(WorkspaceError, match="runs any code"):
        run_command(["python3", "-c", "print(1)"], workspace=Workspace(str(ws)), settings=weaker)
    inside = CommandSettings(allowed=("python3",), sandbox="os")
    out = run_command(["python3", "-c", "print(6 * 7)"], workspace=Workspace(str(ws)),
                      settings=inside)  # fmt: skip
    assert out == "exit code: 0\n42\n"


def test_a_callers_program_without_a_table_keeps_to_the_workspace(ws: Path) -> None:
    settings = CommandSettings(allowed=("printf",), sandbox="checks")
    space = Workspace(str(ws))
    for argv, message in [
        (["printf", "%s", "lnk"], "outside the workspace"),
        (["printf", "-v/etc/passwd"], "absolute path"),
        (["printf", "--x=../y"], "outside the workspace"),
        (["printf", "%s", ".git/config"], "which commands may not touch"),
    ]:
        with pytest.raises(WorkspaceError, match=message):
            run_command(argv, workspace=space, settings=settings)
    assert run_command(["printf", "%s", "ok"], workspace=space, settings=settings).endswith("ok")
