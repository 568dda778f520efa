"""The embedded local model's plumbing, without loading a real model.

Assembly of the GGUF file from its part packages (fake packages here), the sha256 check, the
error naming the extra, and the LangChain wrapper over a stand-in for llama_cpp.Llama.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel

from phasegraph import Context
from phasegraph.errors import ConfigurationError
from phasegraph.models import describe_model, embedded_choice, model_from_context, model_kind
from phasegraph.models import embedded as embedded_models
from phasegraph.models import local as local_model
from phasegraph.models.embedded import EMBEDDED, EmbeddedModel, model_path
from phasegraph.models.local import LocalChatModel
from phasegraph.models.local_format import (
    GRAMMAR_MAX_BOUND,
    _as_chat_message,
    _as_tool_call,
    _forced_function,
    _within_grammar_limits,
)
from phasegraph.models.structured import _extract_arguments, call_structured, function_spec

from scripts import judgement

PARTS = [bytes([i]) * (1000 + i) for i in range(1, 7)]


FAKE = EmbeddedModel(
    name="fake-model",
    title="A fake model",
    file="fake.gguf",
    sha256=hashlib.sha256(b"".join(PARTS)).hexdigest(),
    size=sum(len(p) for p in PARTS),
    packages=tuple(f"fake_gguf_part{n}" for n in range(1, 7)),
    extra="local-fake",
)


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Six fake part packages on sys.path, and a cache directory; returns the cache directory."""
    site = tmp_path / "site"
    for number, data in enumerate(PARTS, start=1):
        package = site / f"fake_gguf_part{number}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{number:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(embedded_models, "_verified", set())
    cache = tmp_path / "cache"
    monkeypatch.setenv("PHASEGRAPH_CACHE_DIR", str(cache))
    yield cache
    for name in FAKE.packages:
        sys.modules.pop(name, None)


def default_model_path(on_progress: Any = None, model: EmbeddedModel = FAKE) -> Path:
    return model_path(model, on_progress)


def test_the_model_is_assembled_once_and_verified(parts: Path) -> None:
    messages: list[str] = []
    path = default_model_path(messages.append)
    assert path.parent == parts
    assert path.read_bytes() == b"".join(PARTS)
    assert any("assembling" in m for m in messages)
    stamp = path.stat().st_mtime_ns
    messages.clear()
    assert default_model_path(messages.append) == path
    assert path.stat().st_mtime_ns == stamp and messages == []  # not assembled again
    # no temporary file left; the check is recorded beside the file
    assert sorted(p.name for p in parts.iterdir()) == [path.name, f"{path.name}.verified"]


