"""In-flight kills are exact only when the world saw the boundary still held at the kill."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from chaos.process.stop import Trigger
from chaos.scenario import Scenario, Strike, Turn, load_target
from chaos.scenario.model import Boundary
from chaos.world.world import build_world
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)


def _ask(url: str, answers: list[bytes]) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    with urllib.request.urlopen(
        urllib.request.Request(url + "/chat/completions", data=body), timeout=10
    ) as r:
        answers.append(r.read())


def test_a_held_request_counts_as_held_until_it_is_answered() -> None:
    world = build_world(
        Scenario(prompt="x", turns=[Turn(text="hi")]), load_target(REPO / "targets" / "reference.toml"), {}
    )
    try:
        trigger = Trigger.arm(world, Strike(Boundary("model-request")))
        assert not trigger.reached() and not trigger.held()
        answers: list[bytes] = []
        thread = threading.Thread(target=_ask, args=(world.server.url, answers))
        thread.start()
        assert world.server.wait_for_request(1)
        assert trigger.reached() and trigger.held(), "the world holds the request"
        trigger.disarm()
        thread.join(5)
        assert answers and not trigger.held(), "answered: a kill now would not be exact"
    finally:
        world.close()


def test_a_gate_counts_as_held_until_released(tmp_path: Path) -> None:
    world = build_world(
        Scenario(prompt="x", turns=[Turn(text="hi")]), load_target(REPO / "targets" / "reference.toml"), {}
    )
    try:
        trigger = Trigger.arm(world, Strike(Boundary("effect-running", {"effect": "deploy"})))
        assert trigger.gate == "deploy.during#1" and not trigger.held()
        (world.box.gate_dir / "deploy.during#1.waiting").write_text("1")
        assert trigger.reached() and trigger.held()
        trigger.disarm()
        assert not trigger.held()
    finally:
        world.close()


def test_a_held_stream_counts_as_held_until_let_go() -> None:
    """``model-stream[chunks=K]``: the world holds the n-th streamed answer after its first K events."""
    world = build_world(
        Scenario(prompt="x", turns=[Turn(text="a streamed answer")]),
        load_target(REPO / "targets" / "node-reference.toml"),
        {},
    )
    try:
        trigger = Trigger.arm(world, Strike(Boundary("model-stream", {"chunks": 2})))
        assert trigger.stream == 1 and not trigger.reached() and not trigger.held()
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
        request = urllib.request.Request(world.server.url + "/chat/completions", json.dumps(body).encode())
        with urllib.request.urlopen(request, timeout=10) as stream:
            first = [stream.readline() for _ in range(4)]  # two events: data line, blank line each
            assert [line for line in first if line.strip()]
            # The server marks the boundary reached just after it wrote the K-th event: the reader may be first.
            deadline = time.monotonic() + 10
            while not trigger.reached() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert trigger.reached() and trigger.held()
            trigger.disarm()
            rest = stream.read()
        assert b"[DONE]" in rest and not trigger.held(), "let go: a kill now would not be exact"
    finally:
        world.close()
