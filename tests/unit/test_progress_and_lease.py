"""Progress events (SPEC section 9), per-thread leases (SPEC section 8), the scripted model file."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from phasegraph import Context, ScriptedChatModel, ThreadBusyError, build_graph, resume
from phasegraph.models import model_from_context
from phasegraph.storage.database import sqlite_database
from phasegraph.storage.lease import TableLeaseStore

from scripts import final_state, judgement, make_script, phases, round_plan


def named(chunk: dict[str, Any]) -> str:
    """An event's name, with the stage a ``stage_started`` announces."""
    return f"{chunk['event']}:{chunk['stage']}" if "stage" in chunk else chunk["event"]


def test_progress_events_in_order(tools) -> None:
    script = make_script(
        phase_planner=[phases("p1", rounds=2)],
        judge_tasks=[judgement("replan", completed=False, rate=0.4), judgement()],
        replanner=[{"status": "replanned", "phases": [phases("p2")["phases"][0]]}],
    )
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=tools, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "e"}}
    events = [
        named(chunk)
        for chunk in graph.stream(
            {"request": "go"}, config, context=Context(review="plan"), stream_mode="custom"
        )
    ]
    # each stage that waits on the model says so first, so that a person knows what for
    assert events == [
        "stage_started:analyse",
        "analysed",
        "stage_started:phase_plan",
        "phases_planned",
        "awaiting_review",
    ]
    events = [
        chunk
        for mode, chunk in graph.stream(
            None, config, context=Context(review="plan"), stream_mode=["custom", "updates"]
        )
        if mode == "custom"
    ]
    # resuming without an answer: human_review pauses again and says why
    assert [e["event"] for e in events] == ["awaiting_review"]
    assert "no answer given" in events[0]["error"]
    from langgraph.types import Command

    events = [
        named(chunk)
        for chunk in graph.stream(
            Command(update={"human_feedback": {"action": "approve"}}),
            config,
            context=Context(review="plan"),
            stream_mode="custom",
        )
    ]
    assert events == [
        "review_answered",
        "stage_started:plan",
        "phase_started",
        "round_planned",
        "task_started",
        "task_finished",
        "stage_started:judge",
        "judged",
        "stage_started:replan",
        "replanned",
        "stage_started:plan",
        "phase_started",
        "round_planned",
        "task_started",
        "task_finished",
        "stage_started:judge",
        "judged",
        "phase_ended",
        "stage_started:summarize",
        "summary_ready",
    ]


def test_a_judges_question_is_announced_after_its_judgement(tools) -> None:
    asks = judgement("ask_user", completed=False, rate=0.2, question="Which folder?")
    script = make_script(phase_planner=[phases("p1", rounds=2)], judge_tasks=[asks])
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=tools, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "asks"}}
    final_state(graph, {"request": "go"}, config, context=Context(review="plan"))
    events: list[str] = []
    resume(graph, config, {"action": "approve"}, context=Context(review="plan"),
           on_progress=lambda event: events.append(named(event)))  # fmt: skip
    assert events[-3:] == ["stage_started:judge", "judged", "awaiting_review"]


def test_round_planned_event_carries_the_task_count(tools) -> None:
    script = make_script(
        phase_planner=[phases("p1")],
        plan_tool_call=[round_plan(("a", "echo", {"text": "1"}), ("b", "echo", {"text": "2"}))],
    )
    graph = build_graph(model=ScriptedChatModel(script=script), tools=tools)
    planned = [
        c
        for c in graph.stream({"request": "go"}, stream_mode="custom")
        if c["event"] == "round_planned"
    ]
    assert planned == [
        {"event": "round_planned", "phase_id": "p1", "round": 1, "tasks": 2, "asked_again": False}
    ]


def test_two_runners_in_one_process_one_gets_busy() -> None:
    release = threading.Event()
    entered = threading.Event()

    @tool
    def block(label: str) -> str:
        """Wait until the test releases it."""
        entered.set()
        release.wait(20)
        return label

    script = make_script(
        phase_planner=[phases("p1")], plan_tool_call=[round_plan(("t1", "block", {"label": "x"}))]
    )
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=[block], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "busy"}}
    outcome: dict[str, object] = {}
    first = threading.Thread(
        target=lambda: outcome.setdefault("first", final_state(graph, {"request": "go"}, config))
    )
    first.start()
    assert entered.wait(20)
    with pytest.raises(ThreadBusyError, match=r"'busy' is busy: another runner \(a run in this"):
        final_state(graph, None, config)
    with pytest.raises(ThreadBusyError):
        resume(graph, config)
    release.set()
    first.join(20)
    assert outcome["first"]["status"] == "completed"
    # the lease is given back: the thread can be read and used again
    assert graph.get_state(config).next == ()


