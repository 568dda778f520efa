"""Greedy decoding under a grammar that checks one token, not the whole vocabulary, per step.

llama-cpp-python puts llama.cpp's grammar sampler in its chain before the greedy pick, so the
grammar is tried on every token of the vocabulary at every step (Qwen2.5 has 151,936 tokens),
and decoding under a JSON schema's grammar is several times slower than without one.
Every call phasegraph makes of a local model is decoded under one.

llama.cpp's own command-line sampler avoids this (``common_sampler_sample``): it takes the
model's choice, asks the grammar about that one token, and applies the grammar to the whole
vocabulary only when the choice is refused. Greedy decoding picks the same token either way:
the best token the grammar allows is the best token, whenever the grammar allows it.
`install` gives a loaded ``Llama`` that sampler for greedy calls with a grammar; any other
call keeps llama-cpp-python's own chain.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from phasegraph.models import stop

#: Set to 1 to count how each answer token came to be (`TokenSplit`); it slows decoding.
SPLIT_SETTING = "PHASEGRAPH_TOKEN_SPLIT"
#: A token is copied when it ends a run of this many tokens that stands in the prompt.
COPIED_RUN = 3


@dataclass
class TokenSplit:
    """How a structured answer's tokens came to be (issue 61's measure, `SPLIT_SETTING`).

    ``forced``: the grammar allowed that token alone (a key, its punctuation, the rest of an
    enum value): decoding it decided nothing. ``copied``: the model chose it, and it ends a run
    of `COPIED_RUN` tokens that stands in the prompt (a file name, a file's text, a command's
    output): prompt-lookup decoding would have proposed it. ``chosen``: any other token.
    """

    forced: int = 0
    copied: int = 0
    chosen: int = 0

    def add(self, other: TokenSplit) -> None:
        """Add ``other``'s counts to these."""
        self.forced += other.forced
        self.copied += other.copied
        self.chosen += other.chosen


#: The split of every answer decoded while `SPLIT_SETTING` is on, by the function it answers.
SPLITS: dict[str, TokenSplit] = {}
_SPLITS_LOCK = threading.Lock()


def measuring() -> bool:
    """Whether answers' token splits are counted (`SPLIT_SETTING`)."""
    return os.environ.get(SPLIT_SETTING, "") == "1"


def record_split(name: str, split: TokenSplit | None) -> None:
    """Add one answer's split to `SPLITS` under the function it answers (nothing if None)."""
    if split is None:
        return
    with _SPLITS_LOCK:
        SPLITS.setdefault(name, TokenSplit()).add(split)

#: The fields of llama.cpp's ``llama_token_data``, as numpy lays them out.
_TOKEN_DATA_FIELDS = [("id", "<i4"), ("logit", "<f4"), ("p", "<f4")]


class GrammarRefusedError(ValueError):
    """llama.cpp could not build a grammar (it returned no sampler)."""


