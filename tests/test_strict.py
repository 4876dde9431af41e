"""The model server refuses what the real providers refuse, as they do, through the official clients.

Each rule of ``chaos.world.strict`` is broken once by a request sent with the
vendor's own Python client (``openai``, ``anthropic``) to the loopback server:
the client must raise its own ``BadRequestError`` carrying the message a real
endpoint gives, and the server must record the request as refused with that
reason. The same conversation with the rule kept is answered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaos.scenario.model import Turn
from chaos.world.model_server import ModelServer

openai = pytest.importorskip("openai", reason="the openai client is a dev dependency")
anthropic = pytest.importorskip("anthropic", reason="the anthropic client is a dev dependency")

CALL = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}}
CALL2 = {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": '{"path": "b"}'}}
USER = {"role": "user", "content": "go"}


def _answer(m: str = "done") -> dict[str, Any]:
    return {"role": "assistant", "content": m}


def _calls(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def _tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "text"}


CHAT = {
    "tool calls answered": (
        {"messages": [USER, _calls(CALL, CALL2), _tool("call_2"), _tool("call_1")]},
        None,
    ),
    "a call without its output": (
        {"messages": [USER, _calls(CALL, CALL2), _tool("call_1"), USER]},
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: call_2",
    ),
    "a call left last": (
        {"messages": [USER, _calls(CALL)]},
        "The following tool_call_ids did not have response messages: call_1",
    ),
    "an output without its call": (
        {"messages": [USER, _answer(), _tool("call_1")]},
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
        "'tool_calls'.",
    ),
    "an output twice": (
        {"messages": [USER, _calls(CALL), _tool("call_1"), _tool("call_1")]},
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    ),
    "an output without its id": (
        {"messages": [USER, _calls(CALL), {"role": "tool", "content": "x"}]},
        "Missing required parameter: 'messages[2].tool_call_id'.",
    ),
    "no messages": ({}, "Missing required parameter: 'messages'."),
    "empty messages": ({"messages": []}, "Invalid 'messages': empty array."),
    "an unknown role": (
        {"messages": [{"role": "robot", "content": "x"}]},
        "Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', "
        "and 'developer'.",
    ),
}


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def _use(i: str, value: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": "read", "input": {"path": "a"} if value is None else value}


def _result(i: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": "text"}


def _turn(role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "content": list(blocks)}


GO = _turn("user", _text("go"))
MESSAGES = {
    "tool uses answered": (
        {
            "messages": [
                GO,
                _turn("assistant", _use("a"), _use("b")),
                _turn("user", _result("b"), _result("a")),
            ]
        },
        None,
    ),
    "a use without its result": (
        {"messages": [GO, _turn("assistant", _use("a"), _use("b")), _turn("user", _result("a"))]},
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: b. Each "
        "`tool_use` block must have a corresponding `tool_result` block in the next message.",
    ),
    "a result without its use": (
        {"messages": [GO, _turn("assistant", _text("ok")), _turn("user", _result("a"))]},
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: a. Each "
        "`tool_result` block must have a corresponding `tool_use` block in the previous message.",
    ),
    "one id twice": (
        {
            "messages": [
                GO,
                _turn("assistant", _use("a")),
                _turn("user", _result("a")),
                _turn("assistant", _use("a")),
                _turn("user", _result("a")),
            ]
        },
        "messages.3.content.0: `tool_use` ids must be unique",
    ),
    "an input that is no object": (
        {"messages": [GO, _turn("assistant", _use("a", '{"pa')), _turn("user", _result("a"))]},
        "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
    ),
    "an empty text block": (
        {"messages": [GO, _turn("assistant", _text("")), GO]},
        "messages: text content blocks must be non-empty",
    ),
    "an empty message": (
        {"messages": [GO, _turn("assistant"), GO]},
        "messages.1: all messages must have non-empty content except for the optional final assistant "
        "message",
    ),
    "no max_tokens": ({"max_tokens": None, "messages": [GO]}, "max_tokens: Field required"),
    "an unknown role": (
        {"messages": [{"role": "system", "content": "x"}]},
        "messages.0.role: Input should be 'user' or 'assistant'",
    ),
}


def _call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "read", "arguments": "{}"}


def _output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "text"}


ASK = {"role": "user", "content": "go"}
RESPONSES = {
    "calls answered": ({"input": [ASK, _call("c1"), _call("c2"), _output("c2"), _output("c1")]}, None),
    "a call without its output": (
        {"input": [ASK, _call("c1"), _call("c2"), _output("c1")]},
        "No tool output found for function call c2.",
    ),
    "an output without its call": (
        {"input": [ASK, _output("c1")]},
        "No tool call found for function call output with call_id c1.",
    ),
    "an output before its call": (
        {"input": [ASK, _output("c1"), _call("c1")]},
        "No tool call found for function call output with call_id c1.",
    ),
    "one item id twice": (
        {"input": [ASK, {**_call("c1"), "id": "fc_1"}, {**_call("c2"), "id": "fc_1"}, _output("c1")]},
        "Duplicate item found with id fc_1.",
    ),
    "a call without its name": (
        {"input": [ASK, {"type": "function_call", "call_id": "c1", "arguments": "{}"}, _output("c1")]},
        "Missing required parameter: 'input[1].name'.",
    ),
}


def _post_openai(server: ModelServer, path: str, body: dict[str, Any]) -> None:
    client = openai.OpenAI(api_key="sk-test", base_url=server.url, max_retries=0, timeout=10)
    client.post(path, body={"model": "scripted/model", **body}, cast_to=object)


def _post_anthropic(server: ModelServer, body: dict[str, Any]) -> None:
    client = anthropic.Anthropic(
        api_key="sk-ant-test", base_url=server.url.removesuffix("/v1"), max_retries=0, timeout=10
    )
    request = {"model": "scripted/model", "max_tokens": 64, **body}
    request = {k: v for k, v in request.items() if v is not None}
    client.post("/v1/messages", body=request, cast_to=object)


def _refused_the_same_way(server: ModelServer, send: Any, error: type, message: str | None) -> None:
    if message is None:
        send()
        assert [r.refused for r in server.requests] == [None]
        return
    with pytest.raises(error) as raised:
        send()
    assert raised.value.status_code == 400
    assert message in str(raised.value), str(raised.value)
    assert server.requests and server.requests[-1].refused is not None
    assert message in server.requests[-1].refused


@pytest.mark.parametrize("rule", list(CHAT))
def test_chat_completions(rule: str) -> None:
    body, message = CHAT[rule]
    with ModelServer([Turn(text="ok")], protocol="openai-chat") as server:
        send = lambda: _post_openai(server, "/chat/completions", body)  # noqa: E731
        _refused_the_same_way(server, send, openai.BadRequestError, message)


@pytest.mark.parametrize("rule", list(MESSAGES))
def test_anthropic_messages(rule: str) -> None:
    body, message = MESSAGES[rule]
    with ModelServer([Turn(text="ok")], protocol="anthropic") as server:
        send = lambda: _post_anthropic(server, body)  # noqa: E731
        _refused_the_same_way(server, send, anthropic.BadRequestError, message)


@pytest.mark.parametrize("rule", list(RESPONSES))
def test_openai_responses(rule: str) -> None:
    body, message = RESPONSES[rule]
    with ModelServer([Turn(text="ok")], protocol="openai-responses") as server:
        send = lambda: _post_openai(server, "/responses", body)  # noqa: E731
        _refused_the_same_way(server, send, openai.BadRequestError, message)


def test_the_error_body_is_the_providers_shape() -> None:
    """What a client parses out of the error: OpenAI's param and code, Anthropic's error type."""
    with (
        ModelServer([Turn(text="ok")], protocol="openai-chat") as server,
        pytest.raises(openai.BadRequestError) as raised,
    ):
        _post_openai(server, "/chat/completions", CHAT["a call left last"][0])
    assert raised.value.param == "messages.[2].role" and raised.value.type == "invalid_request_error"
    assert raised.value.code is None
    with (
        ModelServer([Turn(text="ok")], protocol="anthropic") as server,
        pytest.raises(anthropic.BadRequestError) as refused,
    ):
        _post_anthropic(server, MESSAGES["a use without its result"][0])
    body = refused.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error" and body["request_id"].startswith("req_")


REAL_400 = {
    "reference": "The following tool_call_ids did not have response messages",
    "reference-anthropic": "`tool_use` ids were found without `tool_result` blocks immediately after",
    "reference-responses": "No tool output found for function call",
}


@pytest.mark.slow
def test_an_agent_that_leaves_a_call_without_its_result_meets_the_real_400_on_every_protocol(
    tmp_path: Path,
) -> None:
    """The bug class behind many reports: after a crash, a tool call goes to the model without its output
    (here: an agent that keeps its synthetic results to itself). The strict server refuses it as each real
    provider does, ``requests-valid`` names it, and it is one failure whichever the wire."""
    from chaos.case.run import run_case
    from chaos.scenario import load_scenario, load_target
    from chaos.triage.failure import failure_of
    from tests.conftest import REPO

    scenario = load_scenario(REPO / "scenarios" / "pending-deploy-interrupted.toml")
    keys = set()
    for target, words in REAL_400.items():
        spec = load_target(REPO / "targets" / f"{target}.toml")
        verdict = run_case(
            scenario, spec, {"TINY_REFERENCE_BUG": "hide-synthetic-results"}, tmp_path / target
        )
        assert next(c.id for c in verdict.failed) == "requests-valid", [c.text() for c in verdict.failed]
        refused = [r for r in verdict.evidence.requests if r["refused"]]
        assert refused and words in refused[0]["refused"] and refused[0]["status"] == 400
        found = failure_of(verdict)
        assert found is not None
        keys.add(found.key)
        assert run_case(scenario, spec, {}, tmp_path / f"{target}-fine").ok
    assert len(keys) == 1
