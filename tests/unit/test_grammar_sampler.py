"""The grammar-first-pass sampler over a stand-in for llama.cpp's C functions.

A fake grammar allows a set of tokens; the sampler must pick the model's best token when the
grammar allows it (asking about that token alone), the best allowed token otherwise, accept
what it picked into the grammar, and be installed only for greedy calls under a grammar.
"""

from __future__ import annotations

import ctypes
import math
from types import SimpleNamespace
from typing import Any

import pytest

from phasegraph.models import grammar_sampler


class TokenData(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int32), ("logit", ctypes.c_float), ("p", ctypes.c_float)]


TokenDataP = ctypes.POINTER(TokenData)


class TokenDataArray(ctypes.Structure):
    _fields_ = [
        ("data", TokenDataP),
        ("size", ctypes.c_size_t),
        ("selected", ctypes.c_int64),
        ("sorted", ctypes.c_bool),
    ]


class FakeLibrary:
    """llama.cpp's sampler functions, for a grammar that allows ``allowed`` tokens."""

    llama_token_data = TokenData
    llama_token_data_p = TokenDataP
    llama_token_data_array = TokenDataArray

    def __init__(self, logits: list[float], allowed: set[int], refuse: bool = False) -> None:
        self.logits = (ctypes.c_float * len(logits))(*logits)
        self.allowed = allowed
        self.refuse = refuse
        self.sizes: list[int] = []  # candidates the grammar was asked about, per apply
        self.accepted: list[int] = []
        self.freed = 0

    def llama_sampler_init_grammar(self, vocab: Any, grammar: bytes, root: bytes) -> int:
        return 0 if self.refuse else 7

    def llama_get_logits_ith(self, ctx: Any, idx: int) -> Any:
        return ctypes.cast(self.logits, ctypes.POINTER(ctypes.c_float))

    def llama_sampler_apply(self, sampler: int, ref: Any) -> None:
        array = ref._obj
        self.sizes.append(array.size)
        for i in range(array.size):
            if array.data[i].id not in self.allowed:
                array.data[i].logit = -math.inf

    def llama_sampler_accept(self, sampler: int, token: int) -> None:
        self.accepted.append(token)

    def llama_sampler_free(self, sampler: int) -> None:
        self.freed += 1

    def llama_vocab_eos(self, vocab: Any) -> int:
        return 99


GRAMMAR = SimpleNamespace(_grammar="root ::= x", _root="root")
MODEL = SimpleNamespace(vocab=object())
CTX = SimpleNamespace(ctx=object())


def sample(lib: FakeLibrary) -> int:
    sampler = grammar_sampler.GreedyGrammarSampler(lib, MODEL, GRAMMAR, len(lib.logits))
    return sampler.sample(CTX, -1)


def test_the_model_s_best_token_is_taken_when_the_grammar_allows_it() -> None:
    lib = FakeLibrary([0.1, 3.0, 2.0, 0.5], allowed={1, 2})
    assert sample(lib) == 1
    assert lib.sizes == [1]  # the grammar was asked about one token, not the vocabulary
    assert lib.accepted == [1]


def test_the_best_allowed_token_is_taken_when_the_best_is_refused() -> None:
    lib = FakeLibrary([0.1, 3.0, 2.0, 2.5], allowed={0, 2})
    assert sample(lib) == 2
    assert lib.sizes == [1, 4]
    assert lib.accepted == [2]


def test_a_refused_grammar_is_an_error_not_a_crash() -> None:
    with pytest.raises(grammar_sampler.GrammarRefusedError):
        sample(FakeLibrary([1.0], allowed={0}, refuse=True))


def test_it_is_installed_only_for_greedy_calls_under_a_grammar() -> None:
    made: list[dict[str, Any]] = []
    llm = SimpleNamespace(
        _init_sampler=lambda **kwargs: made.append(kwargs) or "stock",
        _model=MODEL,
        n_vocab=lambda: 3,
    )
    lib = FakeLibrary([1.0, 2.0, 0.0], allowed={1})
    grammar_sampler.install(llm, lib)
    greedy = {"temp": 0.0, "grammar": GRAMMAR, "repeat_penalty": 1.0}
    assert isinstance(llm._init_sampler(**greedy), grammar_sampler.GreedyGrammarSampler)
    assert llm._init_sampler(**{**greedy, "temp": 0.7}) == "stock"
    assert llm._init_sampler(**{**greedy, "grammar": None}) == "stock"
    assert llm._init_sampler(**{**greedy, "repeat_penalty": 1.1}) == "stock"
    assert len(made) == 3


