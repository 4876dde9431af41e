"""Pydantic AI's durable agent on DBOS as a store: the steps its ``DBOSDurability`` records.

An agent made durable this way (``Agent(..., capabilities=[DBOSDurability()])``, run inside the app's
own ``@DBOS.workflow``) records each model request as a DBOS step named ``AGENT__model.request`` (or
``.request_stream``), whose output is the model's ``ModelResponse``: its ``ToolCallPart`` parts are the
calls, durable before any of them runs. A tool with effects is a ``@DBOS.step`` of the app's own, recorded
under the tool's name with what it returned (no call id: the step answers the call it was started for,
the tools of one answer being started in the answer's order, so the step numbered k after a model step
answers its k-th call, else that turn's first unanswered call of the tool's name). A tool that is no step
records nothing: its output is never durable and recovery runs it again. DBOS pickles the response;
chaos reads Pydantic AI's message classes from the pickle without importing them (``Pickled``), and a
tool's output as plain values only. ``pip install 'durable-chaos[pydantic-ai]'``.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from chaos.store.base import Call, Output, Save, register
from chaos.store.dbos import DbosStore, decoded
from chaos.store.inert import Blind, Pickled
from chaos.store.postgres import ServerStore

# What a model response holds: Pydantic AI's message classes, and the timestamps and time zones in them
READABLE = ("pydantic_ai", "pydantic_core", "datetime")
MODEL_STEPS = ("__model.request", "__model.request_stream")


def _calls(response: Any) -> list[Call]:
    """The tool calls a recorded ``ModelResponse`` holds."""
    if not isinstance(response, Pickled) or response.qualname != "ModelResponse":
        what = (
            f"{response.module}.{response.qualname}"
            if isinstance(response, Pickled)
            else type(response).__name__
        )
        raise Blind(f"a Pydantic AI model step recorded a {what}, not the ModelResponse chaos reads")
    calls = []
    for part in response.fields().get("parts") or []:
        if isinstance(part, Pickled) and part.qualname == "ToolCallPart":
            found = part.fields()
            arguments = found.get("args")
            text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
            calls.append(Call(str(found["tool_call_id"]), str(found["tool_name"]), text))
    return calls


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, default=str)


def _answered(turn: list[Call], offset: int, tool: str, answered: set[str]) -> Call | None:
    """The call of this turn a step of ``tool``, ``offset`` steps after the model's, answers."""
    if 0 <= offset < len(turn) and turn[offset].name == tool and turn[offset].id not in answered:
        return turn[offset]
    return next((c for c in turn if c.name == tool and c.id not in answered), None)


# Where Pydantic AI begins a tool's call (its function schema calls the tool, a ``@DBOS.step``, which takes
# the workflow's next step number as it starts), keyed by the call's id. Its parallel modes start the calls
# of one answer at once; DBOS hands a recovered step the output recorded under its number, so the numbers
# must fall as they fell before the crash (dbos-transact-py#688: the same, across two steps' names).
CALLS = (
    Save(
        "pydantic_ai._function_schema:FunctionSchema.call",
        "call",
        ("tool_call_id",),
        arg=1,
        passes=True,
        promise="DBOS numbers a workflow's steps as they start and answers a recovered step with its number's output",
    ),
)


class PydanticAiDbosStore(DbosStore):
    name = "pydantic-ai-dbos"
    description = "Pydantic AI's DBOS-durable agent on a SQLite system database: its recorded steps"
    saves = CALLS

    def steps(self, connection: sqlite3.Connection) -> tuple[dict[str, Call], list[Output]]:
        calls: dict[str, Call] = {}
        outputs: list[Output] = []
        answered: set[str] = set()
        turn: list[Call] = []
        workflow, base = None, 0
        rows = connection.execute(
            "SELECT workflow_uuid, function_id, function_name, output, error, serialization "
            "FROM operation_outputs ORDER BY workflow_uuid, function_id"
        ).fetchall()
        for uuid, number, name, output, error, serialization in rows:
            if uuid != workflow:
                workflow, turn = uuid, []
            if str(name).endswith(MODEL_STEPS):  # a request that failed (its error recorded) made no calls
                failed = output is None and error is not None
                turn = [] if failed else _calls(decoded(output, serialization, READABLE))
                base = int(number)
                calls.update((c.id, c) for c in turn if c.id not in calls)
            elif (answers := _answered(turn, int(number) - base - 1, str(name), answered)) is not None:
                answered.add(answers.id)
                text = (
                    "the tool raised" if output is None and error else _text(decoded(output, serialization))
                )
                outputs.append(Output(answers.id, text))
        return calls, outputs


class PydanticAiDbosPostgresStore(ServerStore, PydanticAiDbosStore):
    """The same steps on a PostgreSQL system database (the ``dbos`` schema of the world's server)."""

    name = "pydantic-ai-dbos-postgres"
    description = "Pydantic AI's DBOS-durable agent on the world's PostgreSQL server: its recorded steps"


register(PydanticAiDbosStore())
register(PydanticAiDbosPostgresStore())
