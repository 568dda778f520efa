"""LangGraph's conventions as its users expect them (SPEC sections 6 and 8): declared schemas,
a pause's question in ``interrupts``, ``Command(resume=...)``, settings in ``configurable``, and
a workspace of its own for a server's run that names none."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any, get_type_hints

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from phasegraph import Context, ScriptedChatModel, build_graph
from phasegraph.errors import ConfigurationError, FeedbackError, ThreadStateError
from phasegraph.state import State

from scripts import ANALYSIS, SUMMARY, judgement, phases, round_plan

WRITE = round_plan(("w", "write_file", {"path": "out.txt", "content": "hello"}))


def script() -> dict[str, list[Any]]:
    return {
        "request_analyser": [ANALYSIS],
        "phase_planner": [phases("p1")],
        "plan_tool_call": [WRITE],
        "judge_tasks": [judgement()],
        "summarizer": [SUMMARY],
    }


def graph_for(**kw: Any) -> Any:
    return build_graph(model=ScriptedChatModel(script=script()), checkpointer=InMemorySaver(), **kw)


def test_the_input_and_output_are_declared_schemas() -> None:
    graph = graph_for()
    given = graph.get_input_jsonschema()
    assert given["required"] == ["request"] and set(given["properties"]) == {"request", "checks"}
    assert given["properties"]["request"]["description"]
    out = graph.get_output_jsonschema()["properties"]
    assert {"status", "final_summary", "checks", "shortfalls", "phase_outcomes"} <= set(out)
    assert len(out) <= 12 and "dispatch" not in out and "round_seq" not in out
    settings = graph.get_context_jsonschema()["properties"]
    assert settings["max_steps"]["default"] == 40 and settings["review"]["default"] == "none"
    # Studio's form knows each limit before a run is refused for it
    assert (settings["max_steps"]["minimum"], settings["max_steps"]["maximum"]) == (1, 10_000)
    assert settings["max_phases"]["maximum"] == 5


def test_the_state_a_server_shows_is_the_state_schema_alone() -> None:
    # the LangGraph server's state schema (Studio's state view) is the graph's stream channels:
    # a task's input, which run_task is sent, is not a field of the state
    graph = graph_for()
    assert set(graph.stream_channels_list) == set(get_type_hints(State))
    assert not {"task", "journal_key", "timeout_s", "last_wave"} & set(graph.channels)


def test_a_run_gives_back_its_output_not_its_internal_state(tmp_path: Path) -> None:
    out = graph_for().invoke({"request": "write out.txt"}, {"configurable": {"thread_id": "o"}},
                             context=Context(workspace=str(tmp_path)))  # fmt: skip
    assert out["status"] == "completed" and out["final_summary"]
    assert out["workspace"] == str(tmp_path.resolve())
    assert "dispatch" not in out and "rounds" not in out


def test_a_pause_shows_its_question_in_interrupts_and_command_resume_answers_it(
    tmp_path: Path,
) -> None:
    graph = graph_for()
    config = {"configurable": {"thread_id": "pause"}}
    context = Context(workspace=str(tmp_path), review="plan")
    out = graph.invoke({"request": "write out.txt"}, config, context=context)
    assert out["status"] == "awaiting_review"
    asked = out["__interrupt__"][0].value
    assert asked["kind"] == "plan_review" and asked["actions"][0] == "approve"
    state = graph.get_state(config)
    assert state.next == ("human_review",) and state.interrupts[0].value == asked
    assert state.tasks[0].interrupts[0].value == asked
    done = graph.invoke(Command(resume={"action": "approve"}), config, context=context)
    assert done["status"] == "completed" and (tmp_path / "out.txt").read_text() == "hello"
    assert graph.get_state(config).interrupts == ()


def paused_in(graph: Any, thread: str, ws: Path) -> dict[str, Any]:
    """The config of a thread paused for its plan review, started in ``ws``."""
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"request": "write out.txt"}, config,
                 context=Context(workspace=str(ws), review="plan"))  # fmt: skip
    return config


RESUMES = {
    "plain": lambda graph, config: graph.invoke(Command(resume="approve"), config),
    "async": lambda graph, config: asyncio.run(graph.ainvoke(Command(resume="approve"), config)),
    # the config of a checkpoint (get_state(...).config), as resume() after an error gives one
    "checkpoint": lambda graph, config: graph.invoke(
        Command(resume="approve"), graph.get_state(config).config
    ),
}


@pytest.mark.parametrize("default", ["current folder", "PHASEGRAPH_WORKSPACE"])
@pytest.mark.parametrize("how", list(RESUMES))
def test_a_resume_that_names_no_workspace_goes_on_in_the_threads_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, default: str
) -> None:
    # LangGraph hands each invocation only the context it is given: a resume without one must
    # not write in the caller's default folder (its current one, or the environment's, which
    # may name another project by now) while the output names the thread's
    monkeypatch.delenv("PHASEGRAPH_WORKSPACE", raising=False)
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir(), elsewhere.mkdir()
    graph = graph_for()
    config = paused_in(graph, f"moved-{how}", ws)
    monkeypatch.chdir(elsewhere)
    if default == "PHASEGRAPH_WORKSPACE":
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PHASEGRAPH_WORKSPACE", str(elsewhere))
    done = RESUMES[how](graph, config)
    assert done["status"] == "completed" and done["workspace"] == str(ws.resolve())
    assert (ws / "out.txt").read_text() == "hello" and not (elsewhere / "out.txt").exists()


def test_a_resume_names_the_setting_when_the_threads_folder_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PHASEGRAPH_WORKSPACE", raising=False)
    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir(), other.mkdir()
    graph = graph_for()
    config = paused_in(graph, "gone", ws)
    ws.rmdir()
    monkeypatch.chdir(other)
    with pytest.raises(ConfigurationError, match=r"not a folder any more.*Context\(workspace="):
        graph.invoke(Command(resume="approve"), config)
    assert graph.get_state(config).next == ("human_review",)  # still paused, nothing ran
    # a resume that names a folder goes on there, and the run's output names it from then on;
    # also when the environment names the same folder (a default only where none is named)
    monkeypatch.setenv("PHASEGRAPH_WORKSPACE", str(other))
    done = graph.invoke(Command(resume="approve"), config, context=Context(workspace=str(other)))
    assert done["status"] == "completed" and (other / "out.txt").read_text() == "hello"
    assert done["workspace"] == str(other.resolve()) and str(other) in done["final_summary"]


def test_settings_passed_in_configurable_are_the_runs_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ws").mkdir()
    graph = graph_for()
    settings = {"review": "plan", "workspace": str(tmp_path / "ws")}
    config = {"configurable": {"thread_id": "c", **settings}}
    out = graph.invoke({"request": "write out.txt"}, config)
    assert out["status"] == "awaiting_review"  # review came from configurable
    graph.invoke(Command(resume={"action": "approve"}), config)
    assert (tmp_path / "ws" / "out.txt").exists() and not (tmp_path / "out.txt").exists()
    # the context wins over configurable where both are dicts; a Context that differs is refused
    with pytest.raises(ConfigurationError, match="differ between the context"):
        graph.invoke({"request": "x"}, {"configurable": {"thread_id": "d", "review": "plan"}},
                     context=Context(review="none"))  # fmt: skip


def test_a_server_run_with_no_workspace_gets_a_folder_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_folder = tmp_path / "repo"
    server_folder.mkdir()
    monkeypatch.chdir(server_folder)
    monkeypatch.delenv("PHASEGRAPH_WORKSPACE", raising=False)
    graph = graph_for(thread_workspaces=str(tmp_path / "threads"))
    out = graph.invoke({"request": "write out.txt"}, {"configurable": {"thread_id": "t/1"}},
                       context={"review": "none"})  # fmt: skip
    own = tmp_path / "threads" / ("t_1-" + hashlib.sha256(b"t/1").hexdigest()[:8])
    assert out["workspace"] == str(own) and (own / "out.txt").read_text() == "hello"
    assert os.listdir(server_folder) == []
    assert str(own) in out["final_summary"]
    # a workspace the settings name under the threads' folder is used as it is
    named = tmp_path / "threads" / "named"
    named.mkdir()
    out = graph.invoke({"request": "write out.txt"}, {"configurable": {"thread_id": "t2"}},
                       context={"workspace": str(named)})  # fmt: skip
    assert out["workspace"] == str(named) and (named / "out.txt").exists()


@pytest.mark.parametrize(
    ("asked", "refused"),
    [
        ({"workspace": "/"}, "workspace"),
        ({"workspace": "THREADS"}, "workspace"),  # the threads' folder itself, among them all
        ({"base_url": "http://127.0.0.1:9/v1"}, "base_url"),
        ({"mcp_servers": {"x": {"transport": "stdio", "command": "sh"}}}, "mcp_servers"),
        ({"allowed_commands": ["ls", "curl"]}, "allowed_commands"),
        ({"command_sandbox": "checks"}, "command_sandbox"),
        ({"model": "scripted:/dev/zero"}, "model"),
        ({"model": "local:/etc/passwd"}, "model"),
    ],
)
def test_a_served_run_cannot_widen_the_operators_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, asked: dict[str, Any], refused: str
) -> None:
    """A client of a server names where the operator's key goes, what runs, where tools write."""
    for name in ("WORKSPACE", "BASE_URL", "MCP_SERVERS", "ALLOWED_COMMANDS", "COMMAND_SANDBOX",
                 "MODEL"):  # fmt: skip
        monkeypatch.delenv(f"PHASEGRAPH_{name}", raising=False)
    monkeypatch.chdir(tmp_path)
    graph = graph_for(thread_workspaces=str(tmp_path / "threads"))
    (tmp_path / "threads").mkdir()
    asked = {k: str(tmp_path / "threads") if v == "THREADS" else v for k, v in asked.items()}
    config = {"configurable": {"thread_id": "client"}}
    with pytest.raises(ConfigurationError, match=rf"\['{refused}'\] go beyond"):
        graph.invoke({"request": "write out.txt"}, config, context=asked)
    assert graph.get_state(config).values == {}


