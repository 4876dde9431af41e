"""What a hostile run found (issue 35): nothing escapes, nothing leaks, nothing is mixed up.

Each test names the numbered case of the issue it holds; each failed before the change that made it pass.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from chaos import api
from chaos.cli import main
from chaos.errors import Interrupted
from chaos.process.ptrace import default_signals
from chaos.scenario import load_scenario
from chaos.world import contain
from tests.conftest import REPO, answer_json, needs_node, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

SECTION8 = str(REPO / "scenarios" / "section8-read-replay.toml")
TARGETS = REPO / "tests" / "targets"
SECRET = "sk-planted-0123456789abcdef-secret"
REFERENCE = (REPO / "targets" / "reference.toml").read_text()


def _files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        if root.is_file():
            yield root
        for path in root.rglob("*") if root.is_dir() else []:
            if path.is_file():
                yield path


def _holding(secret: str, *roots: Path) -> list[str]:
    return [str(p) for p in _files(*roots) if secret.encode() in p.read_bytes()]


def _sleepers(seconds: str) -> list[int]:
    """Live ``sleep SECONDS`` processes (a marker duration each test picks)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if proc.info["cmdline"] == ["sleep", seconds]:
            found.append(proc.pid)
    return found


# 1. secrets


@needs_ptrace
@pytest.mark.parametrize("over", ["reference", "reference-mcp"])
def test_a_target_env_secret_is_in_no_file_a_sweep_or_a_mine_writes(over: str, tmp_path: Path) -> None:
    """Case 1: a --target-env value was written into fixtures' provenance, sweep.jsonl, report.html and
    the case files. The agent here also prints it to its stderr, and a bug switch makes failures (whose
    folders and reports are kept whole). With its tools on the world's MCP server too (the server's
    ledger lines, its stderr)."""
    if over == "reference-mcp" and importlib.util.find_spec("mcp") is None:
        pytest.skip("the MCP SDK is the mcp extra")
    target = tmp_path / "echoes.toml"
    reference = (REPO / "targets" / f"{over}.toml").read_text()
    start = (
        'start = ["bash", "-c", "echo key=$TINY_API_KEY >&2; exec \\"$0\\" -m chaos.bundled.targets.reference '
        '\\"$@\\"", "{python}", "{prompt}"]'
    )
    target.write_text(
        "\n".join(start if line.startswith("start =") else line for line in reference.splitlines())
    )
    results, mined, junit, baseline = tmp_path / "r", tmp_path / "fx", tmp_path / "j.xml", tmp_path / "b.json"
    argv = [
        "sweep",
        SECTION8,
        "--fault",
        "kill",
        "--target",
        str(target),
        "--results",
        str(results),
        "--mine",
        str(mined),
    ]
    argv += ["--junit", str(junit), "--write-baseline", str(baseline), "-j", "2"]
    argv += [
        "--target-env",
        f"TINY_API_KEY={SECRET}",
        "--target-env",
        "TINY_REFERENCE_BUG=stale-assistant-calls",
    ]
    assert main(argv) == 1
    assert list(_files(mined)), "fixtures were mined"
    assert any("key=${TINY_API_KEY}" in p.read_text() for p in results.rglob("start.stderr"))
    assert _holding(SECRET, results, mined, junit, baseline) == []
    provenance = json.loads(next((mined / "provenance").glob("*.json")).read_text())
    assert provenance["targetEnv"] == ["TINY_API_KEY", "TINY_REFERENCE_BUG"], "names, not values"
    reproduce = next(results.rglob("reproduce")).read_text()
    assert '--target-env TINY_API_KEY="$TINY_API_KEY"' in reproduce


