"""LangGraph graphs in the shapes people write them (issue 32), loaded by ``--app shapes:NAME``: each is a
correct design under ``durability="sync"`` (at least once, one call id), whose calls live somewhere other
than the root namespace's ``messages``. chaos must judge them as it judges the plain graph."""

from __future__ import annotations

import pickle
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import tools_condition
from langgraph.types import Send, interrupt
from my_graph import deploy, loop, model  # the plain graph's tool, model and loop (tests/agents)


def subgraph(checkpointer: Any) -> Any:
    """The agent loop as a subgraph, one node of the parent: its calls checkpoint in its own namespace."""
    parent = StateGraph(MessagesState)
    parent.add_node("worker", loop().compile())
    parent.add_edge(START, "worker")
    return parent.compile(checkpointer=checkpointer)


class Work(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    pending: list[dict[str, Any]]  # the calls the model asked for, not yet run: the graph's own work item


def custom_channel(checkpointer: Any) -> Any:
    """The model's calls are kept in a channel of the graph's own (``pending``) until they have run; only
    then do the answer and its results join ``messages``."""
    bound = model()

    def think(state: Work) -> dict[str, Any]:
        answer = bound.invoke(state["messages"])
        if answer.tool_calls:
            return {
                "pending": [{"id": c["id"], "name": c["name"], "args": c["args"]} for c in answer.tool_calls]
            }
        return {"messages": [answer], "pending": []}

    def act(state: Work) -> dict[str, Any]:
        calls = state["pending"]
        results = [
            ToolMessage(deploy.func(c["args"]["service"], c["id"]), tool_call_id=c["id"]) for c in calls
        ]  # type: ignore[misc]
        asked = AIMessage(
            "", tool_calls=[{"id": c["id"], "name": c["name"], "args": c["args"]} for c in calls]
        )
        return {"messages": [asked, *results], "pending": []}

    graph = StateGraph(Work)
    graph.add_node("think", think)
    graph.add_node("act", act)
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", lambda state: "act" if state["pending"] else "__end__")
    graph.add_edge("act", "think")
    return graph.compile(checkpointer=checkpointer)


def fan_out(checkpointer: Any) -> Any:
    """Each call of an answer sent to a worker node of its own (``Send``): the calls run as parallel tasks,
    each with the call as its argument, and their results join ``messages``."""
    bound = model()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    def dispatch(state: MessagesState) -> list[Send] | str:
        calls = getattr(state["messages"][-1], "tool_calls", None)
        return [Send("worker", {"call": c}) for c in calls] if calls else "__end__"

    def worker(packet: dict[str, Any]) -> dict[str, Any]:
        call = packet["call"]
        return {
            "messages": [
                ToolMessage(deploy.func(call["args"]["service"], call["id"]), tool_call_id=call["id"])
            ]  # type: ignore[misc]
        }

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("worker", worker)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", dispatch, ["worker", "__end__"])
    graph.add_edge("worker", "agent")
    return graph.compile(checkpointer=checkpointer)


def approval(checkpointer: Any) -> Any:
    """The tool node asks a person first (``interrupt()``): the run parks with the calls to approve, and
    goes on when resumed with ``Command(resume=True)``; the node then runs again from its start."""
    bound = model()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    def tools(state: MessagesState) -> dict[str, Any]:
        calls = state["messages"][-1].tool_calls  # type: ignore[union-attr]
        if not interrupt({"approve": [c["id"] for c in calls]}):
            return {"messages": [ToolMessage("not approved", tool_call_id=c["id"]) for c in calls]}
        return {
            "messages": [
                ToolMessage(deploy.func(c["args"]["service"], c["id"]), tool_call_id=c["id"])  # type: ignore[misc]
                for c in calls
            ]
        }

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


class _Reversed:
    """A serializer of the app's own: pickled, bytes reversed (as an encrypting one is opaque to others)."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return "reversed-pickle", pickle.dumps(obj)[::-1]

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return pickle.loads(data[1][::-1])


def own_serde(checkpointer: Any) -> Any:
    """The plain loop on a saver with a serializer of its own, over the driver's connection: what chaos
    cannot read, and must say so rather than judge."""
    return loop().compile(checkpointer=SqliteSaver(checkpointer.conn, serde=_Reversed()))