def test_a_served_run_may_narrow_the_operators_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator = tmp_path / "project"
    operator.mkdir()
    monkeypatch.setenv("PHASEGRAPH_WORKSPACE", str(operator))
    monkeypatch.setenv("PHASEGRAPH_ALLOWED_COMMANDS", "ls,wc")
    graph = graph_for(thread_workspaces=str(tmp_path / "threads"))
    narrower = {"allowed_commands": ["ls"], "command_sandbox": "os", "workspace": str(operator)}
    out = graph.invoke({"request": "write out.txt"}, {"configurable": {"thread_id": "n"}},
                       context=narrower)  # fmt: skip
    assert out["status"] == "completed" and (operator / "out.txt").read_text() == "hello"


def test_a_served_run_reads_a_model_file_only_from_the_servers_folder_or_the_operator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from phasegraph.graph.served import within_operator

    served, elsewhere = tmp_path / "served", tmp_path / "elsewhere"
    for folder in (served, elsewhere):
        folder.mkdir()
        (folder / "script.json").write_text("{}")
    monkeypatch.chdir(served)
    threads = str(tmp_path / "threads")
    operator = Context(model=f"scripted:{elsewhere / 'script.json'}")
    # one missing in the server's folder is the run's to report missing, not a refusal
    for fine in ("scripted:script.json", operator.model, "gpt-4o", "local:qwen2.5-coder-0.5b",
                 "scripted:missing.json"):  # fmt: skip
        within_operator(Context(model=fine), operator, threads)
    for far in (f"scripted:{elsewhere}/../elsewhere/x.json", "scripted:../elsewhere/script.json",
                f"local:{elsewhere / 'script.json'}", "scripted:.",
                f"scripted:{elsewhere / 'missing.json'}"):  # fmt: skip
        with pytest.raises(ConfigurationError, match=r"\['model'\]"):
            within_operator(Context(model=far), Context(), threads)