def test_a_later_process_trusts_the_recorded_check_until_the_file_changes(
    parts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = default_model_path()
    embedded_models._verified.clear()  # a new process
    hashed: list[Path] = []
    real_sha256_of = embedded_models.sha256_of
    monkeypatch.setattr(
        embedded_models, "sha256_of", lambda p: hashed.append(p) or real_sha256_of(p)
    )
    assert default_model_path() == path and hashed == []  # the record stood for the hash
    embedded_models._verified.clear()
    times = path.stat()
    with path.open("r+b") as handle:  # the same size, and the old modification time put back
        handle.write(b"X")
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    messages: list[str] = []
    assert default_model_path(messages.append).read_bytes() == b"".join(PARTS)
    assert hashed == [path] and any("does not match its sha256" in m for m in messages)


def test_a_damaged_cached_file_is_assembled_again(parts: Path) -> None:
    path = default_model_path()
    path.write_bytes(b"not a model")
    embedded_models._verified.clear()  # a new process: the file is checked again
    messages: list[str] = []
    assert default_model_path(messages.append).read_bytes() == b"".join(PARTS)
    assert any("does not match its sha256" in m for m in messages)


def test_parts_that_do_not_add_up_are_refused(parts: Path) -> None:
    wrong = EmbeddedModel(**{**FAKE.__dict__, "sha256": "0" * 64})
    with pytest.raises(ConfigurationError, match="do not add up to the expected file"):
        default_model_path(model=wrong)
    assert not parts.exists() or list(parts.iterdir()) == []


def test_a_missing_part_package_names_the_extra(parts: Path) -> None:
    broken = EmbeddedModel(**{**FAKE.__dict__, "packages": ("fake_gguf_part1", "no_such_part")})
    with pytest.raises(ConfigurationError) as caught:
        default_model_path(model=broken)
    assert 'pip install "phasegraph[local-fake]"' in str(caught.value)
    assert "no-such-part" in str(caught.value)


def test_both_embedded_models_are_offered_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    small, large = EMBEDDED["qwen2.5-coder-0.5b"], EMBEDDED["qwen2.5-coder-1.5b"]
    assert embedded_choice(Context(model="local:qwen2.5-coder-0.5b")) == small
    assert embedded_choice(Context(model="local:Qwen2.5-Coder-1.5B")) == large
    assert embedded_choice(Context(model="")) == embedded_models.DEFAULT
    assert embedded_choice(Context(model="local:/models/x.gguf")) is None
    assert "0.5B" in describe_model(Context(model="local:qwen2.5-coder-0.5b"))
    # the 1.5B file as the issue gives it: 22 parts, 1,117,320,768 bytes
    assert (len(large.packages), large.size) == (22, 1_117_320_768)
    assert large.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    with pytest.raises(ConfigurationError, match="local:qwen2.5-coder-0.5b, local:qwen2.5-coder"):
        model_from_context(Context(model="local:qwen-9b"))


def test_each_model_s_extra_installs_its_parts_under_a_name_every_pip_finds() -> None:
    # pip before 23.3 (what a Python 3.11 venv ships) looks an extra up by the name as typed,
    # while the metadata holds it normalized (PEP 685: "local-0.5b" becomes "local-0-5b"): an
    # install hint with a dot installed nothing there, with only a warning.
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    for model in EMBEDDED.values():
        assert model.extra == re.sub(r"[-_.]+", "-", model.extra).lower()
        wanted = {p.replace("_", "-") for p in model.packages}
        listed = {re.split(r"[=<>]", r)[0] for r in extras[model.extra]}
        assert wanted <= listed and "llama-cpp-python" in listed
    default = re.search(r"\[(.+)\]", extras["local"][0])
    assert default is not None and default[1] == embedded_models.DEFAULT.extra


def test_the_settings_select_the_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert model_kind(Context(model="")) == "local"
    assert model_kind(Context(model="local")) == "local"
    assert model_kind(Context(model="local:~/m.gguf")) == "local"
    assert model_kind(Context(model="/models/x.gguf")) == "local"
    assert model_kind(Context(model="gpt-4o")) == "openai"
    assert "embedded local model" in describe_model(Context(model=""))
    assert describe_model(Context(model="/models/x.gguf")) == "local model /models/x.gguf"


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("pick", "pick"),
        ({"type": "function", "function": {"name": "pick"}}, "pick"),
        ("any", None),  # two tools: "any" forces no particular one
        ("auto", None),
        ("unknown", None),
    ],
)
def test_the_forced_function(choice: Any, expected: str | None) -> None:
    tools = [{"function": {"name": "pick"}}, {"function": {"name": "other"}}]
    forced = _forced_function(tools, choice)
    assert (forced["function"]["name"] if forced else None) == expected
    assert _forced_function(tools[:1], "required") == tools[0]


def test_cut_off_json_stays_text_for_the_repair_loop() -> None:
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    cut = _as_tool_call('{"choice": "a', "pick", usage)  # type: ignore[arg-type]
    assert cut.tool_calls == [] and cut.text == '{"choice": "a'
    whole = _as_tool_call('{"choice": "a"}', "pick", usage)  # type: ignore[arg-type]
    assert whole.tool_calls[0]["name"] == "pick" and whole.tool_calls[0]["args"] == {"choice": "a"}


def test_a_raw_line_break_inside_a_string_is_read_as_written() -> None:
    # a grammar bounding a string's length let the 1.5B model end one with a raw line break
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    raw = '{"items": ["found 2 times in the\n 3"], "note": "a\tb"}'
    call = _as_tool_call(raw, "pick", usage)  # type: ignore[arg-type]
    assert call.tool_calls[0]["args"] == {"items": ["found 2 times in the\n 3"], "note": "a\tb"}
    reply = AIMessage(content=raw)
    args, problem = _extract_arguments(reply, "pick")
    assert args == {"items": ["found 2 times in the\n 3"], "note": "a\tb"} and problem == ""


