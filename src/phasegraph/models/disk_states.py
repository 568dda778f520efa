"""The model's state after each stage's opening turn, kept on disk for the next process.

Every stage's prompt opens with the same turn (its instructions, stable first), which a new
process (each ``phasegraph run`` or ``resume``, each run of the README's example) would read
again from its first token: a few hundred tokens a stage. After a call, `keep_opening` saves
the state of the model having read that turn alone, once, in a folder of the cache directory
named after the model file, the context size and llama-cpp-python's version; `StateCache`
restores it for a later prompt that begins with the same turn, in this process or another.

The folder holds at most ``capacity_bytes`` (``PHASEGRAPH_STATE_DISK_MB``), the least recently
used out first. Each file carries the sha256 of what follows its header: a file that is cut
short, damaged or of another format is removed and the prompt read whole, as without it.
A state file is trusted as the model file beside it is: whoever can write the user's cache
directory can replace either.
"""

from __future__ import annotations

import hashlib
import os
import struct
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_MAGIC = b"PGSTATE1"
#: After the magic: tokens, vocabulary size, state bytes, seed, then the sha256 of the rest.
_HEADER = struct.Struct("<IIQq32s")
_SUFFIX = ".pgstate"
#: Openings shorter than this are read faster than their state is restored.
MIN_OPENING_TOKENS = 32


def opening_turn(tokens: Sequence[int], end_of_turn: int) -> int | None:
    """How many tokens the prompt's first turn takes, its end-of-turn token included.

    None when the prompt has no end of turn before its last token, or a first turn shorter
    than `MIN_OPENING_TOKENS`: nothing worth keeping.
    """
    for index, token in enumerate(tokens[:-1]):
        if token == end_of_turn:
            return index + 1 if index + 1 >= MIN_OPENING_TOKENS else None
    return None


def _state_class() -> Any:
    from llama_cpp.llama import LlamaState

    return LlamaState


class DiskStates:
    """Saved states on disk, by the tokens they hold, within a bound on the folder's bytes."""

    def __init__(self, folder: Path, capacity_bytes: int, n_ctx: int) -> None:
        """States of a model loaded with a context of ``n_ctx`` tokens, kept in ``folder``."""
        self.folder = folder
        self.capacity_bytes = capacity_bytes
        self.n_ctx = n_ctx
        self._index: dict[Path, tuple[int, ...]] | None = None

    def _path(self, tokens: Sequence[int]) -> Path:
        digest = hashlib.sha256(struct.pack(f"<{len(tokens)}i", *tokens)).hexdigest()
        return self.folder / f"{digest[:32]}{_SUFFIX}"

    def _scan(self) -> dict[Path, tuple[int, ...]]:
        """The files' tokens, read once a process (a file's header and tokens only)."""
        if self._index is None:
            self._index = {}
            for path in self.folder.glob(f"*{_SUFFIX}"):
                try:
                    with path.open("rb") as handle:
                        head = handle.read(len(_MAGIC) + _HEADER.size)
                        if not head.startswith(_MAGIC) or len(head) < len(_MAGIC) + _HEADER.size:
                            raise ValueError("not a state file")
                        count = _HEADER.unpack_from(head, len(_MAGIC))[0]
                        raw = handle.read(4 * count)
                    self._index[path] = struct.unpack(f"<{count}i", raw)
                except (OSError, ValueError, struct.error):
                    self._drop(path)
        return self._index

    def _drop(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        if self._index is not None:
            self._index.pop(path, None)

    def holds(self, tokens: Sequence[int]) -> bool:
        """Whether a state of exactly these tokens is kept."""
        return self._path(tokens) in self._scan()

    def longest(self, key: Sequence[int], longer_than: int = 0) -> tuple[tuple[int, ...], Any]:
        """The kept state whose tokens all begin ``key``, the longest; KeyError if none.

        Only states of more than ``longer_than`` tokens count (what is already at hand).
        """
        key = tuple(key)
        ranked = sorted(
            (
                (len(tokens), path)
                for path, tokens in self._scan().items()
                if longer_than < len(tokens) < len(key) and key[: len(tokens)] == tokens
            ),
            reverse=True,
        )
        for _length, path in ranked:
            state = self._read(path)
            if state is not None:
                os.utime(path)  # the least recently used go first
                return self._scan()[path], state
        raise KeyError("no state on disk begins the prompt")

    def _read(self, path: Path) -> Any | None:
        import numpy as np

        try:
            data = path.read_bytes()
            count, n_vocab, size, seed, digest = _HEADER.unpack_from(data, len(_MAGIC))
            body = memoryview(data)[len(_MAGIC) + _HEADER.size :]
            whole = len(body) == 4 * (count + n_vocab) + size
            if not whole or hashlib.sha256(body).digest() != digest:
                raise ValueError("damaged")
        except (OSError, ValueError, struct.error):
            self._drop(path)
            return None
        ids = np.zeros(self.n_ctx, dtype=np.intc)
        ids[:count] = np.frombuffer(body[: 4 * count], dtype=np.intc)
        scores = np.frombuffer(body[4 * count : 4 * (count + n_vocab)], dtype=np.single)
        return _state_class()(
            input_ids=ids,
            scores=scores.reshape(1, n_vocab).copy(),
            n_tokens=count,
            llama_state=bytes(body[4 * (count + n_vocab) :]),
            llama_state_size=size,
            seed=seed,
        )

    def save(self, tokens: Sequence[int], state: Any) -> None:
        """Keep ``state`` (of exactly ``tokens``), then drop the oldest files past the bound."""
        import numpy as np

        path = self._path(tokens)
        row = np.ascontiguousarray(state.scores[-1], dtype=np.single)
        raw = bytes(state.llama_state)[: int(state.llama_state_size)]
        body = struct.pack(f"<{len(tokens)}i", *tokens) + row.tobytes() + raw
        if len(body) > self.capacity_bytes:
            return
        header = _HEADER.pack(
            len(tokens), row.size, len(raw), int(state.seed), hashlib.sha256(body).digest()
        )
        self.folder.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        try:
            temp.write_bytes(_MAGIC + header + body)
            os.replace(temp, path)  # another process reads it whole or not at all
        except OSError:
            temp.unlink(missing_ok=True)
            return
        self._scan()[path] = tuple(tokens)
        self._within_bound()

    def _within_bound(self) -> None:
        files = []
        for path in self._scan():
            try:
                stat = path.stat()
            except OSError:
                continue
            files.append((stat.st_mtime_ns, stat.st_size, path))
        total = sum(size for _mtime, size, _path in files)
        for _mtime, size, path in sorted(files):
            if total <= self.capacity_bytes:
                break
            self._drop(path)
            total -= size


def keep_opening(llm: Any, disk: DiskStates, prompt_tokens: int) -> None:
    """Save, once, the state of ``llm`` having read only its last prompt's opening turn.

    Called right after a call, with the prompt's length: the context still holds that prompt
    (and the answer, which this drops: the answer's whole state is kept in memory already).
    """
    import llama_cpp

    tokens = [int(t) for t in llm.input_ids[:prompt_tokens]]
    end = opening_turn(tokens, llama_cpp.llama_vocab_eot(llm._model.vocab))
    if end is None or disk.holds(tokens[:end]) or llm.n_tokens < end:
        return
    # llama-cpp-python's own generate() cuts its context the same way before a new prompt
    llm._ctx.kv_cache_seq_rm(-1, end, -1)
    llm.n_tokens = end
    disk.save(tokens[:end], llm.save_state())
