"""The stages' opening states on disk: kept once, found later, never trusted when damaged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from phasegraph.models import disk_states
from phasegraph.models.disk_states import DiskStates, opening_turn
from phasegraph.models.state_cache import StateCache

VOCAB = 50
N_CTX = 64


class State:
    """What llama-cpp-python's save_state returns, in small."""

    def __init__(self, tokens: list[int], blob: bytes = b"kv" * 500, rows: int = 3) -> None:
        self.input_ids = np.zeros(N_CTX, dtype=np.intc)
        self.input_ids[: len(tokens)] = tokens
        self.scores = np.arange(rows * VOCAB, dtype=np.single).reshape(rows, VOCAB)
        self.n_tokens = len(tokens)
        self.llama_state = blob
        self.llama_state_size = len(blob)
        self.seed = 7


@pytest.fixture(autouse=True)
def plain_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read back as the stand-in, whatever llama-cpp-python is installed."""

    def made(**fields: Any) -> Any:
        state = State([])
        state.__dict__.update(fields)
        return state

    monkeypatch.setattr(disk_states, "_state_class", lambda: made)


def opening(length: int = 40, first: int = 1) -> list[int]:
    return list(range(first, first + length))


def test_a_later_process_restores_the_opening_a_prompt_begins_with(tmp_path: Path) -> None:
    tmp_path = tmp_path / "model"
    DiskStates(tmp_path, 1 << 20, N_CTX).save(opening(), State(opening(), blob=b"the kv"))
    later = DiskStates(tmp_path, 1 << 20, N_CTX)  # another process: a new index
    tokens, state = later.longest([*opening(), 99, 98])
    assert list(tokens) == opening() and state.n_tokens == 40
    assert state.llama_state == b"the kv" and state.llama_state_size == 6 and state.seed == 7
    # the whole context's ids, as llama-cpp-python's load_state takes them; one row of logits
    assert state.input_ids.shape == (N_CTX,) and state.input_ids[:40].tolist() == opening()
    assert state.scores.shape == (1, VOCAB) and state.scores[0, 0] == 2 * VOCAB
    with pytest.raises(KeyError):
        later.longest([*opening()[:-1], 0, 99])  # the prompt differs inside the opening
    with pytest.raises(KeyError):
        later.longest(opening())  # nothing would be left to read: not a beginning
    with pytest.raises(KeyError):
        later.longest([*opening(), 99], longer_than=40)  # no longer than what is at hand


def test_the_longest_opening_wins_and_the_oldest_go_past_the_bound(tmp_path: Path) -> None:
    tmp_path = tmp_path / "model"
    one = len(b"kv" * 500) + 4 * (40 + VOCAB) + 60  # a file's bytes, about
    disk = DiskStates(tmp_path, int(2.5 * one), N_CTX)
    disk.save(opening(40), State(opening(40)))
    disk.save(opening(45), State(opening(45)))
    assert len(disk.longest([*opening(45), 0])[0]) == 45
    os.utime(disk._path(opening(45)), ns=(1, 1))  # the longer one used least recently
    disk.save(opening(40, first=100), State(opening(40, first=100)))
    later = DiskStates(tmp_path, int(2.5 * one), N_CTX)
    assert not later.holds(opening(45)) and later.holds(opening(40))
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= 2.5 * one


def test_a_damaged_or_foreign_file_is_removed_and_the_prompt_read_whole(tmp_path: Path) -> None:
    tmp_path = tmp_path / "model"
    disk = DiskStates(tmp_path, 1 << 20, N_CTX)
    disk.save(opening(), State(opening()))
    path = disk._path(opening())
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    (tmp_path / "other.pgstate").write_bytes(b"something else")
    later = DiskStates(tmp_path, 1 << 20, N_CTX)
    with pytest.raises(KeyError):
        later.longest([*opening(), 5])
    assert list(tmp_path.iterdir()) == []


def test_the_memory_cache_hands_out_a_state_from_disk_when_it_holds_less(tmp_path: Path) -> None:
    tmp_path = tmp_path / "model"
    DiskStates(tmp_path, 1 << 20, N_CTX).save(opening(), State(opening(), blob=b"disk"))
    cache = StateCache(1 << 20, disk=DiskStates(tmp_path, 1 << 20, N_CTX))
    assert cache[[*opening(), 3]].llama_state == b"disk"
    assert tuple(opening()) in cache.states  # kept in memory from then on
    cache[[*opening(), 3, 4]] = State([*opening(), 3, 4], blob=b"memory")
    assert cache[[*opening(), 3, 4, 5]].llama_state == b"memory"  # longer than the opening
    with pytest.raises(KeyError):
        StateCache(1 << 20, disk=DiskStates(tmp_path, 1 << 20, N_CTX))[[77, 78]]


def test_the_opening_is_the_first_turn_when_it_is_worth_keeping() -> None:
    end = 9
    assert opening_turn([*range(10, 60), end, 1, 2], end_of_turn=end) == 51
    two_turns = [*range(10, 50), end, *range(10, 50), end, 1]
    assert opening_turn(two_turns, end_of_turn=end) == 41  # the first turn, not the longest
    assert opening_turn([1, 2, end, 3], end_of_turn=end) is None  # too short to pay
    assert opening_turn([*range(10, 60), end], end_of_turn=end) is None  # the prompt's last


class Context:
    """llama-cpp-python's context wrapper, in small: what the KV cache was cut to."""

    def __init__(self) -> None:
        self.cut_at: list[int] = []

    def kv_cache_seq_rm(self, seq: int, start: int, end: int) -> bool:
        self.cut_at.append(start)
        return True


