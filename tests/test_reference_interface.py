"""The rest of the reference agent's interface: compaction, resume with a prompt, refusals, holds."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import urllib.request
from pathlib import Path

import pytest
from chaos.bundled.targets.reference.tools import ToolFailure, run_tool

from chaos.contract import reduce
from chaos.scenario.model import Turn
from chaos.world.model_server import ModelServer
from tests.agent_world import world

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)


def test_compaction_then_a_new_prompt_on_the_same_session() -> None:
    with world([Turn(text="first answer"), Turn(text="second answer")]) as w:
        assert w.agent("first").returncode == 0
        assert w.agent("--compact", "--session", w.session_id()).returncode == 0
        state = reduce(w.log_path().read_bytes())["state"]
        assert state["activeContext"][0]["content"].startswith("[Compacted history]\n")
        assert any(r.compaction for r in w.server.requests)
        assert w.agent("--session", w.session_id(), "second").returncode == 0
        state = reduce(w.log_path().read_bytes())["state"]
        # The compacted context holds no assistant turn, so the script answers from turn 0 again.
        assert [m["content"] for m in state["transcript"]][-2:] == ["second", "first answer"]
        assert [m["role"] for m in state["activeContext"]] == ["user", "user", "assistant"]
        assert state["operation"] == {"kind": "idle"}


def test_configuration_prints_the_planner_current_shape() -> None:
    with world([]) as w:
        result = w.agent("--configuration")
        current = json.loads(result.stdout)
        assert set(current) == {"configurationDigest", "environmentIdentity", "tools"}
        assert [(t["name"], t["replay"]) for t in current["tools"]] == [
            ("read", "safe"),
            ("write", "never"),
            ("edit", "never"),
            ("bash", "never"),
        ]
        changed = json.loads(w.agent("--configuration", TINY_MODEL="other/model").stdout)
        assert changed["configurationDigest"] != current["configurationDigest"]


def test_corrupt_log_exits_1_naming_the_reducer_error() -> None:
    with world([Turn(text="ok")]) as w:
        assert w.agent("hi").returncode == 0
        with w.log_path().open("ab") as handle:
            handle.write(b"{broken}\n")
        result = w.agent("--session", w.session_id())
        assert result.returncode == 1 and "MALFORMED_JSON at line" in result.stderr


def test_a_second_writer_is_refused() -> None:
    with world([Turn(text="ok")]) as w:
        assert w.agent("hi").returncode == 0
        fd = os.open(w.log_path(), os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            result = w.agent("--session", w.session_id())
            assert result.returncode == 1 and "another writer" in result.stderr
        finally:
            os.close(fd)


def test_tool_paths_stay_inside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "inside.txt").write_text("ok")
    assert run_tool("read", {"path": "inside.txt"}, tmp_path, 5) == "ok"
    for path in ("../outside.txt", "/etc/passwd"):
        with pytest.raises(ToolFailure, match="outside the workspace"):
            run_tool("read", {"path": path}, tmp_path, 5)


def test_server_holds_a_response_until_released() -> None:
    with ModelServer([Turn(text="held", hold=True)]) as server:
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
        answers: list[dict] = []

        def ask() -> None:
            request = urllib.request.Request(server.url + "/chat/completions", data=body, method="POST")
            with urllib.request.urlopen(request, timeout=10) as response:
                answers.append(json.loads(response.read()))

        thread = threading.Thread(target=ask)
        thread.start()
        assert server.wait_for_request(1, timeout=5)
        thread.join(0.3)
        assert thread.is_alive() and not answers, "the response is held"
        server.release(0)
        thread.join(5)
        assert answers[0]["choices"][0]["message"]["content"] == "held"
        assert server.url.startswith("http://127.0.0.1:")
