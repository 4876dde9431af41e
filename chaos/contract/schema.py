"""The JSON Schema of a session line, written from the reducer's own shapes, and schema validity of a log.

The contract ships its own JSON Schemas beside it; chaos writes its schema
from the checkers the reducer runs (``chaos.contract.shapes``), so the two
can be held against each other (``tests/test_schema.py`` does, on every
golden fixture) and a mined fixture's ``schemaValid`` is a real verdict of an
independent validator (``jsonschema``), not a constant.

A log is schema-valid when every committed, non-blank line (a CR before the
LF aside) is strict JSON and validates: the first as a header, every later
one as a transaction. Cross-line rules (sequence, references, transitions)
are the reducer's, not the schema's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from chaos.contract import shapes
from chaos.contract.framing import FramingError, committed_lines, parse_json


def _fact() -> dict[str, Any]:
    entry = shapes.entry_fact.to_schema()
    entry["properties"]["entry"] = {"oneOf": [s.to_schema() for s in shapes.ENTRY_SHAPES]}
    # A usage fact's single owner (attemptId or toolStartedId) is the reducer's rule, as in the contract.
    variants = [entry, shapes.record_fact.to_schema(), shapes.usage_fact.to_schema()]
    for variant, kind in zip(variants, ("entry", "record", "usage"), strict=True):
        variant["properties"]["kind"] = {"const": kind}
    return {"oneOf": variants}


@cache
def session_schema() -> dict[str, Any]:
    """``$defs.header`` and ``$defs.transaction``: what line 1 and every later line must be."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tiny-agent session v2 lines, as chaos reads them",
        "$defs": {
            "header": shapes.header_shape.to_schema(),
            "fact": _fact(),
            "transaction": {
                "oneOf": [
                    {"$ref": "#/$defs/fact"},
                    {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/fact"}},
                ]
            },
        },
    }


def _validators(schema: dict[str, Any]) -> tuple[Draft202012Validator, Draft202012Validator]:
    header, transaction = (
        Draft202012Validator({**schema, "$ref": f"#/$defs/{p}"}) for p in ("header", "transaction")
    )
    return header, transaction


_OURS = cache(lambda: _validators(session_schema()))


def lines_valid(data: bytes, schema: dict[str, Any] | None = None) -> list[bool]:
    """Per committed non-blank line: is it strict JSON that validates (header first, then transactions)?

    ``schema`` is another schema with ``$defs.header`` and ``$defs.transaction`` (the contract's own);
    by default chaos's.
    """
    header, transaction = _OURS() if schema is None else _validators(schema)
    verdicts = []
    for number, line in enumerate(committed_lines(data)):
        line = line.removesuffix(b"\r")
        if not line.strip(b" \t"):
            continue
        try:
            value = parse_json(line)
        except FramingError:
            verdicts.append(False)
            continue
        verdicts.append((header if number == 0 else transaction).is_valid(value))
    return verdicts


def schema_valid(data: bytes) -> bool:
    """The golden manifest's ``schemaValid``: every committed line is a schema-valid JSON line."""
    return all(lines_valid(data))
