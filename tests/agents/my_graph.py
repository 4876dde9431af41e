"""A user's own LangGraph graph, loaded by ``--app my_graph:make`` (a function of the checkpointer that
returns the compiled graph): what pointing chaos at your graph with one target file looks like."""

from __future__ import annotations

import os
from typing import Annotated, Any

from langchain_core.tools import InjectedToolCallId, tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from chaos.ledger import effect


@tool
def deploy(service: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Deploy a service to production."""
    effect("deploy", service, call_id=tool_call_id)
    return f"deployed {service}"


def model() -> Any:
    """The chat model, served by chaos's model server, with the tool bound."""
    chat = ChatOpenAI(
        base_url=os.environ["OPENAI_BASE_URL"], api_key="chaos", model="scripted/model", max_retries=0
    )
    return chat.bind_tools([deploy])


def loop() -> StateGraph[MessagesState]:
    """The agent loop: the model, then its tool calls, until it answers."""
    bound = model()
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [bound.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([deploy]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph


def make(checkpointer: Any) -> Any:
    return loop().compile(checkpointer=checkpointer)
