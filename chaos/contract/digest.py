"""Configuration identity (contract section 5): RFC 8785 (JCS) bytes, then SHA-256.

JCS sorts keys by UTF-16 code units, which differs from Python's code-point
order for astral characters; rfc8785 implements the RFC exactly, so ``digest``
uses it. The reducer digests only values from a closed domain (configuration
snapshots and messages: strings, null, arrays and objects whose keys are fixed
ASCII names); there orjson's sorted output is byte-identical to JCS and ~40x
faster, so ``digest_closed`` uses it. ``tests/test_digest.py`` pins that
equivalence with Hypothesis.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import rfc8785


def canonical(value: Any) -> bytes:
    """RFC 8785 bytes of any JSON value."""
    return rfc8785.dumps(value)


def digest(value: Any) -> str:
    """``"sha256:" + hex(SHA-256(JCS(value)))``, the digest every contract field uses."""
    return "sha256:" + hashlib.sha256(canonical(value)).hexdigest()


def canonical_closed(value: Any) -> bytes:
    """JCS bytes of a value holding no numbers or booleans and only ASCII object keys."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def digest_closed(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_closed(value)).hexdigest()