def test_messages_become_the_chat_templates_turns() -> None:
    call = AIMessage(content="", tool_calls=[{"name": "pick", "args": {"x": 1}, "id": "c1"}])
    turns = [
        _as_chat_message(m)
        for m in (
            SystemMessage("sys"),
            HumanMessage("hi"),
            call,
            ToolMessage("Error: bad", tool_call_id="c1"),
        )
    ]
    assert [t["role"] for t in turns] == ["system", "user", "assistant", "tool"]
    assert turns[2]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "pick", "arguments": {"x": 1}}}
    ]
    assert turns[3]["content"] == "Error: bad"


class Pick(BaseModel):
    """Pick one."""

    choice: str


class FakeLlama:
    """Stands in for llama_cpp.Llama: answers from a list and records each request."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        text = self.answers[min(len(self.requests), len(self.answers)) - 1]
        return {
            "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        }


def test_a_forced_call_is_decoded_under_the_schema(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import threading

    fake = FakeLlama(['{"choice": ', '{"choice": "b"}'])  # cut off, then whole
    monkeypatch.setattr(local_model, "load_llama", lambda *_a: (fake, threading.Lock()))
    model = LocalChatModel(model_path=str(tmp_path / "m.gguf"))
    call = call_structured(model, "pick", Pick, [HumanMessage("choose")], retries=2)
    assert call.value == Pick(choice="b")
    assert call.attempts == 2 and call.prompt_tokens == 20 and call.completion_tokens == 6
    schema = function_spec("pick", Pick)["function"]["parameters"]
    for request in fake.requests:
        assert request["response_format"] == {"type": "json_object", "schema": schema}
        assert request["temperature"] == 0
        assert "calling pick" in request["messages"][-1]["content"]
    # the repair turn tells the model what was wrong with its last answer
    assert "pick are not valid JSON" in json.dumps(fake.requests[1]["messages"])


def test_bounded_numbers_are_decoded_as_one_of_their_values(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a grammar cannot bound a number: the 0.5B model wrote a rate of 10 (ten tenths) for done
    import threading

    from phasegraph.state import Judgement

    fake = FakeLlama([json.dumps(judgement() | {"phase_completion_rate": 0.7})])
    monkeypatch.setattr(local_model, "load_llama", lambda *_a: (fake, threading.Lock()))
    model = LocalChatModel(model_path=str(tmp_path / "m.gguf"))
    call = call_structured(model, "judge_tasks", Judgement, [HumanMessage("judge")], retries=0)
    assert call.value is not None and call.value.phase_completion_rate == 0.7
    schema = fake.requests[0]["response_format"]["schema"]
    rate = schema["properties"]["phase_completion_rate"]
    assert rate["enum"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert schema["$defs"]["TaskEvaluation"]["properties"]["quality"]["enum"] == list(range(11))
    # only the grammar: what other models are sent, and what validation takes, is unchanged
    sent = function_spec("judge_tasks", Judgement)["function"]["parameters"]
    assert "enum" not in sent["properties"]["phase_completion_rate"]


def test_plain_text_answers_when_no_function_is_forced(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import threading

    fake = FakeLlama(["All done."])
    monkeypatch.setattr(local_model, "load_llama", lambda *_a: (fake, threading.Lock()))
    reply = LocalChatModel(model_path=str(tmp_path / "m.gguf")).invoke("summarise")
    assert reply.text == "All done." and reply.usage_metadata["total_tokens"] == 13
    assert "response_format" not in fake.requests[0]


def test_a_missing_gguf_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        LocalChatModel(model_path=str(tmp_path / "missing.gguf")).invoke("hi")


def _read(path: str) -> str:
    """Read a file."""
    return path


def _write(path: str, content: str) -> str:
    """Write a file."""
    return path + content


@pytest.mark.parametrize("choice", [None, "auto", "any"])
def test_a_free_choice_is_decoded_under_the_union_of_the_tools(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, choice: str | None
) -> None:
    import threading

    fake = FakeLlama(['{"name": "_write", "arguments": {"path": "a.txt", "content": "hi"}}'])
    monkeypatch.setattr(local_model, "load_llama", lambda *_a: (fake, threading.Lock()))
    model = LocalChatModel(model_path=str(tmp_path / "m.gguf")).bind_tools(
        [_read, _write], tool_choice=choice
    )
    reply = model.invoke([HumanMessage("write hi to a.txt")])
    assert isinstance(reply, AIMessage)
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("_write", {"path": "a.txt", "content": "hi"})
    ]
    request = fake.requests[0]
    options = request["response_format"]["schema"]["anyOf"]
    names = [o["properties"]["name"]["const"] for o in options if "name" in o["properties"]]
    assert names == ["_read", "_write"]
    # a plain reply is one of the choices unless a call is required
    assert any("answer" in o["properties"] for o in options) is (choice != "any")
    assert [t["function"]["name"] for t in request["tools"]] == ["_read", "_write"]


def test_a_free_choice_may_answer_in_words(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import threading

    fake = FakeLlama(['{"answer": "a.txt holds hi"}'])
    monkeypatch.setattr(local_model, "load_llama", lambda *_a: (fake, threading.Lock()))
    model = LocalChatModel(model_path=str(tmp_path / "m.gguf")).bind_tools([_read, _write])
    reply = model.invoke([HumanMessage("what does a.txt hold?")])
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == [] and reply.text == "a.txt holds hi"


def test_bounds_a_grammar_cannot_take_are_left_out_of_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # llama.cpp refused a string of at most 1,100 characters, and the process died with it
    schema = {
        "type": "object",
        "properties": {
            "long": {"type": "string", "maxLength": 5000},
            "short": {"type": "string", "maxLength": 300},
            "many": {"type": "array", "maxItems": 3000, "items": {"type": "string"}},
            "maxLength": {"type": "integer"},  # a property of that name stays
        },
    }
    out = _within_grammar_limits(schema)
    assert out["properties"]["long"] == {"type": "string"}
    assert out["properties"]["short"]["maxLength"] == 300
    assert "maxItems" not in out["properties"]["many"]
    assert out["properties"]["maxLength"] == {"type": "integer"}
    # both kinds of call send the grammar the schema without them: a forced one and a choice
    import threading

    fake = FakeLlama(['{"long": "x"}', '{"name": "note", "arguments": {"long": "x"}}'])
    monkeypatch.setattr(local_model, "load_llama", lambda *_a: (fake, threading.Lock()))
    note = {"type": "function", "function": {"name": "note", "parameters": schema}}
    model = LocalChatModel(model_path=str(tmp_path / "m.gguf"))
    model.bind_tools([note], tool_choice="note").invoke("note it")
    model.bind_tools([note], tool_choice="auto").invoke("note it")
    sent = [json.dumps(r["response_format"]["schema"]) for r in fake.requests]
    assert len(sent) == 2 and all('"maxLength": 300' in g and "5000" not in g for g in sent)


def test_every_stage_s_stated_bounds_fit_a_grammar() -> None:
    from phasegraph.state import Judgement, PhasePlan, Replan, RoundPlan, StructuredRequest, Summary

    def bounds(node: Any) -> list[int]:
        if isinstance(node, list):
            return [b for item in node for b in bounds(item)]
        if not isinstance(node, dict):
            return []
        own = [v for k, v in node.items() if k in ("maxLength", "maxItems") and isinstance(v, int)]
        return own + [b for v in node.values() for b in bounds(v)]

    for name, schema in [
        ("summarizer", Summary),
        ("judge_tasks", Judgement),
        ("plan_tool_call", RoundPlan),
        ("phase_planner", PhasePlan),
        ("replanner", Replan),
        ("request_analyser", StructuredRequest),
    ]:
        found = bounds(function_spec(name, schema))
        assert all(b <= GRAMMAR_MAX_BOUND for b in found), (name, found)
    # the summary's parts at their longest fit in one answer of 1,024 tokens (at 3 characters a
    # token, fewer than English prose takes): cut off there, all three attempts failed
    parts = function_spec("summarizer", Summary)["function"]["parameters"]["properties"]
    lists = [
        parts[k]["maxItems"] * parts[k]["items"]["maxLength"]
        for k in ("highlights", "unfinished", "next_steps")
    ]
    longest = parts["final_summary"]["maxLength"] + parts["quality_assessment"]["maxLength"]
    assert longest + sum(lists) <= 3 * 1024


class CountingLlama(FakeLlama):
    """A stand-in whose llama.cpp counters grow as a context's do: 4 of 10 prompt tokens read."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__(answers)
        self.ctx = object()
        self.perf = local_model.Perf()

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        spent = local_model.Perf(prompt_read=4, prompt_ms=40.0, answer_tokens=3, answer_ms=90.0)
        self.perf = local_model.Perf(
            self.perf.prompt_read + spent.prompt_read,
            self.perf.prompt_ms + spent.prompt_ms,
            self.perf.answer_tokens + spent.answer_tokens,
            self.perf.answer_ms + spent.answer_ms,
        )
        return super().create_chat_completion(**request)


