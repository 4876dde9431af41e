"""A non-streaming model client (stdlib only) for three protocols: OpenAI chat completions (the
log's own message shape), Anthropic Messages and OpenAI Responses, each translated to and from
chat-completion messages at this edge so the session log looks the same whichever is spoken.

Every failure becomes a ProviderError with a stable code; the agent records it
as ``stepFailed`` and never retries live (only a crash-unknown attempt gets a
second try, on resume).
"""

from __future__ import annotations

import http.client
import json
import math
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

STOP_REASONS = {
    "stop": "stop",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "length": "length",
    # Anthropic's stop reasons
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
}


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
    base_url: str,
    model: str,
    api_key: str | None,
    body: dict[str, Any],
    timeout: float,
    retries: int = 0,
    protocol: str = "openai-chat",
    bugs: frozenset[str] = frozenset(),
) -> Answer:
    """One model request (``retries``: resend a failed one that many times (a 429, a 5xx, a dropped
    connection, an unreadable answer), as some SDKs quietly do; the contract's agent never does: a live
    provider error is a stepFailed)."""
    for _ in range(retries):
        try:
            return _complete(base_url, model, api_key, body, timeout, protocol, bugs)
        except ProviderError as err:
            if err.code not in (
                "rate_limited",
                "server_error",
                "connection_error",
                "invalid_response",
                "timeout",
            ):
                raise
    return _complete(base_url, model, api_key, body, timeout, protocol, bugs)


def _complete(
    base_url: str,
    model: str,
    api_key: str | None,
    chat: dict[str, Any],
    timeout: float,
    name: str,
    bugs: frozenset[str] = frozenset(),
) -> Answer:
    """Send ``chat`` (a chat-completions body) in the protocol ``name`` and read the answer back."""
    protocol = PROTOCOLS[name]
    headers = {"Content-Type": "application/json", **protocol.headers(api_key)}
    request = urllib.request.Request(
        base_url.rstrip("/") + protocol.path,
        data=json.dumps(protocol.request(model, chat)).encode(),
        headers=headers,
        method="POST",
    )
    deadline = math.inf if "no-request-deadline" in bugs else time.monotonic() + timeout
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(_read_by(response, deadline, timeout))
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
        if "unreadable-as-empty" in bugs:
            return Answer({"role": "assistant", "content": ""}, "stop", _counters(0, 0))
        raise ProviderError("invalid_response", "the answer is not JSON") from None
    try:
        return protocol.answer(payload)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise ProviderError("invalid_response", f"the answer is not a {protocol.name} answer") from None


def _read_by(response: http.client.HTTPResponse, deadline: float, timeout: float) -> bytes:
    """The whole body, or TimeoutError at ``deadline``: the socket's timeout is per read, and an answer
    that trickles in a byte at a time would never trip it."""
    chunks = []
    while chunk := response.read1(65536):
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise TimeoutError(f"the answer took longer than {timeout:g}s")
    return b"".join(chunks)


def _counters(input_tokens: int, output: int, cache_read: int = 0, cache_write: int = 0) -> dict[str, int]:
    return {"input": input_tokens, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write}


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    return list(message.get("tool_calls") or [])