def served_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A served graph, its threads' folders under ``tmp_path/threads``, run from ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PHASEGRAPH_WORKSPACE", raising=False)
    return graph_for(thread_workspaces=str(tmp_path / "threads"))


def test_a_server_thread_resumed_with_a_context_object_stays_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = served_in(tmp_path, monkeypatch)
    config = {"configurable": {"thread_id": "srv"}}
    out = graph.invoke({"request": "write out.txt"}, config, context=Context(review="plan"))
    assert out["status"] == "awaiting_review"
    done = graph.invoke(Command(resume={"action": "approve"}), config, context=Context())
    own = tmp_path / "threads" / "srv"
    assert done["status"] == "completed" and (own / "out.txt").read_text() == "hello"
    assert not (tmp_path / "out.txt").exists()


def test_a_server_thread_goes_on_in_the_folder_its_state_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a thread copied on a server (a new id, the same state), or one started in a folder a
    # client named, goes on where its earlier work is, not in an empty folder of its id
    graph = served_in(tmp_path, monkeypatch)
    named = tmp_path / "threads" / "shared"
    named.mkdir(parents=True)
    config = {"configurable": {"thread_id": "srv"}}
    graph.invoke({"request": "write out.txt"}, config,
                 context=Context(review="plan", workspace=str(named)))  # fmt: skip
    done = graph.invoke(Command(resume={"action": "approve"}), config, context=Context())
    assert done["status"] == "completed" and (named / "out.txt").read_text() == "hello"
    assert done["workspace"] == str(named.resolve()) and not (tmp_path / "threads" / "srv").exists()


