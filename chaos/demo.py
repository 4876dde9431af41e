"""``chaos demo``: the contract's section-8 crash against the bundled reference agent.

A safe ``read`` has its ``toolStarted`` on disk; the agent gets a real SIGKILL;
resume replays the read, the model answers a plain ``stop``, and the final log
must still reduce. With ``--target-env TINY_REFERENCE_BUG=stale-assistant-calls``
the same run exposes the bug the contract describes (exit 1).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from chaos.contract import reduce
from chaos.kill import kill_tree
from chaos.run import finish, start
from chaos.watch import Boundary, Watch
from chaos.world import ModelServer, Turn, WorkspaceFile, make_sandbox

REPO = Path(__file__).resolve().parent.parent
SCRIPT = [
    Turn(tool_calls=[{"name": "read", "arguments": {"path": "README.md"}}]),
    Turn(text="It says hello."),
]
BOUNDARY = Boundary("toolStarted", {"toolName": "read"})


def run_demo(target_env: dict[str, str], results: Path, timeout: float = 60.0) -> int:
    box = make_sandbox({"README.md": WorkspaceFile("hello\n")})
    log_glob = str(box.workspace / ".tiny-agent" / "sessions" / "*.jsonl")
    checks: list[tuple[str, bool, str]] = []
    try:
        with ModelServer(SCRIPT) as server:
            declared = {
                "TINY_BASE_URL": server.url,
                "TINY_MODEL": "scripted/model",
                "TINY_AGENT_ENVIRONMENT_IDENTITY": "chaos-demo",
                "PYTHONPATH": str(REPO),
                **target_env,
            }
            env = box.environment(declared, [], log_glob)
            agent = [sys.executable, "-m", "targets.reference"]
            proc = start([*agent, "what does the README say?"], box.workspace, env)
            watch = Watch(log_glob, BOUNDARY)
            landed = watch.wait(lambda: proc.poll() is None, timeout)
            report = kill_tree(proc.pid)
            proc.communicate()
            if not landed or watch.path is None:
                print(f"chaos demo: the agent never reached {BOUNDARY}", file=sys.stderr)
                return 2
            prefix = watch.path.read_bytes()
            results.mkdir(parents=True, exist_ok=True)
            (results / "prefix.jsonl").write_bytes(prefix)
            late = watch.overshoot(prefix)
            where = "exactly at the boundary" if late == 0 else f"{late} fact(s) after it (polling kill)"
            print(f"killed at {BOUNDARY}: landed {where}; SIGKILL to {len(report.killed)} process(es)")
            session_id = watch.path.stem.split("_", 1)[1]
            started = time.monotonic()
            resumed = finish(start([*agent, "--session", session_id], box.workspace, env), timeout)
            final = watch.path.read_bytes()
            shutil.copyfile(watch.path, results / "final.jsonl")
            print(f"resume exited {resumed.returncode} after {time.monotonic() - started:.2f}s")
            reduced = reduce(final)
            error = reduced.get("error")
            checks += [
                ("prefix reduces", reduce(prefix)["ok"], ""),
                ("no process survived the kill", not report.survivors, str(report.survivors)),
                ("resume exit status is completed (0)", resumed.returncode == 0, f"got {resumed.returncode}"),
                (
                    "final log reduces",
                    reduced["ok"],
                    f"{error['code']} at line {error['line']}" if error else "",
                ),
                ("committed prefix is a byte prefix of the final log", final.startswith(prefix), ""),
                (
                    "final state is idle",
                    reduced["ok"] and reduced["state"]["operation"] == {"kind": "idle"},
                    "",
                ),
            ]
    finally:
        box.remove()
    for name, ok, detail in checks:
        print(f"  {'✓' if ok else '✗'} {name}" + (f": {detail}" if detail and not ok else ""))
    print(f"prefix and final log kept in {results}")
    return 0 if all(ok for _, ok, _ in checks) else 1
