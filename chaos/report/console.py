"""What chaos prints on a terminal: one case's report, and the pause prompt of ``chaos run --pause``.

Every line is made printable before it is coloured or printed: check texts,
case names and paths can all carry text an agent or a scenario wrote.
"""

from __future__ import annotations

import sys

from chaos.case.verdict import Verdict, landing
from chaos.cycle.drive import Paused, said_last
from chaos.report.show import render as render_timeline
from chaos.report.show import timeline
from chaos.report.text import printable
from chaos.triage.failure import failure_of


def render(verdict: Verdict) -> str:
    """The short terminal report: where the kill landed, what recovery did, each check."""
    lines = [f"chaos run {verdict.scenario.path or verdict.scenario.name} against {verdict.target.name}"]
    for phase in verdict.phases:
        if phase.landing.continued:
            lines.append(f"  {phase.name}: paused at {phase.crash}, then continued without a crash")
        elif phase.crash:
            lines.append(
                f"  {phase.name}: crash at {phase.crash}: {landing(phase)}"
                + (f" ({phase.landing.mechanism})" if phase.landing.reached else "")
                + f", log {len(phase.kept.log_after)} bytes"
                + (
                    f", {len(phase.process.reaped.escaped_group)} process(es) had left its process group"
                    if phase.process.reaped.escaped_group
                    else ""
                )
            )
        else:
            appended = len(phase.kept.log_after) - phase.kept.committed_before
            ended = (
                f"{phase.process.outcome or 'ended'} (exit {phase.process.returncode})"
                if not phase.process.timed_out
                else "killed at the timeout"
            )
            lines.append(
                f"  {phase.name}: {ended} in {phase.process.seconds:.2f}s, appended {appended} bytes"
            )
    for check in verdict.checks:
        lines.append(f"  {check.mark} {check.text()}")
    failed = verdict.failed
    failure = failure_of(verdict)
    if failure is not None:
        lines.append(f"FINDING: {len(failed)} of {len(verdict.checks)} checks failed")
        lines.append(f"  failure [{failure.key}]: {failure.label}")
        for phase in verdict.phases:  # what a process that failed said: the cause is often there
            said = said_last(verdict.folder / f"{phase.name}.stderr", 3) if phase.process.returncode else ""
            if said and not phase.process.killed:
                lines.append(f"  {phase.name} exited {phase.process.returncode} and said: {said}")
        lines.append(f"  reproduce: {verdict.reproduce()}")
    else:
        lines.append(f"ok: {len(verdict.checks)} checks held")
    lines.append(f"  results: {verdict.folder}")
    return "\n".join(printable(line) for line in lines)


def ask_at_pause(paused: Paused) -> str:
    """``chaos run --pause``: show the frozen agent's state, and ask a person what to do."""
    print(printable(f"paused at {paused.crash}: the agent is frozen"), flush=True)
    print(printable(f"workspace: {paused.workspace}"))
    print(printable(f"log: {paused.log_path}"))
    print(render_timeline(timeline(paused.log, paused.current), colour=sys.stdout.isatty()))
    while True:
        print("[k]ill it (then resume as usual), [c]ontinue without a crash, [q]uit? ", end="", flush=True)
        answer = sys.stdin.readline()
        if not answer:
            return "quit"  # no one at the terminal any more
        choice = {"k": "kill", "c": "continue", "q": "quit"}.get(answer.strip()[:1].lower())
        if choice:
            print(choice, flush=True)
            return choice
