"""Baseline: plan-and-execute shaped like LangGraph's tutorial.

A planner writes a list of steps; a single-step executor (a prebuilt ReAct agent) carries out
the first step and answers in prose; a replanner reads the objective, the plan and every step
done so far, then either answers or writes the remaining steps. The prompts are ours, in the
tutorial's shape; the tutorial keeps no other state.
"""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, Field

from bench.sim import (
    ChainTask,
    PolicyModel,
    chains_ended,
    codes_in,
    forced_call,
    frontier,
    prompt_text,
    report,
    tool_call,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent

PLANNER = """Make a short step-by-step plan for the objective below. Each step should be a
task that, done in order, leads to the answer; do not add needless steps.

Objective: {objective}"""

EXECUTOR = """For the following plan:
{plan}

You are tasked with executing step 1, {step}."""

REPLANNER = """Make a step-by-step plan for the objective below.

Objective: {objective}

Your original plan was:
{plan}

You have done these steps so far:
{past}

Update the plan. If nothing remains to be done, answer the user with a response. Otherwise give
only the steps still to do, not the ones done."""


class Plan(BaseModel):
    """Steps to follow, in order."""

    steps: list[str] = Field(description="The steps, in the order to follow them.")


class Response(BaseModel):
    """The answer to the user."""

    response: str


class Act(BaseModel):
    """What to do next."""

    action: Response | Plan = Field(
        description="Response to answer the user; Plan when more steps are needed."
    )


class PlanExecute(TypedDict):
    """The tutorial's state."""

    input: str
    plan: list[str]
    past_steps: Annotated[list[tuple[str, str]], operator.add]
    response: str


def _numbered(steps: list[str]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))


def _steps_for(keys: list[str]) -> list[str]:
    return [
        f"Read the records {', '.join(keys)} with read_record.",
        "Read the records those name, level by level, to the end of every chain.",
        "Report the code of every record.",
    ]


def policy(messages: list[BaseMessage], forced: str | None) -> AIMessage:
    """The planner, the executor's agent and the replanner, each doing what its prompt allows."""
    text = prompt_text(messages)
    if forced == "Plan":
        found = frontier(text)
        return forced_call("Plan", {"steps": _steps_for(found[1] if found else [])})
    if forced == "Act":
        if chains_ended(text):
            return forced_call("Act", {"action": {"response": report(text)}})
        found = frontier(text)
        return forced_call("Act", {"action": {"steps": _steps_for(found[1] if found else [])}})
    # the executor's agent: one step, then a prose answer of what it found
    if isinstance(messages[-1], ToolMessage):
        outputs = [m for m in messages if isinstance(m, ToolMessage)]
        lines = []
        for m in outputs:
            body = str(m.content)
            found_next = body.split("next: ", 1)[1].split(".", 1)[0] if "next: " in body else "?"
            lines.extend(f"{k} code {v}, next {found_next}" for k, v in codes_in(body).items())
        return AIMessage(content="Done. " + "; ".join(lines))
    step = str(messages[-1].content).rsplit("executing step 1,", 1)[-1]
    found = frontier(step)
    if found is None:
        return AIMessage(content="The step names no records.")
    return AIMessage(
        content="", tool_calls=[tool_call("read_record", {"key": k}) for k in found[1]]
    )


def build(task: ChainTask, saver: BaseCheckpointSaver[Any] | None) -> Any:
    """The tutorial's graph: planner -> agent -> replan -> (agent | end)."""
    model = PolicyModel(policy=policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        executor = create_react_agent(model, [task.tool()])
    planner = model.with_structured_output(Plan)
    replanner = model.with_structured_output(Act)

    def plan_step(state: PlanExecute, config: RunnableConfig) -> dict[str, Any]:
        plan = planner.invoke([("user", PLANNER.format(objective=state["input"]))], config)
        return {"plan": plan.steps}  # type: ignore[union-attr]

    def execute_step(state: PlanExecute, config: RunnableConfig) -> dict[str, Any]:
        step = state["plan"][0]
        prompt = EXECUTOR.format(plan=_numbered(state["plan"]), step=step)
        out = executor.invoke({"messages": [("user", prompt)]}, config)
        return {"past_steps": [(step, str(out["messages"][-1].content))]}

    def replan_step(state: PlanExecute, config: RunnableConfig) -> dict[str, Any]:
        past = "\n".join(f"{s}: {r}" for s, r in state["past_steps"])
        act = replanner.invoke(
            [
                (
                    "user",
                    REPLANNER.format(
                        objective=state["input"], plan=_numbered(state["plan"]), past=past
                    ),
                )
            ],
            config,
        )
        action = act.action  # type: ignore[union-attr]
        if isinstance(action, Response):
            return {"response": action.response}
        return {"plan": action.steps}

    def should_end(state: PlanExecute) -> str:
        return END if state.get("response") else "agent"

    graph = StateGraph(PlanExecute)
    graph.add_node("planner", plan_step)
    graph.add_node("agent", execute_step)
    graph.add_node("replan", replan_step)
    graph.add_edge(START, "planner")
    graph.add_edge("planner", "agent")
    graph.add_edge("agent", "replan")
    graph.add_conditional_edges("replan", should_end, ["agent", END])
    return graph.compile(checkpointer=saver)


def run(task: ChainTask, saver: BaseCheckpointSaver[Any] | None, config: dict[str, Any]) -> str:
    """Run the task; returns the final answer."""
    graph = build(task, saver)
    config = {**config, "recursion_limit": 4 * task.levels + 10}
    out = graph.invoke({"input": task.request}, config)
    return str(out.get("response", ""))