def test_a_call_says_what_it_read_again_and_how_long_it_read_and_wrote(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import threading

    fake = CountingLlama(['{"choice": "b"}'])
    monkeypatch.setattr(local_model, "load_llama", lambda *_a: (fake, threading.Lock()))
    monkeypatch.setattr(local_model, "perf_counters", lambda llm: llm.perf)
    model = LocalChatModel(model_path=str(tmp_path / "m.gguf"))
    call = call_structured(model, "pick", Pick, [HumanMessage("choose")], retries=0)
    # 10 prompt tokens, of which the cache held 6; 40 ms reading, 90 ms writing
    assert (call.prompt_tokens, call.cached_tokens) == (10, 6)
    assert (call.prompt_ms, call.answer_ms) == (40, 90)
    counters = call.counters(counted=True)
    assert counters["cached_tokens"] == 6 and counters["answer_ms"] == 90


def test_the_state_cache_has_a_stated_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PHASEGRAPH_STATE_CACHE_MB", raising=False)
    assert local_model.state_cache_mb() == local_model.STATE_CACHE_MB
    monkeypatch.setenv("PHASEGRAPH_STATE_CACHE_MB", "0")
    assert local_model.state_cache_mb() == 0
    monkeypatch.setenv("PHASEGRAPH_STATE_CACHE_MB", "lots")
    with pytest.raises(ConfigurationError, match="not a number"):
        local_model.state_cache_mb()


def test_saved_states_keep_within_their_bound_counting_every_array() -> None:
    import numpy as np

    from phasegraph.models.state_cache import StateCache

    class State:  # what llama-cpp-python's save_state returns, in small
        def __init__(self, tokens: list[int]) -> None:
            self.input_ids = np.array(tokens, dtype=np.intc)
            self.scores = np.ones((len(tokens), 1000), dtype=np.single)  # 4 KB a row
            self.llama_state_size = 10_000
            self.n_tokens = len(tokens)

    cache = StateCache(capacity_bytes=40_000)
    cache[[1, 2, 3]] = State([1, 2, 3])
    kept = cache[[1, 2, 3, 4]]
    assert kept.scores.shape == (1, 1000)  # one row of logits: a restored state is re-read
    cache[[1, 9]] = State([1, 9])
    cache[[7, 8]] = State([7, 8])
    assert cache.cache_size <= 40_000 and len(cache.states) == 2  # the oldest went first
    assert cache[[1, 9, 9]].input_ids.tolist() == [1, 9]  # the longest common prefix wins
    with pytest.raises(KeyError):
        cache[[5]]
    assert [5] not in cache and [7] in cache


def test_every_call_runs_on_the_one_model_thread_whichever_thread_asks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import threading
    from concurrent.futures import ThreadPoolExecutor

    class ThreadNoting(FakeLlama):
        def create_chat_completion(self, **request: Any) -> dict[str, Any]:
            threads.append(threading.current_thread().name)
            return super().create_chat_completion(**request)

    threads: list[str] = []
    fake = ThreadNoting(["words"])
    monkeypatch.setattr(local_model, "load_llama", lambda *_a: (fake, threading.Lock()))
    model = LocalChatModel(model_path=str(tmp_path / "m.gguf"))
    # as a graph calls it: from its worker threads, several at once, and from the caller's
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda n: model.invoke(f"say {n}").content, range(6)))
    answers.append(model.invoke("once more").content)
    assert answers == ["words"] * 7
    assert len(threads) == 7 and set(threads) == {"phasegraph-model_0"}


