"""The threads tool calls run on (`tools.workers`): kept for the next call, never shared by two."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from phasegraph import ScriptedChatModel, build_graph
from phasegraph.tools import workers

from scripts import final_state, make_script, round_plan


@pytest.fixture(autouse=True)
def no_idle_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no free thread: the threads earlier tests left are not handed out."""
    monkeypatch.setattr(workers, "_idle", [])


def run_here(call: Any, name: str = "phasegraph-test", wait_s: float = 5) -> Any:
    """``call()`` run on a tool thread, its result waited for."""
    out: queue.SimpleQueue[Any] = queue.SimpleQueue()
    workers.run_on_tool_thread(lambda: out.put(call()), name)
    return out.get(timeout=wait_s)


def wait_until(condition: Any) -> None:
    deadline = time.monotonic() + 5
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_runs_next_call_runs_on_the_thread_its_call_before_ended_on() -> None:
    threads: list[threading.Thread] = []

    @tool
    def where(text: str) -> str:
        """Note the thread this call runs on."""
        threads.append(threading.current_thread())
        return text

    # two phases, one round each, one call a round: the second round's call comes after the
    # first has ended
    script = make_script(plan_tool_call=[round_plan(("t", "where", {"text": "x"}))])
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=[where], checkpointer=InMemorySaver()
    )
    out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "t"}})
    assert [r["status"] for rnd in out["rounds"] for r in rnd["results"]] == ["ok", "ok"]
    assert len(threads) == 2 and threads[0] is threads[1]
    assert threads[0] is not threading.current_thread()


def test_a_call_that_has_not_ended_keeps_its_thread_and_the_next_call_gets_another() -> None:
    release = threading.Event()
    held: queue.SimpleQueue[threading.Thread] = queue.SimpleQueue()

    def blocked() -> None:
        held.put(threading.current_thread())
        release.wait(5)

    workers.run_on_tool_thread(blocked, "phasegraph-blocked")
    blocked_on = held.get(timeout=5)
    try:
        # handed to the blocked thread, it would not run within the second waited for
        other, name = run_here(
            lambda: (threading.current_thread(), threading.current_thread().name), wait_s=1
        )
        assert other is not blocked_on and name == "phasegraph-test"
    finally:
        release.set()
        # free before the next test: it must not be the thread that test's calls are handed
        wait_until(lambda: blocked_on.name == workers.IDLE_NAME)


def test_a_thread_is_named_after_its_call_while_it_runs_and_idle_after() -> None:
    name, thread = run_here(lambda: (threading.current_thread().name, threading.current_thread()))
    assert name == "phasegraph-test"
    wait_until(lambda: thread.name == workers.IDLE_NAME)
    assert thread.name == workers.IDLE_NAME


def test_a_call_that_raises_is_logged_and_its_thread_serves_the_next(
    caplog: pytest.LogCaptureFixture,
) -> None:
    raised_on: list[threading.Thread] = []

    def raises() -> None:
        raised_on.append(threading.current_thread())
        raise RuntimeError("broke outside its tool")

    with caplog.at_level(logging.ERROR, logger=workers.__name__):
        workers.run_on_tool_thread(raises, "phasegraph-raises")
        wait_until(lambda: workers._idle)  # the thread that raised is free again
        assert "broke outside its tool" in caplog.text
    assert run_here(threading.current_thread) is raised_on[0]


def test_a_call_handed_to_a_thread_as_its_wait_ends_runs_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(workers, "KEEP_IDLE_S", 0.2)
    first = run_here(threading.current_thread)
    wait_until(lambda: workers._idle)
    held = workers._lock
    with held:
        # the thread's wait ends while the lock is held here: it waits for the lock, still
        # on the idle list; a caller (with a lock of its own) takes it and hands it a call
        time.sleep(0.5)
        monkeypatch.setattr(workers, "_lock", threading.Lock())
        out: queue.SimpleQueue[threading.Thread] = queue.SimpleQueue()
        workers.run_on_tool_thread(lambda: out.put(threading.current_thread()), "late")
        assert not workers._idle
    assert out.get(timeout=5) is first


def test_threads_with_no_call_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "KEEP_IDLE_S", 0.05)
    used = set()
    for i in range(40):
        ran, thread = run_here(lambda i=i: (i, threading.current_thread()))
        assert ran == i
        used.add(thread)
        if i % 10 == 9:
            time.sleep(0.2)  # long enough for the thread to end: the next call starts another
    wait_until(lambda: not any(t.is_alive() for t in used))
    assert not [t for t in used if t.is_alive()]
    assert len(used) > 1 and not workers._idle


def test_a_calls_event_loop_is_not_the_next_calls() -> None:
    def leaves_a_closed_loop() -> threading.Thread:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)  # as a sync wrapper of an async client might
        loop.close()
        return threading.current_thread()

    def its_loop() -> tuple[threading.Thread, str]:
        try:
            return threading.current_thread(), repr(asyncio.get_event_loop())
        except RuntimeError as exc:  # as on a new thread: no loop
            return threading.current_thread(), str(exc)

    first = run_here(leaves_a_closed_loop)
    wait_until(lambda: workers._idle)
    thread, loop = run_here(its_loop)
    assert thread is first and "no current event loop" in loop
