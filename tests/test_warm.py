"""Warm starts: a fork of a warm interpreter is the process a cold start would be, is killed as exactly,
gives the same verdict and facts, and nothing of it outlives chaos."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from chaos.case.run import run_case
from chaos.case.starts import Starts, _difference, facts_of
from chaos.process.ptrace import default_signals
from chaos.process.warm import Command, WarmStarts, command_of
from chaos.scenario import load_scenario
from chaos.scenario.model import Boundary, Strike
from chaos.scenario.target import find_target, load_target
from chaos.store import Save
from chaos.world.contain import start_alone
from tests.conftest import REPO, needs_ptrace

PY = sys.executable
ENV = {"PATH": os.environ.get("PATH", "")}


@pytest.mark.parametrize(
    ("argv", "kind", "what", "options", "args"),
    [
        ([PY, "-m", "pkg.mod", "a"], "module", "pkg.mod", (), ("a",)),
        ([PY, "-u", "-B", "script.py", "--x"], "script", "script.py", ("-u", "-B"), ("--x",)),
        ([PY, "-X", "utf8", "-c", "print(1)", "z"], "code", "print(1)", ("-X", "utf8"), ("z",)),
        ([PY, "-Wignore", "-m", "m"], "module", "m", ("-Wignore",), ()),
    ],
)
def test_a_python_command_line_is_read_as_a_warm_start_runs_it(
    argv: list[str], kind: str, what: str, options: tuple[str, ...], args: tuple[str, ...]
) -> None:
    command = command_of(argv, ENV)
    assert isinstance(command, Command)
    assert (command.kind, command.what, command.options, command.args) == (kind, what, options, args)
    assert command.unbuffered == ("-u" in options)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["sh", "-c", "true"], "is not a Python interpreter"),
        ([PY, "-i", "x.py"], "the interpreter option -i"),
        ([PY, "-u"], "runs no module, script or code"),
        (["no-such-python3"], "is not a Python interpreter"),
    ],
)
def test_what_a_fork_cannot_run_is_said(argv: list[str], said: str) -> None:
    why = command_of(argv, ENV)
    assert isinstance(why, str) and said in why


PROBE = textwrap.dedent(
    """
    import json, os, signal, sys, time
    environ = open("/proc/self/environ", "rb").read().split(b"\\0")
    print(json.dumps({
        "tz": time.strftime("%Z", time.localtime(0)), "offset": time.localtime(0).tm_gmtoff,
        "home": os.path.expanduser("~"),
        "proc_environ": sorted(e.decode() for e in environ if e) if os.geteuid() == 0 else None,
        "argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "name": __name__,
        "file": globals().get("__file__"), "env": os.environ.get("PROBE_VALUE"),
        "keys": sorted(os.environ),
        "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
        "leader": os.getsid(0) == os.getpid(), "stdin": os.readlink("/proc/self/fd/0"),
        "sigint": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
        "sigchld": signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL,
    }))
    print("to stderr", file=sys.stderr)
    sys.exit(7)
    """
)


def test_a_warm_process_is_what_a_cold_start_of_its_command_line_is(tmp_path: Path) -> None:
    """Its argv, working directory, sys.path, __main__, environment (and nothing of the server's),
    descriptors, session, stdin, signal handlers, output and exit status: the same as a new process. Issue 54,
    point 7: with a time zone and a HOME of the phase's own, the fork saw the server's (UTC, and the first
    case's sandbox, in ``/proc/self/environ`` too); as root, ``/proc/self/environ`` is the phase's too."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    work = tmp_path / "work"
    work.mkdir()
    argv = [PY, str(script), "one", "two"]
    env = {"PATH": ENV["PATH"], "PROBE_VALUE": "v1", "TZ": "Asia/Tokyo", "HOME": str(tmp_path / "home")}
    with (tmp_path / "cold.out").open("wb") as out, (tmp_path / "cold.err").open("wb") as err:
        code = start_alone(argv, work, env, out, err, default_signals).wait()  # as chaos starts one cold
    starts = WarmStarts()
    try:
        results = []
        # the server starts for another case (its HOME and TZ): the phase must see none of them
        assert starts.launch(argv, {**env, "TZ": "UTC", "HOME": str(tmp_path / "other")}) is not None
        for round_ in range(2):  # the first teaches the server its imports; the second forks after them
            launch = starts.launch(argv, env)
            assert launch is not None
            child = launch.spawn(
                work, env, tmp_path / f"warm{round_}.out", tmp_path / f"warm{round_}.err", "", ""
            )
            results.append(child.wait())
            child.finish()
    finally:
        starts.close()
    cold = json.loads((tmp_path / "cold.out").read_text())
    cold_environ = cold.pop("proc_environ")
    for round_, warm_code in enumerate(results):
        warm = json.loads((tmp_path / f"warm{round_}.out").read_text())
        # /proc/self/environ is the phase's where the kernel lets a process set it (CAP_SYS_RESOURCE);
        # elsewhere the server's, which holds no case's value
        warm_environ = warm.pop("proc_environ")
        assert warm_environ == cold_environ or not any(str(tmp_path) in e for e in warm_environ or [])
        assert (warm_code, warm) == (code, cold)
        assert (tmp_path / f"warm{round_}.err").read_text() == (tmp_path / "cold.err").read_text()
    assert cold["fds"] == [0, 1, 2, 3, 4] or cold["fds"] == [0, 1, 2, 3]  # (listdir's, and environ's if open)
    assert cold["leader"] and cold["stdin"] == "/dev/null"
    assert cold["tz"] == "JST" and cold["home"] == str(tmp_path / "home")


LAZY = """import os, sys

def call_model():
    import fractions, xml.dom.minidom  # the SDK, imported where it is first needed

call_model()
if sys.argv[1] == "hang":
    open("imported", "w").close()
    import time
    time.sleep(60)
os._exit(0)
"""


def test_a_run_that_imports_lazily_and_ends_with_os_exit_teaches_what_it_loaded(tmp_path: Path) -> None:
    """Issue 55, point 3: an agent that imports its SDK inside its model call and ends with ``os._exit``
    taught the server nothing (what it imported was read at a clean interpreter exit): 0 modules imported
    once, every phase paid the SDK's import. What a learning run loads is learned as it loads it; a run a
    crash cut short (SIGKILL) teaches nothing, and the next run teaches it all."""
    script = tmp_path / "lazy.py"
    script.write_text(LAZY)
    starts = WarmStarts()
    try:
        for how in ("hang", "exit"):
            launch = starts.launch([PY, str(script), how], ENV)
            assert launch is not None
            child = launch.spawn(tmp_path, ENV, tmp_path / f"{how}.out", tmp_path / f"{how}.err", "", "")
            if how == "hang":
                deadline = time.monotonic() + 30
                while not (tmp_path / "imported").exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                os.kill(child.pid, signal.SIGKILL)
                assert child.wait() == -signal.SIGKILL
                child.finish()
                assert starts.preloaded == 0  # a crash's partial imports are not what the agent loads
            else:
                assert child.wait() == 0
                child.finish()
        assert starts.preloaded >= 3  # fractions, xml.dom.minidom and what they import
    finally:
        starts.close()


def test_the_same_case_cold_and_warm_gives_the_same_verdict_and_facts(tmp_path: Path) -> None:
    """Crashed at a durable boundary, resumed and resumed again: warm phases are killed where cold ones
    are (by the tracer where it runs), and every check and fact agrees; the server learned its imports."""
    scenario = load_scenario(REPO / "scenarios" / "full-workflow.toml").with_crash(
        Strike(Boundary.parse("toolStarted"))
    )
    target = load_target(find_target("reference"))
    cold = run_case(scenario, target, folder=tmp_path / "cold")
    starts = WarmStarts()
    try:
        warm = [run_case(scenario, target, folder=tmp_path / f"warm{n}", warm=starts) for n in range(2)]
        learned = starts.preloaded
    finally:
        starts.close()
    assert cold.ok and all(v.ok for v in warm)
    assert all(p.process.warm for v in warm for p in v.phases) and not any(
        p.process.warm for p in cold.phases
    )
    assert [facts_of(v) for v in warm] == [facts_of(cold)] * 2
    assert [(p.landing.reached, p.landing.exact, p.landing.mechanism) for p in warm[1].phases] == [
        (p.landing.reached, p.landing.exact, p.landing.mechanism) for p in cold.phases
    ]
    assert learned > 0


def test_without_the_tracer_a_warm_start_is_waited_for_through_its_watcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ptrace is unavailable the exit status comes from the server's watcher, and a crash in flight
    (a held model request) still lands."""
    monkeypatch.setenv("CHAOS_NO_PTRACE", "1")
    scenario = load_scenario(REPO / "scenarios" / "full-workflow.toml").with_crash(
        Strike(Boundary.parse("model-request#2"))
    )
    starts = WarmStarts()
    try:
        verdict = run_case(scenario, load_target(find_target("reference")), folder=tmp_path, warm=starts)
    finally:
        starts.close()
    assert verdict.ok, [c.text() for c in verdict.failed]
    assert [p.process.warm for p in verdict.phases] == [True] * len(verdict.phases)
    assert verdict.phases[0].process.killed and verdict.phases[0].process.returncode == -signal.SIGKILL
    assert verdict.phases[-1].process.returncode == 0


def test_a_difference_between_cold_and_warm_is_named_and_keeps_the_target_cold() -> None:
    cold = ["start: outcome None, exit -9", "resume-1: outcome completed, exit 0", "failed checks: none"]
    assert _difference(cold, cold) is None
    warm = [cold[0], "resume-1: outcome failed, exit 4", cold[2]]
    assert _difference(cold, warm) == (
        "cold 'resume-1: outcome completed, exit 0', warm 'resume-1: outcome failed, exit 4'"
    )
    assert _difference(cold, cold[:1] + cold[2:]) is not None


def test_a_target_file_turns_warm_starts_off_and_a_sweep_says_so(tmp_path: Path) -> None:
    spec = tmp_path / "cold.toml"
    spec.write_text("warm = false\n" + (REPO / "targets" / "reference.toml").read_text())
    target = load_target(spec)
    assert not target.warm and load_target(find_target("reference")).warm
    scenario = load_scenario(REPO / "scenarios" / "full-workflow.toml")
    cold = run_case(scenario, target, folder=tmp_path / "case")
    starts = Starts()
    try:
        choice = starts.choose(
            target, cold, lambda pool, where: run_case(scenario, target, folder=where), tmp_path
        )
    finally:
        starts.close()
    assert choice is not None and not choice.warm and "warm = false" in choice.why
    assert starts.of(target) is None


@needs_ptrace
def test_a_sweep_goes_warm_once_cold_and_warm_agree(tmp_path: Path) -> None:
    from chaos import api

    result = api.sweep(
        [REPO / "scenarios" / "full-workflow.toml"],
        target="reference",
        results=tmp_path,
        jobs=2,
        faults=("kill",),
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert result.summary.ok
    assert (
        summary["starts"]
        and "reference: warm starts (a cold and a warm run of full-workflow agreed" in (summary["starts"][0])
    )
    journal = [json.loads(line) for line in (tmp_path / "sweep.jsonl").read_text().splitlines()]
    warm = [p["warm"] for case in journal for p in case["phases"]]
    assert any(warm) and summary["exact"] == summary["reached"] > 0


def test_no_warm_interpreter_outlives_the_chaos_that_started_it(tmp_path: Path) -> None:
    """chaos killed outright: its servers see their socket close and exit."""
    code = textwrap.dedent(
        f"""
        import os, sys, time
        from pathlib import Path
        from chaos.process.warm import WarmStarts
        starts = WarmStarts()
        launch = starts.launch([sys.executable, "-c", "pass"], {{"PATH": os.environ["PATH"]}})
        child = launch.spawn(Path({str(tmp_path)!r}), {{}}, Path({str(tmp_path / "o")!r}), Path({str(tmp_path / "e")!r}), "", "")
        child.wait()
        print(launch.server.proc.pid, flush=True)
        time.sleep(60)
        """
    )
    chaos = subprocess.Popen([PY, "-c", code], stdout=subprocess.PIPE, cwd=REPO)
    assert chaos.stdout is not None
    server = int(chaos.stdout.readline())
    assert psutil.pid_exists(server)
    chaos.kill()
    chaos.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if psutil.Process(server).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the warm interpreter {server} outlived the chaos that started it")


def test_a_phase_whose_warm_start_fails_starts_cold_and_says_why(tmp_path: Path) -> None:
    """The warm interpreter died (chaos's own helper, not the agent): each phase starts cold, the case is
    judged as a cold one would be, and each phase says why it is cold."""
    scenario = load_scenario(REPO / "scenarios" / "full-workflow.toml").with_crash(
        Strike(Boundary.parse("toolStarted"))
    )
    target = load_target(find_target("reference"))
    starts = WarmStarts()
    try:
        assert all(
            p.process.warm for p in run_case(scenario, target, folder=tmp_path / "warm", warm=starts).phases
        )
        servers = [p for p in psutil.Process().children() if "socket.recv_fds" in " ".join(p.cmdline())]
        assert servers
        for server in servers:
            server.kill()
            server.wait()
        verdict = run_case(scenario, target, folder=tmp_path / "cold", warm=starts)
    finally:
        starts.close()
    assert verdict.ok, [c.text() for c in verdict.failed]
    assert not any(p.process.warm for p in verdict.phases)
    assert all("the warm interpreter is gone" in (p.process.cold_because or "") for p in verdict.phases)


def test_the_choice_of_warm_starts_compares_the_environment_a_fork_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 54, point 7: a fork kept the server's time zone and HOME, and the cold/warm comparison (the
    agent's verdict and facts) did not notice. It now also runs a probe cold and as a fork of a server
    started for another case: a fork that keeps anything of the server's is told apart."""
    from chaos.process import warm

    starts = WarmStarts()
    try:
        assert warm.fork_difference(starts, PY, (), tmp_path / "sound") is None
    finally:
        starts.close()
    monkeypatch.setattr(warm, "SOURCE", warm.SOURCE.replace("time.tzset()", "pass"))
    starts = WarmStarts()
    try:
        differs = warm.fork_difference(starts, PY, (), tmp_path / "unsound")
    finally:
        starts.close()
    assert differs is not None and "JST" in differs


SAVER = """
import asyncio, threading

class Saver:
    def put(self, config, data):
        with open("made", "a") as out:
            out.write(f"{data}\\n")

    async def aput(self, config, data):
        self.put(config, data)
"""
SAVING = """
import asyncio, os, sys, threading
sys.path.insert(0, ".")
from saver import Saver

saver = Saver()
saver.put({"configurable": {"checkpoint_id": "one"}}, "first")
held = threading.Thread(target=saver.put, args=({"configurable": {"checkpoint_id": "two"}}, "held"))
held.start()
while not os.path.exists("$GATES/save.put#2.waiting"):  # (held: its line written, then marked waiting)
    pass
saver.put({"configurable": {"checkpoint_id": "two"}}, "after")  # begins while #2 is held: waits behind it
asyncio.run(saver.aput(["not a config"], "async"))
held.join()
"""


def test_a_save_the_store_names_is_counted_held_and_nothing_overtakes_it(tmp_path: Path) -> None:
    """The bootstrap wraps the calls a store adapter names where their module is loaded (``chaos.store.Save``):
    each save is written to the gate directory as it begins, with its kind, number and the record its
    first argument names (none where it names none: a key chaos cannot read is empty), and one chaos holds
    waits in the interpreter, with every save that begins after it waiting behind it, until its gate
    opens (a thread's call and an asyncio task's alike)."""
    gates = tmp_path / "gates"
    gates.mkdir()
    (tmp_path / "saver.py").write_text(SAVER)
    script = tmp_path / "saving.py"
    script.write_text(SAVING.replace("$GATES", str(gates)))
    env = {**ENV, "CHAOS_GATE_DIR": str(gates), "CHAOS_GATES": "save.put#2"}
    saves = tuple(
        Save(f"saver:Saver.{m}", m, ("configurable", "checkpoint_id")).request() for m in ("put", "aput")
    )
    starts = WarmStarts()
    try:
        launch = starts.launch([PY, str(script)], env, saves)
        assert launch is not None
        child = launch.spawn(tmp_path, env, tmp_path / "out", tmp_path / "err", "", "")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            (gates / "saves").exists() and "put 3" in (gates / "saves").read_text(errors="replace")
        ):
            time.sleep(0.02)
        time.sleep(0.3)
        assert (gates / "save.put#2.waiting").exists()
        assert (tmp_path / "made").read_text() == "first\n"  # neither the held save nor the one behind it
        (gates / "save.put#2.release").touch()
        assert child.wait() == 0, (tmp_path / "err").read_text()
        child.finish()
    finally:
        starts.close()
    begun = (gates / "saves").read_text().splitlines()
    assert begun == ["put 1 one", "put 2 two", "put 3 two", "aput 1 ", "put 4 "]  # (aput calls put)
    made = (tmp_path / "made").read_text().splitlines()
    assert made[0] == "first" and sorted(made[1:]) == ["after", "async", "held"], made


TOOLS = """
import time

class Context:
    def __init__(self, id):
        self.id = id

class Tools:
    def call(self, args, ctx):  # (a tool's call: its key is an attribute of its second argument)
        time.sleep(0.05)
        with open("made", "a") as out:
            out.write(ctx.id + "\\n")
"""
CALLING = """
import sys, threading, time
sys.path.insert(0, ".")
from tools import Context, Tools

calls = [threading.Thread(target=Tools().call, args=({}, Context(key))) for key in ("one", "two", "three")]
for call in calls:
    call.start()
    time.sleep(0.02)
for call in calls:
    call.join()
"""


def _made(folder: Path) -> list[str]:
    return (folder / "made").read_text().split() if (folder / "made").exists() else []


@pytest.mark.parametrize("first", ["", "three"])
def test_parallel_work_held_lets_the_rest_go_and_the_one_named_begins_first(
    tmp_path: Path, first: str
) -> None:
    """Parallel work that takes its place as it begins (``Save.passes``: a DBOS step numbered as it starts)
    is held alone, the rest going on; where the gate directory names one to begin first (the held one, in
    the recovery after the crash), the rest of its kind wait until it has run. Its key is read from the
    argument the save names, by attribute."""
    gates = tmp_path / "gates"
    gates.mkdir()
    (tmp_path / "tools.py").write_text(TOOLS)
    script = tmp_path / "calling.py"
    script.write_text(CALLING)
    if first:
        (gates / "first").write_text(f"call {first}")
    env = {**ENV, "CHAOS_GATE_DIR": str(gates), "CHAOS_GATES": "" if first else "save.call#1"}
    saves = (Save("tools:Tools.call", "call", ("id",), arg=1, passes=True).request(),)
    starts = WarmStarts()
    try:
        launch = starts.launch([PY, str(script)], env, saves)
        assert launch is not None
        child = launch.spawn(tmp_path, env, tmp_path / "out", tmp_path / "err", "", "")
        if not first:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(_made(tmp_path)) < 2:
                time.sleep(0.02)
            assert (gates / "save.call#1.waiting").exists()
            assert sorted(_made(tmp_path)) == ["three", "two"]  # (the held call alone waits)
            (gates / "save.call#1.release").touch()
        assert child.wait() == 0, (tmp_path / "err").read_text()
        child.finish()
    finally:
        starts.close()
    assert (gates / "saves").read_text().splitlines() == ["call 1 one", "call 2 two", "call 3 three"]
    made = _made(tmp_path)
    assert made[0 if first else 2] == ("three" if first else "one"), made
    assert (gates / "first.done").exists() == bool(first)
