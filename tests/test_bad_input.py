"""Bad input is a usage error: exit 2, the file, line and field (or the option) named, no traceback,
nothing written outside the sandbox and no sandbox left behind.

Each row runs a real ``chaos`` process with its own temporary directory (where sandboxes live), so
what a row leaves behind is seen, and a traceback on stderr is seen.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from chaos.process.ptrace import default_signals
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

BASE = "prompt = 'x'\n\n[[turns]]\ntext = 'hi'\n"
SECTION8 = str(REPO / "scenarios" / "section8-read-replay.toml")
FRAMEWORK = str(REPO / "scenarios" / "frameworks" / "deploy-one-service.toml")
REFERENCE = (REPO / "targets" / "reference.toml").read_text()
FRAMEWORK = str(REPO / "scenarios" / "frameworks" / "deploy-one-service.toml")
LANGGRAPH = (REPO / "targets" / "langgraph.toml").read_text()


def _target(**changes: str) -> str:
    """The reference target spec with some top-level keys changed."""
    lines = REFERENCE.splitlines()
    for key, value in changes.items():
        lines = [f"{key} = {value}" if line.startswith(f"{key} =") else line for line in lines]
    return "\n".join(lines) + "\n"


# (id, command after "chaos", scenario file text or None, target file text or None, words the message has)
ROWS = [
    ("files-empty-key", ["run", "{s}"], BASE + '[files]\n"" = "x"\n', None, ["line 6", "files", "file name"]),
    ("files-dot", ["run", "{s}"], BASE + '[files]\n"." = "x"\n', None, ["line 6", "files..", "file name"]),
    ("files-nul", ["run", "{s}"], BASE + '[files]\n"a\\u0000b" = "x"\n', None, ["line 6", "NUL"]),
    (
        "files-file-and-folder",
        ["run", "{s}"],
        BASE + '[files]\n"a" = "x"\n"a/b" = "y"\n',
        None,
        ["files.a/b", "also be a folder"],
    ),
    (
        "files-seed-a-session-log",
        ["run", "{s}"],
        BASE + '[files]\n".tiny-agent/sessions/x.jsonl" = "{"\n',
        None,
        ["files..tiny-agent/sessions/x.jsonl", "pre-seeds a session log"],
    ),
    ("timeout-negative", ["run", "{s}"], "timeout = -5\n" + BASE, None, ["line 1", "timeout", "more than 0"]),
    ("timeout-zero", ["run", "{s}"], "timeout = 0\n" + BASE, None, ["line 1", "timeout", "more than 0"]),
    ("timeout-nan", ["run", "{s}"], "timeout = nan\n" + BASE, None, ["line 1", "timeout", "finite"]),
    ("option-timeout", ["run", SECTION8, "--timeout", "-1"], None, None, ["--timeout", "more than 0"]),
    (
        "delay-negative",
        ["run", "{s}"],
        BASE + "delay = -1\n",
        None,
        ["line 5", "turns[0].delay", "0 or more"],
    ),
    (
        "error-status",
        ["run", "{s}"],
        BASE + "error = 99999\n",
        None,
        ["line 5", "turns[0].error", "400 to 599"],
    ),
    ("option-nth", ["run", SECTION8, "--nth", "0"], None, None, ["--nth", "1 or more"]),
    ("option-jobs-zero", ["sweep", SECTION8, "-j", "0"], None, None, ["-j/--jobs", "1 or more"]),
    ("option-jobs-negative", ["sweep", SECTION8, "-j", "-3"], None, None, ["-j/--jobs"]),
    ("option-budget-sweep", ["sweep", SECTION8, "--budget", "-1"], None, None, ["--budget", "more than 0"]),
    ("option-budget-explore", ["explore", "--budget", "-1"], None, None, ["--budget", "more than 0"]),
    (
        "sweep-runs-no-case",
        ["sweep", SECTION8, "--budget", "0.000001", "--mine", "none"],
        None,
        None,
        ["no case ran", "budget"],
    ),
    (
        "where-wrong-type",
        ["run", "{s}"],
        BASE + "[crash]\nat = 'toolStarted'\nwhere = { toolName = ['read'] }\n",
        None,
        ["line 7", "crash.where.toolName", "no toolStarted fact can have"],
    ),
    (
        "where-no-such-field",
        ["run", "{s}"],
        BASE + "[crash]\nat = 'toolStarted'\nwhere = { noSuchField = 'x' }\n",
        None,
        ["line 7", "crash.where.noSuchField", "no toolStarted fact has a field"],
    ),
    (
        "sessions-match-nothing",
        ["run", SECTION8, "--target", "{t}"],
        None,
        _target(sessions='"logs/*.jsonl"'),
        ["sessions = 'logs/*.jsonl' matched nothing", "the agent wrote there: .tiny-agent/sessions/"],
    ),
    (
        "cwd-outside",
        ["run", SECTION8, "--target", "{t}"],
        None,
        _target(cwd='"{workspace}/../.."'),
        ["line 8", "cwd", "outside the sandbox workspace"],
    ),
    (
        "position-in-a-later-turn",
        ["run", "{s}"],
        BASE + "\n[[turns]]\ntext = 'a'\n\n[[turns]]\n# the third turn\ntext = 'b'\nfinish = 'bogus'\n",
        None,
        ["line 12", "turns[2].finish", "use one of"],
    ),
    (
        "target-key-misspelt",
        ["run", SECTION8, "--target", "{t}"],
        None,
        REFERENCE.replace("sessions =", "session ="),
        ["line 9", "session: unknown key", "did you mean 'sessions'?"],
    ),
    (
        "store-delay-too-long",
        ["run", "{s}"],
        "store_delay = 20\n" + BASE,
        None,
        ["line 1", "store_delay", "at most 10"],
    ),
    (
        "upgrade-without-resume",
        ["run", FRAMEWORK, "--target", "{t}"],
        None,
        LANGGRAPH + '\n[upgrade]\nenv = { X = "1" }\n',
        ["upgrade.resume", "required"],
    ),
    (
        "upgrade-unknown-placeholder",
        ["run", FRAMEWORK, "--target", "{t}"],
        None,
        LANGGRAPH + '\n[upgrade]\nresume = ["{python}", "{nope}"]\n',
        ["upgrade.resume", "{nope}"],
    ),
    (
        "store-kind-unknown",
        ["run", FRAMEWORK, "--target", "{t}"],
        None,
        LANGGRAPH.replace('kind = "langgraph"', 'kind = "nope"'),
        ["line 11", "store.kind", "'nope' is no store adapter here", "entry point"],
    ),
    (
        "store-boundary-on-a-session-log-agent",
        ["run", FRAMEWORK, "--target", "reference"],
        None,
        None,
        ["call-durable[tool=deploy]#1 is a commit of a framework's store", "no [store] table"],
    ),
    (
        "store-fault-not-offered",
        ["sweep", FRAMEWORK, "--target", "langgraph", "--fault", "torn"],
        None,
        None,
        ["--fault torn", "needs a session log", "kill, abort, power-loss"],
    ),
    (
        "target-check-no-such-target",
        ["target", "check", "no-such-target"],
        None,
        None,
        ["TARGET", "unknown target"],
    ),
    # Issue 36: a target that passes {request_deadline} declares it
    (
        "request-deadline-passed-but-not-declared",
        ["run", SECTION8, "--target", "{t}"],
        None,
        REFERENCE.replace("request_deadline = 20", ""),
        ["request_deadline: is missing", "passes {request_deadline}"],
    ),
    (
        "request-deadline-not-a-time",
        ["run", SECTION8, "--target", "{t}"],
        None,
        _target(request_deadline="0"),
        ["line 12", "request_deadline", "more than 0"],
    ),
    # Issue 38: an unknown name lists the close ones, or every one there is
    (
        "scenario-name-misspelt",
        ["run", "section8-read-replai"],
        None,
        None,
        ["no bundled scenario of that name", "did you mean section8-read-replay?"],
    ),
    (
        "scenario-name-unknown",
        ["run", "zzzz"],
        None,
        None,
        ["the bundled ones: abort-during-deploy,", "section8-read-replay"],
    ),
    (
        "framework-scenario-name-misspelt",
        ["sweep", "deploy-one-servic", "--target", "langgraph"],
        None,
        None,
        ["did you mean deploy-one-service"],
    ),
    (
        "target-name-misspelt",
        ["run", SECTION8, "--target", "refrence"],
        None,
        None,
        ["unknown target 'refrence'", "did you mean 'reference'?", "known targets:"],
    ),
    (
        "kill-at-a-tool-never-called",
        ["run", SECTION8, "--kill-at", "toolStarted[toolName=bash]"],
        None,
        None,
        ["section8-read-replay.toml", "can never be reached", "never calls 'bash' (it calls read)"],
    ),
    # Issue 35, case 7: each of these was a traceback (exit 3)
    (
        "files-name-too-long",
        ["run", "{s}"],
        BASE + f'[files]\n"{"a" * 300}" = "x"\n',
        None,
        ["line 6", "255 bytes"],
    ),
    (
        "files-path-too-long",
        ["run", "{s}"],
        BASE + f'[files]\n"{"/".join(["d" * 200] * 25)}" = "x"\n',
        None,
        ["line 6", "at most 3800 bytes"],
    ),
    (
        "toml-nested-too-deeply",
        ["run", "{s}"],
        "prompt = 'x'\nx = " + "[" * 5000 + "]" * 5000 + "\n",
        None,
        ["line 2", "nested too deeply"],
    ),
    (
        "delay-overflows",
        ["run", "{s}"],
        BASE + "delay = 1e10\n",
        None,
        ["line 5", "turns[0].delay", "at most 86400"],
    ),
    (
        "prompt-over-the-argument-cap",
        ["run", "{s}"],
        f"prompt = '{'x' * 200_000}'\n[[turns]]\ntext = 'hi'\n",
        None,
        ["line 1", "prompt", "131,072 bytes"],
    ),
    (
        "target-env-key-with-equals",
        ["run", SECTION8, "--target", "{t}"],
        None,
        REFERENCE.replace("[env]\n", '[env]\n"A=B" = "x"\n'),
        ["env.A=B", "'='"],
    ),
    (
        "target-env-value-with-nul",
        ["run", SECTION8, "--target", "{t}"],
        None,
        REFERENCE.replace("[env]\n", '[env]\nNULLY = "a\\u0000b"\n'),
        ["env.NULLY", "NUL"],
    ),
    ("results-is-a-file", ["run", SECTION8, "--results", "{t}"], None, "", ["--results", "is a file"]),
    (
        "junit-under-a-file",
        ["sweep", SECTION8, "--junit", "{t}/j.xml"],
        None,
        "",
        ["--junit", "is a file, not a folder"],
    ),
    (
        "baseline-under-a-file",
        ["sweep", SECTION8, "--write-baseline", "{t}/b.json"],
        None,
        "",
        ["--write-baseline", "is a file, not a folder"],
    ),
    # Issue 35, case 9: an occurrence the script cannot reach, or no number a scenario file takes
    (
        "kill-at-beyond-the-script",
        ["run", SECTION8, "--kill-at", "toolStarted#50"],
        None,
        None,
        ["can never be reached", "makes 1 such call"],
    ),
    (
        "kill-at-a-huge-occurrence",
        ["run", SECTION8, "--kill-at", "toolStarted#99999999999999999999"],
        None,
        None,
        ["--kill-at", "from 1 to 1,000,000"],
    ),
    (
        # the strike is built with its fault: a save is no place for a kill, and the error says what is wrong
        "kill-at-a-save-the-store-does-not-name",
        ["run", SECTION8, "--kill-at", "save[kind=writes]", "--fault", "overtaken"],
        None,
        None,
        ["session-log store names no save of kind 'writes'"],
    ),
    (
        # a statement inside an open transaction is seen on a database server's wire only, and only a fault
        # of that server's loses the transaction there (a kill leaves the state of the commit before it)
        "write-on-a-store-on-no-server",
        ["run", FRAMEWORK, "--target", "langgraph", "--kill-at", "write#1", "--fault", "postgres-crash"],
        None,
        None,
        ["write#1", "the langgraph store is no store on a server"],
    ),
    (
        "kill-inside-an-open-transaction",
        ["run", FRAMEWORK, "--target", "dbos-postgres", "--kill-at", "write#1"],
        None,
        None,
        ["kill does not land inside an open transaction", "postgres-crash and connection-lost do"],
    ),
    (
        "position-in-an-inline-table",
        ["run", "{s}"],
        "prompt = 'x'\n\n[[turns]]\ntext = 'a'\n\n[[turns]]\ntool_calls = [\n  { name = 'read', argz = {} },\n]\n",
        None,
        ["line 8", "turns[1].tool_calls[0].argz", "unknown key"],
    ),
]


@pytest.mark.parametrize(
    ("argv", "scenario", "target", "words"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_bad_input_is_exit_2_named_and_leaves_nothing_behind(
    argv: list[str], scenario: str | None, target: str | None, words: list[str], tmp_path: Path
) -> None:
    temp, results = tmp_path / "tmp", tmp_path / "results"
    temp.mkdir()
    files = {"{s}": tmp_path / "bad.toml", "{t}": tmp_path / "target.toml"}
    files["{s}"].write_text(scenario or "")
    files["{t}"].write_text(target or "")
    argv = [str(files.get(a, a)) if "{t}/" not in a else a.replace("{t}", str(files["{t}"])) for a in argv]
    if argv[0] in ("run", "sweep", "explore") and "--results" not in argv:
        argv += ["--results", str(results)]
    env = {**os.environ, "TMPDIR": str(temp)}
    done = subprocess.run(
        [sys.executable, "-m", "chaos", *argv], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, (word, done.stderr)
    if scenario is not None:
        assert str(files["{s}"]) in done.stderr
    assert not list(temp.iterdir()), "a sandbox (or a file of the agent) was left in the temporary directory"


def test_an_interrupted_run_exits_130_with_no_agent_left(tmp_path: Path) -> None:
    """Issue 13: SIGINT in the middle of a phase was a KeyboardInterrupt traceback."""
    scenario = tmp_path / "slow.toml"
    scenario.write_text("prompt = 'x'\n\n[[turns]]\ntext = 'hi'\ndelay = 30\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "chaos", "run", str(scenario), "--results", str(tmp_path / "r")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,  # chaos from a terminal: Ctrl-C is SIGINT, not ignored
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list((tmp_path / "r").glob("start.stdout")):
        time.sleep(0.05)
    time.sleep(1.0)  # the agent is waiting on its model request now
    agents = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    assert agents, "the agent was running"
    status = Path(f"/proc/{proc.pid}/status").read_text()  # how chaos held SIGINT, should it be lost
    masks = [line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, "\n".join([*masks, out, err])
    assert "Traceback" not in err and "interrupted (Ctrl-C)" in err and "()" not in err
    assert not [pid for pid in agents if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]


def test_a_sandbox_left_by_a_killed_chaos_is_removed_by_the_next(tmp_path: Path) -> None:
    """A chaos killed outright (SIGKILL) cannot clean up; the next one removes its sandboxes."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    code = "import os, time; from chaos.world.sandbox import make_sandbox; make_sandbox({}); print('made', flush=True); time.sleep(60)"
    victim = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    assert victim.stdout is not None and victim.stdout.readline().startswith("made")
    assert [p.name[:6] for p in temp.iterdir()] == ["chaos-"]
    victim.kill()
    victim.wait()
    subprocess.run(
        [sys.executable, "-m", "chaos", "reduce", "/dev/null"], env=env, capture_output=True, timeout=60
    )
    assert not list(temp.iterdir())