@needs_ptrace
def test_a_credential_the_upstream_echoes_is_not_recorded(tmp_path: Path) -> None:
    """Case 1: chaos record kept an Authorization header an upstream echoed in its answer."""

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            said = f"you sent {self.headers.get('Authorization')}"
            body = {
                "id": "c1",
                "object": "chat.completion",
                "model": "m",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": said}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
            }
            answer_json(self, body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out, results = tmp_path / "recorded.toml", tmp_path / "results"
    try:
        argv = ["record", "hi", "--upstream", f"http://127.0.0.1:{server.server_port}/v1", "--out", str(out)]
        assert main([*argv, "--results", str(results), "--target-env", f"TINY_API_KEY={SECRET}"]) == 0
    finally:
        server.shutdown()
    assert (
        "you sent ${authorization}" in out.read_text()
        or "you sent Bearer ${authorization}" in out.read_text()
    )
    assert _holding(SECRET, out, results) == []


@needs_ptrace
def test_the_host_path_does_not_reach_a_fixture_through_tool_output(tmp_path: Path) -> None:
    """Case 1: the machine's PATH reached fixtures through a tool's output."""
    scenario = tmp_path / "path.toml"
    scenario.write_text(
        "prompt = 'Show the PATH.'\nrequires = ['tool:bash']\n"
        "[[turns]]\ntool_calls = [{ name = 'bash', arguments = { command = 'echo \"$PATH\"' } }]\n"
        "[[turns]]\ntext = 'done'\n"
    )
    mined = tmp_path / "fx"
    assert (
        main(
            [
                "sweep",
                str(scenario),
                "--fault",
                "kill",
                "--results",
                str(tmp_path / "r"),
                "--mine",
                str(mined),
            ]
        )
        == 0
    )
    host = os.environ["PATH"]
    assert _holding(host, tmp_path / "r"), "the tool printed the host's PATH into the agent's log"
    assert list((mined / "fixtures").glob("*.jsonl")), "fixtures were mined"
    assert _holding(host, mined) == []


# 2. containment


@needs_ptrace
def test_an_untraced_daemon_is_killed_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 2: a clone(CLONE_UNTRACED) + setsid child whose parent exits outlived the run, and chaos said
    no process outlived it."""
    if contain.unavailable():
        pytest.skip(f"no cgroup here: {contain.unavailable()}")
    before = set(_sleepers("300"))
    code = main(
        ["run", SECTION8, "--target", str(TARGETS / "untraced-daemon.toml"), "--results", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    assert "✗ no process outlived the run" in out
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    outlived = [pid for phase in verdict["phases"] for pid in phase["outlived"]]
    assert outlived, "the daemon is named"
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in outlived)
    assert set(_sleepers("300")) <= before, "no daemon is left"


def _configuration_wrapper(tmp_path: Path, sleep: str, wait: str = "") -> Path:
    """A target whose configuration command is a shell wrapper that leaves a child behind."""
    target = tmp_path / "wrapper.toml"
    command = (
        f'command = ["bash", "-c", "sleep {sleep} & {wait} exec \\"$0\\" -m chaos.bundled.targets.reference '
        '--configuration", "{python}"]'
    )
    target.write_text(
        "\n".join(command if line.startswith("command =") else line for line in REFERENCE.splitlines())
    )
    return target


@needs_ptrace
def test_the_configuration_commands_children_do_not_outlive_it(tmp_path: Path) -> None:
    """Case 2: a configuration command's children (a shell wrapper's background sleep) survived."""
    target = _configuration_wrapper(tmp_path, "311")
    assert main(["run", SECTION8, "--target", str(target), "--results", str(tmp_path / "r")]) == 0
    assert _sleepers("311") == []


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_the_configuration_commands_children_die_with_chaos(tmp_path: Path, how: signal.Signals) -> None:
    """Case 2: SIGTERM or SIGKILL of chaos while its configuration command runs left its children. After
    SIGKILL, the next chaos that starts removes what the killed one left (its cage)."""
    if contain.unavailable():
        pytest.skip(f"no cgroup here: {contain.unavailable()}")
    marker = "312" if how == signal.SIGTERM else "313"
    target = _configuration_wrapper(tmp_path, marker, "sleep 30;")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chaos",
            "run",
            SECTION8,
            "--target",
            str(target),
            "--results",
            str(tmp_path / "r"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not _sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers(marker), "the wrapper started its child"
    proc.send_signal(how)
    proc.communicate(timeout=60)
    if how == signal.SIGTERM:
        assert proc.returncode == 130
    else:  # nothing of the killed chaos could act: the next one cleans up
        assert main(["target", "check", "no-such-target"]) == 2  # any command: it starts by cleaning up
    deadline = time.monotonic() + 10
    while _sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers(marker) == []


@needs_node
@needs_ptrace
def test_a_phase_killed_at_its_timeout_is_no_process_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 8: after a phase was killed at its timeout, 'no process outlived the run' failed with the
    killed Node process's threads."""
    argv = ["run", str(REPO / "scenarios" / "provider-hang.toml"), "--target", "node-reference"]
    argv += ["--target-env", "NODE_AGENT_TIMEOUT=100", "--timeout", "4", "--results", str(tmp_path)]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 1, out
    assert "✗ every phase ended before its timeout" in out
    assert "✓ no process outlived the run" in out


