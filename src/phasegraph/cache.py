"""phasegraph's folders of the user's: the cache (assembled models) and the state (the journal)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``PHASEGRAPH_CACHE_DIR``, else ``phasegraph`` in the user's cache (``XDG_CACHE_HOME``).

    What lies here can be made again: it may be cleared at any time.
    """
    return _user_dir("PHASEGRAPH_CACHE_DIR", "XDG_CACHE_HOME", ".cache")


def state_dir() -> Path:
    """``PHASEGRAPH_STATE_DIR``, else ``phasegraph`` in the user's state (``XDG_STATE_HOME``).

    What lies here must outlast a process and cannot be made again (the tool journal).
    """
    return _user_dir("PHASEGRAPH_STATE_DIR", "XDG_STATE_HOME", os.path.join(".local", "state"))


def _user_dir(own: str, xdg: str, default: str) -> Path:
    configured = os.environ.get(own)
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get(xdg) or os.path.join(os.path.expanduser("~"), default)
    return Path(base) / "phasegraph"
