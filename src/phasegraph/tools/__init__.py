"""Tools the plan can name: how they are described to the model and how they are called."""

from phasegraph.tools.base import describe_tools, is_idempotent, run_tool, tool_index

__all__ = ["describe_tools", "is_idempotent", "run_tool", "tool_index"]
