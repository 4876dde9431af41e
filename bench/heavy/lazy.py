"""The bundled reference agent as a newcomer writes one on an SDK (issue 55's held-out agent, our own
copy of its habits): it imports the ``anthropic`` and ``openai`` SDKs inside its model call, where they
are first needed, and ends with ``os._exit``, so no interpreter exit ever runs. A warm start must learn
what it loads as it loads it (``chaos.process.forkserver``); ``bench/warm.py --only lazy`` sweeps it
beside the lean reference agent."""

import os
import sys

from chaos.bundled.targets.reference import __main__ as reference
from chaos.bundled.targets.reference import provider

_send = provider._complete


def _complete(*args, **kwargs):  # type: ignore[no-untyped-def]
    import anthropic  # noqa: F401  (imported for its cost, where an SDK agent first needs it)
    import openai  # noqa: F401

    return _send(*args, **kwargs)


provider._complete = _complete
code = reference.main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