# 3, 4. resume


def _sweep(results: Path, *extra: str) -> int:
    return main(["sweep", SECTION8, "--fault", "kill", "--results", str(results), "--mine", "none", *extra])


@needs_ptrace
def test_resume_refuses_other_settings_and_mends_a_torn_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cases 3 and 4: --resume with another --target-env or other scenarios reused the old verdicts; a
    torn last journal line was extended by the next verdict."""
    results = tmp_path / "r"
    assert _sweep(results, "--target-env", "TINY_REFERENCE_VARIANT=usage-first") == 0
    journal = results / "sweep.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    capsys.readouterr()
    assert _sweep(results, "--resume", "--target-env", "TINY_REFERENCE_VARIANT=blocking-lock") == 2
    assert "--target-env TINY_REFERENCE_VARIANT: differs" in capsys.readouterr().err
    other = str(REPO / "scenarios" / "torn-tail.toml")
    assert (
        main(["sweep", other, "--fault", "kill", "--results", str(results), "--mine", "none", "--resume"])
        == 2
    )
    err = capsys.readouterr().err
    assert "scenario torn-tail: in this sweep" in err and "scenario section8-read-replay" in err
    assert "blocking-lock" not in err and "usage-first" not in err, "a value is never shown"
    journal.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # a kill mid-append
    assert _sweep(results, "--resume", "--target-env", "TINY_REFERENCE_VARIANT=usage-first") == 0
    again = journal.read_bytes().splitlines()
    assert len(again) == len(lines)
    assert all(json.loads(line) for line in again), "every verdict is readable"


# 5. a full disk


def _small_disk(where: Path) -> Path:
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    (where / "filler").write_bytes(b"\0" * (2 * 1024 * 1024 - 64 * 1024))
    return where


@needs_ptrace
def test_a_full_sandbox_or_results_disk_is_chaos_trouble_not_a_finding(tmp_path: Path) -> None:
    """Case 5: a full TMPDIR became a finding against the agent (exit 1)."""
    disk = _small_disk(tmp_path / "small")
    try:
        env = {**os.environ, "TMPDIR": str(disk)}
        argv = [sys.executable, "-m", "chaos", "run", SECTION8, "--results", str(tmp_path / "r")]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 3, done.stdout + done.stderr
        assert "sandbox (TMPDIR) has no room" in done.stderr and "Traceback" not in done.stderr
        argv = [sys.executable, "-m", "chaos", "sweep", SECTION8, "--results", str(disk / "r")]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 3, done.stdout + done.stderr
        assert "--results" in done.stderr and "is full" in done.stderr
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@needs_ptrace
def test_a_read_only_results_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """Case 7: --results on a read-only file system failed after the cases ran."""
    disk = tmp_path / "ro"
    disk.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(disk)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.decode().strip()}")
    try:
        argv = [sys.executable, "-m", "chaos", "sweep", SECTION8, "--results", str(disk / "r")]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "read-only" in done.stderr and "chaos sweep:" not in done.stderr
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


# 6, 7. recheck


@needs_ptrace
def test_recheck_judges_a_copied_or_moved_results_folder_from_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 6: recheck followed absolute paths in sweep.jsonl: a moved folder was 'kept as stored', a
    copy silently judged the original."""
    first = tmp_path / "first"
    assert _sweep(first, "--target-env", "TINY_REFERENCE_BUG=stale-assistant-calls") == 1
    copy = tmp_path / "copy"
    shutil.copytree(first, copy)
    for verdict in first.rglob("prefix.jsonl"):  # the original's evidence changes: the copy must not see it
        verdict.write_bytes(b"")
    capsys.readouterr()
    assert main(["recheck", str(copy), "--out", str(tmp_path / "again")]) == 1
    out = capsys.readouterr().out
    assert "0 verdict(s) changed, 0 case(s) not judged again" in out
    moved = tmp_path / "moved"
    shutil.move(str(copy), moved)
    assert main(["recheck", str(moved), "--out", str(tmp_path / "again2")]) == 1
    assert "0 case(s) not judged again" in capsys.readouterr().out


