"""The embedded local model end to end: the README's main command on a small workspace task.

The run must end with a summary and a valid state, and its status must tell the truth about
files.md: ``completed`` exactly when files.md came out right (SPEC 1 and 11). Whether it did is
printed, not asserted (the benchmark counts that: bench/local_suite.py). Needs the ``local``
extra, which `.ci/run` installs, and runs its default model.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from phasegraph import build_graph
from phasegraph.state import Judgement, PhasePlan, RoundPlan

from scripts import final_state

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).parents[2] / "examples" / "local_task.py"
MAX_STEPS = 10
ENDED = {"completed", "incomplete", "budget_exhausted", "rejected", "failed"}


def test_the_embedded_model_runs_a_workspace_task(capsys: pytest.CaptureFixture[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--max-steps", str(MAX_STEPS)],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Model: the embedded local model" in done.stderr
    facts = dict(re.findall(r"(\w+)=(\S+)", done.stdout.strip().splitlines()[-1]))
    workspace = Path(facts["workspace"])

    with SqliteSaver.from_conn_string(str(workspace / ".phasegraph" / "threads.sqlite")) as saver:
        state = build_graph(checkpointer=saver).get_state(
            {"configurable": {"thread_id": facts["thread"]}}
        )
    values: dict[str, Any] = state.values
    assert state.next == ()  # the run ended
    assert values["status"] in ENDED
    assert values["final_summary"].strip()
    assert values["final_summary"].split("\n")[0] in done.stdout
    assert values["pending_review"] is None
    assert values["llm_calls"] >= 3 and values["prompt_tokens"] > 0
    assert values["step_count"] <= MAX_STEPS + 1  # the judge of the last round may end one above
    # honest outcome: "completed" only with a files.md that holds the listing
    assert (values["status"] == "completed") == (facts["files_md"] == "right"), facts
    # whatever the model wrote, the state holds only results that passed their schemas
    PhasePlan.model_validate({"phases": values["phases"], "execution_strategy": "x"})
    for record in values["rounds"]:
        RoundPlan.model_validate({"tasks": record["tasks"], "reasoning": ""})
        Judgement.model_validate(record["judgement"])
    with capsys.disabled():
        print(
            f"\n[local model] status={values['status']} steps={values['step_count']} "
            f"llm_calls={values['llm_calls']} wall_s={facts['wall_s']} "
            f"files_md={facts['files_md']}"
        )


def test_the_prebuilt_react_agent_calls_tools_on_the_embedded_model(tmp_path: Path) -> None:
    # create_react_agent binds every tool with a free choice: the model picks one (or answers)
    import warnings

    from langchain_core.messages import ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.errors import GraphRecursionError

    from phasegraph import Context
    from phasegraph.models.local import LocalChatModel
    from phasegraph.nodes.deps import workspace_settings
    from phasegraph.tools.builtin import BUILTIN_TOOL_NAMES, workspace_tools

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        tools = list(workspace_tools(workspace_settings(Context(workspace=str(tmp_path)))))
        agent = create_react_agent(LocalChatModel(), tools, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "react"}, "recursion_limit": 3}
    request = "Write a file named hello.txt containing exactly: Hello, world!"
    try:
        agent.invoke({"messages": [("user", request)]}, config)
    except GraphRecursionError:
        pass  # a small model may keep calling tools; the first calls are what this checks
    messages = agent.get_state(config).values["messages"]
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert results, [m.content for m in messages]
    assert all(r.name in BUILTIN_TOOL_NAMES for r in results)
    assert any(r.status == "success" for r in results), [r.content for r in results]
    hello = tmp_path / "hello.txt"
    with_text = hello.read_text() if hello.is_file() else "(none)"
    print(f"\n[local model, create_react_agent] tools={[r.name for r in results]} {with_text!r}")


def test_the_embedded_model_plans_the_tool_the_request_needs(tmp_path: Path) -> None:
    # Under RoundPlan's free-form schema the 0.5B model planned list_files(path, output=...) for
    # this request; with tasks typed by tool and the reasoning asked first, it writes the file.
    from langgraph.checkpoint.memory import InMemorySaver

    from phasegraph import Context

    graph = build_graph(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "write"}}
    request = "Write a file named hello.txt containing exactly: Hello, world!"
    # the phase plan, one plan, its tool and its judge
    context = Context(workspace=str(tmp_path), max_steps=4)
    out = final_state(graph, {"request": request}, config, context=context)
    first = out["rounds"][0]["tasks"][0]
    assert (first["tool"], first["arguments"].get("path")) == ("write_file", "hello.txt"), first
    assert (tmp_path / "hello.txt").read_text().strip() == "Hello, world!"
    # and the judge ends the phase: it wrote a rate of 10 (ten tenths, read as 10 %) until its
    # grammar offered the tenths, and the run went on until its budget was spent
    assert out["rounds"][0]["judgement"]["phase_completion_rate"] == 1.0
    assert out["status"] == "completed", out["stop_reason"]
    assert out["final_summary"].strip()


def test_the_grammar_first_pass_decodes_what_llama_cpp_s_own_chain_does() -> None:
    # greedy under a grammar: asking the grammar about the model's choice first, and about the
    # whole vocabulary only when it is refused, must write exactly what llama-cpp-python's own
    # chain (the grammar over every token, every step) writes
    import llama_cpp

    from phasegraph.models import grammar_sampler
    from phasegraph.models.embedded import default_model_path
    from phasegraph.models.local import new_llama
    from phasegraph.models.local_format import _bounded_numbers
    from phasegraph.models.structured import function_spec

    llm = new_llama(str(default_model_path()), n_ctx=1024)
    schema = _bounded_numbers(function_spec("judge_tasks", Judgement)["function"]["parameters"])
    messages: Any = [
        {"role": "user", "content": "A round wrote hello.txt. Judge it by calling judge_tasks."}
    ]

    def answer() -> str:
        llm.reset()  # the prompt evaluated anew: a cached prefix may shift the logits a hair
        reply: Any = llm.create_chat_completion(
            messages=messages,
            max_tokens=40,
            temperature=0,
            response_format={"type": "json_object", "schema": schema},
        )
        return str(reply["choices"][0]["message"]["content"])

    stock = answer()
    grammar_sampler.install(llm, llama_cpp)
    assert answer() == stock
    assert stock.startswith("{")
    # a grammar llama.cpp refuses is an error of the call, not a crash of the process
    too_long = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 5000}}}
    with pytest.raises(grammar_sampler.GrammarRefusedError):
        llm.create_chat_completion(
            messages=messages,
            max_tokens=5,
            temperature=0,
            response_format={"type": "json_object", "schema": too_long},
        )


def test_ctrl_c_stops_the_local_model_s_answer_at_once(tmp_path: Path) -> None:
    # the interrupt used to wait for the answer being written, and for its retries: 40 to 70 s
    import json
    import shlex
    import signal
    import time

    from procs import cli_env, phasegraph_argv

    (tmp_path / "notes.txt").write_text("hello\n")
    request = "List the files here and write their names to files.md."
    argv = [*phasegraph_argv(), "run", request, "--workspace", str(tmp_path)]
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env={k: v for k, v in cli_env().items() if k != "PHASEGRAPH_MODEL"},  # the default
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal has it
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:  # the model is loaded and writes its second answer
            if "planning the phases..." in line:
                break
        time.sleep(1.0)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
        waited = time.monotonic() - sent
    finally:
        proc.kill()
    print(f"exit {proc.returncode} {waited:.2f} s after SIGINT")
    assert proc.returncode == 130 and "interrupted; go on where the thread stopped" in rest
    assert "removing memory module entries" not in rest  # llama.cpp's abort is not an error
    assert waited < 10, waited  # within a step of llama.cpp's; generous for a loaded machine
    # the thread reads interrupted, and the printed command goes on with it
    command = shlex.split(rest.split("go on where the thread stopped with: ")[1].splitlines()[0])
    thread = command[command.index("resume") + 1]
    show = [*phasegraph_argv(), "show", thread, "--json", "--workspace", str(tmp_path)]
    shown = subprocess.run(show, cwd=tmp_path, env=cli_env(), capture_output=True, text=True)
    assert shown.returncode == 0 and json.loads(shown.stdout)["status"] == "interrupted"
