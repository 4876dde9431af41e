"""Everything one crash cycle produced, in memory: what checks, mining, oracles, grouping and reports read.

The logs have named roles, computed one way for everyone: the crash
``prefix`` (the log the moment the crashed start was gone), the log after each
resume, the ``final`` log (after the last recovery, before the idempotence
rerun) and the log after that rerun.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from chaos.contract.framing import committed_length
from chaos.process.phase import Phase, PhaseKind
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target
from chaos.store import View


@contextmanager
def timed(timings: dict[str, float], part: str) -> Iterator[None]:
    """Add the seconds spent in the block to ``timings[part]``."""
    began = time.perf_counter()
    try:
        yield
    finally:
        timings[part] = timings.get(part, 0.0) + time.perf_counter() - began


@dataclass
class Evidence:
    scenario: Scenario  # as judged (a pause that let the agent go on leaves no crash to judge)
    target: Target
    extra_env: dict[str, str]
    phases: list[Phase]
    current: dict[str, Any] | None  # the planner's current configuration under the resume's configuration
    ledger: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)  # the model server's request log
    attempts_per_step: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per part of the cycle (bench/sweep.py)
    # The same scenario run without a crash, for checks that compare a framework's store with it (set by
    # the case: ``chaos.case.run``); a case without a crash is its own.
    clean: Evidence | None = None
    # The case folder of the case that reached this crash state first, whose recovery this one took
    # (``chaos.cycle.share``); and under ``--crash-states verify``, this case judged on the recovery it
    # would have taken, to compare.
    shared_from: str | None = None
    twin: Evidence | None = None

    @property
    def facts(self) -> bool:
        """Judged on the session contract's facts in its store (else on its adapter's ``View`` alone)."""
        return self.target.facts

    @property
    def view(self) -> View:
        """The store as the last phase left it."""
        return self.phases[-1].kept.view_after or View()

    @property
    def crashed_phase(self) -> Phase | None:
        """The first phase with a crash to land (the start, or a recovery crashed again)."""
        return next((p for p in self.phases if p.crash is not None), None)

    @property
    def began(self) -> bool:
        """The run's input was durable in the store when it crashed (or it did not crash): there is a run
        to resume. A crash before that loses the run, and a resume that then does nothing is right; so does
        a run that ended otherwise than completed under its fault (failed on a full disk, stopped by a
        signal) before its input was durable: there is nothing to resume."""
        crashed = self.crashed_phase
        if crashed is None or (crashed.kept.view_after is not None and crashed.kept.view_after.started):
            return True
        return not crashed.process.killed and crashed.process.outcome == "completed"

    def effects(self, kind: str = "start") -> list[dict[str, Any]]:
        """The ledger's lines of one kind: each effect's start (or done)."""
        return [e for e in self.ledger if e["phase"] == kind]

    def _of(self, kind: PhaseKind) -> list[Phase]:
        return [p for p in self.phases if p.kind is kind]

    @property
    def setup(self) -> Phase | None:
        return next(iter(self._of(PhaseKind.SETUP)), None)

    @property
    def start(self) -> Phase:
        return self._of(PhaseKind.START)[0]

    @property
    def recoveries(self) -> list[Phase]:
        """The resumes that recovered (the idempotence rerun aside)."""
        return self._of(PhaseKind.RESUME)

    @property
    def ended(self) -> Phase:
        """The process the run ended in: its last recovery, else its first process."""
        return (self.recoveries or self.phases[:1])[-1]

    @property
    def failed_by_provider(self) -> bool:
        """The run ended failed under a fault of the provider's that it went on through (no crash), in the
        first run or in a recovery (the last fault the case struck): the contract's answer too, so what
        the uninterrupted run went on to do is not owed."""
        crash = self.scenario.then_crash or self.scenario.crash
        return self.ended.process.outcome == "failed" and crash is not None and not crash.fault.crashes

    @property
    def again(self) -> Phase | None:
        return next(iter(self._of(PhaseKind.AGAIN)), None)

    @property
    def continued(self) -> Phase | None:
        """A writer paused at its boundary and let go on after a second one resumed its session."""
        return next(iter(self._of(PhaseKind.CONTINUED)), None)

    @property
    def resumes(self) -> list[Phase]:
        """Every phase after the start, in order: the resumes, a paused writer let go on, the rerun."""
        later = (PhaseKind.RESUME, PhaseKind.CONTINUED, PhaseKind.AGAIN)
        return [p for p in self.phases if p.kind in later]

    @property
    def prefix(self) -> bytes:
        return self.start.kept.log_after

    @property
    def last_log(self) -> bytes:
        """The log as the last phase left it (the rerun of the finished session included)."""
        return self.resumes[-1].kept.log_after if self.resumes else self.prefix

    @property
    def final(self) -> bytes:
        """The log after the last recovery (the crash prefix when nothing recovered)."""
        recoveries = [p for p in self.resumes if p.kind is not PhaseKind.AGAIN]
        return recoveries[-1].kept.log_after if recoveries else self.prefix

    @property
    def crashed(self) -> bool:
        """The start was SIGKILLed at its boundary: recovery, not the start, ended the operation."""
        return self.start.process.killed

    def refused(self, phase: Phase) -> bool:
        """A second writer that left the session alone while the first was paused holding it (it refused
        the session, by any exit code of its own choosing): its plan and exit are not judged."""
        return (
            phase.kind is PhaseKind.RESUME
            and self.continued is not None
            and bool(self.recoveries)
            and phase is self.recoveries[0]
            and not phase.landing.waited
            and not phase.wrote
        )

    def process_of(self, phase: Phase) -> Phase:
        """The phase whose exit reports ``phase``'s process: a paused start exits as the one let go on."""
        if phase.kind is PhaseKind.START and self.continued is not None:
            return self.continued
        return phase

    def finishes_of(self, phase: Phase) -> list[dict[str, Any]]:
        """The ``operationFinished`` records ``phase``'s process appended (a paused start's own, from before
        its pause, count for the writer let go on)."""
        if phase.kind is PhaseKind.CONTINUED:
            return self.start.kept.finishes() + phase.kept.finishes()
        return phase.kept.finishes()

    def ending(self) -> Phase:
        """The process that ended the operation: the last that appended its ``operationFinished`` and
        exited by itself (one killed after its finish was durable reports nothing), else (blocked, or
        left unfinished) the last recovery that was not a refused second writer, else the start."""
        later = (PhaseKind.START, PhaseKind.RESUME, PhaseKind.CONTINUED)
        for phase in reversed([p for p in self.phases if p.kind in later and not p.process.killed]):
            if self.finishes_of(phase) and not (phase.kind is PhaseKind.START and self.continued):
                return phase
        recoveries = [p for p in self.recoveries if not self.refused(p)]
        return recoveries[-1] if recoveries else self.process_of(self.start)

    def transitions(self) -> Iterator[tuple[Phase, bytes, bytes]]:
        """Each resume with the committed log the phase before it left, and the log it left."""
        previous = self.prefix
        for phase in self.resumes:
            yield phase, previous[: committed_length(previous)], phase.kept.log_after
            previous = phase.kept.log_after