def test_a_served_threads_folder_is_held_to_the_operators_bounds_and_made_again_if_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    private = tmp_path / "operator_private"
    private.mkdir()
    graph = served_in(tmp_path, monkeypatch)
    config = {"configurable": {"thread_id": "srv"}}
    graph.invoke({"request": "write out.txt"}, config, context={"review": "plan"})
    # a client that may not name a folder must not reach it by editing the thread's state
    graph.update_state(config, {"workspace": str(private)}, as_node="phase_plan")
    with pytest.raises(ConfigurationError, match=r"\['workspace'\] go beyond"):
        graph.invoke(Command(resume={"action": "approve"}), config, context={})
    assert not (private / "out.txt").exists()
    # a thread whose folder went (a cache cleared) is not stranded: it goes on in its own
    graph.update_state(config, {"workspace": str(tmp_path / "threads" / "gone")},
                       as_node="phase_plan")  # fmt: skip
    done = graph.invoke(Command(resume={"action": "approve"}), config, context={})
    own = tmp_path / "threads" / "srv"
    assert done["status"] == "completed" and done["workspace"] == str(own.resolve())
    assert (own / "out.txt").read_text() == "hello"


def test_a_served_run_refused_for_its_input_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = tmp_path / "threads"
    graph = served_in(tmp_path, monkeypatch)
    for bad in ({"request": " "}, {"request": "x", "checks": "exists:a"}, {"text": "x"}):
        with pytest.raises(ValueError, match="request|checks"):
            graph.invoke(bad, {"configurable": {"thread_id": "refused"}})
    assert not threads.exists() or not any(threads.iterdir())


def test_a_langgraph_server_passes_each_phasegraph_error_on_to_its_client() -> None:
    # the server masks an exception outside the built-in kinds as "An internal error occurred"
    import langgraph_api.serde as serde

    import phasegraph.errors as errors

    base = errors.PhasegraphError
    kinds = [k for k in vars(errors).values()
             if isinstance(k, type) and issubclass(k, base) and k is not base]  # fmt: skip
    assert errors.ThreadPausedError in kinds and len(kinds) >= 8
    message = "thread 't' is paused for a plan_review"
    for kind in kinds:
        assert serde.default(kind(message)) == {"error": kind.__name__, "message": message}


def test_two_thread_ids_that_read_alike_once_made_safe_get_two_folders(tmp_path: Path) -> None:
    from phasegraph.graph.served import thread_workspace

    first = thread_workspace(str(tmp_path), {"thread_id": "a/b"})
    second = thread_workspace(str(tmp_path), {"thread_id": "a:b"})
    plain = thread_workspace(str(tmp_path), {"thread_id": "a_b"})
    assert len({first, second, plain}) == 3 and plain == str(tmp_path.resolve() / "a_b")


def test_an_answer_keyed_by_the_question_id_resumes_the_run(tmp_path: Path) -> None:
    graph = graph_for()
    config = {"configurable": {"thread_id": "by-id"}}
    context = Context(workspace=str(tmp_path), review="plan")
    out = graph.invoke({"request": "write out.txt"}, config, context=context)
    asked = out["__interrupt__"][0]
    done = graph.invoke(Command(resume={asked.id: {"action": "approve"}}), config, context=context)
    assert done["status"] == "completed" and (tmp_path / "out.txt").read_text() == "hello"


