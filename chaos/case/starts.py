"""Cold or warm: how a sweep starts a target's processes, chosen once per target, and said.

A warm start (``chaos.process.warm``) forks a process that makes itself what a
cold start would be, but a fork cannot give back everything: the modules the
server imported ran their import-time code once, in the server, and not under
the phase's environment; the hash seed is the server's for every phase. An
agent that reads its environment at import, or keys behaviour on set order,
could behave otherwise warm. So nothing is assumed: a target goes warm only
after a cold run and a warm run of the same case gave the same verdict and the
same facts (each phase's outcome, exit, requests, effects, and the facts its
log or store holds), and the choice is said with its reason. Until then, and
whenever they differ, its processes start cold. A target file turns warm
starts off with ``warm = false``.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chaos.case.verdict import Verdict
from chaos.contract.reading import facts
from chaos.errors import InternalError, UsageError
from chaos.process.warm import WarmStarts, command_of, fork_difference
from chaos.scenario.target import Target
from chaos.store import store_named


@dataclass(frozen=True)
class Choice:
    """Warm or cold, for one target, and why."""

    target: str
    warm: bool
    why: str
    # the saves each phase of the warm run began (``chaos.store.Save``: seen only in a start chaos makes)
    saves: tuple[tuple[str, ...], ...] = ()

    def __str__(self) -> str:
        return f"{self.target}: {'warm' if self.warm else 'cold'} starts ({self.why})"


def facts_of(verdict: Verdict) -> list[str]:
    """What a cold and a warm run of the same case must agree on, a line per phase and one for the checks."""
    lines = []
    for phase in verdict.phases:
        view = phase.kept.view_after
        held = (
            f"store {view.items} item(s), {len(view.calls)} call(s), {len(view.outputs)} output(s), "
            f"final {view.final is not None}"
            if view is not None
            else "log " + " ".join(str(fact.get("type")) for fact in facts(phase.kept.log_after))
        )
        lines.append(
            f"{phase.name}: outcome {phase.process.outcome}, exit {phase.process.returncode}, killed {phase.process.killed}, "
            f"{phase.seen.requests[1] - phase.seen.requests[0]} request(s), effects {phase.seen.effects}, {held}"
        )
    lines.append("failed checks: " + (", ".join(sorted(c.id for c in verdict.failed)) or "none"))
    return lines


def _difference(cold: list[str], warm: list[str]) -> str | None:
    for one, other in zip(cold, warm, strict=False):
        if one != other:
            return f"cold {one!r}, warm {other!r}"
    if len(cold) != len(warm):
        return f"cold ran {len(cold) - 1} phase(s), warm {len(warm) - 1}"
    return None


class Starts:
    """The choice for each target of one sweep (or check), and the warm interpreters it uses. Close it
    when done: that stops them."""

    def __init__(self) -> None:
        self.pool = WarmStarts()
        self.choices: dict[str, Choice] = {}
        self._trying: set[str] = set()
        self._lock = threading.Lock()

    def of(self, target: Target) -> WarmStarts | None:
        """How ``target``'s processes start now: warm once chosen, else cold (None)."""
        choice = self.choices.get(target.reference)
        return self.pool if choice is not None and choice.warm else None

    def choose(
        self, target: Target, cold: Verdict, run: Callable[[WarmStarts, Path], Verdict], scratch: Path
    ) -> Choice | None:
        """Choose for ``target``, once, after ``cold`` (a case run cold): ``run`` runs the same case warm
        into a folder, once to teach the warm interpreter what the agent imports and once to compare.
        None when the choice is made (or being made) elsewhere."""
        key = target.reference
        with self._lock:
            if key in self.choices or key in self._trying:
                return None
            self._trying.add(key)
        tried = self._try(target, cold, run, scratch)
        if isinstance(tried, str):
            why = tried
            if store_named(target.store_spec.kind).saves:  # (said: a sweep of orders sees fewer)
                why += (
                    "; its framework's saves are held only in a warm start: --fault overtaken holds none here"
                )
            choice = Choice(target.name, False, why)
        else:
            agreed = f"a cold and a warm run of {cold.scenario.name} agreed; {self.pool.preloaded} module(s)"
            saves = tuple(tuple(phase.seen.saves) for phase in tried.phases)
            choice = Choice(target.name, True, f"{agreed} imported once", saves)
        with self._lock:
            self.choices[key] = choice
            self._trying.discard(key)
        return choice

    def _try(
        self, target: Target, cold: Verdict, run: Callable[[WarmStarts, Path], Verdict], scratch: Path
    ) -> Verdict | str:
        """The warm run of the case, where warm starts hold for ``target``; else why they do not."""
        if target.approve is not None:
            return "each phase chains the agent's command and its approve command"
        if not target.warm:
            return "the target file says warm = false"
        for phase in cold.phases:
            command = command_of(phase.argv, dict(os.environ))
            if isinstance(command, str):
                return f"its {phase.name} is no Python command line a fork can run: {command}"
        try:
            run(self.pool, scratch / "learn")
            warm = run(self.pool, scratch / "warm")
        except (UsageError, InternalError, OSError) as err:
            return f"a warm start failed: {err}"
        failed = next((p.process.cold_because for p in warm.phases if p.process.cold_because), None)
        if failed is not None:
            return f"a warm start failed: {failed}"
        differs = _difference(facts_of(cold), facts_of(warm))
        if differs is not None:
            return f"a cold and a warm run of {cold.scenario.name} differ: {differs}"
        command = command_of(cold.phases[0].argv, dict(os.environ))
        assert not isinstance(command, str)
        seen = fork_difference(self.pool, command.python, command.options, scratch / "environment")
        if seen is not None:  # what the agent did not show: the environment a fork gives it
            return f"a warm fork does not see the environment a cold start does: {seen}"
        shutil.rmtree(scratch, ignore_errors=True)
        return warm

    def close(self) -> None:
        self.pool.close()
