"""The provider protocols the scripted model server speaks, behind one protocol-neutral script.

Each protocol reads a request into a ``Conversation`` (the system text, the
messages, how many assistant turns it already holds, whether to stream) and
writes a scripted ``Turn`` as its own answer: a JSON body, or server-sent
events. Every turn kind works in each: text, tool calls (raw invalid JSON
arguments included), a ``length`` stop, HTTP errors, timeouts and holds (the
last two are the server's). Usage is scripted in the contract's terms
(``input``, ``output``, ``cacheRead``, ``cacheWrite``) and written in the
protocol's; ``billed`` says what the protocol could carry (chat completions
have no cache-write count).

- ``openai-chat``: ``POST /v1/chat/completions``, plain or ``stream: true``
  (``chat.completion.chunk`` events, tool-call argument deltas, usage in a
  last chunk when ``stream_options.include_usage`` asks).
- ``anthropic``: ``POST /v1/messages``, plain or streaming (``message_start``,
  ``content_block_start``/``_delta``/``_stop`` with ``text_delta`` and
  ``input_json_delta``, ``message_delta`` with ``stop_reason`` and usage,
  ``message_stop``). Tool input is an object there, so scripted invalid
  arguments arrive as a string ``input`` holding the raw text, plain and
  streamed alike.
- ``openai-responses``: ``POST /v1/responses``, plain or streaming
  (``response.created`` ... ``response.completed``); stateless requests only
  (the whole input each time, no ``previous_response_id``).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from chaos.contract.shapes import USAGE_KEYS
from chaos.scenario.model import Turn


class Rejected(Exception):
    """A request the protocol cannot serve (the server answers 400 with this message)."""


@dataclass
class Conversation:
    messages: list[Any]
    assistant_turns: int
    system: str = ""
    model: str = "scripted"
    stream: bool = False
    include_usage: bool = False


@dataclass
class Answer:
    body: dict[str, Any] = field(default_factory=dict)
    events: list[bytes] = field(default_factory=list)  # the same answer as server-sent events


def _arguments(call: dict[str, Any]) -> str:
    value = call.get("arguments", {})
    return value if isinstance(value, str) else json.dumps(value)


def _pieces(text: str, count: int = 3) -> list[str]:
    """``text`` in up to ``count`` pieces, as a stream would deliver it."""
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {payload}\n\n".encode()


@dataclass(frozen=True)
class Said:
    """One thing a conversation says, in neutral terms, whatever the wire: a user's or the assistant's
    text, a tool call (its id, name and arguments: the JSON value, or the raw text when it is not JSON),
    or a tool's result (the call's id and the result's text). ``request-context`` compares what a
    request said with what the log made durable, item by item."""

    kind: str  # user | assistant | call | result
    text: str = ""
    id: str = ""
    name: str = ""
    arguments: Any = None


def arguments_value(text: Any) -> Any:
    """Tool-call arguments as the JSON value they spell (the raw text when they spell none)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts or blocks, joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p)
    return ""


def said_of_messages(messages: list[Any]) -> list[Said]:
    """What chat-completion-shaped messages say (the log's own shape, and chat completions' wire)."""
    out: list[Said] = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") in ("system", "developer"):
            continue
        if m.get("role") == "tool":
            out.append(Said("result", text_of(m.get("content")), id=str(m.get("tool_call_id"))))
            continue
        if text_of(m.get("content")):
            out.append(Said(str(m.get("role")), text_of(m.get("content"))))
        for c in m.get("tool_calls") or []:
            f = c.get("function") or {}
            out.append(
                Said(
                    "call",
                    id=str(c.get("id")),
                    name=str(f.get("name")),
                    arguments=arguments_value(f.get("arguments")),
                )
            )
    return out


def recorded_turn(text: str, calls: list[tuple[str, Any]], finish: str, usage: dict[str, int]) -> Turn:
    """A turn from what an answer said: its text, its calls (name, arguments as sent: an object, or the
    raw text), how it finished (stop, tool_calls, length) and what it billed; the finish is written
    only where the script could not derive it."""
    tool_calls = [{"name": name, "arguments": _object_or_text(arguments)} for name, arguments in calls]
    derived = "tool_calls" if tool_calls else "stop"
    return Turn(text or None, tool_calls, None if finish == derived else finish, usage=usage)


def _object_or_text(arguments: Any) -> Any:
    value = arguments_value(arguments)
    return (
        value
        if isinstance(value, dict)
        else arguments
        if isinstance(arguments, str)
        else json.dumps(arguments)
    )


