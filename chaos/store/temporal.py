"""A Temporal workflow's event history as a store: what the world's Temporal server made durable.

Temporal makes a workflow durable as events in its history: the workflow started with its input, each
activity scheduled, completed with its result, and the workflow completed with its own. After a worker
dies, a new worker replays the history and goes on; a completed activity is not run again, one in
flight when its worker died runs again (at least once, the same activity id). So a call is durable
once a completed activity's result holds it, and its output once a completed activity's result answers
it: activities are read as chat messages in OpenAI's format, as DBOS's steps are (``chaos.store.dbos``):
a model activity's assistant message holds calls, a tool activity's tool message answers one. The run's
input is the workflow's, its answer the workflow's result once it completed.

chaos reads the histories from the server with Temporal's own client (``temporalio``), never by running
the workflow's code, and keeps them as one JSON document (the store's ``path``: each workflow's id and
its history as Temporal's JSON writes it), read again later without a server. Payloads are decoded
only where their encoding is ``json/plain`` (Temporal's default converter for plain values); another
(protobuf, a codec's encryption) makes chaos blind. The server is the world's (``chaos.world.temporal``):
its address is in the sandbox beside the workspace (``SERVER_DIR``). ``pip install 'durable-chaos[temporal]'``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from pathlib import Path
from typing import Any, ClassVar

from chaos.store.base import MAX_FILE, Store, View, oversized, register, server_folder
from chaos.store.dbos import chat_steps
from chaos.store.inert import Blind, json_value
from chaos.store.sqlite import unreadable

SERVER_DIR = "temporal"  # the server's folder in the sandbox, beside the workspace: its database, its address
ADDRESS = "address"  # the file in it that names where the server listens (host:port)
NAMESPACE = "default"
MAX_WORKFLOWS = 100  # workflows of one case's server read
READ_TIMEOUT = 10.0  # seconds a snapshot of every history may take
JSON_PLAIN = "json/plain"
NULL = "binary/null"


def server_dir(workspace: Path) -> Path:
    return server_folder(workspace, SERVER_DIR)


# What a copy keeps of each event: its kind and, for the kinds the view reads, the payloads it reads. The
# rest (a worker's identity, pid@hostname; times; task queues) is the machine's, never written to results.
READ = {
    "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED": ("workflowExecutionStartedEventAttributes", "input"),
    "EVENT_TYPE_ACTIVITY_TASK_COMPLETED": ("activityTaskCompletedEventAttributes", "result"),
    "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED": ("workflowExecutionCompletedEventAttributes", "result"),
}


# The failures a copy keeps: a workflow task's, and the workflow's own (its cause and message)
FAILED = {
    "EVENT_TYPE_WORKFLOW_TASK_FAILED": "workflowTaskFailedEventAttributes",
    "EVENT_TYPE_WORKFLOW_EXECUTION_FAILED": "workflowExecutionFailedEventAttributes",
}
NONDETERMINISM = ("TMPRL1100", "Nondeterminism", "NON_DETERMINISTIC")  # how Temporal names one
MAX_MESSAGE = 500  # characters of a failure's message kept


def _kept(event: dict[str, Any]) -> dict[str, Any]:
    kind = str(event.get("eventType", ""))
    out: dict[str, Any] = {"eventId": event.get("eventId"), "eventType": kind}
    if kind in FAILED:
        attributes = event.get(FAILED[kind]) or {}
        message = str((attributes.get("failure") or {}).get("message", ""))[:MAX_MESSAGE]
        out[FAILED[kind]] = {"cause": str(attributes.get("cause", "")), "failure": {"message": message}}
    if kind in READ:
        attributes, field = READ[kind]
        payloads = ((event.get(attributes) or {}).get(field) or {}).get("payloads") or []
        kept = [
            {
                "metadata": {"encoding": (p.get("metadata") or {}).get("encoding", "")},
                "data": p.get("data", ""),
            }
            for p in payloads
        ]
        out[attributes] = {field: {"payloads": kept}}
    return out


async def _histories(address: str) -> list[dict[str, Any]]:
    from temporalio.client import Client

    client = await Client.connect(address, namespace=NAMESPACE)
    out: list[dict[str, Any]] = []
    async for found in client.list_workflows(limit=MAX_WORKFLOWS):
        history = await client.get_workflow_handle(found.id, run_id=found.run_id).fetch_history()
        events = [_kept(event) for event in history.to_json_dict().get("events", [])]
        out.append({"id": found.id, "history": {"events": events}})
    return out


def payload(data: Any, what: str) -> Any:
    """One of Temporal's payloads as a plain value: JSON (``json/plain``), None (``binary/null``); any
    other encoding makes chaos blind."""
    if not isinstance(data, dict):
        raise ValueError(f"{what}: a payload that is no object")
    try:
        encoding = base64.b64decode(str((data.get("metadata") or {}).get("encoding", ""))).decode()
        raw = base64.b64decode(str(data.get("data", "")))
    except (binascii.Error, UnicodeDecodeError) as err:
        raise ValueError(f"{what}: a payload that is no base64: {err}") from None
    if encoding == NULL:
        return None
    if encoding != JSON_PLAIN:
        raise Blind(
            f"Temporal kept {what} encoded as {encoding!r}, which chaos does not decode: let activities "
            "and workflows take and return plain values (Temporal's default JSON converter), no codec"
        )
    return json_value(raw, what)


def _payloads(container: dict[str, Any], what: str) -> list[Any]:
    return [payload(p, what) for p in container["payloads"]]


class TemporalStore(Store):
    name = "temporal"
    commit: ClassVar[str] = "wire"
    server: ClassVar[str] = "temporal"
    server_placeholder: ClassVar[str] = "temporal_address"
    description = "a Temporal server's workflow histories: completed activities' results as chat messages"

    def files(self, workspace: Path, path: str, state: str | None = None) -> list[Path]:
        return []  # nothing of it is a file of the agent's machine: a power cut there keeps it all

    def snapshot(self, workspace: Path, path: str, state: str | None = None) -> dict[str, bytes]:
        try:
            address = (server_dir(workspace) / ADDRESS).read_text()
        except FileNotFoundError:
            return {}
        histories = asyncio.run(asyncio.wait_for(_histories(address), READ_TIMEOUT))
        if not histories:
            return {}
        return {path: json.dumps({"workflows": histories}, sort_keys=True).encode()[: MAX_FILE + 1]}

    def read(self, files: dict[str, bytes]) -> View:
        """The histories' view; a copy too large, or holding a payload chaos does not decode, makes chaos
        blind; one that is not what ``snapshot`` writes is unreadable (a copy is a file: a fixture)."""
        if not files:
            return View(replays=())
        if (large := oversized(files)) is not None:
            return View(blind=large)
        try:
            return _view(json_value(next(iter(files.values())), "the workflow histories"))
        except Blind as err:
            return View(blind=str(err))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            return View(unreadable=unreadable(err))


def _view(document: Any) -> View:
    """What the histories (``snapshot``'s document) make durable: the events ``_kept`` keeps, read."""
    read: dict[str, list[Any]] = {kind: [] for kind in READ}
    replays: list[str] = []
    items = 0
    for workflow in document["workflows"]:
        events = workflow["history"]["events"]
        items += len(events)
        for event in events:
            kind = event["eventType"]
            if kind in READ:
                attributes, field = READ[kind]
                read[kind].append(_payloads(event[attributes][field], f"{kind}'s {field}"))
            elif kind in FAILED:
                failed = event[FAILED[kind]]
                message = str(failed["failure"]["message"])[:MAX_MESSAGE]
                if any(name in f"{failed['cause']} {message}" for name in NONDETERMINISM):
                    replays.append(message)
    inputs = [
        v for given in read["EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"] for v in given if isinstance(v, str)
    ]
    calls, outputs = chat_steps(v for done in read["EVENT_TYPE_ACTIVITY_TASK_COMPLETED"] for v in done)
    answers = read["EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"]
    final = (str(answers[-1][0]) if answers[-1] else "") if answers else None
    return View(
        tuple(calls.values()),
        tuple(outputs),
        final,
        items,
        started=bool(inputs),
        inputs=tuple(inputs),
        replays=tuple(replays),
    )


TEMPORAL_STORE = register(TemporalStore())