def test_a_lease_is_held_while_its_runner_lives(tmp_path: Path) -> None:
    db = tmp_path / "leases.sqlite"
    store = TableLeaseStore(sqlite_database(str(db)))
    assert not store.held("t")
    store.acquire("t", "owner")
    assert store.held("t")
    child = os.fork()  # a runner that died holding it: not held
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE phasegraph_leases SET pid = ? WHERE thread_id = 't'", (child,))
    assert not store.held("t")


def test_table_lease_store_blocks_a_live_holder_and_reclaims_a_dead_one(tmp_path: Path) -> None:
    db = tmp_path / "leases.sqlite"
    store = TableLeaseStore(sqlite_database(str(db)))
    store.acquire("t", "alive-owner")
    with pytest.raises(ThreadBusyError, match=f"pid {os.getpid()}"):
        store.acquire("t", "someone-else")
    store.release("t", "alive-owner")
    store.acquire("t", "someone-else")
    # a holder whose process is gone (pid of an exited child) is taken over
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE phasegraph_leases SET pid = ? WHERE thread_id = 't'", (child,))
    store.acquire("t", "third")
    # and an expired lease is taken over too, whatever its host
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE phasegraph_leases SET host = 'elsewhere', expires_at = ?", (time.time() - 1,)
        )
    store.acquire("t", "fourth")


def test_sqlite_checkpointer_gets_a_lease_table(tmp_path: Path, tools) -> None:
    db = tmp_path / "threads.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(
            model=ScriptedChatModel(script=make_script()), tools=tools, checkpointer=saver
        )
        out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "s"}})
    assert out["status"] == "completed"
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM phasegraph_leases").fetchone()[0] == 0


def test_scripted_model_from_file_and_settings(tmp_path: Path, tools) -> None:
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(make_script()), encoding="utf-8")
    graph = build_graph(tools=tools, checkpointer=InMemorySaver())
    out = final_state(graph, 
        {"request": "go"},
        {"configurable": {"thread_id": "f"}},
        context=Context(model=f"scripted:{path}"),
    )
    assert out["status"] == "completed"
    assert out["step_count"] == 7


def test_a_new_run_of_a_scripted_model_starts_its_script_again(tmp_path: Path) -> None:
    # positions are the run's: a thread id used again in this process (a new checkpointer, or
    # none at all) does not go on where the last run's script stopped
    script = Path(__file__).parents[2] / "examples" / "cli_script.json"
    ran = []
    for i, saver in enumerate([InMemorySaver(), InMemorySaver(), None, None]):
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        (ws / "notes.txt").write_text("meeting notes\n")
        out = build_graph(checkpointer=saver).invoke(
            {"request": "List the files and write them to files.md"},
            {"configurable": {"thread_id": "again"}} if saver else None,
            context=Context(model=f"scripted:{script}", workspace=str(ws)),
        )
        ran.append((out["status"], out["step_count"], (ws / "files.md").exists()))
    assert ran == [ran[0]] * 4 and ran[0][0] == "completed" and ran[0][2]


def test_scripted_models_kept_are_bounded_and_the_latest_reused(tmp_path: Path) -> None:
    from phasegraph.models import selection

    path = tmp_path / "demo.json"
    path.write_text(json.dumps(make_script()), encoding="utf-8")
    context = Context(model=f"scripted:{path}")
    first = model_from_context(context, "t", "run-0")
    for run in range(1, 3 * selection.SCRIPTED_KEPT):
        model_from_context(context, "t", f"run-{run}")
        assert model_from_context(context, "t", "run-0") is first  # in use: kept
    kept = [k for k in selection._cache if k[0] == "scripted" and k[1] == "t"]
    assert len(kept) <= selection.SCRIPTED_KEPT