class GreedyGrammarSampler:
    """Greedy choice under a grammar, the grammar asked about the chosen token first."""

    def __init__(
        self,
        llama_cpp: Any,
        model: Any,
        grammar: Any,
        n_vocab: int,
        history: Callable[[], Sequence[int]] | None = None,
    ) -> None:
        """A sampler over ``model``'s vocabulary for ``grammar`` (a ``LlamaGrammar``).

        ``history``: the tokens read so far (the prompt, at the first token); given, the
        sampler counts its answer's `TokenSplit` in ``split``.
        """
        import numpy as np

        self.split = TokenSplit() if history is not None else None
        self._history = history
        self._runs: set[tuple[int, ...]] | None = None
        self._recent: list[int] = []

        self._np = np
        self._lib = llama_cpp
        self._n_vocab = n_vocab
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._grammar:
            # llama-cpp-python would go on with the missing sampler and crash the process
            raise GrammarRefusedError("llama.cpp refused the grammar of the answer's schema")
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_array = llama_cpp.llama_token_data_array(
            data=self._one, size=1, selected=-1, sorted=False
        )
        self._end = int(llama_cpp.llama_vocab_eos(model.vocab))
        self._all = np.zeros(n_vocab, dtype=np.dtype(_TOKEN_DATA_FIELDS, align=True))
        self._all["id"] = np.arange(n_vocab, dtype=np.int32)

    def __del__(self) -> None:
        """Free the grammar sampler."""
        if getattr(self, "_grammar", None):
            self._lib.llama_sampler_free(self._grammar)
            self._grammar = None

    def _allowed(self, token: int, logit: float) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, logit, 0.0
        self._one_array.size, self._one_array.selected = 1, -1
        self._lib.llama_sampler_apply(self._grammar, ctypes.byref(self._one_array))
        return not math.isinf(self._one[0].logit)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        """The token to write at ``idx``, accepted into the grammar's state (the end, once stopped).

        A stopped call (`stop.stopped`) ends here; `stop.check` then raises for it.
        """
        if stop.stopped():
            return self._end
        np = self._np
        pointer = self._lib.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))
        token = int(np.argmax(logits))
        if not self._allowed(token, float(logits[token])):
            candidates = self._under_grammar(logits)
            token = int(candidates["id"][int(np.argmax(candidates["logit"]))])
        if self.split is not None:
            self._count(token, logits)
        self._lib.llama_sampler_accept(self._grammar, token)
        return token

    def _under_grammar(self, logits: Any) -> Any:
        """The whole vocabulary with ``logits``, each token the grammar refuses at -inf."""
        candidates = self._all
        candidates["logit"] = logits
        candidates["p"] = 0.0
        array = self._lib.llama_token_data_array(
            data=candidates.ctypes.data_as(self._lib.llama_token_data_p),
            size=self._n_vocab,
            selected=-1,
            sorted=False,
        )
        self._lib.llama_sampler_apply(self._grammar, ctypes.byref(array))
        return candidates

    def _count(self, token: int, logits: Any) -> None:
        """Count ``token`` as forced, copied or chosen (`TokenSplit`), before it is accepted."""
        assert self.split is not None and self._history is not None
        if self._runs is None:
            prompt = list(self._history())
            self._recent = prompt[-(COPIED_RUN - 1) :]
            self._runs = {
                tuple(prompt[i : i + COPIED_RUN]) for i in range(len(prompt) - COPIED_RUN + 1)
            }
        allowed = int(self._np.isfinite(self._under_grammar(logits)["logit"]).sum())
        run = (*self._recent, token)
        if allowed == 1:
            self.split.forced += 1
        elif len(run) == COPIED_RUN and run in self._runs:
            self.split.copied += 1
        else:
            self.split.chosen += 1
        self._recent = [*self._recent, token][-(COPIED_RUN - 1) :]


def install(llm: Any, llama_cpp: Any) -> None:
    """Give ``llm`` (a ``llama_cpp.Llama``) the grammar-first-pass sampler for greedy calls.

    Only a call that llama-cpp-python would decode as penalties (off), grammar, greedy is
    changed; a llama-cpp-python without the private hook this needs keeps its own sampler.
    """
    original = getattr(llm, "_init_sampler", None)
    if original is None or not hasattr(llama_cpp, "llama_sampler_init_grammar"):
        return

    def init_sampler(**kwargs: Any) -> Any:
        grammar = kwargs.get("grammar")
        plain = (
            grammar is not None
            and kwargs.get("temp") == 0.0
            and kwargs.get("logits_processor") is None
            and kwargs.get("repeat_penalty", 1.0) == 1.0
            and kwargs.get("frequency_penalty", 0.0) == 0.0
            and kwargs.get("presence_penalty", 0.0) == 0.0
        )
        if not plain:
            return original(**kwargs)
        history = (lambda: llm.input_ids[: llm.n_tokens].tolist()) if measuring() else None
        sampler = GreedyGrammarSampler(llama_cpp, llm._model, grammar, llm.n_vocab(), history)
        llm.last_split = sampler.split  # read by the caller once the answer is written
        return sampler

    llm._init_sampler = init_sampler
