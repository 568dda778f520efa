"""A thread keeps the settings it started with: a resume that names none goes on with them."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from phasegraph import Context, build_graph
from phasegraph.carried import carried_settings, start_settings

SCRIPT = Path(__file__).parents[2] / "examples" / "cli_script.json"


def test_a_resume_without_settings_goes_on_with_the_thread_s_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the defaults name a model that cannot load: a resume that fell back to them would fail
    monkeypatch.setenv("PHASEGRAPH_MODEL", f"scripted:{tmp_path / 'no-such-script.json'}")
    (tmp_path / "notes.txt").write_text("meeting notes\n")
    graph = build_graph(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "kept"}}
    context = Context(model=f"scripted:{SCRIPT}", review="plan", workspace=str(tmp_path))
    paused = graph.invoke({"request": "List the files"}, config, context=context)
    assert paused["__interrupt__"][0].value["kind"] == "plan_review"
    done = graph.invoke(Command(resume="approve"), config)  # no context at all
    assert done["status"] == "completed", done.get("error")
    assert (tmp_path / "files.md").read_text() == "notes.txt"


def test_a_resume_that_names_another_setting_keeps_it_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started = Context(model="scripted:a.json", max_parallel=2)
    values = {"limits": {"settings": start_settings(started)}}
    assert values["limits"]["settings"] == {"model": "scripted:a.json", "max_parallel": 2}
    assert carried_settings(Context(), values).model == "scripted:a.json"
    with caplog.at_level(logging.WARNING, logger="phasegraph"):
        changed = carried_settings(Context(model="scripted:b.json"), values)
    assert changed.model == "scripted:b.json" and changed.max_parallel == 2
    assert "changes the thread's setting model from 'scripted:a.json'" in caplog.text
    # a thread that recorded nothing (older ones) goes on as given
    assert carried_settings(Context(model="x"), {"limits": {}}).model == "x"


def test_no_secret_and_no_folder_is_kept() -> None:
    kept = start_settings(
        Context(base_url="https://user:token@host/v1", workspace="/tmp", model="m",
                mcp_servers={"s": {"transport": "stdio", "command": "x",
                                 "env": {"TOKEN": "t"}}})  # fmt: skip
    )
    # the address is not kept; that the run had one is, so that a resume without one is told
    assert kept == {"model": "m", "model_on_endpoint": True}
    assert start_settings(Context(workspace="/tmp", model="m")) == {"model": "m"}


def test_a_resume_without_the_thread_s_endpoint_is_told(caplog: pytest.LogCaptureFixture) -> None:
    values = {"limits": {"settings": start_settings(Context(base_url="http://h/v1", model="m"))}}
    with caplog.at_level(logging.WARNING, logger="phasegraph"):
        resumed = carried_settings(Context(), values)
    assert "not kept with it" in caplog.text and "http://h" not in str(values)
    assert resumed.model == ""  # not the endpoint's model name, sent elsewhere
    # given an endpoint again, the resume goes on with the thread's model on it
    assert carried_settings(Context(base_url="http://h/v1"), values).model == "m"


def test_kept_settings_edited_to_widen_the_operator_s_are_refused_on_a_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from phasegraph import ConfigurationError, ScriptedChatModel

    from scripts import make_script

    monkeypatch.chdir(tmp_path)
    for name in ("WORKSPACE", "ALLOWED_COMMANDS", "COMMAND_SANDBOX", "MODEL"):
        monkeypatch.delenv(f"PHASEGRAPH_{name}", raising=False)
    graph = build_graph(model=ScriptedChatModel(script=make_script()),
                        checkpointer=InMemorySaver(),
                        thread_workspaces=str(tmp_path / "threads"))  # fmt: skip
    config = {"configurable": {"thread_id": "widen"}}
    graph.invoke({"request": "write out.txt"}, config, context={"review": "plan"})
    limits = dict(graph.get_state(config).values["limits"])
    limits["settings"] = {**limits.get("settings", {}), "allowed_commands": ["bash"]}
    graph.update_state(config, {"limits": limits})
    with pytest.raises(ConfigurationError, match=r"\['allowed_commands'\] go beyond"):
        graph.invoke(Command(resume="approve"), config)
    # and where the thread's folder is gone (a cache cleared), as it goes on in a new one
    shutil.rmtree(tmp_path / "threads")
    with pytest.raises(ConfigurationError, match=r"\['allowed_commands'\] go beyond"):
        graph.invoke(Command(resume="approve"), config)
