"""What the framework drivers share: their command line, and loading the user's graph or agent by
``module:attr``, as a target file names it."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any


def load(spec: str) -> Any:
    """The object ``spec`` (``package.module:attr``) names; the working directory is importable, so a
    user's ``myagent.py`` beside the target file's workspace is found."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise SystemExit(f"--app {spec!r}: write it as module:attr, e.g. myproject.graph:builder")
    sys.path.insert(0, ".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise SystemExit(f"--app {spec!r}: {err}") from None


def parser(prog: str, app: str, db: str, session: str) -> argparse.ArgumentParser:
    """A driver's options: the prompt (start) or ``--resume``, the app, its database, its session flag."""
    options = argparse.ArgumentParser(prog=prog)
    options.add_argument("prompt", nargs="?")
    options.add_argument("--app", default=app)
    options.add_argument("--db", default=db)
    options.add_argument(session, default="chaos-session")
    options.add_argument("--resume", action="store_true")
    return options
