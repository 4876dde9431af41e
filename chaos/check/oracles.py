"""Other judges of the same evidence: other implementations' reducers (``--oracle``; run by
``chaos.mine.oracles``) and any ``chaos.extend.Judge``, which reports under this concern's id with a name
of its own."""

from __future__ import annotations

from chaos.check.base import Check

NEEDS = "facts"  # the session contract's facts in its store (``chaos.check.check_all``)
CATALOG = {
    "oracle-agrees": "another implementation's reducer (--oracle) agrees on every crash prefix and final log",
}


def agrees(command: str, log: str, ok: bool, expected: str, got: str) -> Check:
    """The verdict on one log: ``expected`` is chaos's reduction, ``got`` the other reducer's."""
    return Check("oracle-agrees", f"oracle {command!r} agrees on {log}", ok, expected[:300], got[:300])
