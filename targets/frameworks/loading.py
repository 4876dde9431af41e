"""Loading the user's graph or agent by ``module:attr``, as a target file names it."""

from __future__ import annotations

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
