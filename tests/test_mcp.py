"""Tools over MCP: the world serves the workspace tools (Streamable HTTP and stdio, the official SDK), the
reference agent takes its tools there, kills land while a call runs at the server, and nothing outlives
a case. Real servers on 127.0.0.1, real agent processes, real SIGKILLs."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest

from chaos import api
from chaos.case.run import run_case
from chaos.check import check_all
from chaos.contract.reading import facts
from chaos.errors import Skipped, SpecError
from chaos.scenario import load_scenario, load_target
from chaos.scenario.model import Boundary, Strike
from chaos.world import MCP_TOKEN_ENV
from chaos.world.sandbox import make_sandbox
from tests.conftest import MCP_ONLY, REPO, needs_modules, needs_node
from tests.test_frameworks import agents_sdk
from tests.test_legal_variants import TOGETHER

# starts agent and server processes; the SDK is the mcp extra (CHAOS_REQUIRE_FRAMEWORKS=1: it must be here)
pytestmark = [pytest.mark.slow, needs_modules("mcp", "uvicorn")]

TRANSPORTS = {"http": "reference-mcp", "stdio": "reference-mcp-stdio"}


def _target(transport: str):  # type: ignore[no-untyped-def]
    return load_target(REPO / "targets" / f"{TRANSPORTS[transport]}.toml")


def _servers() -> list[psutil.Process]:
    """The MCP servers this test process started, directly or through an agent."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "chaos.world.mcp_server" in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_a_kill_after_the_effect_ran_at_the_server_is_recovered_once(transport: str, tmp_path: Path) -> None:
    """Killed once the deploy ran, before the agent had the answer: the resume writes interrupted and never
    calls again. Over HTTP the server outlives the agent and completes the call; over stdio it dies with it."""
    scenario = load_scenario(REPO / "scenarios" / "deploy-done-result-lost.toml")
    verdict = run_case(scenario, _target(transport), {}, tmp_path / "case")
    assert verdict.ok, [c.text() for c in verdict.checks if not c.ok]
    ev = verdict.evidence
    assert ev.start.process.killed and ev.start.landing.exact
    calls = [e for e in ev.ledger if e["effect"] == "mcp:bash"]
    assert [e["phase"] for e in calls] == (["call", "answer"] if transport == "http" else ["call"])
    assert calls[0]["pending"], "the call reached the server with its intent durable"
    assert [e["effect"] for e in ev.ledger if e["phase"] == "start"] == ["deploy"]
    judged = {c.id for c in verdict.checks if c.judged}
    assert {"mcp-trust", "mcp-answer", "never-once", "intent-before-effect"} <= judged
    assert not _servers(), "no MCP server outlives its case"


