"""Requests as strict as the real providers: what each API refuses, with its status, error shape and words.

An agent that leaves a tool call without its output (after a crash, or a
session write that failed) sends a conversation every later request of which a
real provider refuses with a 400, forever. The scripted server would answer
it; this module makes it refuse it the way the real endpoint does, so the
agent meets the error it would meet in production and ``requests-valid``
names the cause.

Each rule below is one a real endpoint enforces, with the message text it
answers, taken from the providers' public API references and from error bodies
quoted in public issue reports against agents and SDKs (the exact strings the
official clients then raise as ``BadRequestError``):

- OpenAI chat completions (``{"error": {message, type, param, code}}``):
  "An assistant message with 'tool_calls' must be followed by tool messages
  responding to each 'tool_call_id'. The following tool_call_ids did not have
  response messages: ..." (param ``messages.[i].role``), "Invalid parameter:
  messages with role 'tool' must be a response to a preceeding message with
  'tool_calls'." (the misspelling is the API's), "Missing required parameter:
  '...'." (``missing_required_parameter``), "Invalid 'messages': empty array.
  ..." (``empty_array``), "Invalid value: '...'. Supported values are: ..."
  (``invalid_value``), "you must provide a model parameter".
- Anthropic Messages (``{"type": "error", "error": {type, message}}``):
  "messages.i: `tool_use` ids were found without `tool_result` blocks
  immediately after: ... Each `tool_use` block must have a corresponding
  `tool_result` block in the next message.", "messages.i.content.j: unexpected
  `tool_use_id` found in `tool_result` blocks: ... Each `tool_result` block must
  have a corresponding `tool_use` block in the previous message.",
  "messages.i.content.j: `tool_use` ids must be unique", "messages.i.content.j.
  tool_use.input: Input should be a valid dictionary", "messages: text content
  blocks must be non-empty", "messages.i: all messages must have non-empty
  content except for the optional final assistant message", "FIELD: Field
  required", "messages.i.role: Input should be 'user' or 'assistant'".
- OpenAI Responses (the chat completions shape, param ``input``): "No tool
  output found for function call ...", "No tool call found for function call
  output with call_id ...", "Duplicate item found with id ...", "Missing
  required parameter: 'input[i].FIELD'.".

Rules the providers relaxed are not enforced: Anthropic merges consecutive
turns of one role (no strict alternation), OpenAI accepts tool messages in any
order after their call. The reference agents' requests pass every rule over
every protocol (``tests/test_strict.py``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Refusal:
    """A request the real provider refuses: the HTTP status, the body it answers, and why (its message)."""

    status: int
    body: dict[str, Any]
    rule: str  # which rule it breaks, the same words whatever the protocol (a failure key's cause)

    @property
    def reason(self) -> str:
        error = self.body.get("error") or {}
        return str(error.get("message", ""))


MISSING = "a required field missing"
SHAPE = "a field of the wrong type or value"
EMPTY = "an empty message or conversation"
ORPHAN_RESULT = "a tool result without its call"
ORPHAN_CALL = "a tool call without its result"
TWICE = "an id used twice"


def _openai(rule: str, message: str, param: str | None = None, code: str | None = None) -> Refusal:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return Refusal(400, {"error": error}, rule)


def _anthropic(rule: str, message: str) -> Refusal:
    error = {"type": "invalid_request_error", "message": message}
    body = {"type": "error", "error": error, "request_id": f"req_{secrets.token_hex(12)}"}
    return Refusal(400, body, rule)


def _missing(name: str) -> Refusal:
    return _openai(MISSING, f"Missing required parameter: '{name}'.", name, "missing_required_parameter")


CHAT_ROLES = ("system", "assistant", "user", "function", "tool", "developer")


def chat(body: dict[str, Any]) -> Refusal | None:
    """OpenAI chat completions."""
    if not body.get("model"):
        return _openai(MISSING, "you must provide a model parameter")
    messages = body.get("messages")
    if messages is None:
        return _missing("messages")
    if not isinstance(messages, list):
        return _openai(
            SHAPE,
            f"Invalid type for 'messages': expected an array of objects, but got {type(messages).__name__}"
            " instead.",
            "messages",
            "invalid_type",
        )
    if not messages:
        return _openai(
            EMPTY,
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
            "array instead.",
            "messages",
            "empty_array",
        )
    waiting: list[str] = []  # the last assistant message's calls not answered yet
    answerable: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in CHAT_ROLES:
            supported = ", ".join(f"'{r}'" for r in CHAT_ROLES[:-1]) + f", and '{CHAT_ROLES[-1]}'"
            return _openai(
                SHAPE,
                f"Invalid value: '{role}'. Supported values are: {supported}.",
                f"messages[{i}].role",
                "invalid_value",
            )
        if role == "tool":
            if "tool_call_id" not in m:
                return _missing(f"messages[{i}].tool_call_id")
            if m["tool_call_id"] not in answerable:
                return _openai(
                    ORPHAN_RESULT,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'.",
                    f"messages.[{i}].role",
                )
            answerable.discard(m["tool_call_id"])
            if m["tool_call_id"] in waiting:
                waiting.remove(m["tool_call_id"])
            continue
        if waiting:
            return _unanswered(waiting, i)
        calls = m.get("tool_calls") or [] if role == "assistant" else []
        waiting = [str(c.get("id")) for c in calls if isinstance(c, dict)]
        answerable = set(waiting)
    return _unanswered(waiting, len(messages)) if waiting else None


def _unanswered(ids: list[str], index: int) -> Refusal:
    return _openai(
        ORPHAN_CALL,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(ids)}",
        f"messages.[{index}].role",
    )


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def messages(body: dict[str, Any]) -> Refusal | None:
    """Anthropic Messages."""
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            return _anthropic(MISSING, f"{field}: Field required")
    turns = body["messages"]
    if not isinstance(turns, list):
        return _anthropic(SHAPE, "messages: Input should be a valid list")
    used: set[str] = set()
    previous_uses: list[str] = []
    for i, turn in enumerate(turns):
        role = turn.get("role") if isinstance(turn, dict) else None
        if role not in ("user", "assistant"):
            return _anthropic(SHAPE, f"messages.{i}.role: Input should be 'user' or 'assistant'")
        blocks = _blocks(turn.get("content"))
        last_assistant = role == "assistant" and i == len(turns) - 1
        if not blocks and not last_assistant:
            return _anthropic(
                EMPTY,
                f"messages.{i}: all messages must have non-empty content except for the optional final "
                "assistant message",
            )
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        missing = [u for u in previous_uses if u not in results]
        if missing:
            return _anthropic(
                ORPHAN_CALL,
                f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                "in the next message.",
            )
        uses = []
        for j, block in enumerate(blocks):
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                return _anthropic(EMPTY, "messages: text content blocks must be non-empty")
            if kind == "tool_result" and block.get("tool_use_id") not in previous_uses:
                return _anthropic(
                    ORPHAN_RESULT,
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message.",
                )
            if kind == "tool_use":
                if not isinstance(block.get("input"), dict):
                    return _anthropic(
                        SHAPE, f"messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
                    )
                if block.get("id") in used:
                    return _anthropic(TWICE, f"messages.{i}.content.{j}: `tool_use` ids must be unique")
                used.add(str(block.get("id")))
                uses.append(str(block.get("id")))
        previous_uses = uses if role == "assistant" else []
    if previous_uses:
        return _anthropic(
            ORPHAN_CALL,
            f"messages.{len(turns) - 1}: `tool_use` ids were found without `tool_result` blocks immediately "
            f"after: {', '.join(previous_uses)}. Each `tool_use` block must have a corresponding `tool_result` "
            "block in the next message.",
        )
    return None


def responses(body: dict[str, Any]) -> Refusal | None:
    """OpenAI Responses (stateless: every item in ``input``)."""
    if not body.get("model"):
        return _missing("model")
    items = body.get("input")
    if not isinstance(items, list):
        return None  # a string, or nothing: no items to pair
    seen: set[str] = set()
    calls: dict[str, int] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        if item.get("id") is not None:
            if item["id"] in seen:
                return _openai(TWICE, f"Duplicate item found with id {item['id']}.", "input")
            seen.add(item["id"])
        kind = item.get("type")
        if kind == "function_call":
            for field in ("call_id", "name", "arguments"):
                if field not in item:
                    return _missing(f"input[{i}].{field}")
            calls[item["call_id"]] = i
        elif kind == "function_call_output":
            for field in ("call_id", "output"):
                if field not in item:
                    return _missing(f"input[{i}].{field}")
            if item["call_id"] not in calls:
                return _openai(
                    ORPHAN_RESULT,
                    f"No tool call found for function call output with call_id {item['call_id']}.",
                    "input",
                )
            answered.add(item["call_id"])
    for call_id in calls:
        if call_id not in answered:
            return _openai(ORPHAN_CALL, f"No tool output found for function call {call_id}.", "input")
    return None


RULES = {"openai-chat": chat, "anthropic": messages, "openai-responses": responses}


def refusal(protocol: str, body: dict[str, Any]) -> Refusal | None:
    """How the real provider of ``protocol`` refuses ``body``, or None when it accepts it."""
    return RULES[protocol](body)
