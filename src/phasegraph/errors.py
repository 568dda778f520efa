"""Errors phasegraph raises to its callers, each with a message a person can act on."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any


class PhasegraphError(Exception):
    """Base of the errors a caller can expect and show as one line.

    Each is also a built-in kind (`ValueError` for what the caller gave, `RuntimeError` for a
    thread's state), so a LangGraph server passes its message on to its client rather than
    masking it as an internal error.
    """


class ConfigurationError(PhasegraphError, ValueError):
    """A setting or a model choice cannot work."""


class ThreadBusyError(PhasegraphError, RuntimeError):
    """Another runner is advancing this thread right now (SPEC section 8)."""


class ThreadPausedError(PhasegraphError, RuntimeError):
    """New input was sent to a thread that waits for a review (SPEC section 6)."""


class ThreadStateError(PhasegraphError, RuntimeError):
    """The thread is unknown, or not in a state that allows the operation."""


class CheckError(PhasegraphError, ValueError):
    """A check that cannot be used; a run given one is refused before it starts (SPEC 11).

    It has an unknown kind or bad syntax, a path outside the workspace or a command not allowed.
    """


class FeedbackError(PhasegraphError, ValueError):
    """Review feedback that does not fit the pending review; the thread is left unchanged."""


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_KEY_PREFIXES = ("sk", "pk", "rk", "ghp", "gho", "xoxa", "xoxb", "xoxp")
_SECRET_SHAPE = re.compile(rf"\b({'|'.join(_KEY_PREFIXES)})[-_][A-Za-z0-9_\-]{{8,}}")
# What any key of that shape contains: found by plain search, 30 times as fast as the pattern's
_KEY_STARTS = tuple(prefix + sep for prefix in _KEY_PREFIXES for sep in "-_")


_registered: set[str] = set()


def register_secret(value: str) -> None:
    """Mask ``value`` from now on wherever `redact` runs (an API key, an endpoint's URL)."""
    if len(value) >= 8:
        _registered.add(value)


def redact(text: str) -> str:
    """Mask secrets in text bound for the state, a log or a report.

    Masks registered values, the values of environment variables whose names look secret, and
    strings shaped like common API keys, so an error message that quotes a key or the model
    endpoint never reaches a checkpoint.
    """
    for value in sorted(_registered, key=len, reverse=True):
        text = text.replace(value, "***")
    for value in _environment_secrets():
        if value in text:
            text = text.replace(value, "***")
    if any(start in text for start in _KEY_STARTS):
        text = _SECRET_SHAPE.sub("***", text)
    return text


def redact_all(value: Any) -> Any:
    """``value`` with `redact` applied to every string in it, through dicts, lists and tuples."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {key: redact_all(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_all(item) for item in value]
    return value


# The environment as last read (CPython's bytes mapping behind os.environ) and its secret values.
_environment: tuple[object, list[str]] = (None, [])


def _environment_secrets() -> list[str]:
    """Values of the environment variables whose names look secret.

    Read again only when the environment changed since the last call: decoding every variable
    took 75 us a call with 36 of them, and every tool output is redacted (bench, about 3 % of a
    short-phase run's framework time).
    """
    global _environment
    raw = getattr(os.environ, "_data", None)
    seen, secrets = _environment
    if isinstance(raw, dict) and raw == seen:
        return secrets
    # The copy is taken before the values are read: a variable another thread sets meanwhile
    # makes the next call read them again, never keeps its value out of the list.
    seen = dict(raw) if isinstance(raw, dict) else None
    secrets = [
        value for name, value in os.environ.items() if len(value) >= 8 and _SECRET_NAME.search(name)
    ]
    _environment = (seen, secrets)
    return secrets


class CheckpointRefusedError(ThreadStateError):
    """A thread's checkpoint holds a type the strict loader refused, or cannot be decoded."""


class DatabaseDamagedError(PhasegraphError, RuntimeError):
    """The threads database fails its integrity check: nothing is written to it."""