def test_an_answer_keyed_by_an_id_no_question_has_is_asked_again_saying_so(
    tmp_path: Path,
) -> None:
    graph = graph_for()
    config = {"configurable": {"thread_id": "wrong-id"}}
    context = Context(workspace=str(tmp_path), review="plan")
    graph.invoke({"request": "write out.txt"}, config, context=context)
    with pytest.raises(FeedbackError, match="keyed by 'not-an-id'.*no question"):
        graph.invoke(Command(resume={"not-an-id": "approve"}), config, context=context)
    assert graph.get_state(config).next == ("human_review",)
    assert not (tmp_path / "out.txt").exists()
    # a field of an answer given without its action is not taken for an id
    with pytest.raises(FeedbackError, match="takes action approve") as refused:
        graph.invoke(Command(resume={"answer": "CSV please"}), config, context=context)
    assert "keyed by" not in str(refused.value)


def test_an_answer_written_as_human_review_is_still_reviewed(tmp_path: Path) -> None:
    graph = graph_for()
    config = {"configurable": {"thread_id": "as-node"}}
    context = Context(workspace=str(tmp_path), review="plan")
    graph.invoke({"request": "write out.txt"}, config, context=context)
    # written as the review node itself, LangGraph alone would go on as if it had been reviewed
    answer = {"human_feedback": {"action": "reject", "reason": "not this"}}
    graph.update_state(config, answer, as_node="human_review")
    assert graph.get_state(config).next == ("human_review",)
    done = graph.invoke(None, config, context=context)
    assert done["status"] == "rejected" and not (tmp_path / "out.txt").exists()


def test_a_streamed_pause_carries_its_question(tmp_path: Path) -> None:
    """A static breakpoint streams ``{"__interrupt__": ()}``: the question is put in it."""
    graph = graph_for()
    config = {"configurable": {"thread_id": "streamed"}}
    context = Context(workspace=str(tmp_path), review="plan")
    chunks = list(graph.stream({"request": "write out.txt"}, config, context=context,
                               stream_mode="updates"))  # fmt: skip
    asked = chunks[-1]["__interrupt__"][0]
    assert asked.value["kind"] == "plan_review" and asked == graph.get_state(config).interrupts[0]
    config = {"configurable": {"thread_id": "streamed-both"}}
    both = list(graph.stream({"request": "write out.txt"}, config, context=context,
                             stream_mode=["updates", "values"]))  # fmt: skip
    pauses = [c for mode, c in both if mode == "updates" and "__interrupt__" in c]
    assert [c["__interrupt__"][0].value["kind"] for c in pauses] == ["plan_review"]
    config = {"configurable": {"thread_id": "streamed-v2"}}
    v2 = list(graph.stream({"request": "write out.txt"}, config, context=context,
                           stream_mode="updates", version="v2"))  # fmt: skip
    assert v2[-1]["data"]["__interrupt__"][0].value["kind"] == "plan_review"
    # v2 values carry interrupts in a field of their own, which invoke(version="v2") reads
    out = graph.invoke({"request": "write out.txt"}, {"configurable": {"thread_id": "v2-out"}},
                       context=context, version="v2")  # fmt: skip
    assert out.value["status"] == "awaiting_review"
    assert [i.value["kind"] for i in out.interrupts] == ["plan_review"]
    # the paused checkpoint in the history shows the question as get_state does
    history = graph.get_state_history({"configurable": {"thread_id": "v2-out"}})
    assert next(s for s in history if s.next == ("human_review",)).interrupts == out.interrupts
    # a run forked from an earlier checkpoint pauses again, and says so with its new question
    config = {"configurable": {"thread_id": "v2-out"}}
    fork = next(s for s in graph.get_state_history(config) if s.next == ("phase_plan",))
    again = graph.invoke(None, fork.config, context=context, version="v2")
    assert again.interrupts == graph.get_state(config).interrupts != out.interrupts