def definition(name: Any, description: Any, parameters: Any) -> dict[str, Any]:
    """A tool's model-facing definition, as its ``definitionDigest`` covers it (contract, section 5)."""
    return {"name": name, "description": description, "parameters": parameters}


class Protocol:
    name = ""
    path = ""
    carries_raw_arguments = True  # False: tool-call arguments travel as an object (none that is not JSON)

    def said(self, body: dict[str, Any]) -> list[Said]:
        """What the request's conversation says, system prompt and tool definitions aside."""
        return said_of_messages(body.get("messages") or [])

    def tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The tool definitions the request declares, each as ``definition`` spells it."""
        out = []
        for t in body.get("tools") or []:
            f = t.get("function") or {}
            out.append(definition(f.get("name"), f.get("description"), f.get("parameters")))
        return out

    def conversation(self, body: dict[str, Any]) -> Conversation:
        raise NotImplementedError

    def answer(
        self, turn: Turn, index: int, conversation: Conversation, usage: dict[str, int], nonce: str = ""
    ) -> Answer:
        """The scripted ``turn`` as the answer to the ``index``-th assistant turn; ``nonce`` ends every
        tool call id it gives (a new one per request, as a real provider's ids are)."""
        raise NotImplementedError

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "scripted_error", "code": status}}

    def read_answer(self, body: dict[str, Any]) -> Turn:
        """A real answer (a provider's JSON body) as the scripted turn that gives it back (chaos record)."""
        raise NotImplementedError

    def read_stream(self, events: list[dict[str, Any]]) -> Turn:
        """A real streamed answer (its events' data, in order) as the scripted turn that gives it back."""
        raise NotImplementedError

    def billed(self, usage: dict[str, int]) -> dict[str, int]:
        """The usage an answer carries, back in the contract's terms."""
        return {k: usage.get(k, 0) for k in USAGE_KEYS}


