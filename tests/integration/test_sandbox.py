"""The operating-system sandbox commands run in (SPEC section 5), tried as an attacker would.

Each attack is given a program the argument checks cannot see into (a shell or an interpreter
the user allowed), so what stops it is the sandbox itself; on a machine that cannot give the
sandbox, a command is refused with the setting that accepts the argument checks alone.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from phasegraph.tools import sandbox, seccomp
from phasegraph.tools.commands import CommandSettings
from phasegraph.tools.pipeline import run_command
from phasegraph.tools.workspace import Workspace, WorkspaceError

from scripts import processes_with

pytestmark = pytest.mark.integration

SECRET = "sk-sandbox-test-secret-0123456789"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".phasegraph").mkdir()
    (root / ".phasegraph" / "threads.sqlite").write_bytes(b"SQLite format 3\x00")
    (root / "notes.txt").write_text("beta\nalpha\ngamma\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    return root


def sh(root: Path, script: str, *, programs: tuple[str, ...] = ("sh",), timeout: float = 10) -> str:
    """Run a shell script the way a user who allowed ``sh`` lets a model run one."""
    settings = CommandSettings(allowed=programs, timeout_s=timeout, max_chars=20_000)
    return run_command(["sh", "-c", script], workspace=Workspace(str(root)), settings=settings)


def test_this_machine_gives_the_sandbox() -> None:
    # CI runs the sandbox for real: if this fails, every other test here would prove nothing
    status = sandbox.sandbox_status()
    assert status.available, status.reason


def test_ordinary_commands_work_inside_it(ws: Path) -> None:
    settings = CommandSettings(allowed=("sort", "wc", "grep", "python3"), max_chars=2000)
    space = Workspace(str(ws))
    assert run_command(["sort", "notes.txt"], workspace=space, settings=settings) == (
        "exit code: 0\nalpha\nbeta\ngamma\n"
    )
    assert run_command(["wc", "-l", "notes.txt"], workspace=space, settings=settings) == (
        "exit code: 0\n3 notes.txt\n"
    )
    out = run_command(["python3", "-c", "print(17 + 25 + 8)"], workspace=space, settings=settings)
    assert out == "exit code: 0\n50\n"
    # the workspace is writable, by its own path and by the relative one
    out = sh(ws, f"echo made > made.txt && echo again >> {ws}/made.txt && cat made.txt")
    # and a file a program writes itself is said to be written (`tools.changed`)
    assert out == "exit code: 0\nmade\nagain\n[wrote 11 bytes to made.txt]"
    assert (ws / "made.txt").read_text() == "made\nagain\n"


def test_nothing_outside_the_workspace_is_writable(ws: Path) -> None:
    out = sh(ws, "for f in ../outside.txt ../new.txt /tmp/pg-x /usr/pg-x /pg-x; do "
                 "echo pwned > $f || echo refused $f; done")  # fmt: skip
    assert out.count("refused") == 5, out
    assert (ws.parent / "outside.txt").read_text() == "outside\n"
    assert not (ws.parent / "new.txt").exists() and not Path("/tmp/pg-x").exists()


def test_the_kernels_settings_and_dev_are_read_only(ws: Path) -> None:
    # uid 0 may write /proc/sys whatever its capabilities: a run as root must not reach them
    out = sh(ws, "echo 1 > /proc/sys/vm/drop_caches; echo x > /dev/planted; echo ok > /dev/null "
                 "&& echo null-ok")  # fmt: skip
    assert out.count("Read-only file system") == 2 and "null-ok" in out, out


def test_calls_that_reach_past_the_namespaces_are_refused(ws: Path) -> None:
    # the kernel's key store is the machine's (root's keys are root's in any namespace), and a
    # new namespace inside would undo the sandbox's: the system-call filter refuses both
    keyctl = seccomp.refused_calls()["keyctl"]
    code = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"print('keyctl', libc.syscall({keyctl}, 0, -3, 0, 0, 0), ctypes.get_errno())\n"
    )
    code += (
        # clone with a new-namespace flag is refused; clone3 (flags out of the filter's sight)
        # says it is missing, so C libraries fall back to clone; threads and forks still work
        "import threading, subprocess\n"
        f"pid = libc.syscall(56, 0x10000000 | {signal.SIGCHLD}, 0, 0, 0, 0)\n"
        "if pid == 0: os._exit(0)\n"
        "print('clone-newuser', pid, ctypes.get_errno())\n"
        "print('clone3', libc.syscall(435, 0, 0), ctypes.get_errno())\n"
        "t = threading.Thread(target=print, args=('thread-ran',)); t.start(); t.join()\n"
        "print(subprocess.run(['echo', 'child-ran'], capture_output=True, text=True).stdout)\n"
    ) if os.uname().machine == "x86_64" else ""
    (ws / "probe.py").write_text(code)
    out = sh(ws, "python3 probe.py; unshare --user --map-root-user id; echo unshare=$?")
    assert f"keyctl -1 {errno.EPERM}" in out and "unshare=1" in out, out
    if os.uname().machine == "x86_64":
        assert f"clone-newuser -1 {errno.EPERM}" in out and f"clone3 -1 {errno.ENOSYS}" in out
        assert "thread-ran" in out and "child-ran" in out, out


def test_git_and_the_runs_database_are_read_only(ws: Path) -> None:
    out = sh(ws, "echo '[core] hooksPath=x' > .git/config; echo x > .git/HEAD; "
                 "echo x > .phasegraph/threads.sqlite; rm -f .git/config; mkdir .git/hooks; "
                 "cat .git/config")  # fmt: skip
    assert out.count("Read-only file system") >= 4, out
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / ".git" / "HEAD").exists() and not (ws / ".git" / "hooks").exists()
    assert (ws / ".phasegraph" / "threads.sqlite").read_bytes() == b"SQLite format 3\x00"


def test_a_nested_repository_is_read_only_too(ws: Path) -> None:
    nested = ws / "vendor" / "lib" / ".git"
    nested.mkdir(parents=True)
    (nested / "config").write_text("[core]\n")
    (ws / "vendor" / "sub").mkdir()
    (ws / "vendor" / "sub" / ".git").write_text("gitdir: ../lib/.git\n")  # a submodule's
    # from a script file, which the argument checks cannot see into
    (ws / "w.sh").write_text("echo x > vendor/lib/.git/config; echo x > vendor/sub/.git; "
                             "echo y > vendor/lib/ok.txt && echo wrote\n")  # fmt: skip
    out = sh(ws, "sh w.sh")
    assert out.count("Read-only file system") == 2 and "wrote" in out, out
    assert (nested / "config").read_text() == "[core]\n"
    assert (ws / "vendor" / "sub" / ".git").read_text() == "gitdir: ../lib/.git\n"


def test_a_protected_folder_that_is_absent_cannot_be_made(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(WorkspaceError, match=r"made \.git/, which .* commands may not write"):
        sh(bare, "mkdir -p .git/hooks && echo '[core] fsmonitor=x' > .git/config")
    assert sorted(p.name for p in bare.iterdir()) == []
    assert sh(bare, "echo fine > ok.txt").startswith("exit code: 0")  # no folder made: no error


def test_only_what_programs_need_of_the_system_is_visible(ws: Path) -> None:
    out = sh(ws, "cat /etc/passwd /etc/hostname /etc/shadow; ls /root /home /var")
    assert "root:x:0" not in out and out.count("No such file") == 6, out
    top = set(sh(ws, "ls /").splitlines()[1:])
    # the system's program folders, and the folders on the way to the workspace
    assert top <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "run", "sbin",
                   "usr", ws.parts[1]}, top  # fmt: skip
    assert sh(ws, "ls -A /run /run/tmp").splitlines()[1:] == ["/run:", "tmp", "", "/run/tmp:"]
    assert set(sh(ws, "ls /etc").splitlines()[1:]) <= set(sandbox.ETC_ENTRIES)
    assert sh(ws, f"ls {ws.parent}").splitlines()[1:] == ["ws"]  # no sibling of the workspace


def test_no_other_process_is_visible_and_the_environment_is_scrubbed(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = sh(ws, "ls /proc | grep -c '^[0-9]'; cat /proc/*/environ | tr '\\0' '\\n'")
    count = int(out.splitlines()[1])
    assert count <= 4, out  # the sandbox's own few, not the machine's
    assert SECRET not in out and "OPENAI_API_KEY" not in out
    assert "No such file" in sh(ws, f"ls -d /proc/{os.getpid()}/")


def test_there_is_no_network_not_even_the_machines_loopback(ws: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = (
            "import socket\n"
            "s = socket.socket(); s.settimeout(3)\n"
            f"print('connect', s.connect_ex(('127.0.0.1', {port})))\n"
        )
        settings = CommandSettings(allowed=("python3",), timeout_s=10)
        out = run_command(
            ["python3", "-c", code], workspace=Workspace(str(ws)), settings=settings
        )
    assert "connect 0" not in out and "connect 111" in out, out  # refused: nobody listens there


def test_a_child_started_in_a_new_session_does_not_outlive_the_call(ws: Path) -> None:
    out = sh(ws, "setsid sleep 985 > /dev/null 2>&1 & echo started", programs=("sh",))
    assert "started" in out
    time.sleep(0.3)
    assert processes_with("sleep 985") == []


def _running(command: str) -> bool:
    """Whether a process runs whose command line is ``command``."""
    return any(
        Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\x00", b" ").strip() == command.encode()
        for pid in processes_with(command)
        if Path(f"/proc/{pid}/cmdline").exists()
    )


def test_a_command_dies_with_the_process_that_started_it(ws: Path, tmp_path: Path) -> None:
    script = tmp_path / "runner.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from phasegraph.tools.commands import CommandSettings
            from phasegraph.tools.pipeline import run_command
            from phasegraph.tools.workspace import Workspace
            settings = CommandSettings(allowed=("sleep",), timeout_s=60)
            run_command(["sleep", "983"], workspace=Workspace({str(ws)!r}), settings=settings)
            """
        )
    )
    runner = subprocess.Popen([sys.executable, str(script)])
    deadline = time.monotonic() + 20
    # the program itself, not bubblewrap (whose command line names it) still setting up
    while not _running("/usr/bin/sleep 983") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running("/usr/bin/sleep 983"), "the command never started"
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    deadline = time.monotonic() + 5
    while processes_with("sleep 983") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with("sleep 983") == []


