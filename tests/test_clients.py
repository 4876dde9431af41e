"""The scripted model server, called by the official client libraries real agents use.

Each protocol is driven, plain and streaming, by its own vendor's Python
client (``openai`` for chat completions and the Responses API, ``anthropic``
for Messages) pointed at the loopback server: every kind of turn a scenario
can script (text, tool calls, invalid arguments, a length stop, usage, HTTP
errors, a timeout, a held answer) must come out of the client as the script
meant it. A field the server spells wrong, an event out of order or a chunk
the client's accumulator cannot fold fails here, not in a user's agent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from chaos.scenario.model import Turn
from chaos.world.model_server import ModelServer

openai = pytest.importorskip(
    "openai", reason="the openai client is a dev dependency (pip install -e '.[dev]')"
)
anthropic = pytest.importorskip(
    "anthropic", reason="the anthropic client is a dev dependency (pip install -e '.[dev]')"
)

TOOLS = [{"name": "read", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]


@dataclass
class Seen:
    """What a client made of one answer, in neutral terms."""

    text: str
    calls: list[tuple[str, str]]  # (name, arguments as the client delivered them, JSON text)
    finish: str  # stop | tool_calls | length
    usage: dict[str, int]


def _args(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# -- one caller per protocol and mode -------------------------------------------------------------
def chat(server: ModelServer, stream: bool, timeout: float) -> Seen:
    client = openai.OpenAI(api_key="sk-test", base_url=server.url, max_retries=0, timeout=timeout)
    request: dict[str, Any] = {
        "model": "scripted/model",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}],
        "tools": [{"type": "function", "function": t} for t in TOOLS],
    }
    if stream:
        try:
            with client.chat.completions.stream(**request, stream_options={"include_usage": True}) as events:
                completion = events.get_final_completion()
        except openai.LengthFinishReasonError as cut:  # the helper's way to say finish_reason "length"
            completion = cut.completion
    else:
        completion = client.chat.completions.create(**request)
    choice = completion.choices[0]
    calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    assert completion.usage is not None
    details = completion.usage.prompt_tokens_details
    cached = (details.cached_tokens if details else 0) or 0
    usage = {
        "input": completion.usage.prompt_tokens - cached,
        "output": completion.usage.completion_tokens,
        "cacheRead": cached,
    }
    return Seen(choice.message.content or "", calls, choice.finish_reason, usage)


def messages(server: ModelServer, stream: bool, timeout: float) -> Seen:
    client = anthropic.Anthropic(
        api_key="sk-ant-test", base_url=server.url.removesuffix("/v1"), max_retries=0, timeout=timeout
    )
    request: dict[str, Any] = {
        "model": "scripted/model",
        "max_tokens": 1024,
        "system": "be brief",
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"name": t["name"], "input_schema": t["parameters"]} for t in TOOLS],
    }
    if stream:
        with client.messages.stream(**request) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**request)
    text = "".join(b.text for b in message.content if b.type == "text")
    calls = [(b.name, _args(b.input)) for b in message.content if b.type == "tool_use"]
    finish = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}[str(message.stop_reason)]
    u = message.usage
    usage = {
        "input": u.input_tokens,
        "output": u.output_tokens,
        "cacheRead": u.cache_read_input_tokens or 0,
        "cacheWrite": u.cache_creation_input_tokens or 0,
    }
    return Seen(text, calls, finish, usage)


def responses(server: ModelServer, stream: bool, timeout: float) -> Seen:
    client = openai.OpenAI(api_key="sk-test", base_url=server.url, max_retries=0, timeout=timeout)
    request: dict[str, Any] = {
        "model": "scripted/model",
        "instructions": "be brief",
        "input": [{"role": "user", "content": "go"}],
        "tools": [{"type": "function", **t} for t in TOOLS],
    }
    if stream:
        ends = ("response.completed", "response.incomplete")  # get_final_response knows only the first
        with client.responses.stream(**request) as events:
            response = next(e.response for e in events if e.type in ends)
    else:
        response = client.responses.create(**request)
    calls = [(i.name, i.arguments) for i in response.output if i.type == "function_call"]
    incomplete = response.status == "incomplete"
    assert not incomplete or (response.incomplete_details and response.incomplete_details.reason)
    finish = "length" if incomplete else "tool_calls" if calls else "stop"
    assert response.usage is not None
    cached = response.usage.input_tokens_details.cached_tokens
    usage = {
        "input": response.usage.input_tokens - cached,
        "output": response.usage.output_tokens,
        "cacheRead": cached,
    }
    return Seen(response.output_text, calls, finish, usage)


Caller = Callable[[ModelServer, bool, float], Seen]
CALLERS: dict[str, Caller] = {"openai-chat": chat, "anthropic": messages, "openai-responses": responses}
CASES = [pytest.param(p, s, id=f"{p}-{'stream' if s else 'plain'}") for p in CALLERS for s in (False, True)]


def ask(protocol: str, stream: bool, turn: Turn, timeout: float = 10.0) -> Seen:
    with ModelServer([turn], protocol=protocol) as server:
        return CALLERS[protocol](server, stream, timeout)


# -- every kind of turn ---------------------------------------------------------------------------
@pytest.mark.parametrize(("protocol", "stream"), CASES)
def test_text(protocol: str, stream: bool) -> None:
    text = 'a text in pieces: "quotes", \\ backslashes, üñí and a newline\n'
    seen = ask(protocol, stream, Turn(text=text))
    assert (seen.text, seen.calls, seen.finish) == (text, [], "stop")


@pytest.mark.parametrize(("protocol", "stream"), CASES)
def test_tool_calls(protocol: str, stream: bool) -> None:
    calls = [
        {"name": "read", "arguments": {"path": "notes/a.txt"}},
        {"name": "bash", "arguments": {"command": "echo 'hi' && ls -la"}},
    ]
    seen = ask(protocol, stream, Turn(text="Let me look.", tool_calls=calls))
    assert seen.finish == "tool_calls"
    assert [(name, json.loads(args)) for name, args in seen.calls] == [
        (c["name"], c["arguments"]) for c in calls
    ]
    assert seen.text == "Let me look."


@pytest.mark.parametrize(("protocol", "stream"), [c for c in CASES if c.values[0] != "anthropic"])
def test_invalid_arguments_arrive_raw(protocol: str, stream: bool) -> None:
    """Chat completions and Responses carry arguments as text: invalid JSON arrives byte for byte."""
    raw = '{"path": "a.txt", '
    seen = ask(protocol, stream, Turn(tool_calls=[{"name": "read", "arguments": raw}]))
    assert seen.calls == [("read", raw)]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_invalid_arguments_anthropic(stream: bool) -> None:
    """Messages carry ``input`` as an object; scripted invalid JSON reaches the agent as a string
    input holding the raw text, plain and streamed (streamed as a partial object, the client's
    partial parser would repair it into ``{"path": "a.txt"}``, the very arguments it was to break)."""
    raw = '{"path": "a.txt", '
    seen = ask("anthropic", stream, Turn(tool_calls=[{"name": "read", "arguments": raw}]))
    assert seen.calls == [("read", raw)]


@pytest.mark.parametrize(("protocol", "stream"), CASES)
def test_length_stop(protocol: str, stream: bool) -> None:
    seen = ask(protocol, stream, Turn(text="cut off mid", finish="length"))
    assert (seen.text, seen.finish) == ("cut off mid", "length")


@pytest.mark.parametrize(("protocol", "stream"), CASES)
def test_usage(protocol: str, stream: bool) -> None:
    usage = {"input": 17, "output": 9, "cacheRead": 4, "cacheWrite": 3}
    seen = ask(protocol, stream, Turn(text="counted", usage=usage))
    expected = {k: v for k, v in usage.items() if k in seen.usage}
    assert seen.usage == expected
    if protocol == "anthropic":
        assert seen.usage["cacheWrite"] == 3  # only Messages carries cache writes


ERRORS = {
    400: ("BadRequestError", "BadRequestError"),
    429: ("RateLimitError", "RateLimitError"),
    500: ("InternalServerError", "InternalServerError"),
    503: ("InternalServerError", "ServiceUnavailableError"),
}


@pytest.mark.parametrize(("protocol", "stream"), CASES)
@pytest.mark.parametrize("status", sorted(ERRORS))
def test_http_errors(protocol: str, stream: bool, status: int) -> None:
    module = anthropic if protocol == "anthropic" else openai
    with pytest.raises(module.APIStatusError) as caught:
        ask(protocol, stream, Turn(error=status))
    assert caught.value.status_code == status
    assert type(caught.value).__name__ == ERRORS[status][protocol == "anthropic"]
    assert f"scripted HTTP {status}" in str(caught.value)


@pytest.mark.parametrize(("protocol", "stream"), CASES)
def test_timeout(protocol: str, stream: bool) -> None:
    module = anthropic if protocol == "anthropic" else openai
    with pytest.raises(module.APITimeoutError):
        ask(protocol, stream, Turn(timeout=True), timeout=0.5)


@pytest.mark.parametrize(("protocol", "stream"), CASES)
def test_held_answer_waits_for_release(protocol: str, stream: bool) -> None:
    with ModelServer([Turn(text="released", hold=True)], protocol=protocol) as server:
        result: list[Seen] = []
        caller = threading.Thread(target=lambda: result.append(CALLERS[protocol](server, stream, 10.0)))
        caller.start()
        assert server.wait_for_request(1, timeout=10)
        caller.join(0.3)
        assert caller.is_alive() and not result  # in flight: the kill of an in-flight boundary lands here
        server.release(0)
        caller.join(10)
    assert [s.text for s in result] == ["released"]


@pytest.mark.parametrize(("protocol", "stream"), [c for c in CASES if c.values[1]])
def test_stream_held_after_chunks(protocol: str, stream: bool) -> None:
    """A streamed answer held after k events: the client has its start, not its end."""
    with ModelServer([Turn(text="a long streamed answer")], protocol=protocol) as server:
        server.hold_stream(1, 2)
        result: list[Seen] = []
        caller = threading.Thread(target=lambda: result.append(CALLERS[protocol](server, stream, 10.0)))
        caller.start()
        assert server.wait_for_request(1, timeout=10)
        for _ in range(100):
            if server.stream_held(1):
                break
            caller.join(0.05)
        assert server.stream_held(1) and caller.is_alive() and not result
        server.release_requests()
        caller.join(10)
    assert [s.text for s in result] == ["a long streamed answer"]


@pytest.mark.parametrize("protocol", list(CALLERS))
def test_conversation_picks_the_turn(protocol: str) -> None:
    """The answer follows the conversation the client sends (its assistant turns), not a counter."""
    script = [Turn(tool_calls=[{"name": "read", "arguments": {"path": "a"}}]), Turn(text="second")]
    with ModelServer(script, protocol=protocol) as server:
        first = CALLERS[protocol](server, False, 10.0)
        again = CALLERS[protocol](server, False, 10.0)  # a retry of the same conversation
        assert first.calls == again.calls != []
        assert [r.turn for r in server.requests] == [0, 0]
        assert [r.protocol for r in server.requests] == [protocol, protocol]


def test_every_protocol_a_target_may_name_is_served() -> None:
    """A target file's ``protocol`` is checked in the scenario stage, which may not import the world:
    its list of names and the server's registry must be the same."""
    from chaos.scenario.target import PROTOCOL_NAMES
    from chaos.world.protocols import PROTOCOLS

    assert set(PROTOCOL_NAMES) == set(PROTOCOLS)


def test_a_doubled_v1_is_the_real_providers_404() -> None:
    """Issue 38: the server took /v1/v1/messages, so an agent whose base URL doubled /v1 passed here and
    would fail against the real provider. Each official client now raises its own NotFoundError."""
    with ModelServer([Turn(text="hi"), Turn(text="hi")], protocol="anthropic") as server:
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.url, max_retries=0, timeout=10)
        with pytest.raises(anthropic.NotFoundError) as refused:
            client.messages.create(
                model="scripted/model", max_tokens=16, messages=[{"role": "user", "content": "go"}]
            )
        assert refused.value.body == {
            "type": "error",
            "error": {"type": "not_found_error", "message": "Not Found"},
        }
    with ModelServer([Turn(text="hi")], protocol="openai-chat") as server:
        chat_client = openai.OpenAI(api_key="sk-test", base_url=server.url + "/v1", max_retries=0, timeout=10)
        with pytest.raises(openai.NotFoundError, match="Invalid URL"):
            chat_client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}])
        assert server.requests == [], "a refused path is no request of the script"
