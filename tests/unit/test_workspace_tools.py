"""The built-in workspace tools: what they do, and the escapes and abuses they refuse."""

from __future__ import annotations

import contextlib
import os
import resource
import threading
import time
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from langchain_core.tools import BaseTool

from phasegraph.context import Context
from phasegraph.facts.files import ENTRIES_SHOWN, workspace_files
from phasegraph.nodes.deps import workspace_settings
from phasegraph.tools import is_idempotent, run_tool
from phasegraph.tools import search as search_module
from phasegraph.tools import workspace as workspace_module
from phasegraph.tools.builtin import BUILTIN_TOOL_NAMES, WorkspaceSettings, workspace_tools
from phasegraph.tools.commands import (
    DEFAULT_ALLOWED_COMMANDS,
    CommandSettings,
    scrubbed_environment,
)
from phasegraph.tools.text_files import COMPARED_LINES, not_found
from phasegraph.tools.workspace import Workspace, WorkspaceError

from scripts import processes_with

OUTSIDE = "the outside file\n"
SECRET = "sibling secret\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with a few files, a .git directory, and things outside it to protect."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\nbeta\n")
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (tmp_path / "outside.txt").write_text(OUTSIDE)
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "secret.txt").write_text(SECRET)
    (tmp_path / "ws-evil").mkdir()  # a sibling whose name extends the root's
    (tmp_path / "ws-evil" / "secret.txt").write_text(SECRET)
    os.symlink(tmp_path / "outside.txt", root / "link_out")
    os.symlink(tmp_path / "outdir", root / "linkdir")
    return root


def toolset(root: Path, commands: tuple[str, ...] = DEFAULT_ALLOWED_COMMANDS, **kw: Any) -> Any:
    settings = WorkspaceSettings(
        root=str(root),
        commands=CommandSettings(
            allowed=commands,
            timeout_s=kw.get("timeout", 10.0),
            max_chars=kw.get("max_output_chars", 2000),
            sandbox=kw.get("sandbox", "os"),
        ),
        max_read_bytes=kw.get("max_read_bytes", 100_000),
    )
    return {t.name: t for t in workspace_tools(settings)}


