"""One crash cycle, end to end: scenario -> world -> run -> kill -> resume -> check, and its results folder.

Everything a person needs to act on a finding lands in one folder: the
scenario and target as used, the crash prefix and every later log, the
oracle's reduction and plan, each process's output and exit status, the
model server's requests, the ledger, ``verdict.json`` and the command that
reproduces the run.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaos import __version__
from chaos.check import Check, Evidence, check_all
from chaos.contract import Reducer, plan_recovery
from chaos.resume import Recovery, current_of, recover, resume_configuration, session_id
from chaos.run import Phase, TargetUnusable, run_phase
from chaos.scenario import Scenario, write_scenario
from chaos.show import render as render_timeline
from chaos.show import timeline
from chaos.spec import SpecError
from chaos.target import Target, find_target
from chaos.world.build import World, build_world
from chaos.world.ledger import read_ledger

RESULTS = Path("results/runs")


@dataclass
class Verdict:
    scenario: Scenario
    target: Target
    folder: Path
    extra_env: dict[str, str]
    checks: list[Check] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def case(self) -> str:
        """Scenario x boundary: the name of this case in a sweep or a JUnit report."""
        crash = self.scenario.crash
        then = f" then {self.scenario.then_crash}" if self.scenario.then_crash else ""
        return f"{self.scenario.name} @ {crash or 'no crash'}{then}"

    def reproduce(self) -> str:
        argv = ["chaos", "run", str(self.scenario.path), "--target", _target_ref(self.target)]
        if self.scenario.crash:
            argv += ["--kill-at", str(self.scenario.crash.boundary)]
        if self.scenario.then_crash:
            argv += ["--then-kill-at", str(self.scenario.then_crash.boundary)]
        for key, value in self.extra_env.items():
            argv += ["--target-env", f"{key}={value}"]
        return shlex.join(argv)

    def to_json(self) -> dict[str, Any]:
        start = next((p for p in self.phases if p.name == "start"), None)
        return {
            "chaosVersion": __version__,
            "case": self.case,
            "scenario": self.scenario.name,
            "scenarioFile": str(self.scenario.path),
            "target": self.target.name,
            "crash": str(self.scenario.crash) if self.scenario.crash else None,
            "thenCrash": str(self.scenario.then_crash) if self.scenario.then_crash else None,
            "targetEnv": self.extra_env,
            "ok": self.ok,
            "landed": _landing(start) if start else None,
            "exact": start.exact if start else None,
            "checks": [c.to_json() for c in self.checks],
            "phases": [p.to_json() for p in self.phases],
            "seconds": round(self.seconds, 3),
            "reproduce": self.reproduce(),
            "folder": str(self.folder),
        }


def _target_ref(target: Target) -> str:
    """The target's name when ``--target NAME`` finds it, else its spec path."""
    try:
        return (
            target.name if find_target(target.name).resolve() == target.path.resolve() else str(target.path)
        )
    except SpecError:
        return str(target.path)


def _landing(phase: Phase) -> str:
    if phase.crash is None:
        return "no crash requested"
    if not phase.reached:
        return "never reached"
    if phase.exact:
        return "exactly at the boundary"
    return f"{phase.late_facts} committed fact(s) after the boundary"


def slug(text: str, limit: int = 80) -> str:
    """A file name for a case or boundary: letters, digits and ``.=-`` kept, every other run ``_``."""
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", text).strip("_")[:limit]


def default_folder(scenario: Scenario) -> Path:
    crash = str(scenario.crash.boundary) if scenario.crash else "clean"
    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{time.time_ns() % 1_000_000_000:09d}"
    return RESULTS / f"{slug(scenario.name)}-{slug(crash)}-{stamp}"


def _dump(path: Path, value: Any) -> None:
    path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")


def _oracle(folder: Path, name: str, log: bytes, current: dict[str, Any] | None) -> None:
    reducer = Reducer.of(log)
    _dump(folder / f"{name}.reduce.json", reducer.result())
    if current is not None and reducer.state is not None and reducer.error is None:
        _dump(folder / f"{name}.plan.json", plan_recovery(reducer.state, current))


