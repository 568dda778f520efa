"""Baseline: LangGraph's prebuilt ReAct agent (`create_react_agent`) with the task's tool.

Every call reads the whole transcript: the request, each tool call and each tool output so far.
It batches as many tool calls per model call as the prompt lets it: one dependency level (8
reads) at a time.
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver

from bench.sim import ChainTask, PolicyModel, chains_ended, frontier, prompt_text, report, tool_call

with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.x; still shipped
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent


def policy(messages: list[BaseMessage], forced: str | None) -> AIMessage:
    """Read the next level the transcript names; report once the chains have ended."""
    text = prompt_text(messages)
    if chains_ended(text):
        return AIMessage(content=report(text))
    found = frontier(text)
    if found is None:
        return AIMessage(content="I do not know which records to read.")
    _, keys = found
    return AIMessage(content="", tool_calls=[tool_call("read_record", {"key": k}) for k in keys])


def run(task: ChainTask, saver: BaseCheckpointSaver[Any] | None, config: dict[str, Any]) -> str:
    """Run the task; returns the final answer."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(PolicyModel(policy=policy), [task.tool()], checkpointer=saver)
    config = {**config, "recursion_limit": 2 * task.levels + 10}
    out = agent.invoke({"messages": [("user", task.request)]}, config)
    return str(out["messages"][-1].content)
