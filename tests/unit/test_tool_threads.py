"""The threads tool calls run on (`tools.workers`): kept for the next call, never shared by two."""

from __future__ import annotations

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


def run_here(call: Any, name: str = "phasegraph-test") -> Any:
    """``call()`` run on a tool thread, its result waited for (at most 5 s)."""
    out: queue.SimpleQueue[Any] = queue.SimpleQueue()
    workers.run_on_tool_thread(lambda: out.put(call()), name)
    return out.get(timeout=5)


def test_a_runs_next_call_runs_on_the_thread_its_call_before_ended_on() -> None:
    seen = threading.local()

    @tool
    def where(text: str) -> str:
        """Say whether this thread ran a call of this tool before."""
        before = getattr(seen, "ran", False)
        seen.ran = True
        return "kept" if before else "new"

    # two phases, one round each, one call a round: the second round's call comes after the
    # first has ended
    script = make_script(plan_tool_call=[round_plan(("t", "where", {"text": "x"}))])
    graph = build_graph(
        model=ScriptedChatModel(script=script), tools=[where], checkpointer=InMemorySaver()
    )
    out = final_state(graph, {"request": "go"}, {"configurable": {"thread_id": "t"}})
    outputs = [r["output"] for rnd in out["rounds"] for r in rnd["results"]]
    assert outputs == ["new", "kept"]


def test_a_call_that_has_not_ended_keeps_its_thread_and_the_next_call_gets_another() -> None:
    release = threading.Event()
    held: queue.SimpleQueue[str] = queue.SimpleQueue()

    def blocked() -> None:
        held.put(threading.current_thread().name)
        release.wait(5)

    workers.run_on_tool_thread(blocked, "phasegraph-blocked")
    assert held.get(timeout=5) == "phasegraph-blocked"
    try:
        # the blocked call's thread is not free: this one runs at once, on another
        other = run_here(lambda: (threading.current_thread().name, threading.get_ident()))
        assert other[0] == "phasegraph-test"
    finally:
        release.set()


def test_a_thread_is_named_after_its_call_while_it_runs_and_idle_after() -> None:
    name, thread = run_here(lambda: (threading.current_thread().name, threading.current_thread()))
    assert name == "phasegraph-test"
    deadline = time.monotonic() + 5
    while thread.name != workers.IDLE_NAME and time.monotonic() < deadline:
        time.sleep(0.01)
    assert thread.name == workers.IDLE_NAME


def test_a_call_that_raises_is_logged_and_its_thread_serves_the_next(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def raises() -> None:
        raise RuntimeError("broke outside its tool")

    with caplog.at_level(logging.ERROR, logger=workers.__name__):
        thread = run_here(threading.current_thread)
        workers.run_on_tool_thread(raises, "phasegraph-raises")
        # one call at a time here: the thread that logged is free again for the next
        deadline = time.monotonic() + 5
        while "broke outside its tool" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "broke outside its tool" in caplog.text
        assert thread.is_alive()


def test_idle_threads_end_and_a_call_handed_over_as_one_ends_still_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # threads that end almost as soon as they are idle: many calls are handed to a thread in
    # the moment it gives up waiting, and each must still run
    monkeypatch.setattr(workers, "KEEP_IDLE_S", 0.0)
    used = set()
    for i in range(300):
        ran, thread = run_here(lambda i=i: (i, threading.current_thread()))
        assert ran == i
        used.add(thread)
        if i % 50 == 49:
            time.sleep(0.05)  # long enough for the thread to end: the next call starts another
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(t.is_alive() for t in used):
        time.sleep(0.01)
    assert not [t for t in used if t.is_alive()]
    assert len(used) > 1