class OpenAIChat(Protocol):
    name, path = "openai-chat", "/chat/completions"

    def conversation(self, body: dict[str, Any]) -> Conversation:
        messages = body["messages"]
        if not isinstance(messages, list):
            raise Rejected("messages must be a list")
        system = "\n".join(
            str(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
        )
        turns = sum(1 for m in messages if m.get("role") == "assistant")
        options = body.get("stream_options") or {}
        return Conversation(
            messages,
            turns,
            system,
            str(body.get("model", "scripted")),
            bool(body.get("stream")),
            bool(options.get("include_usage")),
        )

    def _usage(self, usage: dict[str, int]) -> dict[str, Any]:
        prompt = usage["input"] + usage["cacheRead"]
        return {
            "prompt_tokens": prompt,
            "completion_tokens": usage["output"],
            "total_tokens": prompt + usage["output"],
            "prompt_tokens_details": {"cached_tokens": usage["cacheRead"]},
        }

    def billed(self, usage: dict[str, int]) -> dict[str, int]:
        return {**super().billed(usage), "cacheWrite": 0}  # chat completions report no cache writes

    FINISH: ClassVar[dict[str, str]] = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}

    @staticmethod
    def _counted(usage: dict[str, Any] | None) -> dict[str, int]:
        u = usage or {}
        cached = int((u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        prompt = int(u.get("prompt_tokens") or 0)
        return {
            "input": prompt - cached,
            "output": int(u.get("completion_tokens") or 0),
            "cacheRead": cached,
            "cacheWrite": 0,
        }

    def read_answer(self, body: dict[str, Any]) -> Turn:
        choice = body["choices"][0]
        message = choice.get("message") or {}
        calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
        finish = self.FINISH.get(str(choice.get("finish_reason")), "stop")
        return recorded_turn(text_of(message.get("content")), calls, finish, self._counted(body.get("usage")))

    def read_stream(self, events: list[dict[str, Any]]) -> Turn:
        calls: dict[int, tuple[str, str]] = {}
        text, finish, usage = "", "stop", None
        for event in events:
            usage = event.get("usage") or usage
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                text += delta.get("content") or ""
                for piece in delta.get("tool_calls") or []:
                    name, arguments = calls.get(piece.get("index", 0), ("", ""))
                    function = piece.get("function") or {}
                    calls[piece.get("index", 0)] = (
                        name + (function.get("name") or ""),
                        arguments + (function.get("arguments") or ""),
                    )
                finish = self.FINISH.get(str(choice.get("finish_reason")), finish)
        return recorded_turn(text, [calls[i] for i in sorted(calls)], finish, self._counted(usage))

    def answer(
        self, turn: Turn, index: int, conversation: Conversation, usage: dict[str, int], nonce: str = ""
    ) -> Answer:
        model = conversation.model
        calls: list[dict[str, Any]] = [
            {
                "id": f"call_{index}_{i}{nonce}",
                "type": "function",
                "function": {"name": c["name"], "arguments": _arguments(c)},
            }
            for i, c in enumerate(turn.tool_calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        finish = turn.finish or ("tool_calls" if calls else "stop")
        head = {"id": f"chatcmpl-{index}", "created": int(time.time()), "model": model}
        body = {
            **head,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": self._usage(usage),
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            return _sse({**head, "object": "chat.completion.chunk", "choices": [choice]})

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in _pieces(turn.text or "")]
        for i, call in enumerate(calls):
            start = {
                "index": i,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            events.append(chunk({"tool_calls": [start]}))
            for piece in _pieces(call["function"]["arguments"]):
                events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
        events.append(chunk({}, finish))
        if conversation.include_usage:
            events.append(
                _sse({**head, "object": "chat.completion.chunk", "choices": [], "usage": self._usage(usage)})
            )
        return Answer(body, [*events, _sse("[DONE]")])


class Anthropic(Protocol):
    name, path = "anthropic", "/messages"
    STOP: ClassVar[dict[str, str]] = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}

    def conversation(self, body: dict[str, Any]) -> Conversation:
        messages = body["messages"]
        if not isinstance(messages, list):
            raise Rejected("messages must be a list")
        system = body.get("system") or ""
        if isinstance(system, list):
            system = "\n".join(str(block.get("text", "")) for block in system)
        turns = sum(1 for m in messages if m.get("role") == "assistant")
        return Conversation(
            messages, turns, str(system), str(body.get("model", "scripted")), bool(body.get("stream"))
        )

    carries_raw_arguments = False  # a tool_use input is an object

    def said(self, body: dict[str, Any]) -> list[Said]:
        out: list[Said] = []
        for turn in body.get("messages") or []:
            content = turn.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            for b in blocks:
                kind = b.get("type")
                if kind == "text" and b.get("text"):
                    out.append(Said(str(turn.get("role")), str(b["text"])))
                elif kind == "tool_use":
                    args = b.get("input")
                    out.append(Said("call", id=str(b.get("id")), name=str(b.get("name")), arguments=args))
                elif kind == "tool_result":
                    out.append(Said("result", text_of(b.get("content")), id=str(b.get("tool_use_id"))))
        return out

    def tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            definition(t.get("name"), t.get("description"), t.get("input_schema"))
            for t in body.get("tools") or []
        ]

    def error(self, status: int, message: str) -> dict[str, Any]:
        kinds = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}
        return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}

    @staticmethod
    def _counted(u: dict[str, Any]) -> dict[str, int]:
        return {
            "input": int(u.get("input_tokens") or 0),
            "output": int(u.get("output_tokens") or 0),
            "cacheRead": int(u.get("cache_read_input_tokens") or 0),
            "cacheWrite": int(u.get("cache_creation_input_tokens") or 0),
        }

    def read_answer(self, body: dict[str, Any]) -> Turn:
        blocks = body.get("content") or []
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls = [(b["name"], b.get("input")) for b in blocks if b.get("type") == "tool_use"]
        finish = {v: k for k, v in self.STOP.items()}.get(str(body.get("stop_reason")), "stop")
        return recorded_turn(text, calls, finish, self._counted(body.get("usage") or {}))

    def read_stream(self, events: list[dict[str, Any]]) -> Turn:
        blocks: dict[int, dict[str, Any]] = {}
        usage: dict[str, Any] = {}
        stop = "end_turn"
        for event in events:
            kind = event.get("type")
            if kind == "message_start":
                usage |= (event.get("message") or {}).get("usage") or {}
            elif kind == "content_block_start":
                blocks[event["index"]] = {**event["content_block"], "json": ""}
            elif kind == "content_block_delta":
                block, delta = blocks[event["index"]], event["delta"]
                block["text"] = block.get("text", "") + delta.get("text", "")
                block["json"] += delta.get("partial_json", "")
            elif kind == "message_delta":
                stop = (event.get("delta") or {}).get("stop_reason") or stop
                usage |= {k: v for k, v in (event.get("usage") or {}).items() if v is not None}
        content = [
            {**b, "input": arguments_value(b["json"]) if b["json"] else b.get("input", {})}
            if b.get("type") == "tool_use"
            else b
            for _, b in sorted(blocks.items())
        ]
        return self.read_answer({"content": content, "stop_reason": stop, "usage": usage})

    def _usage(self, usage: dict[str, int]) -> dict[str, int]:
        return {
            "input_tokens": usage["input"],
            "output_tokens": usage["output"],
            "cache_read_input_tokens": usage["cacheRead"],
            "cache_creation_input_tokens": usage["cacheWrite"],
        }

    def answer(
        self, turn: Turn, index: int, conversation: Conversation, usage: dict[str, int], nonce: str = ""
    ) -> Answer:
        model = conversation.model
        blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
        for i, call in enumerate(turn.tool_calls):
            raw = call.get("arguments", {})  # raw invalid JSON travels as a string input
            blocks.append(
                {"type": "tool_use", "id": f"toolu_{index}_{i}{nonce}", "name": call["name"], "input": raw}
            )
        stop = self.STOP[turn.finish or ("tool_calls" if turn.tool_calls else "stop")]
        message = {"id": f"msg_{index}", "type": "message", "role": "assistant", "model": model}
        body = {
            **message,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self._usage(usage),
        }
        start_usage = {**self._usage(usage), "output_tokens": 0}
        events = [
            _sse(
                {
                    "type": "message_start",
                    "message": {
                        **message,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": start_usage,
                    },
                },
                "message_start",
            )
        ]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                events.append(
                    _sse(
                        {
                            "type": "content_block_start",
                            "index": i,
                            "content_block": {"type": "text", "text": ""},
                        },
                        "content_block_start",
                    )
                )
                for piece in _pieces(block["text"]):
                    delta = {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "text_delta", "text": piece},
                    }
                    events.append(_sse(delta, "content_block_delta"))
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                events.append(
                    _sse(
                        {"type": "content_block_start", "index": i, "content_block": start},
                        "content_block_start",
                    )
                )
                # invalid JSON arguments stream as one JSON string delta: a client folds it into the same
                # string input the plain answer carries (as pieces of an object, the client's partial
                # parser would "repair" them into the arguments the script meant to break; a string cut
                # in pieces it refuses)
                raw = json.dumps(block["input"])
                for piece in [raw] if isinstance(block["input"], str) else _pieces(raw):
                    delta = {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                    events.append(_sse(delta, "content_block_delta"))
            events.append(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
        done = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage["output"]},
        }
        events += [_sse(done, "message_delta"), _sse({"type": "message_stop"}, "message_stop")]
        return Answer(body, events)


