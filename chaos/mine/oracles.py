"""Other implementations' reducers as oracles: parity checked on real crash prefixes.

``--oracle CMD`` runs ``CMD FILE`` on every crash prefix and final log of a
sweep; the command prints the golden ``expected.json`` shape. Any difference
from chaos's own reduction is a finding, so a project with ports in several
languages learns where they disagree on logs a real crash produced. It is a
hook of the case: its checks join the verdict before the verdict is saved.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from chaos.check.base import Check
from chaos.check.oracles import agrees
from chaos.contract.reading import reduced
from chaos.cycle.evidence import Evidence


@dataclass(frozen=True)
class OtherOracle:
    command: str

    def verdict_of(self, path: Path) -> Any:
        argv = [*shlex.split(self.command), str(path)]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"could not run: {err}"
        try:
            return orjson.loads(done.stdout)
        except orjson.JSONDecodeError:
            return f"printed no JSON (exit {done.returncode}): {done.stderr.decode(errors='replace')[-200:]}"

    def __call__(self, evidence: Evidence, folder: Path) -> list[Check]:
        """Compare on the crash prefix and the final log (the files the case record holds)."""
        logs = {"prefix": evidence.prefix}
        if evidence.resumes:
            logs["final"] = evidence.final
        checks = []
        for name, log in logs.items():
            expected = reduced(log).result()
            got = self.verdict_of(folder / f"{name}.jsonl")
            shown = orjson.dumps(got).decode() if not isinstance(got, str) else got
            checks.append(
                agrees(self.command, f"{name}.jsonl", got == expected, orjson.dumps(expected).decode(), shown)
            )
        return checks