def call(tools: dict[str, BaseTool], name: str, **args: Any) -> tuple[bool, str]:
    outcome = run_tool(tools[name], args, 100_000)
    return outcome.ok, outcome.output


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (not following symlinks) with its bytes."""
    found: dict[str, bytes] = {}
    for current, _dirs, files in os.walk(path):
        for name in files:
            full = Path(current) / name
            if not full.is_symlink():
                found[str(full.relative_to(path))] = full.read_bytes()
    return found


# -- what the tools do --------------------------------------------------------------------------


def test_the_six_tools_have_the_names_arguments_and_idempotence_of_the_spec(ws: Path) -> None:
    tools = toolset(ws)
    assert tuple(tools) == BUILTIN_TOOL_NAMES
    assert set(tools["list_files"].args) == {"path"}
    assert set(tools["read_file"].args) == {"path", "start_line", "end_line"}
    assert set(tools["write_file"].args) == {"path", "command", "content"}
    assert set(tools["edit_file"].args) == {"path", "old_text", "new_text", "replace_all"}
    assert set(tools["search_text"].args) == {"pattern", "path"}
    assert set(tools["run_command"].args) == {"command", "timeout_s", "input"}
    declared = {name: tools[name].metadata.get("idempotent") for name in tools}
    assert declared == {
        "list_files": True,
        "read_file": True,
        "write_file": True,
        "edit_file": False,
        "search_text": True,
        "run_command": None,  # declares nothing: a command's effects are unknown
    }
    assert not is_idempotent(tools["run_command"]) and not is_idempotent(tools["edit_file"])


def test_list_read_write_edit_search(ws: Path) -> None:
    tools = toolset(ws)
    ok, listing = call(tools, "list_files")
    assert ok and listing.splitlines() == [
        "link_out@",
        "linkdir@",
        "notes.txt",
        "src/",
        "src/app.py",
    ], listing
    assert ".git" not in listing
    assert call(tools, "read_file", path="notes.txt") == (True, "alpha\nbeta\ngamma\nbeta\n")
    ok, part = call(tools, "read_file", path="notes.txt", start_line=2, end_line=3)
    assert ok and part.startswith("beta\ngamma\n") and "[lines 2-3 of 4]" in part
    assert call(tools, "write_file", path="out/report.md", content="# R\n")[0]
    assert (ws / "out" / "report.md").read_text() == "# R\n"
    assert call(tools, "edit_file", path="src/app.py", old_text="return 1", new_text="return 2")[0]
    assert (ws / "src" / "app.py").read_text() == "def main():\n    return 2\n"
    ok, found = call(tools, "search_text", pattern=r"return \d")
    assert ok and found == "src/app.py:2:     return 2\n[1 matching line]"
    (ws / "src" / "two.py").write_text("return 3\nreturn 4\n")
    ok, found = call(tools, "search_text", pattern=r"return \d", path="src/two.py")
    assert ok and found == "src/two.py:1: return 3\nsrc/two.py:2: return 4\n[2 matching lines]"
    ok, none = call(tools, "search_text", pattern="zzz", path="src")
    assert ok and none.startswith("no match")


def test_edit_fails_clearly_when_the_text_is_missing_or_ambiguous(ws: Path) -> None:
    tools = toolset(ws)
    before = (ws / "notes.txt").read_text()
    ok, missing = call(tools, "edit_file", path="notes.txt", old_text="delta", new_text="x")
    assert not ok and "was not found" in missing
    # it says where the text most like it is, and how an edit adds text
    (ws / "app.ini").write_text("[server]\nhost = localhost\nport = 80\n")
    ok, why = call(tools, "edit_file", path="app.ini", old_text="timeout = ", new_text="x = 1")
    assert not ok and why == (
        "WorkspaceError: app.ini: old_text was not found; most like it: line 3 ('port = 80'). "
        "To add text, give as old_text a line that is there, and as new_text that line with "
        "the new text after it (nothing was changed)"
    )
    # what is compared is bounded: the file's first lines, each cut short, whatever one call
    # gives (a ratio of two long texts costs the product of their lengths)
    far = "\n" * COMPARED_LINES + "port = 80\n"
    assert "most like it" not in not_found(far, "port = 81")
    # an edit whose new text holds its old one means to add it: it is shown the call that does
    adding = {"old_text": "timeout = ", "new_text": "timeout = 30"}
    ok, why = call(tools, "edit_file", path="app.ini", **adding)
    assert not ok and why.endswith(
        "with the new text after it, here old_text 'port = 80' and new_text "
        "'port = 80\\ntimeout = 30' (nothing was changed)"
    )
    # none for a mistyped line to change, a text that does not hold the old, a repeated line
    (ws / "twice.ini").write_text("[a]\nport = 80\n[b]\nport = 80\n")
    (ws / "keys.ini").write_text("[a]\ntimeout = 10\n")
    for path, old, new in [("app.ini", "prot = 80", "port = 81"),
                           ("keys.ini", "timeout=", "timeout=30"),
                           ("app.ini", "hots = localhost", "host = 127.0.0.1"),
                           ("twice.ini", "timeout = ", "timeout = 30")]:  # fmt: skip
        _, why = call(tools, "edit_file", path=path, old_text=old, new_text=new)
        assert "here old_text" not in why and "most like it" in why, why
    long_line = "x" * 500_000
    said = not_found(f"{long_line}\n", long_line + "y")
    assert f"most like it: line 1 ('{'x' * 80}...')" in said
    ok, twice = call(tools, "edit_file", path="notes.txt", old_text="beta", new_text="x")
    assert not ok and "occurs 2 times" in twice and "nothing was changed" in twice
    assert "replace_all" in twice  # the way to change each is named
    assert (ws / "notes.txt").read_text() == before


def test_edit_replaces_every_occurrence_when_asked(ws: Path) -> None:
    tools = toolset(ws)
    ok, said = call(
        tools, "edit_file", path="notes.txt", old_text="beta", new_text="BETA", replace_all=True
    )
    assert ok and said == "replaced 2 occurrences in notes.txt"
    assert (ws / "notes.txt").read_text() == "alpha\nBETA\ngamma\nBETA\n"
    ok, once = call(
        tools, "edit_file", path="notes.txt", old_text="gamma", new_text="G", replace_all=True
    )
    assert ok and once == "replaced 1 occurrence in notes.txt"


def test_a_write_given_a_command_holds_exactly_what_the_program_printed(ws: Path) -> None:
    # a program's output retyped by a small model loses lines and guesses numbers
    tools = toolset(ws)
    ok, out = call(tools, "write_file", path="sorted.txt", command="sort notes.txt")
    assert ok and out == "wrote 22 bytes to sorted.txt: the output of sort notes.txt", out
    assert (ws / "sorted.txt").read_text() == "alpha\nbeta\nbeta\ngamma\n"
    # in place: the program reads the file before its output replaces it
    ok, out = call(tools, "write_file", path="notes.txt", command="sort -u notes.txt")
    assert ok and (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n", out
    # a command given beside a text wins: its output is exact, the text a guess of it
    ok, _ = call(tools, "write_file", path="n.txt", command="wc -l < notes.txt", content="9")
    assert ok and (ws / "n.txt").read_text() == "3\n"
    ok, _ = call(tools, "write_file", path="t.txt", command=" ", content="typed\n")
    assert ok and (ws / "t.txt").read_text() == "typed\n"
    # the 0.5B model put the tool's own name in the command's place beside the text it meant
    ok, out = call(tools, "write_file", path="h.txt", command="write_file", content="Hello\n")
    assert ok and (ws / "h.txt").read_text() == "Hello\n", out
    assert "'write_file' names no program that may run" in out
    ok, out = call(tools, "write_file", path="h.txt", command="write_file")  # nothing else
    assert not ok and "is not an allowed command" in out
    # the output's file has no name while the program runs: a listing does not list it
    ok, _ = call(tools, "write_file", path="all.txt", command="ls -a")
    assert ok and ".tmp" not in (ws / "all.txt").read_text()
    ok, _ = call(tools, "run_command", command="find . -name '*.tmp' > found.txt")
    assert ok and (ws / "found.txt").read_text() == ""
    assert not [p for p in os.listdir(ws) if p.endswith(".tmp")]


def test_without_proc_a_redirection_writes_through_a_named_temporary_file(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from phasegraph.tools import redirections

    monkeypatch.setattr(redirections, "PROC_FDS", "/nonexistent/fd")
    ok, out = call(toolset(ws), "write_file", path="sorted.txt", command="sort notes.txt")
    assert ok and (ws / "sorted.txt").read_text() == "alpha\nbeta\nbeta\ngamma\n", out
    assert not [p for p in os.listdir(ws) if p.endswith(".tmp")]


def test_a_write_given_a_command_that_fails_writes_nothing(ws: Path) -> None:
    tools = toolset(ws)
    before = snapshot(ws)
    for args, said in [
        ({"command": "grep zebra notes.txt"}, "did not succeed: nothing was written to notes"),
        # the last program's 0 is not the line's: a count of what the first could not read
        ({"command": "grep x missing.txt | wc -l"}, "did not succeed: nothing was written"),
        ({"command": "wc -l"}, "given none: name the file it reads as its operand, or give it "
                               "with <]"),  # no input: not an empty count
        ({"command": "sort notes.txt > other.txt"}, "without its > redirection"),
        ({"command": "rm notes.txt"}, "is not an allowed command"),
        ({}, "give the file's content, or a command whose output it is"),
    ]:
        ok, out = call(tools, "write_file", path="notes.txt", **args)
        assert not ok and said in out, (args, out)
    # git's hooks are the host's to run: a program's output is no more written there
    ok, out = call(tools, "write_file", path=".git/hooks/pre-commit", command="echo rm -rf ~")
    assert not ok and not (ws / ".git" / "hooks" / "pre-commit").exists(), out
    # the file is refused before the command runs: an edit of its own would be made
    ok, out = call(tools, "write_file", path="../outside.txt", command="sed -i s/a/A/ notes.txt")
    assert not ok and "outside" in out
    assert snapshot(ws) == before


def test_a_write_given_a_command_keeps_stderr_out_and_reports_every_file_changed(ws: Path) -> None:
    tools = toolset(ws)
    ok, out = call(tools, "write_file", path="n.txt", command="grep -c beta notes.txt missing.txt")
    assert not ok and not (ws / "n.txt").exists(), out
    ok, out = call(tools, "write_file", path="n.txt", command="grep -h beta notes.txt")
    assert ok and (ws / "n.txt").read_bytes() == b"beta\nbeta\n", out
    # a program that edits a file itself: the edit is reported as a write of the call
    outcome = run_tool(tools["write_file"], {"path": "e.txt", "command": "sed -i s/a/A/ notes.txt"},
                       100_000)  # fmt: skip
    assert outcome.ok and set(outcome.written) == {"e.txt", "notes.txt"}, outcome
    assert (ws / "notes.txt").read_text().startswith("Alpha") and (ws / "e.txt").read_text() == ""


def test_a_mistyped_escape_is_refused_and_nothing_is_written(ws: Path) -> None:
    # the 1.5B model wrote "alpha\\beta" (a JSON backspace) for "alpha\\nbeta"
    tools = toolset(ws)
    ok, why = call(tools, "write_file", path="full.txt", content="alpha\beta\ngamma\n")
    assert not ok and "control character (backspace) at line 1, column 6" in why
    assert "nothing was written" in why and not (ws / "full.txt").exists()
    before = (ws / "notes.txt").read_text()
    ok, why = call(tools, "edit_file", path="notes.txt", old_text="gamma", new_text="g\x01")
    assert not ok and "(U+0001) at line 1, column 2" in why
    assert (ws / "notes.txt").read_text() == before
    # text files hold tabs, form feeds and terminal colours; those are written as asked
    plain = "a\tb\r\n\fc \x1b[1mbold\x1b[0m\n"
    assert call(tools, "write_file", path="ok.txt", content=plain)[0]
    assert (ws / "ok.txt").read_bytes() == plain.encode()


def test_a_control_character_the_file_already_held_is_written_again(ws: Path) -> None:
    (ws / "raw.txt").write_text("x\by\n")
    tools = toolset(ws)
    assert call(tools, "write_file", path="raw.txt", content="x\by\nz\n")[0]
    assert call(tools, "edit_file", path="raw.txt", old_text="x\by", new_text="x\bY")[0]
    assert (ws / "raw.txt").read_text() == "x\bY\nz\n"
    # a field added beside the file's own separators, in text that held none
    assert call(tools, "edit_file", path="raw.txt", old_text="z", new_text="z\bw")[0]
    assert (ws / "raw.txt").read_text() == "x\bY\nz\bw\n"


def test_write_keeps_the_mode_and_leaves_no_temporary_file(ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    assert call(toolset(ws), "write_file", path="run.sh", content="new")[0]
    assert script.read_text() == "new" and (script.stat().st_mode & 0o777) == 0o750
    assert not [p for p in os.listdir(ws) if p.endswith(".tmp")]


def test_binary_and_non_utf8_files_do_not_crash(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"\x89PNG\x00\x01\x02" * 100)
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    tools = toolset(ws)
    ok, text = call(tools, "read_file", path="blob.bin")
    assert ok and "binary file (700 bytes)" in text
    ok, text = call(tools, "read_file", path="latin.txt")
    assert ok and text.startswith("caf\ufffd\n") and "not valid UTF-8" in text
    ok, text = call(tools, "edit_file", path="blob.bin", old_text="PNG", new_text="x")
    assert not ok and "binary" in text
    ok, text = call(tools, "search_text", pattern="PNG")
    assert ok and "blob.bin" not in text.split("[")[0]


def test_reads_are_capped_and_the_note_says_how_to_read_on(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {n:06}\n" for n in range(1, 100_001)))  # 1.2 MB
    tools = toolset(ws, max_read_bytes=10_000)
    ok, text = call(tools, "read_file", path="big.txt")
    assert ok and len(text) < 10_500
    assert "lines 1-833 are shown, up to the 10000-byte read cap; read on with start_line=834" in (
        text
    )
    # the advice works: a part far past the cap is read, and the last line too
    ok, text = call(tools, "read_file", path="big.txt", start_line=834, end_line=836)
    assert ok and text.startswith("line 000834\nline 000835\nline 000836\n")
    ok, text = call(tools, "read_file", path="big.txt", start_line=99_999)
    assert ok and text == "line 099999\nline 100000\n\n[lines 99999-100000 of 100000]"
    ok, text = call(tools, "read_file", path="big.txt", start_line=200_000)
    assert ok and "[no line from 200000 of 100000]" in text


def test_a_line_longer_than_the_cap_is_shown_cut_and_the_read_moves_on(ws: Path) -> None:
    (ws / "wide.txt").write_text("x" * 30_000 + "\nshort\n")
    tools = toolset(ws, max_read_bytes=10_000)
    ok, text = call(tools, "read_file", path="wide.txt")
    assert ok and text.startswith("x" * 10_000) and "start_line=2" in text
    assert call(tools, "read_file", path="wide.txt", start_line=2)[1].startswith("short\n")


def test_a_symlink_inside_the_workspace_to_a_file_inside_works(ws: Path) -> None:
    os.symlink(ws / "notes.txt", ws / "alias.txt")
    assert call(toolset(ws), "read_file", path="alias.txt") == (True, "alpha\nbeta\ngamma\nbeta\n")


def test_a_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    ok, text = call(toolset(tmp_path / "nope"), "list_files")
    assert not ok and "is not an existing directory" in text


# -- escapes and abuses: each refused with a clear message, nothing outside touched -----------

ESCAPES: list[tuple[str, str, dict[str, Any], str]] = [
    ("dotdot read", "read_file", {"path": "../outside.txt"}, "outside the workspace"),
    ("deep dotdot", "read_file", {"path": "src/../../outside.txt"}, "outside the workspace"),
    ("dotdot to root", "read_file", {"path": "../../../../../../etc/passwd"}, "outside"),
    ("absolute", "read_file", {"path": "/etc/passwd"}, "absolute path"),
    ("tilde", "read_file", {"path": "~/.bashrc"}, "home directory"),
    ("tilde user", "read_file", {"path": "~root/.ssh/id_rsa"}, "home directory"),
    ("sibling prefix", "read_file", {"path": "../ws-evil/secret.txt"}, "outside the workspace"),
    ("sibling list", "list_files", {"path": "../ws-evil"}, "outside the workspace"),
    ("nul byte", "read_file", {"path": "notes.txt\x00.png"}, "NUL byte"),
    ("file symlink out", "read_file", {"path": "link_out"}, "outside the workspace"),
    ("dir symlink out", "read_file", {"path": "linkdir/secret.txt"}, "outside the workspace"),
    ("list via symlink", "list_files", {"path": "linkdir"}, "outside the workspace"),
    ("write dotdot", "write_file", {"path": "../outside.txt", "content": "x"}, "outside"),
    ("write absolute", "write_file", {"path": "/tmp/pg-abs.txt", "content": "x"}, "absolute"),
    ("write via symlink", "write_file", {"path": "link_out", "content": "x"}, "outside"),
    ("write git hook", "write_file", {"path": ".git/hooks/pre-commit", "content": "x"}, ".git/"),
    ("write git case", "write_file", {"path": ".GIT/hooks/post-merge", "content": "x"}, "inside"),
    ("write git dotdot", "write_file", {"path": "src/../.git/config", "content": "x"}, ".git/"),
    (
        "edit git config",
        "edit_file",
        {"path": ".git/config", "old_text": "[", "new_text": "x"},
        ".git/",
    ),
    (
        "write run db",
        "write_file",
        {"path": ".phasegraph/threads.sqlite", "content": "x"},
        ".phasegraph/",
    ),
    ("write the root", "write_file", {"path": ".", "content": "x"}, "not a file"),
    ("search absolute", "search_text", {"pattern": "root", "path": "/etc"}, "absolute"),
    ("search dotdot", "search_text", {"pattern": "secret", "path": ".."}, "outside"),
    ("rm by path", "run_command", {"argv": ["/bin/rm", "-rf", "src"]}, "by name"),
    ("relative program", "run_command", {"argv": ["./evil.sh"]}, "by name"),
    ("bash -c", "run_command", {"argv": ["bash", "-c", "rm -rf /"]}, "runs other commands"),
    ("sh -c", "run_command", {"argv": ["sh", "-c", "cat /etc/passwd"]}, "runs other commands"),
    ("env wrapper", "run_command", {"argv": ["env", "X=1", "ls"]}, "runs other commands"),
    ("xargs", "run_command", {"argv": ["xargs", "rm"]}, "runs other commands"),
    ("find -exec", "run_command", {"argv": ["find", ".", "-exec", "rm", "{}", ";"]}, "-exec"),
    ("find -delete", "run_command", {"argv": ["find", ".", "-delete"]}, "-delete"),
    ("sort -o", "run_command", {"argv": ["sort", "-o", "../outside.txt", "notes.txt"]}, "-o"),
    ("sort --output=", "run_command", {"argv": ["sort", "--output=x", "notes.txt"]}, "--output"),
    ("cat absolute", "run_command", {"argv": ["cat", "/etc/passwd"]}, "absolute"),
    ("cat dotdot", "run_command", {"argv": ["cat", "../outside.txt"]}, "outside"),
    ("grep outside", "run_command", {"argv": ["grep", "-r", "secret", "../ws-evil"]}, "outside"),
    ("option=path", "run_command", {"argv": ["grep", "--file=/etc/passwd", "notes.txt"]},
     "absolute"),
    ("tilde arg", "run_command", {"argv": ["ls", "~"]}, "home directory"),
    ("interpreter", "run_command", {"argv": ["python3", "-c", "print(1)"]}, "not an allowed"),
    ("nul in argv", "run_command", {"argv": ["cat", "notes.txt\x00"]}, "NUL byte"),
    ("a line of a program not allowed", "run_command", {"command": "rm -rf /"}, "not an allowed"),
    ("empty argv", "run_command", {"argv": []}, "non-empty list"),
]


@pytest.mark.parametrize(
    ("tool", "args", "message"), [c[1:] for c in ESCAPES], ids=[c[0] for c in ESCAPES]
)
def test_escape_is_refused(ws: Path, tool: str, args: dict[str, Any], message: str) -> None:
    outside_before = snapshot(ws.parent)
    ok, text = call(toolset(ws), tool, **args)
    assert not ok, text
    assert message in text, text
    assert snapshot(ws.parent) == outside_before  # nothing written, inside or out
    assert OUTSIDE not in text and SECRET not in text


def test_the_table_has_at_least_30_cases() -> None:
    assert len(ESCAPES) >= 30


def test_a_symlink_made_during_the_run_is_refused(ws: Path) -> None:
    tools = toolset(ws)
    assert call(tools, "read_file", path="src/app.py")[0]
    # between two calls, something swaps the directory for a symlink to the outside
    os.rename(ws / "src", ws / "src.old")
    os.symlink(ws.parent / "outdir", ws / "src")
    (ws.parent / "outdir" / "app.py").write_text("outside app\n")
    ok, text = call(tools, "read_file", path="src/app.py")
    assert not ok and "outside the workspace" in text
    ok, text = call(tools, "write_file", path="src/app.py", content="x")
    assert not ok and (ws.parent / "outdir" / "app.py").read_text() == "outside app\n"


def test_a_symlink_swapped_in_between_check_and_open_is_not_followed(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws.parent / "outdir" / "app.py").write_text("outside app\n")
    checked = Workspace.relative

    def check_then_swap(self: Workspace, path: str, **kw: Any) -> PurePosixPath:
        if (ws / "src").is_symlink():  # undo the last call's swap
            (ws / "src").unlink()
            os.rename(ws / "src.old", ws / "src")
        rel = checked(self, path, **kw)
        # the race: the check passed, now the swap
        os.rename(ws / "src", ws / "src.old")
        os.symlink(ws.parent / "outdir", ws / "src")
        return rel

    monkeypatch.setattr(Workspace, "relative", check_then_swap)
    tools = toolset(ws)
    ok, text = call(tools, "read_file", path="src/app.py")
    assert not ok and "symlink" in text and "outside app" not in text
    ok, text = call(tools, "write_file", path="src/app.py", content="pwned")
    assert not ok and "symlink" in text
    assert (ws.parent / "outdir" / "app.py").read_text() == "outside app\n"


def test_a_final_symlink_swapped_in_is_not_followed(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = Workspace.relative

    def check_then_swap(self: Workspace, path: str, **kw: Any) -> PurePosixPath:
        rel = checked(self, path, **kw)
        (ws / "notes.txt").unlink()
        os.symlink(ws.parent / "outside.txt", ws / "notes.txt")
        return rel

    monkeypatch.setattr(Workspace, "relative", check_then_swap)
    ok, text = call(toolset(ws), "read_file", path="notes.txt")
    assert not ok and "symlink" in text and OUTSIDE not in text


def test_a_catastrophic_pattern_is_stopped(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_module, "SEARCH_TIMEOUT_S", 0.2)
    (ws / "a.txt").write_text("a" * 40 + "!\n")
    start = time.monotonic()
    ok, text = call(toolset(ws), "search_text", pattern="(a|aa)+$")
    assert not ok and "took too long" in text
    assert time.monotonic() - start < 10


def test_search_results_are_bounded(ws: Path) -> None:
    (ws / "many.txt").write_text("hit\n" * 1000)
    ok, text = call(toolset(ws), "search_text", pattern="hit")
    assert ok and text.count("many.txt:") == 200 and "stopped at 200 matches" in text


# -- commands -------------------------------------------------------------------------------


def test_an_allowed_command_runs_in_the_workspace(ws: Path) -> None:
    ok, text = call(toolset(ws), "run_command", argv=["grep", "-n", "beta", "notes.txt"])
    assert ok and text == "exit code: 0\n2:beta\n4:beta\n"
    ok, text = call(toolset(ws), "run_command", argv=["pwd"])
    assert ok and text.strip().endswith(str(ws.resolve()))
    ok, text = call(toolset(ws), "run_command", argv=["false"])
    assert ok and text.startswith("exit code: 1")


def test_a_background_child_is_killed_with_its_command_on_timeout(ws: Path) -> None:
    tools = toolset(ws, commands=("sh",), timeout=1.0)  # the user chose to allow a shell
    start = time.monotonic()
    ok, text = call(tools, "run_command", argv=["sh", "-c", "sleep 987 & sleep 988; echo no"])
    assert not ok and "no exit within 1 s" in text
    assert time.monotonic() - start < 5
    time.sleep(0.2)
    assert processes_with("sleep 987") == [] and processes_with("sleep 988") == []


def test_a_background_child_does_not_outlive_a_command_that_exits(ws: Path) -> None:
    tools = toolset(ws, commands=("sh",), timeout=5.0)
    ok, text = call(tools, "run_command", argv=["sh", "-c", "sleep 986 > /dev/null & echo done"])
    assert ok and "done" in text
    time.sleep(0.2)
    assert processes_with("sleep 986") == []


def test_the_caller_timeout_is_capped_by_the_settings(ws: Path) -> None:
    tools = toolset(ws, timeout=0.5)
    start = time.monotonic()
    ok, text = call(tools, "run_command", argv=["sleep", "30"], timeout_s=600)
    assert not ok and "no exit within 0.5 s" in text and time.monotonic() - start < 5


def test_yes_floods_a_bounded_buffer_and_is_stopped(ws: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ok, text = call(toolset(ws, commands=("yes",), timeout=20), "run_command", argv=["yes"])
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert not ok and "more than 32000 bytes of output" in text
    assert len(text) < 2200 and "output truncated" in text
    assert grown_kib < 50_000
    assert processes_with("yes") == [] or all(
        "yes" != Path(f"/proc/{p}/comm").read_text().strip() for p in processes_with("yes")
    )


def test_printenv_shows_no_secret(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "PHASEGRAPH_API_KEY",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "MY_CREDENTIALS",
        "LC_SECRET_TOKEN",
    ):
        monkeypatch.setenv(name, "sk-test-very-secret-value")
    ok, text = call(toolset(ws, commands=("printenv",)), "run_command", argv=["printenv"])
    assert ok and "PATH=" in text
    assert "sk-test-very-secret-value" not in text
    for line in text.splitlines()[1:]:
        name = line.split("=", 1)[0]
        assert not any(w in name.upper() for w in ("KEY", "TOKEN", "SECRET", "PASS", "CRED"))


def test_the_scrubbed_environment_is_an_allowlist() -> None:
    env = scrubbed_environment({"PATH": "/bin", "HOME": "/h", "FOO": "1", "LC_ALL": "C"})
    assert env == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C"}


def test_the_prompts_listing_stops_walking_once_it_has_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # plans and judges show the first entries of the workspace; on a large repository each of
    # those model calls walked the whole tree to count entries nobody reads
    for i in range(ENTRIES_SHOWN + 5):
        (tmp_path / f"f{i:02}.txt").write_text("x")
    (tmp_path / "zz" / "deep").mkdir(parents=True)
    for i in range(50):
        (tmp_path / "zz" / "deep" / f"{i}.txt").write_text("x")
    visited: list[str] = []
    real_walk = workspace_module.walk_tree

    def walk(*args: Any, **kwargs: Any) -> Any:
        for folder in real_walk(*args, **kwargs):
            visited.append(str(folder.path))
            yield folder

    monkeypatch.setattr(workspace_module, "walk_tree", walk)
    context = Context(workspace=str(tmp_path))
    tools = {t.name: t for t in workspace_tools(workspace_settings(context))}
    line = workspace_files(context, tools)
    assert line.startswith("Files in the workspace now (listed by code): f00.txt, f01.txt")
    assert line.rstrip().endswith(", and more")
    assert not any(v.endswith("deep") for v in visited)
    # the tool itself still lists everything and counts what it leaves out
    visited.clear()
    listing = Workspace(str(tmp_path)).list_files(".")
    assert "zz/deep/7.txt" in listing and any(v.endswith("deep") for v in visited)


def test_a_folder_swapped_for_a_link_while_it_is_listed_is_not_followed_out(
    tmp_path: Path,
) -> None:
    # a command of the same round may swap a folder for a symlink between the walk's steps
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "z_dir").mkdir(parents=True)
    (ws / "a.txt").write_text("a")
    (outside / "private").mkdir(parents=True)
    (outside / "secret.txt").write_text("s")
    walk = Workspace(str(ws)).walk(".")
    assert next(walk) == "z_dir/"  # z_dir is queued, as a folder
    (ws / "z_dir").rename(tmp_path / "spare")
    os.symlink(outside, ws / "z_dir")
    rest = list(walk)
    assert rest == ["a.txt"] and not any("secret" in e or "private" in e for e in rest)
    found = Workspace(str(ws)).search_text("s", ".")
    assert "secret" not in found


def test_a_path_too_long_for_the_system_to_name_is_still_listed_and_searched(
    tmp_path: Path,
) -> None:
    space = Workspace(str(tmp_path))
    deep = "/".join(["n" * 250] * 17) + "/f.txt"  # past PATH_MAX (4096)
    assert "wrote" in space.write_file(deep, "deep\n")
    assert deep in space.list_files(".")
    assert "[1 matching line]" in space.search_text("deep")


def test_a_search_has_a_time_bound_in_all_not_only_per_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lines each under the per-line bound would add up without end (hours for a large file)
    monkeypatch.setattr(search_module, "SEARCH_TOTAL_S", 1.0)
    (tmp_path / "slow.txt").write_text(("a" * 24 + "b\n") * 200)
    started = time.monotonic()
    with pytest.raises(WorkspaceError, match=r"took too long.*stopped at slow.txt:\d+"):
        Workspace(str(tmp_path)).search_text(r"(a|aa)+$", "slow.txt")
    assert time.monotonic() - started < 3


def test_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    # opening a FIFO to read wakes a writer blocked on it: the refusal must come first
    os.mkfifo(tmp_path / "pipe")
    woken = threading.Event()

    def writer() -> None:
        with contextlib.suppress(OSError), open(tmp_path / "pipe", "wb"):
            woken.set()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    space = Workspace(str(tmp_path))
    with pytest.raises(WorkspaceError, match="never opened"):
        space.read_file("pipe")
    assert "[0 matching lines]" in space.search_text("x", ".")
    assert not woken.wait(0.3)
    os.open(tmp_path / "pipe", os.O_RDONLY | os.O_NONBLOCK)  # let the writer go


def test_a_secret_set_in_the_environment_after_a_redaction_is_masked_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from phasegraph.errors import redact

    text = "the endpoint said: bad key 4f9a1c2e7b3d"
    assert redact(text) == text
    monkeypatch.setenv("SERVICE_TOKEN", "4f9a1c2e7b3d")
    assert redact(text) == "the endpoint said: bad key ***"
    monkeypatch.setenv("SERVICE_TOKEN", "0a1b2c3d4e5f")  # changed: the old value is no secret
    assert redact(text) == text


def test_a_secret_set_while_the_environment_is_read_is_masked_from_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from phasegraph import errors

    monkeypatch.setattr(errors, "_environment", (None, []))  # nothing read yet
    items = os.environ.items

    def set_meanwhile():  # type: ignore[no-untyped-def]
        found = list(items())
        os.environ["DEPLOY_TOKEN"] = "tok-9f8e7d6c5b4a"  # another thread, during the read
        return found

    monkeypatch.setattr(os.environ, "items", set_meanwhile)
    monkeypatch.setenv("DEPLOY_TOKEN", "")  # restored afterwards
    text = "deploy failed for tok-9f8e7d6c5b4a"
    errors.redact(text)  # the read during which it was set
    monkeypatch.setattr(os.environ, "items", items)
    assert errors.redact(text) == "deploy failed for ***"


def test_an_ambiguous_edit_names_the_lines_where_its_text_occurs(ws: Path) -> None:
    tools = toolset(ws)
    (ws / "greet.py").write_text('def hello(name):\n    return name\n\n\nprint(hello("world"))\n')
    ok, twice = call(tools, "edit_file", path="greet.py", old_text="hello", new_text="greet")
    assert not ok and "occurs 2 times in greet.py, on lines 1 ('def hello(name):'), " in twice
    assert "5 ('print(hello(\"world\"))')" in twice
    # the whole line named is an old_text that occurs once
    ok, _ = call(tools, "edit_file", path="greet.py", old_text="def hello(name):", new_text="x")
    assert ok
    # many: the first four, and how many more; a long line is cut
    (ws / "many.txt").write_text("a\n" * 6 + "a" + "b" * 100 + "\n")
    ok, many = call(tools, "edit_file", path="many.txt", old_text="a", new_text="x")
    assert not ok and "on lines 1 ('a'), 2 ('a'), 3 ('a'), 4 ('a') and further down;" in many
    # a line holding it twice is named once; lines are counted at line feeds only
    (ws / "same.txt").write_text("x\fy\nhello hello\nhello\n")
    ok, same = call(tools, "edit_file", path="same.txt", old_text="hello", new_text="x")
    assert not ok and "on lines 2 ('hello hello'), 3 ('hello');" in same
    (ws / "long.txt").write_text(("zz" + "c" * 100 + "\n") * 2)
    ok, long = call(tools, "edit_file", path="long.txt", old_text="zz", new_text="x")
    assert not ok and f"on lines 1 ('zz{'c' * 78}...'), 2 (" in long
