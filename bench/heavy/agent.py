"""The bundled reference agent behind the imports of a real SDK: what an agent written on one pays at
every start of every process (``anthropic`` and ``openai`` take seconds on a busy machine). chaos's
warm-start benchmark (``bench/warm.py``) sweeps it cold and warm."""

import runpy

import anthropic  # noqa: F401  (imported for its cost, as an SDK agent imports it)
import openai  # noqa: F401

runpy.run_module("chaos.bundled.targets.reference", run_name="__main__", alter_sys=True)
