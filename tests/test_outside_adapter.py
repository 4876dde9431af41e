"""A store adapter from a package of its own (issue 53): installed with a ``chaos.stores`` entry point, or
named by a target file's ``[store] module``, the plain ``chaos`` command sweeps a target that names its
kind, and the reproduce lines it prints run as they are."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

# the test suite's own adapter (tests/store_adapter.py), as a package of its own would ship it, under a kind
# of its own
ADAPTER = (Path(__file__).parent / "store_adapter.py").read_text().replace('"test-jsonl"', '"outside-jsonl"')
PYPROJECT = textwrap.dedent(
    """
    [build-system]
    requires = ["setuptools>=61"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "chaos-outside-jsonl"
    version = "1.0"

    [project.entry-points."chaos.stores"]
    outside-jsonl = "outside_jsonl"
    """
)


def _target(folder: Path, extra: str = "") -> Path:
    text = (REPO / "tests" / "targets" / "store-agent.toml").read_text()
    agent = REPO / "tests" / "agents" / "store_agent.py"
    text = text.replace("{target_dir}/../agents/store_agent.py", str(agent))
    text = text.replace('kind = "test-jsonl"', f'kind = "outside-jsonl"{extra}')
    target = folder / "outside.toml"
    target.write_text(text)
    return target


def _chaos(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaos", *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_an_adapter_installed_with_an_entry_point_is_swept_by_the_plain_command(tmp_path: Path) -> None:
    package = tmp_path / "package"
    package.mkdir()
    (package / "outside_jsonl.py").write_text(ADAPTER)
    (package / "pyproject.toml").write_text(PYPROJECT)
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
         str(site), str(package)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(site)}
    target = _target(tmp_path)
    scenario = REPO / "scenarios" / "frameworks" / "deploy-one-service.toml"
    done = _chaos(
        [
            "sweep",
            str(scenario),
            "--target",
            str(target),
            "--fault",
            "kill",
            "--results",
            str(tmp_path / "r"),
        ],
        env,
        tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # every reproduce line a case wrote runs as it is, from its case's folder
    reproduce = sorted((tmp_path / "r").rglob("reproduce"))
    assert reproduce
    line = shlex.split(reproduce[0].read_text())
    again = _chaos([*line[1:], "--results", str(tmp_path / "again")], env, reproduce[0].parent)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    # without the package, the kind is unknown: exit 2, saying how to add an adapter
    missing = _chaos(["target", "check", str(target)], dict(os.environ), tmp_path)
    assert missing.returncode == 2 and "entry point" in missing.stderr and "[store] module" in missing.stderr


def test_a_target_file_names_the_module_of_its_adapter(tmp_path: Path) -> None:
    (tmp_path / "outside_jsonl.py").write_text(ADAPTER)  # beside the target file
    target = _target(tmp_path, '\nmodule = "outside_jsonl"')
    scenario = REPO / "scenarios" / "frameworks" / "deploy-one-service.toml"
    done = _chaos(
        ["run", str(scenario), "--target", str(target), "--results", str(tmp_path / "r")],
        dict(os.environ),
        REPO,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    broken = _target(tmp_path, '\nmodule = "no_such_adapter"')
    refused = _chaos(["run", str(scenario), "--target", str(broken)], dict(os.environ), REPO)
    assert refused.returncode == 2 and "module" in refused.stderr and "no_such_adapter" in refused.stderr
