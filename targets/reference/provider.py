"""A non-streaming OpenAI-compatible chat-completions client (stdlib only).

Every failure becomes a ProviderError with a stable code; the agent records it
as ``stepFailed`` and never retries live (only a crash-unknown attempt gets a
second try, on resume).
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

STOP_REASONS = {"stop": "stop", "tool_calls": "toolUse", "function_call": "toolUse", "length": "length"}


class ProviderError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Answer:
    message: dict[str, Any]
    stop_reason: str
    usage: dict[str, int]


def complete(
    base_url: str, model: str, api_key: str | None, body: dict[str, Any], timeout: float, retries: int = 0
) -> Answer:
    """One model request (``retries``: resend a 429 or 5xx that many times, as some SDKs quietly do;
    the contract's agent never does: a live provider error is a stepFailed)."""
    for _ in range(retries):
        try:
            return _complete(base_url, model, api_key, body, timeout)
        except ProviderError as err:
            if err.code not in ("rate_limited", "server_error"):
                raise
    return _complete(base_url, model, api_key, body, timeout)


def _complete(base_url: str, model: str, api_key: str | None, body: dict[str, Any], timeout: float) -> Answer:
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions",
        data=json.dumps({"model": model, **body}).encode(),
        headers=headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read())
    except urllib.error.HTTPError as err:
        code = (
            "rate_limited" if err.code == 429 else "server_error" if err.code >= 500 else "request_rejected"
        )
        raise ProviderError(code, f"HTTP {err.code}") from None
    except TimeoutError:
        raise ProviderError("timeout", f"no answer within {timeout:g}s") from None
    except http.client.HTTPException as err:  # a bad status line or a cut-off answer: the provider's fault
        raise ProviderError("invalid_response", f"{type(err).__name__}: {err}") from None
    except (urllib.error.URLError, ConnectionError, OSError) as err:
        raise ProviderError("connection_error", str(getattr(err, "reason", err))) from None
    except ValueError:
        raise ProviderError("invalid_response", "the answer is not JSON") from None
    try:
        choice = payload["choices"][0]
        raw = choice["message"]
        message: dict[str, Any] = {"role": "assistant", "content": raw.get("content")}
        calls = raw.get("tool_calls") or []
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
                }
                for c in calls
            ]
        usage = payload.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
        counters = {  # prompt_tokens counts the cached tokens too; the contract's input does not
            "input": int(usage.get("prompt_tokens", 0)) - int(cached or 0),
            "output": int(usage.get("completion_tokens", 0)),
            "cacheRead": int(cached or 0),
            "cacheWrite": 0,
        }
        return Answer(message, STOP_REASONS.get(choice.get("finish_reason"), "stop"), counters)
    except (KeyError, IndexError, TypeError, ValueError):
        raise ProviderError("invalid_response", "the answer is not a chat completion") from None
