"""The processes of the run: each ended in time, left nothing running, wrote nothing beside the workspace.

What ``sandbox`` watches is the sandbox's own folder (the workspace's siblings: the ledger, the gates, the
agent's HOME); a write elsewhere on the machine (through a symlink, a ``..`` path, an absolute path) is not
seen, and the check says only what it watched."""

from __future__ import annotations

from chaos.check.base import Check
from chaos.cycle.evidence import Evidence
from chaos.scenario.target import phase_limit

NEEDS = "world"  # what every phase records, whatever the agent keeps its state in (``chaos.check.check_all``)
CATALOG = {
    "timeout": "every phase ended before its timeout",
    "processes": "no process outlived the run",
    "sandbox": "nothing was written beside the workspace, outside the sandbox's own files",
}


def judge(ev: Evidence) -> list[Check]:
    hung = [f"{p.name} after {p.process.seconds:.1f}s" for p in ev.phases if p.process.timed_out]
    left = [
        f"{p.name}: {pid}"
        for p in ev.phases
        for pid in (*p.process.reaped.outlived, *p.process.reaped.survivors)
    ]
    strays = [f"{p.name}: {name}" for p in ev.phases for name in p.seen.strays]
    return [
        Check(
            "timeout",
            "every phase ended before its timeout",
            not hung,
            f"within {phase_limit(ev.scenario, ev.target):g}s",
            f"killed at the timeout: {', '.join(hung)}" if hung else "ok",
        ),
        Check("processes", "no process outlived the run", not left, "none", ", ".join(left) or "none"),
        Check(
            "sandbox",
            "nothing was written beside the workspace, in the sandbox",
            not strays,
            "only the workspace and the agent's HOME",
            ("beside the workspace: " + ", ".join(strays)) if strays else "none",
        ),
    ]
