"""Headless Chromium for the HTML report tests (Debian's chromium; .ci/run installs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _flags(profile: Path) -> list[str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
    flags += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
    return [*flags, f"--user-data-dir={profile}"]


def require_chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("CHAOS_REQUIRE_BROWSER") == "1":
            pytest.fail("CHAOS_REQUIRE_BROWSER=1 but no chromium on PATH (.ci/run installs it)")
        pytest.skip("no chromium on PATH")
    return CHROMIUM


def dom(page: Path, profile: Path) -> str:
    """The page's DOM after Chromium loaded and rendered it."""
    argv = [require_chromium(), *_flags(profile), "--dump-dom", page.resolve().as_uri()]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout


def screenshot(page: Path, profile: Path, shot: Path) -> None:
    argv = [require_chromium(), *_flags(profile), f"--screenshot={shot}", "--window-size=1400,1000"]
    subprocess.run([*argv, page.resolve().as_uri()], capture_output=True, timeout=120)
