"""The bundled Google ADK agents: an ``LlmAgent`` with one non-idempotent tool, ``deploy``, in an ``App``
made resumable (``ResumabilityConfig(is_resumable=True)``), its model an OpenAI-compatible one
(``OpenAILlm``) at chaos's scripted server, as ADK documents both. Every event the runner yields (the
user's message, the model's answer with its calls, each function response, the final answer) is
appended to the session service's database; a resumed invocation goes on from its last event, and ADK
documents a resumed tool as run at least once. The only chaos-specific line is the tool's call of
``chaos.ledger.effect``, which records the real effect and its call id.

``forgetful`` is the classic mistake: the same agent in an app that is not resumable, so a resume can
only start a new invocation, and the run's unanswered calls are never answered."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.integrations.openai import OpenAILlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext

from chaos.ledger import effect

from .loading import deadline, model_client, model_name

warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")  # resumability is marked experimental


def deploy(service: str, tool_context: ToolContext) -> str:
    """Deploy a service to production."""
    effect("deploy", service, call_id=tool_context.function_call_id or "")
    return f"deployed {service}"


class _Deadline(OpenAILlm):
    """A whole answer within the target's deadline, or TimeoutError: the client's own timeout is per
    read, and an answer that trickles in never trips it."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        async def whole() -> list[LlmResponse]:
            return [r async for r in super(_Deadline, self).generate_content_async(llm_request, stream)]

        for response in await asyncio.wait_for(whole(), deadline()):
            yield response


def _model() -> OpenAILlm:
    """The model at chaos's scripted server, a whole answer within the target's deadline."""
    return _Deadline(model=model_name(), client=model_client())


def _app(resumable: bool) -> App:
    agent = LlmAgent(
        name="deployer", instruction="Deploy what you are asked to.", tools=[deploy], model=_model()
    )
    return App(
        name="deployer", root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=resumable)
    )


app = _app(resumable=True)
forgetful = _app(resumable=False)