def test_a_paused_run_shows_its_question_in_its_values_and_checkpoints(tmp_path: Path) -> None:
    """A server reads runs.wait's output from the values, a thread's interrupts from checkpoints.

    LangGraph streams an ``interrupt()`` in a node that way, and a static breakpoint in neither.
    """
    graph = graph_for()
    context = Context(workspace=str(tmp_path), review="plan")
    config = {"configurable": {"thread_id": "values-only"}}
    values = list(graph.stream({"request": "write out.txt"}, config, context=context,
                               stream_mode="values"))  # fmt: skip
    asked = graph.get_state(config).interrupts
    assert values[-1]["__interrupt__"] == asked and asked[0].value["kind"] == "plan_review"
    assert values[-1]["pending_review"] == values[-2]["pending_review"]  # the same state
    assert all("__interrupt__" not in v for v in values[:-1])
    config = {"configurable": {"thread_id": "checkpoints"}}
    modes = ["values", "debug", "checkpoints"]
    chunks = list(graph.stream({"request": "write out.txt"}, config, context=context,
                               stream_mode=modes, subgraphs=True))  # fmt: skip
    asked = graph.get_state(config).interrupts
    assert [c for ns, mode, c in chunks if mode == "values"][-1]["__interrupt__"] == asked
    debug = [
        c["payload"] for ns, mode, c in chunks if mode == "debug" and c["type"] == "checkpoint"
    ]
    last = [c for ns, mode, c in chunks if mode == "checkpoints"][-1]
    for checkpoint in (debug[-1], last):
        (task,) = checkpoint["tasks"]
        assert task["name"] == "human_review"
        assert task["interrupts"] == (dataclasses.asdict(asked[0]),)  # as LangGraph shows one
    assert all(not t["interrupts"] for c in debug[:-1] for t in c["tasks"] if "interrupts" in t)
    # an invoke's output is as before: the state, and the question once
    out = graph.invoke({"request": "write out.txt"}, {"configurable": {"thread_id": "i"}},
                       context=context)  # fmt: skip
    assert [i.value["kind"] for i in out["__interrupt__"]] == ["plan_review"]


def test_an_async_streamed_pause_carries_its_question(tmp_path: Path) -> None:
    import asyncio

    async def pause() -> list[Any]:
        config = {"configurable": {"thread_id": "astreamed"}}
        context = Context(workspace=str(tmp_path), review="plan")
        chunks = graph_for().astream(
            {"request": "write out.txt"}, config, context=context, stream_mode="updates"
        )
        return [c async for c in chunks]

    assert asyncio.run(pause())[-1]["__interrupt__"][0].value["kind"] == "plan_review"

    async def values() -> list[Any]:
        config = {"configurable": {"thread_id": "avalues"}}
        context = Context(workspace=str(tmp_path), review="plan")
        chunks = graph_for().astream({"request": "write out.txt"}, config, context=context,
                                     stream_mode="values")  # fmt: skip
        return [c async for c in chunks]

    assert asyncio.run(values())[-1]["__interrupt__"][0].value["kind"] == "plan_review"

    async def invoked() -> Any:
        config = {"configurable": {"thread_id": "ainvoked"}}
        context = Context(workspace=str(tmp_path), review="plan")
        return await graph_for().ainvoke({"request": "write out.txt"}, config, context=context)

    assert asyncio.run(invoked())["__interrupt__"][0].value["kind"] == "plan_review"


def test_an_answer_to_an_unknown_thread_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    """Sent to a mistyped id, LangGraph alone would start an empty run there and fail it."""
    from phasegraph.errors import ThreadStateError

    graph = graph_for()
    config = {"configurable": {"thread_id": "no-such-thread"}}
    with pytest.raises(ThreadStateError, match="unknown thread 'no-such-thread'"):
        graph.invoke(Command(resume={"action": "approve"}), config,
                     context=Context(workspace=str(tmp_path)))  # fmt: skip
    with pytest.raises(ThreadStateError, match="unknown thread 'no-such-thread'"):
        graph.invoke(Command(update={"request": "x"}), config,
                     context=Context(workspace=str(tmp_path)))  # fmt: skip
    assert graph.get_state(config).values == {}
    assert list(graph.get_state_history(config)) == []