def test_an_answer_no_longer_wanted_ends_at_its_next_token() -> None:
    from phasegraph.models import stop

    lib = FakeLibrary([0.1, 3.0, 2.0, 0.5], allowed={1, 2})
    stop.begin(stop.ticket())
    stop.stop_calls()
    assert sample(lib) == 99  # the end of the text, and nothing accepted into the grammar
    assert lib.accepted == [] and lib.sizes == []
    stop.begin(stop.ticket())  # a call made after the stop
    assert sample(lib) == 1


def test_each_answer_token_is_counted_forced_copied_or_chosen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the measure issue 61 starts from: what decoding decided, and what it only wrote out
    prompt = [7, 8, 1, 1, 2]
    lib = FakeLibrary([0.1, 3.0, 2.0, 0.5, 0, 0, 0, 0, 0], allowed={1, 2})
    sampler = grammar_sampler.GreedyGrammarSampler(
        lib, MODEL, GRAMMAR, len(lib.logits), history=lambda: prompt
    )
    assert sampler.sample(CTX, -1) == 1  # the prompt ends 1, 2: and 1, 2, 1 is not in it: chosen
    assert sampler.sample(CTX, -1) == 1  # 2, 1, 1 is not in it either: chosen
    lib.allowed = {2}
    assert sampler.sample(CTX, -1) == 2  # the grammar's one token: forced
    lib.allowed = {1, 2, 3}
    assert sampler.split == grammar_sampler.TokenSplit(forced=1, copied=0, chosen=2)
    copying = grammar_sampler.GreedyGrammarSampler(
        lib, MODEL, GRAMMAR, len(lib.logits), history=lambda: [8, 1, 1, 5]
    )
    assert copying.sample(CTX, -1) == 1  # 1, 5, 1 is not in the prompt: chosen
    assert copying.split == grammar_sampler.TokenSplit(chosen=1)
    copied = grammar_sampler.GreedyGrammarSampler(
        lib, MODEL, GRAMMAR, len(lib.logits), history=lambda: [4, 8, 1, 1, 8, 1]
    )
    assert copied.sample(CTX, -1) == 1  # the prompt ends 8, 1, and 8, 1, 1 stands in it
    assert copied.split == grammar_sampler.TokenSplit(copied=1)
    # unmeasured, nothing is counted and the grammar is asked about the chosen token alone
    plain = FakeLibrary([0.1, 3.0, 2.0], allowed={1, 2})
    assert sample(plain) == 1 and plain.sizes == [1]
    # installed, a sampler counts only while the setting is on, and leaves its split on the llm
    llm = SimpleNamespace(_init_sampler=lambda **kwargs: "stock", _model=MODEL, n_vocab=lambda: 3,
                          input_ids=SimpleNamespace(__getitem__=None), n_tokens=0)  # fmt: skip
    grammar_sampler.install(llm, plain)
    greedy = {"temp": 0.0, "grammar": GRAMMAR, "repeat_penalty": 1.0}
    monkeypatch.delenv(grammar_sampler.SPLIT_SETTING, raising=False)
    assert llm._init_sampler(**greedy).split is None and llm.last_split is None
    monkeypatch.setenv(grammar_sampler.SPLIT_SETTING, "1")
    assert llm._init_sampler(**greedy).split == grammar_sampler.TokenSplit()
    grammar_sampler.record_split("judge_tasks", grammar_sampler.TokenSplit(1, 2, 3))
    grammar_sampler.record_split("judge_tasks", None)
    assert grammar_sampler.SPLITS.pop("judge_tasks") == grammar_sampler.TokenSplit(1, 2, 3)


def test_the_split_table_gives_each_stage_its_shares() -> None:
    from bench.token_split import split_table

    table = split_table({"plan_tool_call": grammar_sampler.TokenSplit(6, 2, 2),
                         "judge_tasks": grammar_sampler.TokenSplit()})  # fmt: skip
    lines = table.splitlines()
    assert lines[1].split() == ["judge_tasks", "0", "-", "-", "-"]
    assert lines[2].split() == ["plan_tool_call", "10", "60%", "20%", "20%"]
    assert lines[3].split() == ["all", "10", "60%", "20%", "20%"]
