"""A run that parks for approval, approved later by a separate command: what a person does with an app
whose run stops, saves itself and exits waiting for approval (``[exit] parked``), and is approved by
another command (``approve``) in a process of its own.

    python -m chaos.process.approval PARKED AGENT-ARGV... --then-approve-- APPROVE-ARGV...

runs the agent's command (a start or a resume) and, each time a process exits ``PARKED``, the approve
command (the effect ledger gets a line saying the approval was given then, signed with the key chaos
gave this process in ``$CHAOS_APPROVAL_KEY``, which no process it starts inherits), and exits as the
last of them did. chaos runs a phase of such a target as this one process: the
approvals are part of the run a crash lands in (its commits and effects are counted across them), and
a kill ends the whole tree, the approval with it. Signals chaos sends (an abort) go on to the process
running. At most ``APPROVALS`` approvals: a run that parks again after them exits parked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from chaos.ledger import APPROVAL, APPROVAL_KEY, record, signature

THEN = "--then-approve--"
APPROVALS = 5


def main(argv: list[str]) -> int:
    parked, rest = int(argv[0]), argv[1:]
    key = os.environ.pop(APPROVAL_KEY, "")  # the chain's alone: the agent and the approval never see it
    split = rest.index(THEN)
    agent, approve = rest[:split], rest[split + 1 :]
    running: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: object) -> None:
        for process in running:
            process.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    command, code = agent, parked
    for _ in range(APPROVALS + 1):
        running[:] = [subprocess.Popen(command)]
        code = running[0].wait()
        if code != parked:
            return code
        command = approve
        if os.environ.get("CHAOS_LEDGER"):  # the approval is given now: what waited for it may run
            given = time.time()
            line = {"effect": APPROVAL, "phase": APPROVAL, "time": given, "signature": signature(key, given)}
            record(os.environ["CHAOS_LEDGER"], line)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
