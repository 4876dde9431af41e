"""One scenario's world: its sandbox, its scripted model server, and the target's environment per phase.

The crash run and every resume share one world (same workspace, ledger and
server, so the model and the effects see the whole history), but each phase
gets the configuration of its moment: the scenario's start configuration for
the crash run, with the scenario's change applied for the resumes.
"""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass
from pathlib import Path

from chaos.scenario import Configuration, Scenario
from chaos.target import Target, fill, placeholders
from chaos.world.model_server import ModelServer
from chaos.world.sandbox import Sandbox, make_sandbox


@dataclass
class World:
    scenario: Scenario
    target: Target
    box: Sandbox
    server: ModelServer
    extra_env: dict[str, str]  # --target-env: for every phase, over everything else

    @property
    def log_glob(self) -> str:
        return str(self.box.workspace / self.target.sessions)

    def log_path(self) -> Path | None:
        found = sorted(glob.glob(self.log_glob))
        return Path(found[0]) if found else None

    def values(self, config: Configuration) -> dict[str, str]:
        return placeholders(
            self.target,
            self.box.workspace,
            model_url=self.server.url,
            model=config.model or self.target.model,
            environment_identity=config.environment_identity or self.target.environment_identity,
            tools_json=json.dumps(config.tools, sort_keys=True),
        )

    def env(self, config: Configuration, gates: list[str]) -> dict[str, str]:
        values = self.values(config)
        declared = {key: fill(value, values) for key, value in self.target.env.items()}
        return self.box.environment({**declared, **config.env, **self.extra_env}, gates, self.log_glob)

    def argv(self, template: list[str], config: Configuration, **values: str) -> list[str]:
        filled = {**self.values(config), **values}
        return [fill(part, filled) for part in template]

    @property
    def cwd(self) -> Path:
        return Path(fill(self.target.cwd, self.values(Configuration())))

    def close(self) -> None:
        self.server.close()
        self.box.remove()


def build_world(scenario: Scenario, target: Target, extra_env: dict[str, str]) -> World:
    box = make_sandbox(scenario.files)
    return World(scenario, target, box, ModelServer(scenario.turns), extra_env)