# Each transport sweeps a deploy over MCP and the replay of a read over MCP; the two deploy worlds (the
# intent durable, the result lost) are split between the transports, so each is swept once.
SWEPT = {
    "http": ["deploy-done-result-lost", "section8-read-replay"],
    "stdio": ["deploy-intent-durable", "section8-read-replay"],
}


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_a_sweep_with_mcp_tools_is_clean_with_exact_kills(transport: str, tmp_path: Path) -> None:
    names = SWEPT[transport]
    result = api.sweep(
        [REPO / "scenarios" / f"{name}.toml" for name in names],
        target=str(REPO / "targets" / f"{TRANSPORTS[transport]}.toml"),
        results=tmp_path,
        jobs=2,
        faults=("kill",),
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert result.summary.ok, [g.label for g in result.summary.groups]
    assert len(result.summary.results) >= 20
    assert summary["exact"] == summary["reached"] > 15


WRITE_NOTES = """description = "The notes written over MCP, and the run finished."
prompt = "Write the notes."
requires = ["tool:write"]

[[turns]]
tool_calls = [{ name = "write", arguments = { path = "notes.txt", content = "deployed" } }]

[[turns]]
text = "Written."
"""


def test_trusting_the_servers_hints_is_one_distinct_failure(tmp_path: Path) -> None:
    """The mcp-trusts-hints bug declares ``write`` safe because the server hints it is idempotent."""
    scenario = tmp_path / "write-notes.toml"
    scenario.write_text(WRITE_NOTES)
    result = api.sweep(
        [scenario],
        target=str(REPO / "targets" / "reference-mcp.toml"),
        results=tmp_path,
        jobs=2,
        faults=("kill",),
        target_env={"TINY_REFERENCE_BUG": "mcp-trusts-hints"},
    )
    assert [g.check for g in result.summary.groups] == ["mcp-trust"]


def test_an_mcp_placeholder_needs_its_transport(tmp_path: Path) -> None:
    spec = (REPO / "targets" / "reference-mcp.toml").read_text().replace('mcp = "http"\n', "")
    (tmp_path / "t.toml").write_text(spec)
    with pytest.raises(SpecError, match=r"unknown placeholder \{mcp_url\}"):
        load_target(tmp_path / "t.toml")


def test_a_restart_of_the_server_needs_a_server_the_world_runs(tmp_path: Path) -> None:
    """mcp-restart restarts the world's HTTP server; over stdio the server is the agent's own child, so the
    case is skipped with its reason, never run as something else."""
    scenario = load_scenario(REPO / "scenarios" / "mcp-server-restart.toml")
    with pytest.raises(Skipped, match='declares no mcp = "http"'):
        run_case(scenario, _target("stdio"), {}, tmp_path / "case")


@agents_sdk
def test_a_framework_agent_with_mcp_tools_repeats_a_deploy_killed_at_the_server(tmp_path: Path) -> None:
    """The Agents SDK agent whose tools are the world's MCP server (``MCPServerStreamableHttp``), swept with
    kills: the SDK saves a turn's items after its tools ran, so an agent killed while the server ran the
    deploy (or had just run it) has no call in its session, the model is asked anew and the deploy runs
    again: killed with the server holding the call (before its bash ran, or after) or the deploy in it.
    One distinct failure, those four cases, every kill exact; every other boundary is clean."""
    result = api.sweep(
        [REPO / "scenarios" / "frameworks" / "deploy-over-mcp.toml"],
        results=tmp_path,
        jobs=2,
        faults=("kill",),
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [g.check for g in result.summary.groups] == ["effects-as-declared"]
    journal = [json.loads(line) for line in (tmp_path / "sweep.jsonl").read_text().splitlines()]
    failing = sorted(case["case"].split(" @ ")[1] for case in journal if not case["ok"])
    assert failing == [
        "effect-done[effect=deploy]#1",
        "effect-done[effect=mcp:bash]#1",
        "effect-running[effect=deploy]#1",
        "effect-running[effect=mcp:bash]#1",
    ]
    assert summary["exact"] == summary["reached"] > 5


SPOILS = {"mcp-session-lost": "session-lost", "mcp-cut-answer": "cut", "mcp-error-answer": "error"}


@agents_sdk
@pytest.mark.parametrize("fault", ["mcp-restart", "mcp-session-lost", "mcp-cut-answer", "mcp-error"])
def test_a_framework_agent_meets_the_mcp_faults_too(fault: str, tmp_path: Path) -> None:
    """The server's trouble lands on a framework agent's call as on any other: the Agents SDK agent,
    told the call failed, does not call it again."""
    scenario = load_scenario(REPO / "scenarios" / "frameworks" / "deploy-over-mcp.toml")
    scenario = scenario.with_crash(Strike(Boundary.parse("effect-done[effect=deploy]"), fault_name=fault))
    verdict = run_case(scenario, load_target(REPO / "targets" / "openai-agents-mcp.toml"), {}, tmp_path)
    assert verdict.ok, [c.text() for c in verdict.checks if not c.ok]
    assert verdict.evidence.start.landing.exact
    assert [e["effect"] for e in verdict.evidence.ledger if e["phase"] == "start"] == ["deploy"]
    assert {"mcp-answer", "processes", "sandbox"} <= {c.id for c in verdict.checks if c.judged}


@agents_sdk
def test_a_framework_store_holding_an_answer_the_server_never_delivered_fails_mcp_answer(
    tmp_path: Path,
) -> None:
    """The Agents SDK's session holds the bash call's output as the server's answer quoted in its parts:
    judged and held. The same store against a ledger whose server cut that answer (never delivered whole)
    holds a success the agent never read: fails. (No bundled framework invents one; the row rewrites
    what the server said.)"""
    scenario = load_scenario(REPO / "scenarios" / "frameworks" / "deploy-over-mcp.toml").with_crash(None)
    verdict = run_case(scenario, load_target(REPO / "targets" / "openai-agents-mcp.toml"), {}, tmp_path)
    (held,) = [c for c in verdict.checks if c.id == "mcp-answer"]
    assert held.judged and held.ok, held.text()
    cut = [{**e, "delivered": "cut"} if e["phase"] == "answer" else e for e in verdict.evidence.ledger]
    (failed,) = [c for c in check_all(replace(verdict.evidence, ledger=cut)) if c.id == "mcp-answer"]
    assert not failed.ok and "bash" in failed.got and "(cut)" in failed.got, failed.got


@pytest.mark.parametrize("name", list(SPOILS))
def test_a_spoiled_answer_is_an_error_result_and_the_call_is_not_made_again(
    name: str, tmp_path: Path
) -> None:
    """The server ran the deploy and spoiled its answer: the agent records an error (lost, or the server's
    JSON-RPC error), never a success, and never calls again."""
    scenario = load_scenario(REPO / "scenarios" / f"{name}.toml")
    verdict = run_case(scenario, _target("http"), {}, tmp_path / "case")
    assert verdict.ok, [c.text() for c in verdict.checks if not c.ok]
    answers = [e for e in verdict.evidence.ledger if e["effect"] == "mcp:bash" and e["phase"] == "answer"]
    assert [a["delivered"] for a in answers] == [SPOILS[name]]
    results = [
        f["entry"]
        for f in facts(verdict.evidence.start.kept.log_after)
        if "toolStartedId" in f.get("entry", {})
    ]
    said = "was an error" if name == "mcp-error-answer" else "was lost"
    assert [r["result"]["type"] for r in results] == ["error"] and said in results[0]["message"]["content"]
    assert not _servers()


@contextlib.contextmanager
def _served(tmp_path: Path, token: str) -> Iterator[tuple[str, subprocess.Popen[bytes], Any]]:
    """The world's MCP server over HTTP on a socket of its own, answering under ``token``: its port's URL
    (no path), the process, and its sandbox."""
    box = make_sandbox({}, tmp_path)
    listener = socket.create_server(("127.0.0.1", 0))
    argv = [sys.executable, "-m", "chaos.world.mcp_server", "--http-fd", str(listener.fileno())]
    args = ["--workspace", str(box.workspace), "--ledger", str(box.ledger), "--gate-dir", str(box.gate_dir)]
    server = subprocess.Popen(
        [*argv, *args, "--log-glob", "none"],
        stdin=subprocess.PIPE,
        pass_fds=[listener.fileno()],
        env={**os.environ, MCP_TOKEN_ENV: token},
    )
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", server, box
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)
        listener.close()


HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


def _post(client: Any, url: str, session: str, method: str, rid: int | None, **params: object) -> Any:
    body: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
    if rid is not None:
        body["id"] = rid
    return client.post(
        url, json=body, headers={**HEADERS, **({"mcp-session-id": session} if session else {})}
    )


def _initialize(client: Any, url: str) -> str:
    info = {"name": "test", "version": "1"}
    answer = _post(
        client, url, "", "initialize", 1, protocolVersion="2025-06-18", capabilities={}, clientInfo=info
    )
    session = str(answer.headers["mcp-session-id"])
    assert _post(client, url, session, "notifications/initialized", None).status_code == 202
    return session


def test_a_lost_session_answers_404_and_a_new_session_works(tmp_path: Path) -> None:
    """On the wire (the 2025 protocol's initialize handshake): once the server forgot the session, a request
    naming it is answered 404, and a new initialize gets a new Mcp-Session-Id that works."""
    httpx = pytest.importorskip("httpx", reason="httpx comes with the MCP SDK (the mcp extra)")
    with _served(tmp_path, "case-token") as (root, _, box), httpx.Client(timeout=10) as client:
        url = f"{root}/case-token/mcp"
        session = _initialize(client, url)
        box.spoil("session-lost")
        with pytest.raises(httpx.RemoteProtocolError):  # the connection closes, no answer on it
            _post(client, url, session, "tools/call", 2, name="bash", arguments={"command": "echo ran"})
        assert _post(client, url, session, "tools/list", 3).status_code == 404
        renewed = _initialize(client, url)
        assert renewed != session
        listed = _post(client, url, renewed, "tools/list", 2)
        assert listed.status_code == 200 and '"bash"' in listed.text
    assert [
        e["delivered"] for e in map(json.loads, box.ledger.read_text().splitlines()) if e["phase"] == "answer"
    ] == ["session-lost"]


def test_the_mcp_server_answers_only_under_the_case_token(tmp_path: Path) -> None:
    """Issue 54, point 2: ``{mcp_url}`` was ``http://127.0.0.1:PORT/mcp`` with no token, and another local
    user (``nobody``) ran a command as chaos's user through ``bash``. Now the path carries a token made for
    the case, given to the server in its environment (its command line is every user's to read); any
    other path is 404. Point 9: a non-UTF-8 ``Mcp-Session-Id`` was a 500; now it is a 400."""
    httpx = pytest.importorskip("httpx", reason="httpx comes with the MCP SDK (the mcp extra)")
    token = "a-token-made-for-the-case"
    with _served(tmp_path, token) as (root, server, _), httpx.Client(timeout=10) as client:
        assert token not in " ".join(psutil.Process(server.pid).cmdline())
        for path in ("/mcp", "/wrong-token/mcp", f"/{token}x/mcp", f"/{token}"):
            listed = _post(client, f"{root}{path}", "", "tools/list", 1)
            assert listed.status_code == 404, path
        url = f"{root}/{token}/mcp"
        _initialize(client, url)
        bad = client.post(url, json={}, headers={**HEADERS, "mcp-session-id": b"\xff\xfe"})
        assert bad.status_code == 400 and "UTF-8" in bad.text
        # Another local user, who finds the port (every user can list sockets) but not the token, with the
        # system's interpreter (chaos's may sit in a folder that user cannot open)
        if os.geteuid() != 0 or not os.access("/usr/bin/python3", os.X_OK):
            pytest.skip("dropping to another user needs root and the system's /usr/bin/python3")
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "bash"}}
        probe = (
            "import json, sys, urllib.request, urllib.error\n"
            "req = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), headers=json.loads(sys.argv[3]))\n"
            "try:\n    print(urllib.request.urlopen(req, timeout=10).status)\n"
            "except urllib.error.HTTPError as err:\n    print(err.code)\n"
        )
        done = subprocess.run(
            ["/usr/bin/python3", "-c", probe, f"{root}/mcp", json.dumps(call), json.dumps(HEADERS)],
            user="nobody",
            capture_output=True,
            text=True,
            timeout=30,
            cwd="/",
        )
        assert done.stdout.strip() == "404", done.stderr


