"""The bundled LangGraph app: a model node and a tool node around one non-idempotent tool, ``deploy``.

It is what a LangGraph user writes (``StateGraph``, ``ToolNode``,
``tools_condition``); the only chaos-specific line is the tool's call of
``chaos.ledger.effect``, which records the real effect and its call id.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

from langchain_core.tools import InjectedToolCallId, tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Send, interrupt

from chaos.ledger import effect

from .loading import deadline, whole_answer


@tool
def deploy(service: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Deploy a service to production."""
    effect("deploy", service, call_id=tool_call_id)
    return f"deployed {service}"


def _model() -> ChatOpenAI:
    return ChatOpenAI(
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "chaos"),  # type: ignore[arg-type]
        model=os.environ.get("CHAOS_MODEL", "scripted/model"),
        max_retries=0,
        timeout=20,
    )


def _with_agent() -> StateGraph[MessagesState]:
    """A graph that starts at the model's node, ``agent`` (the rest is each graph's own)."""
    model = _model().bind_tools([deploy])

    def agent(state: MessagesState) -> dict[str, list[object]]:
        seconds = deadline()  # a whole answer within it (the client's own timeout is per read)
        return {"messages": [whole_answer(lambda: model.invoke(state["messages"]), seconds)]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    return graph


def builder(approved: bool = False, tools: str = "tools") -> StateGraph[MessagesState]:
    """The graph, not yet compiled: the driver compiles it with its checkpointer. ``approved``: a person
    approves the model's calls before they run (a node of its own that parks the run, ``interrupt()``,
    until the approval comes; it does nothing else, so running it again on the approval is harmless).
    ``tools``: the name of the node that runs the calls (the next version renames it)."""

    def ask(state: MessagesState) -> dict[str, list[object]]:
        interrupt({"approve": [c["id"] for c in state["messages"][-1].tool_calls]})  # type: ignore[union-attr]
        return {"messages": []}

    graph = _with_agent()
    graph.add_node(tools, ToolNode([deploy]))
    if approved:
        graph.add_node("ask", ask)
        graph.add_conditional_edges("agent", tools_condition, {"tools": "ask", END: END})
        graph.add_edge("ask", tools)
    else:
        graph.add_conditional_edges("agent", tools_condition, {"tools": tools, END: END})
    graph.add_edge(tools, "agent")
    return graph


def fan_out() -> StateGraph[MessagesState]:
    """Each call of an answer sent to a worker of its own (``Send``): the calls run as parallel tasks,
    and LangGraph saves each task's writes as it finishes (its pending writes), so one call's output
    may be durable while another is still running."""

    def dispatch(state: MessagesState) -> list[Send] | str:
        calls = getattr(state["messages"][-1], "tool_calls", None)
        return [Send("worker", {"call": c}) for c in calls] if calls else END

    def worker(packet: dict[str, Any]) -> dict[str, list[object]]:
        call = packet["call"]
        return {"messages": [deploy.invoke({**call, "type": "tool_call"})]}

    graph = _with_agent()
    graph.add_node("worker", worker)  # type: ignore[arg-type]  # (a Send packet, not the state)
    graph.add_conditional_edges("agent", dispatch, ["worker", END])
    graph.add_edge("worker", "agent")
    return graph


graph = builder()
renamed = builder(tools="run_tools")  # the next version: the same graph, its tools node renamed
approval = builder(approved=True)
fanned_out = fan_out()
