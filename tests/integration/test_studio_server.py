"""The graph as LangGraph Studio serves it: `langgraph dev` on 127.0.0.1, driven by langgraph-sdk.

The scripted model is selected through the run's settings (the Context form in Studio); the run
pauses for plan review, the review is answered with a Command, and the summary is read back.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).parents[2]
SCRIPT = REPO / "examples" / "cli_script.json"
LANGGRAPH = Path(sys.executable).with_name("langgraph")


def thread_folders(server_folder: Path) -> Path:
    """Where the server gives runs that name no workspace a folder each: beside its own."""
    return server_folder.with_name(server_folder.name + "-threads")


def state_of(server_folder: Path) -> Path:
    """The server's phasegraph state folder (its tool journal): beside its own."""
    return server_folder.with_name(server_folder.name + "-state")


def assistant_of(client: Any) -> str:
    """The graph's assistant, once the server has loaded it (it answers before that)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            assistants = client.assistants.search(graph_id="phasegraph")
            if assistants:
                return str(assistants[0]["assistant_id"])
        except Exception:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    if not LANGGRAPH.exists():
        pytest.fail("langgraph-cli is not installed: pip install -e '.[dev]'")
    config = tmp_path / "langgraph.json"
    spec = json.loads((REPO / "langgraph.json").read_text())
    spec["dependencies"] = [str(REPO)]
    spec["graphs"] = {
        name: str(REPO / path.removeprefix("./")) for name, path in spec["graphs"].items()
    }
    config.write_text(json.dumps(spec))
    # a model file a run may name on a server lies in the server's folder
    shutil.copy(SCRIPT, tmp_path / SCRIPT.name)
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [
            str(LANGGRAPH),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--config",
            str(config),
        ],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={
            **{k: v for k, v in os.environ.items() if k != "PHASEGRAPH_WORKSPACE"},
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_NO_VERSION_CHECK": "1",
            "PHASEGRAPH_WORKSPACES": str(thread_folders(tmp_path)),
            "PHASEGRAPH_STATE_DIR": str(state_of(tmp_path)),
        },
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError((tmp_path / "server.log").read_text()) from None
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        log.close()
    assert proc.poll() is not None  # the server we started is gone


def test_studio_server_pauses_for_review_and_resumes(server: str, tmp_path: Path) -> None:
    from langgraph_sdk import get_sync_client

    # a folder a run may name on a server: under the threads' folder (or the operator's own)
    workspace = thread_folders(tmp_path) / "ws"
    workspace.mkdir(parents=True)
    (workspace / "notes.txt").write_text("meeting notes\n")
    (workspace / "todo.txt").write_text("buy milk\n")
    client = get_sync_client(url=server)
    assistant = assistant_of(client)
    schemas = client.assistants.get_schemas(assistant)
    form = schemas["context_schema"]["properties"]
    assert "review" in form and form["model"]["description"]  # Studio's settings form
    assert form["max_steps"]["default"] == 40  # with the defaults a run would get
    # the input form (the request, optional checks) and the declared output
    assert schemas["input_schema"]["required"] == ["request"]
    assert {"status", "final_summary", "checks", "shortfalls", "evidence"} <= set(
        schemas["output_schema"]["properties"]
    )

    context = {"model": f"scripted:{SCRIPT.name}", "review": "plan", "workspace": str(workspace)}
    thread = client.threads.create()["thread_id"]
    paused = client.runs.wait(
        thread, assistant, input={"request": "List the files"}, context=context
    )
    assert paused["status"] == "awaiting_review"
    assert paused["pending_review"]["kind"] == "plan_review"
    assert [p["name"] for p in paused["pending_review"]["phases"]] == ["Survey", "Write"]
    assert client.threads.get_state(thread)["next"] == ["human_review"]

    done = client.runs.wait(
        thread,
        assistant,
        command={"update": {"human_feedback": {"action": "approve"}}},
        context=context,
    )
    assert done["status"] == "completed"
    assert done["final_summary"].startswith("## Files listed")
    assert (workspace / "files.md").read_text() == "notes.txt\ntodo.txt"


def test_studio_server_resumes_with_a_command_and_gives_a_run_its_own_folder(
    server: str, tmp_path: Path
) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server)
    assistant = assistant_of(client)
    before = sorted(p.name for p in tmp_path.iterdir())  # the server's own folder
    context = {"model": f"scripted:{SCRIPT.name}", "review": "plan"}  # no workspace
    thread = client.threads.create()["thread_id"]
    # a file elsewhere on the server's disk is not a client's to name as its model
    with pytest.raises(Exception, match=r"\['model'\] go beyond"):
        client.runs.wait(thread, assistant, input={"request": "List the files"},
                         context={**context, "model": f"scripted:{SCRIPT}"})  # fmt: skip
    paused = client.runs.wait(
        thread, assistant, input={"request": "List the files"}, context=context
    )
    assert paused["status"] == "awaiting_review"
    state = client.threads.get_state(thread)
    assert state["interrupts"] and state["interrupts"][0]["value"]["kind"] == "plan_review"
    # the same question where the run's output and the thread (Studio's view of it) show one
    (asked,) = [{"id": i["id"], "value": i["value"]} for i in state["interrupts"]]
    assert [{"id": i["id"], "value": i["value"]} for i in paused["__interrupt__"]] == [asked]
    (shown,) = client.threads.get(thread)["interrupts"].values()
    assert [{"id": i["id"], "value": i["value"]} for i in shown] == [asked]
    # the server's own message for new input to a paused thread, not "an internal error"
    with pytest.raises(Exception, match="paused for a plan_review"):
        client.runs.wait(thread, assistant, input={"request": "again"}, context=context)
    # an answer that does not fit is the run's error, and the thread stays paused as it was
    with pytest.raises(Exception, match="takes action approve.*still paused"):
        client.runs.wait(thread, assistant, command={"resume": {"action": "bogus"}},
                         context=context)  # fmt: skip
    again = client.threads.get_state(thread)
    assert again["next"] == ["human_review"] and again["values"]["status"] == "awaiting_review"
    known = {t["thread_id"] for t in client.threads.search(limit=100)}
    client.threads.copy(thread)
    (copy,) = {t["thread_id"] for t in client.threads.search(limit=100)} - known
    done = client.runs.wait(thread, assistant, command={"resume": {"action": "approve"}},
                            context=context)  # fmt: skip
    assert done["status"] == "completed"
    own = thread_folders(tmp_path) / thread
    assert done["workspace"] == str(own.resolve())
    assert (own / "files.md").exists()
    assert [f["path"] for f in done["evidence"]["files"]] == ["files.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing in the server's folder
    with pytest.raises(Exception, match="has ended"):
        client.runs.wait(thread, assistant, input={"request": "again"}, context=context)
    # a copy of the thread goes on in the folder its state records, not an empty one of its id
    (own / "files.md").unlink()  # else the copy's unread overwrite of it is held
    copied = client.runs.wait(copy, assistant, command={"resume": {"action": "approve"}},
                              context=context)  # fmt: skip
    assert copied["status"] == "completed" and copied["workspace"] == str(own.resolve())
    assert not (thread_folders(tmp_path) / copy).exists()


def test_studio_server_journals_a_call_that_may_not_run_twice_beside_its_threads(
    server: str, tmp_path: Path
) -> None:
    """The server's checkpointer keeps threads across restarts; the tool journal lasts as long.

    It was in the server's memory: a restart lost it, and a resumed thread could run a call
    again that had run before (SPEC section 5).
    """
    import sqlite3

    from langgraph_sdk import get_sync_client

    script = json.loads(SCRIPT.read_text())
    script["phase_planner"][0]["phases"][1]["allowed_tools"].append("edit_file")
    # the thread's own folder is empty: the written listing says so, and a round of its own
    # (a typed edit beside the listing would wait for it) marks it
    edit = {"path": "files.md", "old_text": "is empty", "new_text": "is empty (edited)"}
    script["plan_tool_call"].append(
        {"tasks": [{"id": "t3", "tool": "edit_file", "arguments": edit, "purpose": "mark it"}]}
    )
    written, *_ = script["judge_tasks"][1:]
    script["judge_tasks"][1:] = [
        {**written, "phase_completed": False, "phase_completion_rate": 0.5,
         "next_action": "continue_phase"},
        written,
    ]  # fmt: skip
    (tmp_path / "edits.json").write_text(json.dumps(script))
    client = get_sync_client(url=server)
    thread = client.threads.create()["thread_id"]
    done = client.runs.wait(
        thread,
        assistant_of(client),
        input={"request": "List the files"},
        context={"model": "scripted:edits.json"},
    )
    own = thread_folders(tmp_path) / thread
    assert (own / "files.md").read_text().endswith("is empty (edited)"), done
    with sqlite3.connect(state_of(tmp_path) / ".phasegraph" / "journal.sqlite") as conn:
        rows = conn.execute("SELECT tool, state FROM phasegraph_tool_journal").fetchall()
    assert rows == [("edit_file", "finished")]  # the idempotent write needs no entry
