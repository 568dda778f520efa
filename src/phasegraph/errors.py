"""Errors phasegraph raises to its callers, each with a message a person can act on."""

from __future__ import annotations

import os
import re


class PhasegraphError(Exception):
    """Base of the errors a caller can expect and show as one line."""


class ConfigurationError(PhasegraphError):
    """A setting or a model choice cannot work."""


class ThreadBusyError(PhasegraphError):
    """Another runner is advancing this thread right now (SPEC section 8)."""


class ThreadPausedError(PhasegraphError):
    """New input was sent to a thread that waits for a review (SPEC section 6)."""


class ThreadStateError(PhasegraphError):
    """The thread is unknown, or not in a state that allows the operation."""


class CheckError(PhasegraphError, ValueError):
    """A check that cannot be used; a run given one is refused before it starts (SPEC 11).

    It has an unknown kind or bad syntax, a path outside the workspace or a command not allowed.
    """


class FeedbackError(PhasegraphError):
    """Review feedback that does not fit the pending review; the thread is left unchanged."""


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_SECRET_SHAPE = re.compile(r"\b(sk|pk|rk|ghp|gho|xox[abp])[-_][A-Za-z0-9_\-]{8,}")


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
    for name, value in os.environ.items():
        if len(value) >= 8 and _SECRET_NAME.search(name) and value in text:
            text = text.replace(value, "***")
    return _SECRET_SHAPE.sub("***", text)


class CheckpointRefusedError(ThreadStateError):
    """A thread's checkpoint holds a type the strict loader refused: nothing is run on it."""
