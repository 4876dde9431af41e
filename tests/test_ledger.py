"""The effect ledger numbers effects that run at once apart (issue 32: a framework's parallel tool calls
both took number 1, so the second one's crash points were never reached): each start gets its own number,
and with it a gate of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from chaos.fault.base import EffectLine
from chaos.fault.overtaken import went_on
from chaos.ledger import entries
from tests.conftest import REPO

# Each process is ready (imported) before any starts its effect, so they start within a moment of each
# other: without the ledger's lock two of them read the same count (1 burst in 4 here)
RUN = """
import os, sys
from chaos.ledger import effect
open(sys.argv[2] + "." + sys.argv[1], "w").close()
while not os.path.exists(sys.argv[2]):
    pass
effect(sys.argv[3], call_id=sys.argv[1])
"""
MANY = 8


def _wait(until: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not until() and time.monotonic() < deadline:
        time.sleep(0.01)


def _burst(tmp_path: Path, name: str) -> list[str]:
    """``MANY`` processes start the effect ``name`` at once; the gates they wait at."""
    gates, go = tmp_path / "gates", tmp_path / f"go-{name}"
    gates.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "CHAOS_LEDGER": str(tmp_path / "ledger.jsonl")}
    env |= {"CHAOS_GATES": f"{name}.during", "CHAOS_GATE_DIR": str(gates)}
    argv = [sys.executable, "-c", RUN]
    procs = [subprocess.Popen([*argv, f"{name}-{i}", str(go), name], env=env) for i in range(MANY)]
    try:
        _wait(lambda: len(list(tmp_path.glob(f"go-{name}.*"))) == MANY, 60)
        go.touch()
        _wait(lambda: len(list(gates.glob(f"{name}.*.waiting"))) == MANY, 10)
        return sorted(p.name for p in gates.glob(f"{name}.*.waiting"))
    finally:
        for n in range(1, MANY + 1):
            (gates / f"{name}.during#{n}.release").touch()
        for proc in procs:
            proc.wait(timeout=30)


def test_effects_started_at_once_each_get_a_number_and_a_gate_of_their_own(tmp_path: Path) -> None:
    for name in ("deploy", "charge", "email", "migrate"):
        waiting = _burst(tmp_path, name)
        assert waiting == sorted(f"{name}.during#{n}.waiting" for n in range(1, MANY + 1)), waiting
    starts = [e["callId"] for e in entries(tmp_path / "ledger.jsonl") if e["phase"] == "start"]
    assert len(starts) == len(set(starts)) == 4 * MANY


def test_a_shell_tool_s_effect_carries_its_call_id(tmp_path: Path) -> None:
    """Issue 53, point 3: ``$CHAOS_EFFECT NAME`` recorded no call id, so ``effect-after-durable-call`` could
    not judge a shell tool's effect. It takes ``--call-id ID``, or ``CHAOS_CALL_ID`` from the environment."""
    ledger = tmp_path / "ledger.jsonl"
    env = {**os.environ, "CHAOS_LEDGER": str(ledger), "CHAOS_LOG_GLOB": str(tmp_path / "none")}
    helper = [sys.executable, "-m", "chaos.world.ledger"]
    subprocess.run([*helper, "deploy", "--call-id", "call_7_1", "web"], env=env, check=True, cwd=REPO)
    subprocess.run([*helper, "deploy", "api"], env={**env, "CHAOS_CALL_ID": "call_8_1"}, check=True, cwd=REPO)
    subprocess.run([*helper, "deploy", "db"], env=env, check=True, cwd=REPO)
    starts = [e for e in entries(ledger) if e["phase"] == "start"]
    assert [(e.get("callId"), e["detail"]) for e in starts] == [
        ("call_7_1", ["web"]),
        ("call_8_1", ["api"]),
        (None, ["db"]),
    ]
    refused = subprocess.run([*helper, "--call-id"], env=env, cwd=REPO, capture_output=True, text=True)
    assert refused.returncode == 2 and "usage" in refused.stderr