@needs_ptrace
def test_recheck_of_a_truncated_case_file_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 7: a truncated verdict.json was a JSONDecodeError traceback."""
    assert main(["run", SECTION8, "--results", str(tmp_path / "r")]) == 0
    verdict = tmp_path / "r" / "verdict.json"
    verdict.write_bytes(verdict.read_bytes()[:300])
    capsys.readouterr()
    assert main(["recheck", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "verdict.json: line" in err and "run the case again" in err


def test_from_log_keeps_no_file_read_outside_the_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Case 7: a log whose read of ../../../etc/passwd succeeded made a scenario with that file (exit 3)."""
    log = (REPO / "results" / "fixtures" / "fixtures" / "full-workflow-clean.jsonl").read_bytes()
    hostile = log.replace(b"README.md", b"../../../etc/passwd")  # in the call, its arguments and its intent
    assert hostile != log
    (tmp_path / "hostile.jsonl").write_bytes(hostile)
    out = tmp_path / "replay.toml"
    assert main(["scenario", "from-log", str(tmp_path / "hostile.jsonl"), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "'../../../etc/passwd': not a workspace file" in said
    assert "../../../etc/passwd" not in load_scenario(out).files


# 10. the Python API, and what is written of an interrupted sweep


@needs_ptrace
def test_an_interrupted_api_sweep_says_so_and_the_next_run_runs(tmp_path: Path) -> None:
    """Case 10: after an interrupted api.sweep the next api.run raised Interrupted at once; the interrupted
    sweep's summary had no marker and notRun []."""
    seen: list[str] = []

    def interrupt(verdict: object) -> None:
        seen.append("case")
        raise KeyboardInterrupt

    done = api.sweep([SECTION8], "reference", results=tmp_path / "s", after=[interrupt])
    assert done.interrupted
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["notRun"], summary
    assert "interrupted" in (tmp_path / "s" / "report.html").read_text()
    try:
        verdict = api.run(SECTION8, "reference", results=tmp_path / "run")
    except Interrupted:
        pytest.fail("the abort of the interrupted sweep stopped the next run")
    assert verdict.ok


@needs_ptrace
def test_a_reused_run_folder_keeps_no_stale_phase_file(tmp_path: Path) -> None:
    """Case 10: a results folder reused by chaos run kept an earlier run's phase files."""
    folder = tmp_path / "r"
    assert main(["run", SECTION8, "--results", str(folder)]) == 0
    (folder / "resume-2.jsonl").write_bytes(b"stale")
    (folder / "notes.txt").write_text("mine")
    assert main(["run", SECTION8, "--results", str(folder)]) == 0
    assert not (folder / "resume-2.jsonl").exists()
    assert (folder / "notes.txt").read_text() == "mine", "a person's own file stays"


def test_ctrl_c_while_chaos_starts_is_exit_130_without_a_traceback(tmp_path: Path) -> None:
    """Case 10: Ctrl-C during start-up printed a traceback. SIGINT lands at several moments of start-up."""
    for delay in (0.3, 0.6, 1.0):
        proc = subprocess.Popen(
            [sys.executable, "-m", "chaos", "run", SECTION8, "--results", str(tmp_path / "r")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=default_signals,  # chaos from a terminal: Ctrl-C is SIGINT
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        if proc.returncode == 0:
            continue  # it had finished
        assert "Traceback" not in err, (delay, err)
        assert proc.returncode == 130, (delay, proc.returncode, err)


def test_ctrl_c_as_chaos_finishes_is_its_verdict_or_130_never_death_by_the_signal(tmp_path: Path) -> None:
    """A Ctrl-C landing while the interpreter shuts down (the verdict already said) killed chaos by
    SIGINT: status -2 and no message. SIGINT lands around the end of a measured run."""
    argv = [sys.executable, "-m", "chaos", "run", SECTION8, "--results", str(tmp_path / "r")]
    start = time.monotonic()
    assert subprocess.run(argv, capture_output=True, check=False).returncode == 0
    took = time.monotonic() - start
    statuses = []
    for share in (0.85, 0.9, 0.95, 0.98, 1.0, 1.02):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(took * share)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, (share, err)
        statuses.append(proc.returncode)
    assert set(statuses) <= {0, 130}, statuses


# Issue 54: a second hostile run. Each test failed on the main branch before the change that made it pass.


def _wrapped(tmp_path: Path, source: Path, key: str, prefix: str) -> Path:
    """``source`` with its ``key`` command run after a shell line ``prefix`` (which sees the command's
    arguments as "$@")."""
    import tomllib

    spec = tomllib.loads(source.read_text())
    command = ["bash", "-c", f'{prefix}; exec "$@"', "chaos-test", *spec[key]]
    lines = source.read_text().splitlines()
    target = tmp_path / source.name
    target.write_text(
        "\n".join(f"{key} = {json.dumps(command)}" if line.startswith(f"{key} =") else line for line in lines)
    )
    return target


@needs_ptrace
def test_5_a_line_the_agent_wrote_into_the_ledger_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Point 5: a non-JSON line in ``$CHAOS_LEDGER`` was exit 3, "a bug in chaos". It is the agent's
    doing: exit 2, naming the ledger's line."""
    target = _wrapped(
        tmp_path, REPO / "targets" / "reference.toml", "start", 'echo "not json" >> "$CHAOS_LEDGER"'
    )
    assert main(["run", SECTION8, "--target", str(target), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "$CHAOS_LEDGER), line 1" in err and "Traceback" not in err


@pytest.mark.skipif(importlib.util.find_spec("langgraph") is None, reason="the langgraph extra")
@pytest.mark.parametrize("forged", [False, True])
def test_8_an_approval_line_the_agent_writes_itself_approves_nothing(forged: bool, tmp_path: Path) -> None:
    """Point 8: a resume that approves by itself (the LangGraph driver's ``resume-approves``) and also
    writes an approval line of its own to ``$CHAOS_LEDGER`` passed (exit 0) where the honest version of the
    bug is exit 1. Only the approval chain's signed lines count now: both are the same one failure."""
    source = REPO / "targets" / "langgraph-approval.toml"
    # (braces as octal escapes: a target file's braces are placeholders)
    line = r"""printf '\173"effect": "approval", "phase": "approval", "time": %s\175\n' "$(date +%s.%N)" """
    target = _wrapped(tmp_path, source, "resume", f'{line} >> "$CHAOS_LEDGER"') if forged else source
    argv = [
        "run",
        str(REPO / "scenarios" / "frameworks" / "deploy-one-service.toml"),
        "--target",
        str(target),
    ]
    argv += ["--results", str(tmp_path / "r")]
    argv += ["--target-env", "LANGGRAPH_DRIVER_BUG=resume-approves"]
    assert main(argv) == 1
    verdict = json.loads(next((tmp_path / "r").rglob("verdict.json")).read_text())
    failed = {c["id"] for c in verdict["checks"] if not c["ok"]}
    assert failed == {"approval-first"}, failed


@needs_ptrace
def test_9_a_case_s_results_name_no_host_path(tmp_path: Path) -> None:
    """Point 9: ``verdict.json`` held the interpreter's path and the absolute scenario path, ``reproduce``
    the absolute results folder. They are relative to the case's folder now (the reproduce line runs from
    there), the interpreter is ``{python}``, and the line still reruns the case."""
    results = tmp_path / "results"
    assert main(["run", SECTION8, "--results", str(results)]) == 0
    hosts = [str(tmp_path), str(REPO), sys.executable, os.path.realpath(sys.executable)]
    for name in ("verdict.json", "reproduce"):
        text = (results / name).read_text()
        assert not [h for h in hosts if h in text], (name, text)
    line = (results / "reproduce").read_text().split()
    assert line[:3] == ["chaos", "run", "./scenario.toml"]
    previous = os.getcwd()
    try:
        os.chdir(results)
        assert main([*line[1:], "--results", str(tmp_path / "again")]) == 0
    finally:
        os.chdir(previous)


@pytest.mark.skipif(importlib.util.find_spec("langgraph") is None, reason="the langgraph extra")
def test_a_framework_agent_that_leaves_a_daemon_fails_processes(tmp_path: Path) -> None:
    """Issue 48: ``processes`` and ``sandbox`` read only what every phase records, yet were judged on
    session-log agents alone: a framework agent was never checked for a process that outlived it. A
    LangGraph agent whose resume leaves a daemon (in a session of its own, its parent gone) fails it."""
    if contain.unavailable():
        pytest.skip(f"no cgroup here: {contain.unavailable()}")
    before = set(_sleepers("317"))
    target = _wrapped(tmp_path, REPO / "targets" / "langgraph.toml", "resume", "(setsid sleep 317 &)")
    scenario = str(REPO / "scenarios" / "frameworks" / "deploy-one-service.toml")
    assert main(["run", scenario, "--target", str(target), "--results", str(tmp_path / "r")]) == 1
    verdict = json.loads((tmp_path / "r" / "verdict.json").read_text())
    judged = {c["id"]: c["ok"] for c in verdict["checks"]}
    assert judged["processes"] is False and judged["sandbox"] is True and judged["timeout"] is True
    assert [c["id"] for c in verdict["checks"] if not c["ok"]] == ["processes"]
    assert set(_sleepers("317")) <= before, "no daemon is left"
