"""The model the bundled Pydantic AI agents ask: OpenAI's chat API at chaos's scripted server, with the
target's deadline for a whole answer (shared by the agent on DBOS and the one on Temporal)."""

from __future__ import annotations

import asyncio

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

from .loading import deadline, model_client, model_name


class _Deadline(WrapperModel):
    """A whole answer within the deadline, or TimeoutError: the client's own timeout is per read, and an
    answer that trickles in never trips it."""

    def __init__(self, wrapped: OpenAIChatModel, deadline: float) -> None:
        super().__init__(wrapped)
        self.deadline = deadline

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        asked = super().request(messages, model_settings, model_request_parameters)
        return await asyncio.wait_for(asked, self.deadline)


def scripted_model() -> _Deadline:
    """The model at chaos's scripted server; no retries of the client's own (a retry is the agent's
    decision, and its durable engine's), the target's deadline for the answer."""
    provider = OpenAIProvider(openai_client=model_client())
    return _Deadline(OpenAIChatModel(model_name(), provider=provider), deadline())