def _bearer(api_key: str | None) -> dict[str, str]:
    """OpenAI's authentication, for chat completions and Responses alike."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class _ChatCompletions:
    """The log's own message shape: requests go out as they are."""

    name, path = "openai-chat", "/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return _bearer(api_key)

    def request(self, model: str, chat: dict[str, Any]) -> dict[str, Any]:
        return {"model": model, **chat}

    def answer(self, payload: dict[str, Any]) -> Answer:
        choice = payload["choices"][0]
        raw = choice["message"]
        message: dict[str, Any] = {"role": "assistant", "content": raw.get("content")}
        calls = raw.get("tool_calls") or []
        if calls:
            message["tool_calls"] = [
                _call(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls
            ]
        usage = payload.get("usage") or {}
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        # prompt_tokens counts the cached tokens too; the contract's input does not
        counters = _counters(
            int(usage.get("prompt_tokens", 0)) - cached, int(usage.get("completion_tokens", 0)), cached
        )
        return Answer(message, STOP_REASONS.get(choice.get("finish_reason"), "stop"), counters)


def _call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """A tool call in the log's shape; arguments stay the text the model sent (invalid JSON included)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def _split_system(chat: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    system = [str(m["content"]) for m in chat["messages"] if m["role"] == "system"]
    return "\n".join(system), [m for m in chat["messages"] if m["role"] != "system"]


def _tools(chat: dict[str, Any]) -> list[dict[str, Any]]:
    return [t["function"] for t in chat.get("tools", [])]


class _Messages:
    """Anthropic Messages: system apart, tool calls as ``tool_use`` blocks, results as ``tool_result``."""

    name, path = "anthropic", "/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"anthropic-version": "2023-06-01", **({"x-api-key": api_key} if api_key else {})}

    def request(self, model: str, chat: dict[str, Any]) -> dict[str, Any]:
        system, messages = _split_system(chat)
        turns: list[dict[str, Any]] = []
        for m in messages:
            if m["role"] == "tool":
                role, blocks = (
                    "user",
                    [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}],
                )
            elif m["role"] == "assistant":
                role = "assistant"
                blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
                for c in _calls(m):
                    try:
                        arguments = json.loads(c["function"]["arguments"])
                    except ValueError:
                        arguments = None
                    if not isinstance(arguments, dict):
                        arguments = {}  # Messages takes an object only; the log keeps what the model sent
                    blocks.append(
                        {"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": arguments}
                    )
            else:
                role, blocks = m["role"], [{"type": "text", "text": m["content"]}] if m["content"] else []
            if not blocks:
                continue  # Messages refuses empty turns and empty text blocks: an empty message says nothing
            if turns and turns[-1]["role"] == role:  # Messages alternate: same-role turns merge
                turns[-1]["content"] += blocks
            else:
                turns.append({"role": role, "content": blocks})
        tools = [
            {"name": t["name"], "description": t.get("description", ""), "input_schema": t["parameters"]}
            for t in _tools(chat)
        ]
        return {
            "model": model,
            "system": system,
            "messages": turns,
            "max_tokens": chat.get("max_tokens", 4096),
            **({"tools": tools} if tools else {}),
        }

    def answer(self, payload: dict[str, Any]) -> Answer:
        blocks = payload["content"]
        text = "".join(b["text"] for b in blocks if b["type"] == "text")
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        calls = [_call(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
        if calls:
            message["tool_calls"] = calls
        u = payload.get("usage") or {}
        counters = _counters(
            int(u.get("input_tokens", 0)),
            int(u.get("output_tokens", 0)),
            int(u.get("cache_read_input_tokens") or 0),
            int(u.get("cache_creation_input_tokens") or 0),
        )
        return Answer(message, STOP_REASONS.get(str(payload.get("stop_reason")), "stop"), counters)


class _Responses:
    """OpenAI Responses, stateless: the whole conversation as input items each time."""

    name, path = "openai-responses", "/responses"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return _bearer(api_key)

    def request(self, model: str, chat: dict[str, Any]) -> dict[str, Any]:
        system, messages = _split_system(chat)
        items: list[dict[str, Any]] = []
        for m in messages:
            if m["role"] == "tool":
                items.append(
                    {"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]}
                )
                continue
            if m.get("content") or not _calls(m):
                items.append({"role": m["role"], "content": m.get("content") or ""})
            for c in _calls(m):
                f = c["function"]
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c["id"],
                        "name": f["name"],
                        "arguments": f["arguments"],
                    }
                )
        tools = [{"type": "function", **t} for t in _tools(chat)]
        return {
            "model": model,
            "instructions": system,
            "input": items,
            "max_output_tokens": chat.get("max_tokens", 4096),
            "store": False,
            **({"tools": tools} if tools else {}),
        }

    def answer(self, payload: dict[str, Any]) -> Answer:
        text = "".join(
            part["text"]
            for item in payload["output"]
            if item["type"] == "message"
            for part in item["content"]
            if part["type"] == "output_text"
        )
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        calls = [
            _call(i["call_id"], i["name"], i["arguments"])
            for i in payload["output"]
            if i["type"] == "function_call"
        ]
        if calls:
            message["tool_calls"] = calls
        u = payload.get("usage") or {}
        cached = int((u.get("input_tokens_details") or {}).get("cached_tokens") or 0)
        counters = _counters(int(u.get("input_tokens", 0)) - cached, int(u.get("output_tokens", 0)), cached)
        stop = "length" if payload.get("status") == "incomplete" else "toolUse" if calls else "stop"
        return Answer(message, stop, counters)


PROTOCOLS: dict[str, _ChatCompletions | _Messages | _Responses] = {
    p.name: p for p in (_ChatCompletions(), _Messages(), _Responses())
}
