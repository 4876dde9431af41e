"""The README and ``docs/`` are the manual a stranger follows, so they are tested like code.

Every command and option is in the command reference, every check
in the checks table with the fail-table row that makes it fail; every ``chaos`` line of a shell block
parses with this version's parser, every TOML block loads as the target or scenario it shows, every
Python block runs, every link lands on a file and a heading that exist; and the README's first run
against "your own agent" works as written. (Every fault's row in the crash model is
``tests/test_faults.py``'s; the public API example is also ``tests/test_structure.py``'s.)
"""

from __future__ import annotations

import argparse
import inspect
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from chaos.check import CATALOG
from chaos.cli import build_parser
from chaos.scenario import load_scenario, load_target
from tests.conftest import REPO
from tests.test_fail_table import ROWS

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


def _blocks(language: str) -> list[tuple[str, str]]:
    """(where, code) of every fenced block in ``language`` across the docs."""
    found = []
    for path in DOCS:
        text = path.read_text()
        for match in FENCE.finditer(text):
            if match.group(1) == language:
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{path.relative_to(REPO)}:{line}", match.group(2)))
    return found


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ("chaos",)):  # type: ignore[no-untyped-def]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name), sub
                yield from _commands(sub, (*prefix, name))


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n### ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def test_every_command_and_option_is_in_the_command_reference() -> None:
    reference = (REPO / "docs" / "commands.md").read_text()
    missing = []
    for words, parser in _commands(build_parser()):
        heading = f"### `{' '.join(words)}`"
        if heading not in reference:
            missing.append(heading)
            continue
        section = _section(reference, heading)
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            names = action.option_strings or [action.metavar or action.dest]
            missing += [f"{' '.join(words)} {name}" for name in names if f"`{name}`" not in section]
            if not action.help:
                missing.append(f"{' '.join(words)} {names[0]}: no help text")
    assert not missing, missing


def _table_names(path: Path) -> dict[str, list[str]]:
    """A markdown table's first-column code names -> the row's cells."""
    rows = {}
    for line in path.read_text().splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            for name in re.findall(r"`([^`]+)`", cells[0]):
                rows[name] = cells
    return rows


def test_every_check_is_documented_with_the_fail_table_row_that_makes_it_fail() -> None:
    rows = _table_names(REPO / "docs" / "checks.md")
    assert set(rows) == set(CATALOG), (sorted(set(CATALOG) - set(rows)), sorted(set(rows) - set(CATALOG)))
    for check_id, cells in rows.items():
        assert len(cells) == 4 and cells[1] and cells[3], f"{check_id}: guarantee and fail-table row"
        # the scenario, bug switch or broken target the fail table uses are the ones documented
        source = inspect.getsource(ROWS[check_id])
        call = re.search(r"_run\((.*?)\)(?:,|$)", source, re.S)
        if call is None:
            continue  # crafted evidence, or another oracle: said in words
        for value in re.findall(r'"([^"]+)"', call.group(1)):
            value = value.removeprefix("plan:").removeprefix("reason:")
            assert value in cells[3], (
                f"{check_id}: the fail table uses {value!r}; docs/checks.md says {cells[3]}"
            )


def _shell_lines(code: str) -> list[str]:
    return [line for line in code.replace("\\\n", " ").splitlines() if line.strip()]


@pytest.mark.parametrize("where,code", _blocks("sh"), ids=lambda v: v if ":" in v else "")
def test_every_chaos_line_of_a_shell_block_parses(where: str, code: str) -> None:
    parser = build_parser()
    for line in _shell_lines(code):
        words = shlex.split(line, comments=True)
        starts = [0, *(n + 1 for n, word in enumerate(words) if word == "&&")]
        for start in starts:
            argv = words[start:]
            argv = argv[: argv.index("&&")] if "&&" in argv else argv
            if argv[:1] != ["chaos"]:
                continue
            try:
                parser.parse_args(argv[1:])
            except SystemExit:
                pytest.fail(f"{where}: {shlex.join(argv)!r} does not parse")


@pytest.mark.parametrize("where,code", _blocks("toml"), ids=lambda v: v if ":" in v else "")
def test_every_toml_block_loads_as_what_it_shows(where: str, code: str, tmp_path: Path) -> None:
    tomllib.loads(code)
    path = tmp_path / "block.toml"
    path.write_text(code)
    if "start" in tomllib.loads(code):
        load_target(path)
    else:
        load_scenario(path)


def _uncommented(text: str) -> list[str]:
    return [re.sub(r"\s+#.*$", "", line).strip() for line in text.splitlines() if not line.startswith("#")]


@pytest.mark.parametrize("where,code", _blocks("toml"), ids=lambda v: v if ":" in v else "")
def test_a_toml_block_that_names_a_shipped_file_says_what_it_holds(where: str, code: str) -> None:
    named = re.match(r"# (\S+\.toml)", code)
    if named is None or not (REPO / named.group(1)).is_file():
        return  # an example of the reader's own file
    assert _uncommented(code) == _uncommented((REPO / named.group(1)).read_text()), f"{where} drifted"


@pytest.mark.parametrize(
    "where,code",
    [b for b in _blocks("python") if "# the public API" not in b[1]],
    ids=lambda v: v if ":" in v else "",
)
def test_every_python_block_runs(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "langchain_core" in code:
        pytest.importorskip("langchain_core", reason="the langgraph extra is not installed")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, where, "exec"), {"__name__": "docs"})


LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    text = FENCE.sub("", path.read_text())
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", text, re.M)
    }


def test_every_link_lands_on_a_file_and_a_heading() -> None:
    broken = []
    for path in DOCS:
        for target in LINK.findall(FENCE.sub("", path.read_text())):
            if re.match(r"\w+://", target):
                continue
            file, _, anchor = target.partition("#")
            landing = (path.parent / file).resolve() if file else path
            if not landing.exists():
                broken.append(f"{path.relative_to(REPO)}: {target}")
            elif anchor and anchor not in _anchors(landing):
                broken.append(f"{path.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, broken


@pytest.mark.slow  # runs the agent through the doctor's worlds
def test_the_readme_first_run_works_as_written(tmp_path: Path) -> None:
    """The target file the README shows, saved as it says, passes ``chaos target check`` as it says."""
    (where, code), *_ = [(w, c) for w, c in _blocks("toml") if w.startswith("README.md")]
    name = re.match(r"# (\S+\.toml)", code)
    assert name, f"{where}: the README's target file names itself in its first line"
    (tmp_path / name.group(1)).write_text(code)
    line = next(
        line
        for _, block in _blocks("sh")
        for line in _shell_lines(block)
        if line.startswith("chaos target check")
    )
    argv = shlex.split(line, comments=True)
    done = subprocess.run(
        [sys.executable, "-m", "chaos", *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "usable: chaos sweep can drive this target" in done.stdout
