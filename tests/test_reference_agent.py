"""The reference agent as a real child process against the real scripted model server."""

from __future__ import annotations

import os
import signal
import time

import orjson
import pytest

from chaos.contract import SYNTHETIC_CONTENT, reduce
from chaos.contract.framing import committed_facts
from chaos.scenario.model import Turn
from tests.agent_world import AGENT, FULL_SCRIPT, bash, finish, live_descendants, start, world

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)


def _records(data: bytes, kind: str) -> list[dict]:
    return [
        f["record"] for f in committed_facts(data) if f["kind"] == "record" and f["record"]["type"] == kind
    ]


def test_full_run_with_every_tool_completes_and_reduces_to_idle() -> None:
    with world(FULL_SCRIPT) as w:
        result = w.agent("deploy the service")
        assert result.returncode == 0, result.stderr
        assert f"session: {w.session_id()}" in result.stderr
        data = w.log_path().read_bytes()
        reduced = reduce(data)
        assert reduced["ok"] and reduced["state"]["operation"] == {"kind": "idle"}
        tools = [r["toolName"] for r in _records(data, "toolStarted")]
        assert tools == ["read", "bash", "write", "edit"]
        assert (w.box.workspace / "notes.txt").read_text() == "deployed once"
        [effect] = w.effects()
        assert len(effect["pending"]) == 1, "the deploy ran while its toolStarted was durable"
        assert oct(w.log_path().stat().st_mode & 0o777) == "0o600"
        assert w.agent("--session", w.session_id()).returncode == 0
        assert w.log_path().read_bytes() == data, "resuming a finished session appends nothing"


def test_live_429_fails_the_run_with_step_failed() -> None:
    with world([Turn(error=429)]) as w:
        result = w.agent("hello")
        assert result.returncode == 4
        data = w.log_path().read_bytes()
        [failed] = _records(data, "stepFailed")
        assert failed["error"]["code"] == "rate_limited"
        assert _records(data, "operationFinished")[0]["outcome"] == "failed"
        assert len(w.server.requests) == 1, "a live 429 is never retried"
        assert reduce(data)["ok"]


def test_invalid_arguments_and_unknown_tool_get_the_fixed_synthetic_text() -> None:
    script = [
        Turn(tool_calls=[{"name": "read", "arguments": "{not json"}, {"name": "teleport", "arguments": {}}]),
        Turn(text="ok"),
    ]
    with world(script) as w:
        assert w.agent("go").returncode == 0
        transcript = reduce(w.log_path().read_bytes())["state"]["transcript"]
        contents = [m["content"] for m in transcript if m["role"] == "tool"]
        assert contents == [SYNTHETIC_CONTENT["invalidArguments"], SYNTHETIC_CONTENT["unknownTool"]]


def test_sigint_mid_tool_aborts_with_exit_5_and_a_log_that_reduces() -> None:
    with world([Turn(tool_calls=[bash("./deploy.sh prod")])], gates=("deploy.during",)) as w:
        proc = start([*AGENT, "deploy"], w.box.workspace, w.env)
        deadline = time.monotonic() + 30
        while not w.box.waiting("deploy.during#1") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert w.box.waiting("deploy.during#1"), "the deploy never reached its gate"
        os.kill(proc.pid, signal.SIGINT)
        result = finish(proc, 30)
        assert result.returncode == 5, result.stderr
        data = w.log_path().read_bytes()
        reduced = reduce(data)
        assert reduced["ok"] and reduced["state"]["operation"] == {"kind": "idle"}
        assert _records(data, "abortRequested")[0]["phase"] == "tool"
        assert _records(data, "operationFinished")[0]["outcome"] == "aborted"
        contents = [m["content"] for m in reduced["state"]["transcript"] if m["role"] == "tool"]
        assert contents == [SYNTHETIC_CONTENT["interrupted"]]
        assert not live_descendants(proc.pid)


def test_resume_after_every_transaction_of_a_completed_run() -> None:
    with world(FULL_SCRIPT) as w:
        assert w.agent("deploy the service").returncode == 0
        full, name = w.log_path().read_bytes(), w.log_path().name
    cuts = [i + 1 for i, byte in enumerate(full) if byte == 0x0A]
    for cut in cuts:
        with world(FULL_SCRIPT) as w:
            w.put_log(name, full[:cut])
            result = w.agent("--session", name.split("_", 1)[1].removesuffix(".jsonl"))
            final = w.log_path().read_bytes()
            reduced = reduce(final)
            assert result.returncode == 0, (cut, result.stderr)
            assert reduced["ok"] and reduced["state"]["operation"] == {"kind": "idle"}, (cut, reduced)
            assert final.startswith(full[:cut]), "recovery never rewrites committed bytes"
            assert len(w.effects()) <= 1, "a never tool ran twice"


def _cut_after(data: bytes, predicate) -> bytes:  # type: ignore[no-untyped-def]
    """The prefix ending with the first transaction that holds a fact matching ``predicate``."""
    pos = 0
    for line in data.splitlines(keepends=True):
        pos += len(line)
        value = orjson.loads(line)
        if any(predicate(f) for f in (value if isinstance(value, list) else [value]) if "seq" in f):
            return data[:pos]
    raise AssertionError("no such fact")


def _started(name: str):  # type: ignore[no-untyped-def]
    return lambda f: (
        f["kind"] == "record" and f["record"]["type"] == "toolStarted" and f["record"]["toolName"] == name
    )


def _resume(
    script: list[Turn], prefix: bytes, name: str, **env: str
) -> tuple[int | None, bytes, list, object]:
    with world(script) as w:
        w.put_log(name, prefix)
        result = w.agent("--session", name.split("_", 1)[1].removesuffix(".jsonl"), **env)
        return result.returncode, w.log_path().read_bytes(), w.effects(), len(w.server.requests)


def _complete(script: list[Turn], **env: str) -> tuple[bytes, str]:
    with world(script) as w:
        assert w.agent("go", **env).returncode == 0
        return w.log_path().read_bytes(), w.log_path().name
