"""The local model's saved states, kept within a memory bound that counts what they hold.

llama-cpp-python saves a state after each call (the KV cache, the tokens, and a copy of the
logits of up to a batch of tokens: 512 x the vocabulary x 4 bytes, 311 MB for Qwen2.5) and, for
a new prompt, restores the saved state with the longest common prefix. Its own RAM cache counts
only the KV part against its capacity, so its resident size grows by the logits of every state.
`StateCache` keeps the same lookup, keeps one row of the logits (a restored state is always
evaluated again from its last token before sampling, so the rows are never read, as long as
the model is loaded without ``logits_all``, as `phasegraph.models.local` loads it), and counts
what it holds, the arrays included (not the token tuples that key them, about 0.1 %), against
``capacity_bytes``. `install_lean_states` spares the copy of the logits in the first place.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from phasegraph.models.disk_states import DiskStates


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two sequences share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def state_bytes(state: Any) -> int:
    """The memory a saved state takes: the KV data and its arrays."""
    return int(state.llama_state_size) + int(state.scores.nbytes) + int(state.input_ids.nbytes)


def slimmed(state: Any) -> Any:
    """The state with only the last row of its logits (never read once restored)."""
    if len(state.scores) > 1:
        state.scores = state.scores[-1:].copy()
    return state


class StateCache:
    """Saved states by the tokens they hold, least recently used first out, within a bound.

    Implements what ``Llama.set_cache`` uses: ``key in cache``, ``cache[tokens]`` (the state
    with the longest common prefix; KeyError when none shares a token) and
    ``cache[tokens] = state``. With ``disk``, a prompt whose beginning a state on disk holds
    whole, longer than any kept here shares, gets that state (`DiskStates`).
    """

    def __init__(self, capacity_bytes: int, disk: DiskStates | None = None) -> None:
        """A cache that holds at most ``capacity_bytes`` of states, and ``disk``'s."""
        self.capacity_bytes = capacity_bytes
        self.disk = disk
        self.states: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    @property
    def cache_size(self) -> int:
        """The bytes the kept states take."""
        return sum(state_bytes(s) for s in self.states.values())

    def _longest(self, key: Sequence[int]) -> tuple[int, ...] | None:
        best, best_len = None, 0
        for held in self.states:
            length = common_prefix(held, key)
            if length > best_len:
                best, best_len = held, length
        return best

    def __bool__(self) -> bool:
        """Always true: llama-cpp-python uses the cache only ``if self.cache``, even empty."""
        return True

    def __contains__(self, key: Sequence[int]) -> bool:
        """Whether a kept state shares a first token with ``key``."""
        return self._longest(tuple(key)) is not None

    def __getitem__(self, key: Sequence[int]) -> Any:
        """The state with the longest common prefix with ``key``, here or on disk; KeyError if none.

        A state from disk (`DiskStates.longest`) is kept here from then on.
        """
        key = tuple(key)
        found = self._longest(key)
        if self.disk is not None:
            shared = common_prefix(found, key) if found is not None else 0
            try:
                tokens, state = self.disk.longest(key, longer_than=shared)
            except KeyError:
                pass
            else:
                self[tokens] = state
                return state
        if found is None:
            raise KeyError("no saved state shares a prefix")
        self.states.move_to_end(found)
        return self.states[found]

    def drop(self, state: Any) -> None:
        """Forget ``state``, here and on disk (llama.cpp refused to restore it)."""
        for key, held in list(self.states.items()):
            if held is state:
                del self.states[key]
        restore_failed = getattr(state, "restore_failed", None)
        if restore_failed is not None:
            restore_failed()

    def __setitem__(self, key: Sequence[int], state: Any) -> None:
        """Keep ``state`` (slimmed), dropping the least recently used past the bound."""
        key = tuple(key)
        self.states.pop(key, None)
        state = slimmed(state)
        if state_bytes(state) > self.capacity_bytes:
            return  # one state over the whole bound is not kept
        self.states[key] = state
        while self.cache_size > self.capacity_bytes:
            self.states.popitem(last=False)


def install_lean_states(llm: Any, llama_cpp: Any) -> None:
    """Give ``llm`` (a ``llama_cpp.Llama``) a save and a restore that leave its logits table.

    llama-cpp-python copies the table of logits (a row a token, up to a batch: 311 MB for
    Qwen2.5) into every state it saves, and writes it back on every restore; with
    ``logits_all`` off it never fills that table (sampling reads llama.cpp's own logits), so
    the copies carry nothing. These keep the tokens and llama.cpp's state, as its own do, and
    one row of zeros where a state's format has logits. A model loaded with ``logits_all``
    (which logprobs need) keeps llama-cpp-python's own.
    """
    import ctypes

    import numpy as np
    from llama_cpp.llama import LlamaState

    if getattr(llm, "_logits_all", True):
        return

    def save_state() -> Any:
        size = int(llama_cpp.llama_state_get_size(llm._ctx.ctx))
        buffer = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_get_data(llm._ctx.ctx, buffer, size))
        if written > size:
            raise RuntimeError("Failed to copy llama state data")
        return LlamaState(
            input_ids=llm.input_ids.copy(),
            scores=np.zeros((1, llm.n_vocab()), dtype=np.single),
            n_tokens=llm.n_tokens,
            llama_state=ctypes.string_at(buffer, written),
            llama_state_size=written,
            seed=llm._seed,
        )

    def load_state(state: Any) -> None:
        size = int(state.llama_state_size)
        data = (ctypes.c_uint8 * size).from_buffer_copy(state.llama_state)
        if int(llama_cpp.llama_state_set_data(llm._ctx.ctx, data, size)) != size:
            # llama.cpp has emptied the context: the prompt is read whole (a KeyError is
            # what llama-cpp-python takes for "no saved state"), and the state is dropped
            llm.reset()
            cache = getattr(llm, "cache", None)
            if isinstance(cache, StateCache):
                cache.drop(state)
            raise KeyError("llama.cpp refused the saved state")
        llm.input_ids = state.input_ids.copy()
        llm.n_tokens = state.n_tokens
        llm._requires_eval = True
        if not hasattr(state, "restore_failed"):  # one from disk holds another run's seed
            llm._seed = state.seed

    llm.save_state = save_state
    llm.load_state = load_state