def test_reviews_without_a_checkpointer_are_refused_before_the_run(tmp_path: Path) -> None:
    """A paused run needs a checkpointer to be resumed: without one it would be lost."""
    graph = build_graph(model=ScriptedChatModel(script=script()))
    with pytest.raises(ConfigurationError, match="needs a checkpointer"):
        graph.invoke({"request": "write out.txt"},
                     context=Context(workspace=str(tmp_path), review="plan"))  # fmt: skip
    assert not (tmp_path / "out.txt").exists()
    out = graph.invoke({"request": "write out.txt"}, context=Context(workspace=str(tmp_path)))
    assert out["status"] == "completed"


def test_an_action_given_as_its_word_answers_the_review(tmp_path: Path) -> None:
    graph = graph_for()
    config = {"configurable": {"thread_id": "word"}}
    context = Context(workspace=str(tmp_path), review="plan")
    graph.invoke({"request": "write out.txt"}, config, context=context)
    # an answer that does not fit is the run's error, as code and the SDK see errors; the
    # thread stays paused with the same review, the reason beside its question
    with pytest.raises(FeedbackError, match="reason.*still paused"):
        graph.invoke(Command(resume="reject"), config, context=context)  # needs a reason
    paused = graph.get_state(config)
    assert paused.next == ("human_review",) and paused.values["status"] == "awaiting_review"
    assert "reason" in paused.interrupts[0].value["error"]
    with pytest.raises(FeedbackError, match='given as {"action": ...}; got a int'):
        graph.invoke(Command(resume=5), config, context=context)
    done = graph.invoke(Command(resume="approve"), config, context=context)
    assert done["status"] == "completed" and (tmp_path / "out.txt").read_text() == "hello"


def test_an_empty_command_is_refused_saying_what_an_answer_is(tmp_path: Path) -> None:
    graph = graph_for()
    config = {"configurable": {"thread_id": "empty"}}
    context = Context(workspace=str(tmp_path), review="plan")
    graph.invoke({"request": "write out.txt"}, config, context=context)
    with pytest.raises(ValueError, match=r"Command\(resume=answer\)"):
        graph.invoke(Command(resume=None), config, context=context)
    assert graph.get_state(config).next == ("human_review",)
    # LangGraph reads a dict as answers by question id: an empty one answers none, and the
    # question asked again would show the error of an earlier answer as this one's
    with pytest.raises(FeedbackError):
        graph.invoke(Command(resume=["a list"]), config, context=context)
    with pytest.raises(ValueError, match=r"answers no question.*Command\(resume=answer\)"):
        graph.invoke(Command(resume={}), config, context=context)
    assert graph.get_state(config).next == ("human_review",)
    # and an answer to a thread that has ended is not taken in silence
    done = graph.invoke(Command(resume="approve"), config, context=context)
    assert done["status"] == "completed"
    with pytest.raises(ThreadStateError, match="has ended .*nothing waits for an answer"):
        graph.invoke(Command(resume="approve"), config, context=context)


def test_a_served_workspace_is_judged_where_it_leads_not_where_it_is_named(
    tmp_path: Path,
) -> None:
    """A link under the threads' folder to a folder outside it, or a path climbing out."""
    from phasegraph.graph.served import within_operator

    threads = tmp_path / "threads"
    threads.mkdir()
    (threads / "link").symlink_to(tmp_path)
    operator = Context(workspace="")
    for asked in (threads / "link", threads / ".." / "elsewhere"):
        with pytest.raises(ConfigurationError, match=r"\['workspace'\]"):
            within_operator(Context(workspace=str(asked)), operator, str(threads))
    within_operator(Context(workspace=str(threads / "own")), operator, str(threads))


def test_a_name_where_a_model_object_goes_and_a_server_without_transport_are_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"Context\(model=\.\.\.\)"):
        build_graph(model="gpt-4o")  # type: ignore[arg-type]
    # a model wrapped as LangChain wraps one is still a model
    wrapped = ScriptedChatModel(script=script()).with_fallbacks([ScriptedChatModel(script={})])
    build_graph(model=wrapped)  # type: ignore[arg-type]
    for servers in ({"x": "python srv.py"}, {"x": {"command": "python"}}):
        with pytest.raises(ValueError, match="each with its transport"):
            Context(mcp_servers=servers)  # type: ignore[arg-type]
