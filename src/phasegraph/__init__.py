"""phasegraph: a LangGraph plan-and-execute workflow with phases, review pauses and a summary."""

from phasegraph.context import Context
from phasegraph.errors import (
    CheckpointRefusedError,
    ConfigurationError,
    FeedbackError,
    PhasegraphError,
    ThreadBusyError,
    ThreadPausedError,
    ThreadStateError,
)
from phasegraph.graph import PhaseGraph, build_graph
from phasegraph.models.scripted import ScriptedChatModel
from phasegraph.review import aresume, resume

__all__ = [
    "ConfigurationError",
    "Context",
    "FeedbackError",
    "PhaseGraph",
    "PhasegraphError",
    "ScriptedChatModel",
    "ThreadBusyError",
    "ThreadPausedError",
    "ThreadStateError",
    "CheckpointRefusedError",
    "aresume",
    "build_graph",
    "resume",
]