def test_a_program_outside_the_system_folders_is_not_run(ws: Path, tmp_path: Path) -> None:
    # the program the checks allowed is the one that runs: not one planted on the PATH
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "lister").write_text("#!/bin/sh\necho planted\n")
    (bin_dir / "lister").chmod(0o755)
    settings = CommandSettings(allowed=("lister",))
    with pytest.raises(WorkspaceError, match="not installed where commands look"):
        run_command(["lister"], workspace=Workspace(str(ws)), settings=settings)


def test_without_a_sandbox_a_command_is_refused_and_says_which_setting(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "bwrap_binary", lambda: None)
    sandbox.sandbox_status.cache_clear()
    try:
        settings = CommandSettings(allowed=("sh",))
        with pytest.raises(WorkspaceError) as refused:
            run_command(["sh", "-c", "echo ran > ran.txt"], workspace=Workspace(str(ws)),
                        settings=settings)  # fmt: skip
        message = str(refused.value)
        assert "cannot give (no bubblewrap binary" in message
        assert "command_sandbox" in message and "PHASEGRAPH_COMMAND_SANDBOX=checks" in message
        assert "\n" not in message and not (ws / "ran.txt").exists()
        # the setting it names runs the command with the argument checks alone
        weaker = CommandSettings(allowed=("wc",), sandbox="checks")
        assert run_command(["wc", "-l", "notes.txt"], workspace=Workspace(str(ws)),
                           settings=weaker).startswith("exit code: 0")  # fmt: skip
    finally:
        sandbox.sandbox_status.cache_clear()


def test_a_machine_without_user_namespaces_refuses_commands(ws: Path, tmp_path: Path) -> None:
    # a real machine of that kind: a user namespace whose limit allows no further one, as
    # distributions that turn unprivileged user namespaces off have it
    if subprocess.run(["unshare", "--user", "--map-root-user", "true"], check=False).returncode:
        pytest.skip("this machine cannot make the user namespace the test needs")
    script = tmp_path / "try.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from phasegraph.tools.commands import CommandSettings
            from phasegraph.tools.pipeline import run_command
            from phasegraph.tools.workspace import Workspace, WorkspaceError
            try:
                run_command(["wc", "-l", "notes.txt"], workspace=Workspace({str(ws)!r}),
                            settings=CommandSettings(allowed=("wc",)))
                print("RAN")
            except WorkspaceError as exc:
                print("REFUSED", exc)
            """
        )
    )
    inner = f"unshare --user {sys.executable} {script}"
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c",
         f"echo 1 > /proc/sys/user/max_user_namespaces && {inner}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stdout.startswith("REFUSED commands run in an operating-system sandbox"), done
    assert "max_" in done.stdout and "PHASEGRAPH_COMMAND_SANDBOX=checks" in done.stdout
