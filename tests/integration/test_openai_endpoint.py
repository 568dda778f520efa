"""The real ChatOpenAI path against an OpenAI-compatible server on 127.0.0.1 that misbehaves.

Every run must end with a summary, with each failed structured result counted as SPEC section 3
says (every attempt of phase_plan, plan, judge and replan is a step, failed parses included), and
neither the API key nor the endpoint's URL may reach a checkpoint, a log line or a report.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from openai_server import FakeOpenAI, InContent, Prose, Status, Truncated

from phasegraph import Context, build_graph
from phasegraph.models import describe_model, model_from_context, model_kind
from phasegraph.models.selection import HTTP_RETRIES

from scripts import ANALYSIS, SUMMARY, final_state, judgement, phases, round_plan

pytestmark = pytest.mark.integration

KEY = "sk-phasegraph-test-0123456789abcdef"
ECHO = round_plan(("t1", "echo", {"text": "hello"}))


def _run(
    server: FakeOpenAI, tools: list[Any], db: Path, thread: str = "t", **settings: Any
) -> dict[str, Any]:
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(tools=tools, checkpointer=saver)
        context = Context(model="fake-model", base_url=server.base_url, **settings)
        out: dict[str, Any] = final_state(graph, 
            {"request": "Report on the workspace files"},
            {"configurable": {"thread_id": thread}},
            context=context,
        )
        return out


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PHASEGRAPH_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def test_each_misbehaviour_is_repaired_and_counted(tools: list[Any], tmp_path: Path) -> None:
    script: dict[str, list[Any]] = {
        # a 429 is retried by the HTTP client after the server's retry-after-ms
        "request_analyser": [Status(429, {"retry-after-ms": "20"}), ANALYSIS],
        "phase_planner": [Prose(), phases("p1")],
        "plan_tool_call": [Truncated(ECHO), ECHO],
        # a schema violation: next_action is not one of the allowed values
        "judge_tasks": [{**judgement(), "next_action": "celebrate"}, judgement()],
        "summarizer": [Status(500), SUMMARY],
    }
    with FakeOpenAI(script) as server:
        out = _run(server, tools, tmp_path / "t.sqlite")

    assert out["status"] == "completed"
    assert out["final_summary"].startswith("## Report")
    assert [r["status"] for r in out["rounds"][0]["results"]] == ["ok"]
    # the prose, the cut-off arguments and the schema violation: one failed attempt each
    assert out["parse_failures"] == 3
    # phase_plan 2 attempts + plan 2 + judge 2 + one tool execution; analyse and summarize are free
    assert out["step_count"] == 7
    assert out["llm_calls"] == 1 + 2 + 2 + 2 + 1
    # the 429 and the 500 were retried inside one call each
    assert server.calls("request_analyser") == 2
    assert server.calls("summarizer") == 2
    # every stage asked the server for its function by name
    for request in server.requests:
        assert request.body["tool_choice"]["function"]["name"] == request.function
        assert request.body["temperature"] == 0


def test_a_server_that_ignores_tool_choice_still_works(tools: list[Any], tmp_path: Path) -> None:
    script: dict[str, list[Any]] = {
        "request_analyser": [InContent(ANALYSIS)],
        "phase_planner": [InContent(phases("p1"))],
        "plan_tool_call": [InContent(ECHO)],
        "judge_tasks": [InContent(judgement())],
        "summarizer": [InContent(SUMMARY)],
    }
    with FakeOpenAI(script) as server:
        out = _run(server, tools, tmp_path / "t.sqlite")
    assert out["status"] == "completed"
    assert out["parse_failures"] == 0
    assert out["final_summary"].startswith("## Report")


def test_a_stage_that_never_answers_properly_ends_with_a_summary(
    tools: list[Any], tmp_path: Path
) -> None:
    script: dict[str, list[Any]] = {
        "request_analyser": [ANALYSIS],
        "phase_planner": [Prose()],  # always prose
        "summarizer": [Prose("A summary in prose.")],
        "": [Prose("Nothing could be planned.")],  # the plain-text request that follows
    }
    with FakeOpenAI(script) as server:
        out = _run(server, tools, tmp_path / "t.sqlite", max_parse_retries=2)
    # No stage's bad answers end a run (SPEC 1): code plans the request as one phase, and that
    # phase, with no round plan either, ends short; the run says so rather than "failed".
    assert out["status"] == "incomplete"
    assert [f["stage"] for f in out["fallbacks"]] == ["phase_plan", "plan"]
    assert "no usable round plan" in out["shortfalls"][0]
    # the summarizer never called its function either: its plain-text answer is the summary
    assert "Nothing could be planned." in out["final_summary"]
    # phase_plan, plan and summarize: each the first attempt and two repairs
    assert out["parse_failures"] == 3 + 3 + 3
    assert out["step_count"] == 3 + 3  # every attempt of phase_plan and plan (SPEC 3)
    assert server.calls("phase_planner") == 3


def test_no_key_or_url_in_checkpoints_logs_or_reports(
    tools: list[Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    script: dict[str, list[Any]] = {
        "request_analyser": [ANALYSIS],
        # an error body that quotes the key, as careless servers do, on every attempt
        "phase_planner": [Status(400, echo_auth=True)],
        "summarizer": [SUMMARY],
    }
    db = tmp_path / "t.sqlite"
    caplog.set_level(logging.DEBUG, logger="phasegraph")
    with FakeOpenAI(script) as server:
        out = _run(server, tools, db)
        assert any(KEY in r.authorization for r in server.requests)  # the key was really sent
        url = server.base_url
    assert out["status"] == "failed"
    # the server's words are kept, the key inside them is masked
    assert "bad credentials: Bearer ***" in out["error"]["message"]

    with sqlite3.connect(db) as conn:  # fold the WAL into the main file before reading it
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = db.read_bytes()
    assert b"bad credentials" in raw
    for secret in (KEY, url, url.split("//")[1]):
        assert secret.encode() not in raw
        assert secret not in repr(out)
        assert secret not in caplog.text


def test_model_settings_select_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    context = Context(model="fake-model", base_url="http://127.0.0.1:9/v1")
    assert model_kind(context) == "openai"
    assert "127.0.0.1" not in describe_model(context)
    model = model_from_context(context)
    assert model.max_retries == HTTP_RETRIES  # type: ignore[attr-defined]
    assert str(model.openai_api_base) == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert model_kind(Context(model="other")) == "openai"