def run_case(
    scenario: Scenario,
    target: Target,
    extra_env: dict[str, str] | None = None,
    folder: Path | None = None,
    timeout: float | None = None,
    pause: bool = False,
) -> Verdict:
    """Run one crash cycle and leave its results folder; the verdict says whether every check held."""
    folder = folder or default_folder(scenario)
    folder.mkdir(parents=True, exist_ok=True)
    write_scenario(scenario, folder / "scenario.toml")  # as used: with the crash of this run
    shutil.copyfile(target.path, folder / "target.toml")
    verdict = Verdict(scenario, target, folder, dict(extra_env or {}))
    limit = timeout or scenario.timeout
    began = time.monotonic()
    world = build_world(scenario, target, verdict.extra_env)
    try:
        argv = world.argv(target.start, scenario.start, prompt=scenario.prompt)
        if scenario.operation == "compaction":
            setup, log = run_phase(world, "setup", argv, scenario.start, None, limit, folder)
            verdict.phases.append(setup)
            if target.compact is None:
                raise TargetUnusable(f"{target.path}: has no compact command, needed by {scenario.path}")
            argv = world.argv(target.compact, scenario.start, session_id=session_id(log))
        hold = _pause_prompt(world) if pause and scenario.crash else None
        start, prefix = run_phase(
            world, "start", argv, scenario.start, scenario.crash, limit, folder, "prefix.jsonl", hold
        )
        verdict.phases.append(start)
        current = current_of(world, resume_configuration(world), prefix) if prefix else None
        if current is not None:
            _dump(folder / "current.json", current)
        _oracle(folder, "prefix", prefix, current)
        recovery = (
            recover(world, scenario.then_crash, limit, folder, prefix)
            if prefix and not start.timed_out
            else Recovery()
        )
        verdict.phases += recovery.phases
        if recovery.logs:
            final = recovery.logs[-2] if len(recovery.logs) >= 2 else recovery.logs[-1]
            (folder / "final.jsonl").write_bytes(final)
            _oracle(folder, "final", final, current)
        _dump(folder / "requests.json", world.server.request_log())
        ledger = read_ledger(world.box.ledger)
        _dump(folder / "ledger.json", ledger)
        judged = scenario.with_crash(None) if start.continued else scenario  # let go on: no crash to judge
        verdict.checks = check_all(
            Evidence(
                judged,
                start,
                prefix,
                recovery.phases,
                recovery.logs,
                current,
                ledger,
                world.server.attempts_per_step(),
                verdict.phases[0] if verdict.phases[0] is not start else None,
            )
        )
    finally:
        world.close()
    verdict.seconds = time.monotonic() - began
    save_verdict(verdict)
    return verdict


def save_verdict(verdict: Verdict) -> None:
    _dump(verdict.folder / "verdict.json", verdict.to_json())
    (verdict.folder / "reproduce").write_text(verdict.reproduce() + "\n")


def _pause_prompt(world: World) -> Callable[[], str]:
    """What ``chaos run --pause`` shows at the boundary, and the person's choice (kill/continue/quit)."""

    def ask() -> str:
        log = world.log_path()
        data = log.read_bytes() if log else b""
        current = current_of(world, resume_configuration(world), data) if data else None
        crash = world.scenario.crash
        print(f"paused at {crash}: the agent is frozen", flush=True)
        print(f"workspace: {world.box.workspace}")
        print(f"log: {log}")
        print(render_timeline(timeline(data, current), colour=sys.stdout.isatty()))
        while True:
            print(
                "[k]ill it (then resume as usual), [c]ontinue without a crash, [q]uit? ", end="", flush=True
            )
            answer = sys.stdin.readline()
            if not answer:
                return "quit"  # no one at the terminal any more
            choice = {"k": "kill", "c": "continue", "q": "quit"}.get(answer.strip()[:1].lower())
            if choice:
                print(f"{choice}", flush=True)
                return choice

    return ask


def render(verdict: Verdict) -> str:
    """The short terminal report: where the kill landed, what recovery did, each check."""
    lines = [f"chaos run {verdict.scenario.path} against {verdict.target.name}"]
    for phase in verdict.phases:
        if phase.continued:
            lines.append(f"  {phase.name}: paused at {phase.crash}, then continued without a crash")
        elif phase.crash:
            lines.append(
                f"  {phase.name}: crash at {phase.crash}: {_landing(phase)}"
                + (f" ({phase.mechanism})" if phase.reached else "")
                + f", log {phase.log_after} bytes, {len(phase.kill.killed)} process(es) killed"
                + (
                    f" ({len(phase.kill.escaped_group)} outside its process group)"
                    if phase.kill.escaped_group
                    else ""
                )
            )
        else:
            appended = phase.log_after - phase.log_before
            ended = (
                f"{phase.outcome or 'ended'} (exit {phase.returncode})"
                if not phase.timed_out
                else "killed at the timeout"
            )
            lines.append(f"  {phase.name}: {ended} in {phase.seconds:.2f}s, appended {appended} bytes")
    for check in verdict.checks:
        lines.append(f"  {'✓' if check.ok else '✗'} {check.text()}")
    failed = [c for c in verdict.checks if not c.ok]
    if failed:
        lines.append(f"FINDING: {len(failed)} of {len(verdict.checks)} checks failed")
        lines.append(f"  reproduce: {verdict.reproduce()}")
    else:
        lines.append(f"ok: {len(verdict.checks)} checks held")
    lines.append(f"  results: {verdict.folder}")
    return "\n".join(lines)