def test_scripted_model_file_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"plan_tool_call": {"not": "a list"}}', encoding="utf-8")
    with pytest.raises(ValueError, match="must map function names to lists"):
        model_from_context(Context(model=f"scripted:{bad}"))
    with pytest.raises(ValueError, match="cannot read scripted model file"):
        model_from_context(Context(model=f"scripted:{tmp_path / 'missing.json'}"))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"model": "", "base_url": "http://127.0.0.1:9/v1"}, "a base URL is set but no model name"),
        (
            {"model": "local:/nonexistent/model.gguf"},
            "model file '/nonexistent/model.gguf' does not",
        ),
        ({"model": "gpt-x", "base_url": ""}, "needs an API key"),
    ],
)
def test_a_model_that_cannot_be_built_is_a_clear_failure_with_a_summary(
    tools, monkeypatch, settings, message
) -> None:
    for name in ("PHASEGRAPH_MODEL", "OPENAI_API_KEY", "PHASEGRAPH_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    out = build_graph(tools=tools).invoke({"request": "go"}, context=Context(**settings))
    assert out["status"] == "failed"
    assert message in out["final_summary"]


def test_async_runs_hold_and_release_the_lease(tools) -> None:
    """ainvoke/astream as the LangGraph server drives them: pause, then answer by Command."""
    import asyncio

    from langgraph.types import Command

    graph = build_graph(
        model=ScriptedChatModel(script=make_script()), tools=tools, checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "async"}}
    context = Context(review="plan")

    async def scenario() -> dict:
        paused = await graph.ainvoke({"request": "go"}, config, context=context)
        assert paused["pending_review"]["kind"] == "plan_review"
        # the server may step one stream from several tasks: the lease is taken in one
        # task's context and given back in another's
        stream = graph.astream(
            Command(update={"human_feedback": {"action": "approve"}}),
            config,
            context=context,
            stream_mode="values",
        )
        chunks = [await asyncio.create_task(stream.__anext__())]
        chunks += [chunk async for chunk in stream]
        return chunks[-1]

    out = asyncio.run(scenario())
    assert out["status"] == "completed"
    with graph.lease(config):  # released: taking it again does not raise ThreadBusyError
        pass


def test_a_stream_left_unfinished_does_not_lend_its_lease_to_its_reader(tools) -> None:
    """A reader that stops reading, or runs the thread again between chunks, is another run."""
    import asyncio

    from langgraph.types import Command

    graph = build_graph(
        model=ScriptedChatModel(script=make_script()), tools=tools, checkpointer=InMemorySaver()
    )
    context = Context(review="plan")

    async def scenario() -> None:
        config = {"configurable": {"thread_id": "left"}}
        async for _ in graph.astream({"request": "go"}, config, context=context):
            with pytest.raises(ThreadBusyError):  # inside the loop: the stream holds it
                await graph.ainvoke(None, config, context=context)
            break
        await asyncio.sleep(0.05)  # the loop closes the stream left behind
        await graph.ainvoke(None, config, context=context)  # on to the review's pause
        answers = await asyncio.gather(
            *(graph.ainvoke(Command(resume="approve"), config, context=context) for _ in "ab"),
            return_exceptions=True,
        )
        assert sorted(type(a).__name__ for a in answers) == ["ThreadBusyError", "dict"]

    asyncio.run(scenario())


def test_an_async_lease_given_up_while_waiting_is_given_back(tmp_path: Path) -> None:
    import asyncio

    from phasegraph.storage.lease import ahold_lease

    db = tmp_path / "leases.sqlite"
    store = TableLeaseStore(sqlite_database(str(db)))
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer: taking the lease has to wait

    async def enter() -> None:
        async with ahold_lease(store, "t"):
            raise AssertionError("the body must not run: the caller gave up")

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(enter(), timeout=0.3)
        blocker.execute("ROLLBACK")  # the waiting worker thread now takes the lease ...
        await asyncio.sleep(1.0)  # (it needs milliseconds) ... and must give it back itself
        rows = sqlite3.connect(db).execute("SELECT count(*) FROM phasegraph_leases")
        assert rows.fetchone()[0] == 0
        assert not any(t.name == "lease-t" and t.is_alive() for t in threading.enumerate())

    asyncio.run(main())
    store.acquire("t", "next-runner")  # free for the next runner