def test_an_effect_inside_an_mcp_call_is_judged_at_the_call_s_arrival() -> None:
    """Issue 53, point 8: over MCP, an abort closed the call with its synthetic result while the server's
    script went on to its deploy, whose own line then listed no pending intent: ``intent-before-effect``
    failed a legal agent. An effect made inside a call at the world's MCP server names the call
    (``mcpCall``), and is judged by the intents durable when the call arrived; a call that arrived before
    its intent was durable still fails (the call's own line)."""
    from types import SimpleNamespace

    from chaos.check.effects import without_intent

    def ledger(pending_at_arrival: list[str]) -> list[dict[str, object]]:
        return [
            {"effect": "mcp:bash", "phase": "call", "pid": 41, "call": 1, "pending": pending_at_arrival},
            {"effect": "deploy", "phase": "start", "mcpCall": "41:1", "pending": [], "resolved": ["t1"]},
            {"effect": "deploy", "phase": "done", "mcpCall": "41:1"},
            {"effect": "mcp:bash", "phase": "answer", "pid": 41, "call": 1},
        ]

    legal = SimpleNamespace(ledger=ledger(["t1"]), continued=None, phases=[])
    assert without_intent(legal) == ([], [])  # type: ignore[arg-type]
    early = SimpleNamespace(ledger=ledger([]), continued=None, phases=[])
    assert [e["effect"] for e, _ in without_intent(early)[0]] == ["mcp:bash"]  # type: ignore[arg-type]
    # an effect of its own, outside any call, is judged by its own line as before
    own = SimpleNamespace(
        ledger=[{"effect": "deploy", "phase": "start", "pending": []}], continued=None, phases=[]
    )
    assert [e["effect"] for e, _ in without_intent(own)[0]] == ["deploy"]  # type: ignore[arg-type]


def test_the_mcp_server_s_script_names_the_call_it_runs_in(tmp_path: Path) -> None:
    """The effect helper records the call a command of the world's MCP server runs in."""
    ledger = tmp_path / "ledger.jsonl"
    env = {**os.environ, "CHAOS_LEDGER": str(ledger), "CHAOS_LOG_GLOB": "none", "CHAOS_MCP_CALL": "41:3"}
    subprocess.run(
        [sys.executable, "-m", "chaos.world.ledger", "deploy", "web"], env=env, check=True, cwd=REPO
    )
    assert [e.get("mcpCall") for e in entries(ledger)] == ["41:3", "41:3"]


def test_a_call_held_at_its_effect_s_end_is_held_from_its_done_line(tmp_path: Path) -> None:
    """``overtaken`` counts the commits made while a call is parked at its effect's end. On a loaded
    machine another thread may commit between the effect's done line and the gate's mark (the CI of
    9b718d9 called a reached order unreached so): the hold is dated by the done line, which the mark
    carries; a mark that holds no time near its file's (agent-written bytes) is dated by its file."""
    from chaos.world.sandbox import Sandbox

    box = Sandbox(tmp_path)
    box.gate_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "CHAOS_LEDGER": str(tmp_path / "ledger.jsonl")}
    env |= {"CHAOS_GATES": "deploy.after", "CHAOS_GATE_DIR": str(box.gate_dir)}
    slow = "import time, chaos.ledger as l; r = l.record; l.record = lambda *a: (r(*a), time.sleep(0.5))"
    run = f"{slow}; l.effect('deploy', call_id='c1')"
    proc = subprocess.Popen([sys.executable, "-c", run], env=env)
    try:
        _wait(lambda: box.waiting("deploy.after#1"), 30)
        done = next(e["time"] for e in entries(tmp_path / "ledger.jsonl") if e["phase"] == "done")
        assert box.waited_since("deploy.after#1") == done
        assert (box.gate_dir / "deploy.after#1.waiting").stat().st_mtime >= done + 0.4
    finally:
        box.release("deploy.after#1")
        proc.wait(timeout=30)
    for hostile in (b"1e308", b"nan", b"12345", b"\xff" * 100):
        (box.gate_dir / "deploy.after#1.waiting").write_bytes(hostile)
        assert box.waited_since("deploy.after#1") == (box.gate_dir / "deploy.after#1.waiting").stat().st_mtime


def test_a_parked_call_is_let_go_once_the_process_goes_on_to_further_work() -> None:
    """``overtaken`` lets a parked call go (it returns last) where nothing commits while it is parked and
    the process goes on past the other calls' effects: an effect of another name begins, for another call
    or for none, after the call parked. The other call's own deploy is no further work; nor is a step of
    the parked call's, or one that began before it parked."""
    lines = [
        EffectLine("deploy", "c1", "start", 1.0),
        EffectLine("deploy", "c1", "done", 2.0),
        EffectLine("deploy", "c2", "start", 3.0),
        EffectLine("deploy", "c2", "done", 4.0),
    ]
    assert not went_on(lines, ("deploy", 1), 2.0)
    assert went_on([*lines, EffectLine("changelog", "", "start", 5.0)], ("deploy", 1), 2.0)
    assert went_on([*lines, EffectLine("changelog", "c2", "start", 5.0)], ("deploy", 1), 2.0)
    assert not went_on([*lines, EffectLine("purge", "c1", "start", 5.0)], ("deploy", 1), 2.0)
    assert not went_on([*lines, EffectLine("changelog", "", "start", 1.5)], ("deploy", 1), 2.0)
    assert not went_on(lines, ("deploy", 3), 0.0)  # (no such occurrence)
