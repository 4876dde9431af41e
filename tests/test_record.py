"""``chaos record``: one session through a recording proxy to an upstream provider, written as a scenario.

The upstream here is a local one (a scripted model server on 127.0.0.1 playing
the provider): no test reaches the network. The recorded scenario must give
back the upstream's answers turn by turn, replay offline to the same facts,
and no file written may hold the credential the agent sent.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from chaos import api
from chaos.cli import main
from chaos.contract.reading import facts
from chaos.mine.signature import fact_shape
from chaos.scenario import load_scenario
from chaos.scenario.model import Turn, call
from chaos.world.model_server import ModelServer
from chaos.world.protocols import PROTOCOLS, Conversation
from chaos.world.recorder import Upstream
from tests.conftest import answer_json, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

SECRET = "sk-chaos-test-0123456789abcdef"
SCRIPT = [
    Turn(tool_calls=[call("read", path="README.md")], usage={"input": 31, "output": 7}),
    Turn(text="It says hello.", usage={"input": 52, "output": 4, "cacheRead": 8}),
]
TARGETS = {
    "reference": "openai-chat",
    "reference-anthropic": "anthropic",
    "reference-responses": "openai-responses",
}


@needs_ptrace
@pytest.mark.parametrize("target", list(TARGETS))
def test_a_two_turn_tool_session_round_trips_through_a_local_upstream(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello\n")
    out, results = tmp_path / "recorded.toml", tmp_path / "results"
    with ModelServer(SCRIPT, protocol=TARGETS[target]) as upstream:
        argv = ["record", "Read the README.", "--upstream", upstream.url, "--target", target]
        argv += ["--workspace", str(workspace), "--out", str(out), "--results", str(results)]
        assert main([*argv, "--target-env", f"TINY_API_KEY={SECRET}"]) == 0, capsys.readouterr().err
        seen = list(upstream.requests)
    assert len(seen) == 2  # the upstream answered both
    recorded = load_scenario(out)
    calls = [[(c["name"], c["arguments"]) for c in t.tool_calls] for t in recorded.turns]
    assert calls == [[("read", {"path": "README.md"})], []]
    assert [t.text for t in recorded.turns] == [None, "It says hello."]
    assert [t.usage for t in recorded.turns] == [r.billed for r in seen]
    assert recorded.files["README.md"].content == "hello\n"
    for path in [out, *results.rglob("*")]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"{path} holds the credential"
    replay = api.run(recorded, target, results=tmp_path / "replay")
    assert replay.ok, [c.text() for c in replay.failed]
    original = (results / "session.jsonl").read_bytes()
    shapes = [[fact_shape(f) for f in facts(log)] for log in (original, replay.evidence.start.kept.log_after)]
    assert shapes[0] == shapes[1]


def test_an_upstream_that_is_no_url_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "hi", "--upstream", "api.openai.com"]) == 2
    assert "base URL" in capsys.readouterr().err


def test_the_recorded_session_is_the_upstream_s_own_answers_streamed_or_not() -> None:
    """Each protocol reads its own answers back, plain and streamed, as the turn that wrote them."""
    turn = Turn(text="ok", tool_calls=[call("read", path="a")], usage={"input": 3, "output": 2})
    for protocol in PROTOCOLS.values():
        for stream in (False, True):
            conversation = Conversation([], 0, stream=stream, include_usage=True)
            answer = protocol.answer(turn, 0, conversation, turn.usage or {})
            if stream:
                events = [
                    json.loads(e.decode().split("data: ", 1)[1])
                    for e in answer.events
                    if b"data: " in e and b"[DONE]" not in e
                ]
                back = protocol.read_stream(events)
            else:
                back = protocol.read_answer(answer.body)
            assert back.text == "ok" and back.tool_calls == turn.tool_calls, (protocol.name, stream)
            assert back.usage == protocol.billed(turn.usage or {}), (protocol.name, stream)


def test_the_credentials_reach_the_upstream_and_nothing_else(tmp_path: Path) -> None:
    """The recorder passes the agent's own authentication on (the provider needs it) and keeps no header."""
    openai = pytest.importorskip("openai")
    seen: list[dict[str, str]] = []
    answer = ModelServer([Turn(text="hi")], protocol="openai-chat")
    body = (
        PROTOCOLS["openai-chat"]
        .answer(
            Turn(text="hi"),
            0,
            Conversation([], 0),
            {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        )
        .body
    )
    answer.close()

    class Provider(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            seen.append({k.lower(): v for k, v in self.headers.items()})
            self.rfile.read(int(self.headers["Content-Length"]))
            answer_json(self, body)

    provider = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=provider.serve_forever, daemon=True).start()
    try:
        with ModelServer([Turn(text="-")], protocol="openai-chat") as recorder:
            recorder.upstream = Upstream(f"http://127.0.0.1:{provider.server_address[1]}/v1")
            client = openai.OpenAI(api_key=SECRET, base_url=recorder.url, max_retries=0, timeout=10)
            done = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}])
            assert done.choices[0].message.content == "hi"
            assert [t.text for _, _, t in recorder.recorded()] == ["hi"]
            assert SECRET.encode() not in json.dumps(recorder.request_log()).encode()
    finally:
        provider.shutdown()
    assert seen and seen[0]["authorization"] == f"Bearer {SECRET}"
