"""The model's state after each stage's opening turn, kept on disk for the next process.

Every stage's prompt opens with the same turn (its instructions, stable first), which a new
process (each ``phasegraph run`` or ``resume``, each run of the README's example) would read
again from its first token: a few hundred tokens a stage. After a call, `keep_opening` saves
the state of the model having read that turn alone, once, in a folder of the cache directory
named after the model file, the context size and llama-cpp-python's version; `StateCache`
restores it for a later prompt that begins with the same turn, in this process or another.

The folders of all models together hold at most ``capacity_bytes``
(``PHASEGRAPH_STATE_DISK_MB``), the least recently used file out first. Each file carries the
sha256 of what follows its header: a file that is cut short, damaged or of another format is
removed, as is one llama.cpp refuses to restore, and the prompt is read whole, as without it.
Keeping states is best effort: a folder that cannot be written leaves every call as it was.
Folders and files are the user's alone (0700, 0600): a state holds a prompt's opening turn, as
tokens and as the model's reading of it. A state file is trusted as the model file beside it is:
whoever can write the user's cache directory can replace either.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import time
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
#: A temporary file older than this was left by a process that died while writing it.
_STALE_TEMP_S = 3600.0
_DISK_ERRORS = (OSError, ValueError, struct.error)


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
        self._tried: set[Path] = set()

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
                except _DISK_ERRORS:
                    self.forget(path)
        return self._index

    def forget(self, path: Path) -> None:
        """Remove a state file (as far as the file system lets) and its entry."""
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        if self._index is not None:
            self._index.pop(path, None)

    def holds(self, tokens: Sequence[int]) -> bool:
        """Whether a state of exactly these tokens is kept, or this process tried to keep it."""
        path = self._path(tokens)
        return path in self._tried or path in self._scan()

    def longest(self, key: Sequence[int], longer_than: int = 0) -> tuple[tuple[int, ...], Any]:
        """The kept state whose tokens all begin ``key``, the longest; KeyError if none.

        Only states of more than ``longer_than`` tokens and fewer than ``key``'s count (what
        is at hand already; a prompt keeps a token to read). The state's file is marked used
        (the least recently used go first); a file that cannot be read whole is removed. The
        state returned carries ``restore_failed``, which removes its file.
        """
        key = tuple(key)
        ranked = sorted(
            (
                (tokens, path)
                for path, tokens in self._scan().items()
                if longer_than < len(tokens) < len(key) and key[: len(tokens)] == tokens
            ),
            key=lambda found: len(found[0]),
            reverse=True,
        )
        for tokens, path in ranked:
            state = self._read(path)
            if state is not None:
                with contextlib.suppress(OSError):
                    os.utime(path)
                state.restore_failed = lambda path=path: self.forget(path)
                return tokens, state
        raise KeyError("no state on disk begins the prompt")

    def _read(self, path: Path) -> Any | None:
        import numpy as np

        try:
            data = path.read_bytes()
            count, n_vocab, size, seed, digest = _HEADER.unpack_from(data, len(_MAGIC))
            body = memoryview(data)[len(_MAGIC) + _HEADER.size :]
            whole = len(body) == 4 * (count + n_vocab) + size
            if not whole or count > self.n_ctx or hashlib.sha256(body).digest() != digest:
                raise ValueError("damaged")
        except _DISK_ERRORS:
            self.forget(path)
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
        """Keep ``state`` (of exactly ``tokens``), then drop the oldest files past the bound.

        Tried once a process: a state that cannot be kept (over the bound, a folder that
        cannot be written) is not tried again.
        """
        import numpy as np

        path = self._path(tokens)
        self._tried.add(path)
        row = np.ascontiguousarray(state.scores[-1], dtype=np.single)
        raw = bytes(state.llama_state)[: int(state.llama_state_size)]
        body = struct.pack(f"<{len(tokens)}i", *tokens) + row.tobytes() + raw
        if len(body) > self.capacity_bytes:
            return
        header = _HEADER.pack(
            len(tokens), row.size, len(raw), int(state.seed), hashlib.sha256(body).digest()
        )
        temp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(handle, "wb") as out:
                out.write(_MAGIC + header + body)
            os.replace(temp, path)  # another process reads it whole or not at all
        except OSError:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
            return
        self._scan()[path] = tuple(tokens)
        self._within_bound()

    def _within_bound(self) -> None:
        """Drop the least recently used files of every model's folder past the bound.

        Read afresh from the disk: other processes write there too. Temporary files that a
        process left when it died go first.
        """
        files = []
        now = time.time()
        for path in self.folder.parent.glob(f"*/*{_SUFFIX}*"):
            try:
                stat = path.stat()
            except OSError:
                continue
            if path.name.startswith("."):  # a temporary file, being written or left behind
                if now - stat.st_mtime > _STALE_TEMP_S:
                    self.forget(path)
                continue
            files.append((stat.st_mtime_ns, stat.st_size, path))
        total = sum(size for _mtime, size, _path in files)
        for _mtime, size, path in sorted(files):
            if total <= self.capacity_bytes:
                break
            self.forget(path)
            total -= size


def keep_opening(llm: Any, disk: DiskStates, prompt_tokens: int, end_of_turn: int) -> None:
    """Save the state of ``llm`` having read only its last prompt's opening turn, if not kept.

    Called right after a call, with the prompt's length: the context still holds that prompt
    and the answer, which this drops from the context (the next prompt is then read from the
    opening, or from a state in memory). Tried once a process for each opening.
    """
    tokens = [int(t) for t in llm.input_ids[:prompt_tokens]]
    end = opening_turn(tokens, end_of_turn)
    if end is None or disk.holds(tokens[:end]) or llm.n_tokens < end:
        return
    # as llama-cpp-python's own generate() cuts its context before a new prompt
    if not llm._ctx.kv_cache_seq_rm(-1, end, -1):
        return
    llm.n_tokens = end
    llm._requires_eval = True
    disk.save(tokens[:end], llm.save_state())