class OpenAIResponses(Protocol):
    name, path = "openai-responses", "/responses"
    _TURN: ClassVar[re.Pattern[str]] = re.compile(r"^(?:msg|fc|call)_(\d+)")

    def conversation(self, body: dict[str, Any]) -> Conversation:
        if body.get("previous_response_id"):
            raise Rejected("previous_response_id is not served; send the whole input each time")
        items = body["input"]
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        if not isinstance(items, list):
            raise Rejected("input must be a string or a list of items")
        # One answer's items (its message, its function calls) sit together: a run of assistant-side
        # items is one turn, split where the ids this server gave say another answer begins.
        turns, previous = 0, None
        for item in items:
            if item.get("type") == "function_call" or item.get("role") == "assistant":
                found = self._TURN.match(str(item.get("id") or item.get("call_id") or ""))
                index = int(found.group(1)) if found else -1
                if previous is None or (index >= 0 and previous >= 0 and index != previous):
                    turns += 1
                previous = index if index >= 0 else previous if previous is not None else -1
            else:
                previous = None
        system = str(body.get("instructions") or "") + "".join(
            str(i.get("content")) for i in items if i.get("role") in ("system", "developer")
        )
        return Conversation(
            items, turns, system, str(body.get("model", "scripted")), bool(body.get("stream"))
        )

    def said(self, body: dict[str, Any]) -> list[Said]:
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items or []
        out: list[Said] = []
        for i in items:
            kind = i.get("type")
            if kind == "function_call":
                args = arguments_value(i.get("arguments"))
                out.append(Said("call", id=str(i.get("call_id")), name=str(i.get("name")), arguments=args))
            elif kind == "function_call_output":
                out.append(Said("result", text_of(i.get("output")), id=str(i.get("call_id"))))
            elif i.get("role") in ("user", "assistant") and text_of(i.get("content")):
                out.append(Said(str(i["role"]), text_of(i.get("content"))))
        return out

    def tools(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            definition(t.get("name"), t.get("description"), t.get("parameters"))
            for t in body.get("tools") or []
            if t.get("type") == "function"
        ]

    def _usage(self, usage: dict[str, int]) -> dict[str, Any]:
        prompt = usage["input"] + usage["cacheRead"]
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": usage["cacheRead"]},
            "output_tokens": usage["output"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + usage["output"],
        }

    def billed(self, usage: dict[str, int]) -> dict[str, int]:
        return {**super().billed(usage), "cacheWrite": 0}

    def read_answer(self, body: dict[str, Any]) -> Turn:
        output = body.get("output") or []
        text = "".join(text_of(item.get("content")) for item in output if item.get("type") == "message")
        calls = [(i["name"], i.get("arguments")) for i in output if i.get("type") == "function_call"]
        finish = "length" if body.get("status") == "incomplete" else "tool_calls" if calls else "stop"
        u = body.get("usage") or {}
        cached = int((u.get("input_tokens_details") or {}).get("cached_tokens") or 0)
        usage = {
            "input": int(u.get("input_tokens") or 0) - cached,
            "output": int(u.get("output_tokens") or 0),
            "cacheRead": cached,
            "cacheWrite": 0,
        }
        return recorded_turn(text, calls, finish, usage)

    def read_stream(self, events: list[dict[str, Any]]) -> Turn:
        ends = ("response.completed", "response.incomplete", "response.failed")
        final = next((e["response"] for e in reversed(events) if e.get("type") in ends), None)
        if final is None:
            raise Rejected("the stream ended without its final response event")
        return self.read_answer(final)

    def answer(
        self, turn: Turn, index: int, conversation: Conversation, usage: dict[str, int], nonce: str = ""
    ) -> Answer:
        model = conversation.model
        output: list[dict[str, Any]] = []
        if turn.text:
            text = {"type": "output_text", "text": turn.text, "annotations": []}
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{index}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [text],
                }
            )
        for i, call in enumerate(turn.tool_calls):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{index}_{i}{nonce}",
                    "call_id": f"call_{index}_{i}{nonce}",
                    "name": call["name"],
                    "arguments": _arguments(call),
                    "status": "completed",
                }
            )
        incomplete = (turn.finish or "") == "length"
        response = {
            "id": f"resp_{index}",
            "object": "response",
            "created_at": int(time.time()),
            "model": model,
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "error": None,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": self._usage(usage),
        }
        seq = iter(range(1_000_000))

        def event(kind: str, **fields: Any) -> bytes:
            return _sse({"type": kind, "sequence_number": next(seq), **fields}, kind)

        pending = {
            **response,
            "status": "in_progress",
            "output": [],
            "usage": None,
            "incomplete_details": None,
        }
        events = [
            event("response.created", response=pending),
            event("response.in_progress", response=pending),
        ]
        for n, item in enumerate(output):
            if item["type"] == "message":
                events.append(
                    event(
                        "response.output_item.added",
                        output_index=n,
                        item={**item, "status": "in_progress", "content": []},
                    )
                )
                part = {"type": "output_text", "text": "", "annotations": []}
                events.append(
                    event(
                        "response.content_part.added",
                        item_id=item["id"],
                        output_index=n,
                        content_index=0,
                        part=part,
                    )
                )
                for piece in _pieces(item["content"][0]["text"]):
                    events.append(
                        event(
                            "response.output_text.delta",
                            item_id=item["id"],
                            output_index=n,
                            content_index=0,
                            delta=piece,
                        )
                    )
                text = item["content"][0]["text"]
                events.append(
                    event(
                        "response.output_text.done",
                        item_id=item["id"],
                        output_index=n,
                        content_index=0,
                        text=text,
                    )
                )
                events.append(
                    event(
                        "response.content_part.done",
                        item_id=item["id"],
                        output_index=n,
                        content_index=0,
                        part=item["content"][0],
                    )
                )
            else:
                events.append(
                    event(
                        "response.output_item.added",
                        output_index=n,
                        item={**item, "status": "in_progress", "arguments": ""},
                    )
                )
                for piece in _pieces(item["arguments"]):
                    events.append(
                        event(
                            "response.function_call_arguments.delta",
                            item_id=item["id"],
                            output_index=n,
                            delta=piece,
                        )
                    )
                events.append(
                    event(
                        "response.function_call_arguments.done",
                        item_id=item["id"],
                        output_index=n,
                        arguments=item["arguments"],
                    )
                )
            events.append(event("response.output_item.done", output_index=n, item=item))
        events.append(event("response.incomplete" if incomplete else "response.completed", response=response))
        return Answer(response, events)


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (OpenAIChat(), Anthropic(), OpenAIResponses())}