class Llm:
    """A loaded model right after a call: its context holds the prompt and the answer."""

    def __init__(self, prompt: list[int], answer: list[int]) -> None:
        self.input_ids = np.zeros(N_CTX, dtype=np.intc)
        self.input_ids[: len(prompt) + len(answer)] = prompt + answer
        self.n_tokens = len(prompt) + len(answer)
        self._ctx = Context()
        self._requires_eval = False

    def save_state(self) -> State:
        return State(self.input_ids[: self.n_tokens].tolist())


def test_the_opening_is_saved_once_and_the_context_cut_to_it(tmp_path: Path) -> None:
    end = 9
    prompt = [*range(10, 50), end, 1, 2, 3]  # a first turn of 41 tokens, then the question
    llm = Llm(prompt, answer=[5, 6])
    disk = DiskStates(tmp_path / "model", 1 << 20, N_CTX)
    disk_states.keep_opening(llm, disk, len(prompt), end_of_turn=end)
    assert llm._ctx.cut_at == [41] and llm.n_tokens == 41 and llm._requires_eval
    assert DiskStates(tmp_path / "model", 1 << 20, N_CTX).holds(prompt[:41])
    again = Llm(prompt, answer=[7])
    disk_states.keep_opening(again, disk, len(prompt), end_of_turn=end)
    assert again._ctx.cut_at == [] and again.n_tokens == len(prompt) + 1  # kept already


def test_a_folder_that_cannot_be_written_leaves_calls_as_they_were(tmp_path: Path) -> None:
    end = 9
    prompt = [*range(10, 50), end, 1]
    (tmp_path / "model").write_text("a file where the folder would be")
    disk = DiskStates(tmp_path / "model", 1 << 20, N_CTX)
    disk_states.keep_opening(Llm(prompt, [5]), disk, len(prompt), end_of_turn=end)  # no error
    later = Llm(prompt, [5])
    disk_states.keep_opening(later, disk, len(prompt), end_of_turn=end)
    assert later._ctx.cut_at == []  # tried once a process: the context is not cut again
    with pytest.raises(KeyError):
        disk.longest([*prompt, 3])


def test_a_state_llama_cpp_refuses_is_dropped_and_the_prompt_read_whole(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from phasegraph.models.state_cache import install_lean_states

    folder = tmp_path / "model"
    DiskStates(folder, 1 << 20, N_CTX).save(opening(), State(opening()))
    cache = StateCache(1 << 20, disk=DiskStates(folder, 1 << 20, N_CTX))
    state = cache[[*opening(), 3]]
    reset: list[bool] = []
    llm = SimpleNamespace(
        _logits_all=False, _ctx=SimpleNamespace(ctx=None), cache=cache, n_tokens=77, _seed=1
    )
    llm.reset = lambda: reset.append(True)
    refusing = SimpleNamespace(llama_state_set_data=lambda ctx, data, size: 0)
    install_lean_states(llm, refusing)
    with pytest.raises(KeyError):  # what llama-cpp-python reads as "no saved state"
        llm.load_state(state)
    assert reset == [True] and llm.n_tokens == 77  # emptied by reset(), not claimed restored
    assert cache.states == {} and list(folder.iterdir()) == []  # gone from memory and disk
