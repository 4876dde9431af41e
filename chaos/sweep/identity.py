"""What a sweep's verdicts depend on, kept beside its journal so that ``--resume`` never mixes two sweeps.

A resumed sweep reuses the verdicts in ``sweep.jsonl``; they are only its own
if it runs the same scenarios against the same target with the same
environment and case space. ``sweep.settings.json`` holds a digest of each
part (a ``--target-env`` value as a digest only: it is a secret); a resume
whose parts differ is refused, naming each part that changed. What changes
no verdict (``--jobs``, ``--budget``, ``--keep-all``) may differ.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import orjson

from chaos.errors import UsageError
from chaos.scenario.files import scenario_toml
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target
from chaos.sweep.settings import Settings

FILE = "sweep.settings.json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def identity(
    settings: Settings, scenarios: list[Scenario], target_of: Callable[[Scenario], Target]
) -> dict[str, str]:
    """Each part a sweep's verdicts depend on, as a short digest (or its plain value where it is no
    secret and short)."""
    space = settings.space
    parts = {
        "faults": space.spelled,
        "depth": str(space.depth),
        "oracles": _digest(orjson.dumps(list(space.oracles))),
        "persistence": str(space.persistence),
        "shard": "{}/{}".format(*settings.shard),
        "timeout": str(settings.timeout),
    }
    for scenario in scenarios:
        target = target_of(scenario)
        parts[f"scenario {scenario.name}"] = _digest(scenario_toml(scenario).encode())
        parts[f"target {target.name}"] = _digest(target.path.read_bytes() if target.path.is_file() else b"")
    for key, value in sorted(settings.target_env.items()):
        parts[f"--target-env {key}"] = _digest(f"chaos target-env\0{key}\0{value}".encode())
    return parts


def differences(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """Each part that is not the same, in words."""
    out = []
    for key in sorted(set(before) | set(now)):
        if key not in now:
            out.append(f"{key}: in the interrupted sweep, not in this one")
        elif key not in before:
            out.append(f"{key}: in this sweep, not in the interrupted one")
        elif before[key] != now[key]:
            shown = key.startswith(("faults", "depth", "persistence", "shard", "timeout"))
            out.append(f"{key}: {before[key]} then, {now[key]} now" if shown else f"{key}: differs")
    return out


def check_resume(results: Path, now: dict[str, str]) -> None:
    """Refuse to resume the sweep in ``results`` with other settings (exit 2, naming each difference)."""
    path = results / FILE
    try:
        before = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise UsageError(
            f"--resume: {results} holds a journal but no {FILE} (a sweep of an older chaos); run it again "
            "without --resume"
        ) from None
    except orjson.JSONDecodeError as err:
        raise UsageError(f"{path}: not JSON ({err}); run the sweep again without --resume") from None
    changed = differences(before, now)
    if changed:
        raise UsageError(
            f"--resume: the sweep in {results} ran with other settings, and its verdicts are not this "
            f"sweep's: {'; '.join(changed[:8])}{' ...' if len(changed) > 8 else ''}; resume it as it was, "
            "or run this one without --resume (or with another --results)"
        )


def write_identity(results: Path, now: dict[str, str]) -> None:
    (results / FILE).write_bytes(orjson.dumps(now, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
