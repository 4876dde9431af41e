"""A case: one scenario against one target, crashed at one boundary (and maybe again during recovery).

Sweeps, the pytest plugin and reports name cases by ``Case.id`` (scenario @ boundary); shards pick them
by a hash of that id, so a case lands in the same shard on every machine.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from chaos.scenario.model import Scenario, Strike
from chaos.scenario.target import Target


@dataclass(frozen=True)
class Case:
    scenario: Scenario
    target: Target
    crash: Strike | None
    then_crash: Strike | None = None
    as_written: bool = False  # the scenario's own crash, judged by its hand-written expectations

    @property
    def id(self) -> str:
        then = f" then {self.then_crash}" if self.then_crash else ""
        written = " (as written)" if self.as_written else ""
        return f"{self.scenario.name} @ {self.crash or 'no crash'}{then}{written}"

    @property
    def as_run(self) -> Scenario:
        return self.scenario.with_crash(self.crash, self.then_crash)

    def in_shard(self, shard: tuple[int, int]) -> bool:
        """Stable across machines and runs: the case id's hash, not its position, picks the shard."""
        index, count = shard
        return int(hashlib.sha256(self.id.encode()).hexdigest(), 16) % count == index - 1