@needs_node
@pytest.mark.parametrize("name", ["deploy-done-result-lost", "mcp-server-restart", *SPOILS])
def test_the_node_agent_over_mcp_calls_a_tool_whose_answer_it_lost_once(name: str, tmp_path: Path) -> None:
    """The Node agent's own Streamable HTTP client (no SDK): killed at the server, or its answer lost, cut
    or an error, it never calls the deploy again and records no success it was not given."""
    scenario = load_scenario(REPO / "scenarios" / f"{name}.toml")
    verdict = run_case(scenario, load_target(REPO / "targets" / "node-mcp.toml"), {}, tmp_path / "case")
    assert verdict.ok, [c.text() for c in verdict.checks if not c.ok]
    assert [e["effect"] for e in verdict.evidence.ledger if e["phase"] == "start"] == ["deploy"]
    assert {"never-once", "mcp-answer", "mcp-trust"} <= {c.id for c in verdict.checks if c.judged}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_legal_variants_pass_the_mcp_scenarios_over_either_protocol(mode: str, tmp_path: Path) -> None:
    """The reference agent's legal designs together, with its tools over MCP in the 2025 handshake (a
    session) or the 2026 protocol (none): no check blames them, and the MCP checks are judged."""
    names = [*MCP_ONLY, "deploy-done-result-lost", "full-workflow", "section8-read-replay"]
    env = {"TINY_REFERENCE_VARIANT": TOGETHER, "TINY_MCP_MODE": mode}
    verdicts = [
        run_case(load_scenario(REPO / "scenarios" / f"{name}.toml"), _target("http"), env, tmp_path / name)
        for name in names
    ]
    failed = {v.scenario.name: [c.text() for c in v.failed] for v in verdicts if not v.ok}
    assert not failed, failed
    held = {c.id for v in verdicts for c in v.checks if c.judged and c.ok}
    assert {"mcp-trust", "mcp-answer", "never-once", "intent-before-effect"} <= held


def test_a_call_sent_before_its_intent_was_durable_fails_intent_before_effect(tmp_path: Path) -> None:
    """Issue 53, point 8's other side: an effect made inside an MCP call is judged at the call's arrival,
    and an agent that sends the call before its ``toolStarted`` is durable (``intent-after-effect``) still
    fails, at the call: one failure, the call's."""
    scenario = load_scenario(REPO / "scenarios" / "deploy-intent-durable.toml")
    verdict = run_case(
        scenario, _target("http"), {"TINY_REFERENCE_BUG": "intent-after-effect"}, tmp_path / "c"
    )
    failed = {c.id: c for c in verdict.checks if not c.ok}
    assert "intent-before-effect" in failed, [c.text() for c in verdict.checks]
    assert (
        "mcp:bash" in failed["intent-before-effect"].got
        and "deploy" not in failed["intent-before-effect"].got
    )
    assert [e.get("mcpCall") is not None for e in verdict.evidence.ledger if e["effect"] == "deploy"] == [
        True,
        True,
    ]
