"""The graph as LangGraph Studio serves it: `langgraph dev` on 127.0.0.1, driven by langgraph-sdk.

The scripted model is selected through the run's settings (the Context form in Studio); the run
pauses for plan review, the review is answered with a Command, and the summary is read back.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).parents[2]
SCRIPT = REPO / "examples" / "cli_script.json"
LANGGRAPH = Path(sys.executable).with_name("langgraph")


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
        env={**os.environ, "LANGSMITH_TRACING": "false", "LANGGRAPH_NO_VERSION_CHECK": "1"},
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

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("meeting notes\n")
    (workspace / "todo.txt").write_text("buy milk\n")
    client = get_sync_client(url=server)
    deadline = time.monotonic() + 60
    while True:  # the server answers before the graph is loaded
        try:
            assistants = client.assistants.search(graph_id="phasegraph")
            if assistants:
                break
        except Exception:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)
    assistant = assistants[0]["assistant_id"]
    schemas = client.assistants.get_schemas(assistant)
    form = schemas["context_schema"]["properties"]
    assert "review" in form and form["model"]["description"]  # Studio's settings form

    context = {"model": f"scripted:{SCRIPT}", "review": "plan", "workspace": str(workspace)}
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
    assert (workspace / "files.md").read_text() == "- notes.txt\n- todo.txt\n"
