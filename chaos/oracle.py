"""Other implementations' reducers as oracles: parity checked on real crash prefixes.

``--oracle CMD`` runs ``CMD FILE`` on every crash prefix and final log of a
sweep; the command prints the golden ``expected.json`` shape. Any difference
from chaos's own reduction is a finding, so a project with ports in several
languages learns where they disagree on logs a real crash produced.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from typing import Any

import orjson

from chaos.check import Check
from chaos.cycle import Verdict


@dataclass
class OtherOracle:
    command: str

    def verdict_of(self, path: str) -> Any:
        argv = [*shlex.split(self.command), path]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
            return orjson.loads(done.stdout)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"could not run: {err}"
        except orjson.JSONDecodeError:
            return f"printed no JSON (exit {done.returncode}): {done.stderr.decode(errors='replace')[-200:]}"

    def check(self, case: Any, verdict: Verdict) -> None:
        """A sweep hook: compare on the crash prefix and the final log, add one check each."""
        for name in ("prefix", "final"):
            log = verdict.folder / f"{name}.jsonl"
            ours = verdict.folder / f"{name}.reduce.json"
            if not (log.exists() and ours.exists()):
                continue
            expected = orjson.loads(ours.read_bytes())
            got = self.verdict_of(str(log))
            verdict.checks.append(
                Check(
                    f"oracle {self.command!r} agrees on {name}.jsonl",
                    got == expected,
                    orjson.dumps(expected).decode()[:300],
                    (orjson.dumps(got).decode() if not isinstance(got, str) else got)[:300],
                )
            )
