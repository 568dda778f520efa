"""Checkpoints of earlier phasegraphs, read by this one (`PhaseGraph._migrate_checkpoint`)."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import Checkpoint
from langgraph.constants import TASKS
from langgraph.types import Send

#: The channel LangGraph's conditional edges write to run ``execute`` next.
TO_EXECUTE = "branch:to:execute"


def wave_sent_to_execute(checkpoint: Checkpoint) -> None:
    """A wave an earlier version sent to ``run_task`` nodes is run by ``execute`` instead.

    Until ``run_task`` became a task `execute` calls, each task of a wave was a ``Send`` to a
    node of that name, pending in the checkpoint of a thread stopped part way through a wave
    (a crash, a kill). Those sends are dropped and ``execute`` is due: it runs the round's
    tasks that have no result yet, a non-idempotent one replayed from its journal entry if it
    finished (the entry's key is the one the send carried), an idempotent one run again.
    A checkpoint with no such send is left as it is.
    """
    values = checkpoint["channel_values"]
    sends = values.get(TASKS) or []
    kept = [p for p in sends if not (isinstance(p, Send) and p.node == "run_task")]
    if len(kept) == len(sends):
        return
    values[TASKS] = kept
    values.pop("dispatch", None)
    values[TO_EXECUTE] = None
    # due: the channel has a version execute has not seen (it has seen none of it)
    versions: dict[str, Any] = dict(checkpoint["channel_versions"])
    checkpoint["channel_versions"][TO_EXECUTE] = max(versions.values())
    checkpoint["versions_seen"].get("execute", {}).pop(TO_EXECUTE, None)
    # LangGraph looks for the nodes to run among those of the channels the checkpoint updated
    updated = checkpoint.get("updated_channels")
    if updated is not None and TO_EXECUTE not in updated:
        checkpoint["updated_channels"] = [*updated, TO_EXECUTE]