def test_a_run_whose_lease_was_taken_over_stops_before_advancing_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from phasegraph.storage import lease as lease_module

    db = tmp_path / "threads.sqlite"
    # a lease renewed every 0.1 s, so that a lost one shows within the test
    monkeypatch.setattr(lease_module, "LEASE_TTL_S", 0.3)

    @tool
    def stall() -> str:
        """Stall past the lease, while another runner takes the thread over."""
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE phasegraph_leases SET owner = 'another-machine'")
        time.sleep(0.5)
        return "done"

    script = make_script(
        phase_planner=[phases("p1")], plan_tool_call=[round_plan(("t1", "stall", {}))]
    )
    model = ScriptedChatModel(script=script)
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build_graph(model=model, tools=[stall], checkpointer=saver)
        with pytest.raises(ThreadBusyError, match="taken over by another runner"):
            final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "t"}})
    assert model.calls_of("judge_tasks") == []  # it stopped before judging the round
    with sqlite3.connect(db) as conn:  # and left the new holder's lease alone
        assert conn.execute("SELECT owner FROM phasegraph_leases").fetchall() == [
            ("another-machine",)
        ]


def test_a_terminal_shows_what_a_stage_waits_for_and_a_log_does_not() -> None:
    import io
    import re

    from rich.console import Console

    from phasegraph.cli.render import progress_printer

    events = [
        {"event": "stage_started", "stage": "plan"},
        {"event": "round_planned", "phase_id": "p1", "round": 1, "tasks": 2},
    ]
    for terminal in (True, False):
        sink = io.StringIO()
        err = Console(file=sink, force_terminal=terminal, width=60)
        with progress_printer(err) as show:
            show(events[0])
            time.sleep(0.6)  # the waiting line refreshes twice a second
            show(events[1])
        text = sink.getvalue()
        assert bool(re.search(r"planning a round\.\.\. \d+ s", text)) is terminal, text
        assert "round 1: 2 task(s) planned" in text
        assert "stage_started" not in text


def test_the_clis_ctrl_c_stops_work_while_a_command_runs_and_not_after() -> None:
    # a program may call the CLI's main more than once: Ctrl-C during one command must not
    # leave every later command's work stopped, nor the program's own Ctrl-C taken over
    import signal

    from phasegraph.interruption import stop_work_on_interrupt
    from phasegraph.tools.stopping import STOPPING

    # as Python sets it up in a terminal; a job started in the background has Ctrl-C ignored
    started_with = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), stop_work_on_interrupt():
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs at once; not reached
        assert not STOPPING.is_set()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, started_with)


@pytest.mark.parametrize(
    ("runs", "goes_on"), [("invoke", "none"), ("stream", "command"), ("invoke", "resume")]
)
def test_ctrl_c_in_a_model_answer_stops_it_and_the_thread_resumes_from_that_stage(
    tmp_path: Path, runs: str, goes_on: str
) -> None:
    # the interrupt stopped the local model's answer at its next token; read as a cut answer,
    # it was retried whole (the process exited a minute later), then replaced by the stage's
    # fallback. invoke runs the stage on the caller's thread, stream (custom) on a worker's.
    import signal

    from phasegraph.models import stop

    class Interrupted(ScriptedChatModel):
        planned: int = 0

        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            tools = kwargs.get("tools") or []
            if any("phase_planner" in json.dumps(t) for t in tools) and not self.planned:
                self.planned = 1
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the model writes
                while not stop.stopped():
                    time.sleep(0.01)  # the model writes on until it is stopped
                stop.check()
            return super()._generate(messages, *args, **kwargs)

    model = Interrupted(script=make_script())
    graph = build_graph(model=model, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "ctrl-c"}}
    context = Context(workspace=str(tmp_path))
    start = {"request": "two phases of work"}
    started_with = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            if runs == "invoke":
                graph.invoke(start, config, context=context)
            else:
                for _ in graph.stream(start, config, context=context, stream_mode="custom"):
                    pass
        assert graph.get_state(config).values.get("phases") in (None, [])  # no fallback kept
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, started_with)
    # every way of going on takes it up where it stopped: None, a Command, the helper
    if goes_on == "resume":
        out = resume(graph, config, context=context)
    else:
        given = Command(resume="go on") if goes_on == "command" else None
        out = final_state(graph, given, config, context=context)
    assert out.get("error") is None and out["status"] != "failed"
    assert [p["id"] for p in out["phases"]][:2] == ["p1", "p2"]  # the model's, asked again
