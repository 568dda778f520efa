"""A run's thread in its database's thread index, from what the run streamed (SPEC section 8).

Listing threads must not deserialize every checkpoint: each run records its thread's row when it
ends (`record_thread`), from the state its stream carried where it carried one
(`state_values`), so that the row need not be read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phasegraph.context import Context
from phasegraph.storage.database import Database
from phasegraph.storage.thread_index import index_for

INDEXED = frozenset({"status", "request", "step_count"})
"""The state keys a thread's index row is written from (`ThreadIndex.record`)."""


def state_values(chunk: Any, options: Mapping[str, Any], default: Any) -> Mapping[str, Any] | None:
    """The state a chunk of LangGraph's (v1) stream carries, if it carries the indexed keys.

    That is the state after the step, as its checkpoint holds it: `_index_thread` then need not
    read the thread back (a read that replays the history channels' deltas: about 1.5 ms a run
    in bench's short-phase shape). Chunks of subgraphs, or of another stream format, say None.
    ``options`` are the stream's; ``default`` is the graph's stream mode.
    """
    if options.get("subgraphs") or options.get("version", "v1") != "v1":
        return None
    mode = options.get("stream_mode") or default
    values: Any = None
    if mode == "values":
        values = chunk
    elif not isinstance(mode, str) and "values" in mode and isinstance(chunk, tuple):
        values = chunk[1] if len(chunk) == 2 and chunk[0] == "values" else None
    if isinstance(values, Mapping) and INDEXED <= values.keys():
        return values
    return None


def record_thread(db: Database, thread_id: str, values: Mapping[str, Any], context: Any) -> None:
    """Write the thread's row from its state ``values`` and the run's settings (none if empty)."""
    if values:
        settings = Context.coerce(context)
        index_for(db).record(thread_id, values, model=settings.model, workspace=settings.workspace)
