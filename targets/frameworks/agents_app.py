"""The bundled OpenAI Agents SDK apps: one agent with one non-idempotent tool, ``deploy``, the same
agent whose tool needs a person's approval, and an agent whose tools are on an MCP server (the SDK's
``MCPServerStreamableHttp``, at ``CHAOS_MCP_URL``: the world's server of the workspace tools). The only
chaos-specific line is the tool's call of ``chaos.ledger.effect``, which records the real effect and its
call id (an MCP tool's effect is recorded where it runs, at the server)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agents import Agent, ModelResponse, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from agents.tool_context import ToolContext

from chaos.ledger import effect

from .loading import deadline, model_client, model_name

set_tracing_disabled(True)  # no trace upload: the sandbox has no network but the scripted model


def _deploy(ctx: ToolContext[object], service: str) -> str:
    """Deploy a service to production."""
    effect("deploy", service, call_id=ctx.tool_call_id)
    return f"deployed {service}"


class _Deadline(OpenAIChatCompletionsModel):
    """A whole answer within the target's deadline, or TimeoutError (the run fails, and a resume goes on
    from the session): the client's own timeout is per read, and an answer that trickles in never trips
    it."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return await asyncio.wait_for(super().get_response(*args, **kwargs), deadline())


def _model() -> OpenAIChatCompletionsModel:
    """The model at chaos's scripted server, a whole answer within the target's deadline."""
    return _Deadline(model=model_name(), openai_client=model_client())


def _agent(approval: bool) -> Agent[object]:
    tool = function_tool(_deploy, name_override="deploy", needs_approval=approval)
    return Agent(name="deployer", instructions="Deploy what you are asked to.", tools=[tool], model=_model())


def _mcp_agent() -> Agent[object]:
    """Its tools on an MCP server: the driver connects the agent's servers before it runs."""
    url = os.environ.get("CHAOS_MCP_URL", "")
    server = MCPServerStreamableHttp({"url": url}, name="workspace", client_session_timeout_seconds=20)
    return Agent(
        name="operator", instructions="Use the workspace tools.", mcp_servers=[server], model=_model()
    )


agent = _agent(approval=False)
approval_agent = _agent(approval=True)
mcp_agent = _mcp_agent()
