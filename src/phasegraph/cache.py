"""phasegraph's folder in the user's cache: assembled models, a server's tool journal."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``PHASEGRAPH_CACHE_DIR``, else ``phasegraph`` in the user's cache (``XDG_CACHE_HOME``)."""
    configured = os.environ.get("PHASEGRAPH_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "phasegraph"