def test_a_caller_interrupted_while_it_waits_stops_the_answer_being_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import concurrent.futures
    import threading

    from phasegraph.models import model_thread, stop

    started, ended = threading.Event(), threading.Event()
    seen: list[BaseException] = []

    def call() -> str:
        started.set()
        try:
            while True:  # as the sampler does at each token
                stop.check()
                threading.Event().wait(0.01)
        except BaseException as exc:
            seen.append(exc)
            raise
        finally:
            ended.set()

    def interrupted(self: Any, timeout: Any = None) -> Any:
        started.wait(10)
        raise KeyboardInterrupt  # Ctrl-C while the model writes

    with monkeypatch.context() as patched:
        patched.setattr(concurrent.futures.Future, "result", interrupted)
        with pytest.raises(KeyboardInterrupt):
            model_thread.on_model_thread(call)
    assert ended.wait(5) and isinstance(seen[0], stop.CallStopped)
    # a call made after the interrupt runs as usual: nothing is left to clear
    assert model_thread.on_model_thread(lambda: "next") == "next"


def test_stopped_calls_raise_and_never_return_a_cut_answer() -> None:
    import threading

    from phasegraph.models import model_thread, stop

    running, queued_ran = threading.Event(), []

    def long_answer() -> str:
        running.set()
        while not stop.stopped():
            threading.Event().wait(0.01)
        return "a cut answer"  # what llama-cpp-python returns once the sampler ends it

    def completed() -> str:
        answer = long_answer()
        stop.check()
        return answer

    outcomes: list[object] = []

    def caller(call: Any) -> None:
        try:
            outcomes.append(model_thread.on_model_thread(call))
        except BaseException as exc:
            outcomes.append(exc)

    first = threading.Thread(target=caller, args=(completed,))
    first.start()
    assert running.wait(5)
    second = threading.Thread(target=caller, args=(lambda: queued_ran.append(1) or "queued",))
    second.start()
    for _ in range(500):  # the second call has its ticket once it waits in the thread's queue
        if model_thread._model_thread._work_queue.qsize():
            break
        threading.Event().wait(0.01)
    stop.stop_calls()  # as Ctrl-C does: the running call and the one waiting its turn
    first.join(5)
    second.join(5)
    assert [type(o) for o in outcomes] == [stop.CallStopped, stop.CallStopped]
    assert queued_ran == []
    assert model_thread.on_model_thread(lambda: "after") == "after"
    # a call made while the process stops (a model that was loading, a retry) is not begun
    from phasegraph.tools.stopping import STOPPING

    STOPPING.set()
    try:
        with pytest.raises(stop.CallStopped):
            model_thread.on_model_thread(lambda: queued_ran.append(2))
    finally:
        STOPPING.clear()
    assert queued_ran == []


def test_the_abort_callback_is_set_while_a_prompt_is_read_and_while_stopped() -> None:
    # asked between the nodes of every token's graph, a callback would cost each token
    import ctypes
    from types import SimpleNamespace

    from phasegraph.models import stop

    current: list[Any] = [None]
    seen_in_eval: list[Any] = []
    lib = SimpleNamespace(
        ggml_abort_callback=ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p),
        llama_set_abort_callback=lambda ctx, callback, data: current.__setitem__(0, callback),
    )
    llm = SimpleNamespace(ctx=object(), eval=lambda tokens: seen_in_eval.append(current[0]))
    stop.install_abort(llm, lib)
    try:
        stop.begin(stop.ticket())
        llm.eval([1])  # one token of an answer: nothing asked
        llm.eval([1, 2, 3])  # a prompt: asked while it is read, not after
        assert not seen_in_eval[0] and seen_in_eval[1] and seen_in_eval[1](None) is False
        assert not current[0]
        stop.stop_calls()
        assert current[0] and current[0](None) is True  # the call running aborts
        llm.eval([1, 2])
        assert current[0]  # still set after a prompt read while stopped
        stop.begin(stop.ticket())  # a call made after the stop
        assert not current[0]
    finally:
        stop.forget(llm)
