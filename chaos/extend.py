"""``chaos.extend``: every extension point of chaos, in one place (as pytest's hook specifications are).

The names an extender needs are exported here (``__all__``); everything else in
the package is the engine, internal, and may change between releases.

chaos is extended with plain Python objects passed to the API, or, for what the
command line must name (a fault, a protocol), with one module and one registry
line in the package. Each point below says what it is called with, when, and
what it may do.

``Judge``: another judge of one case's evidence
    ``Callable[[Evidence, Path], list[Check]]``, called once per case after the
    built-in checks, with the cycle's in-memory ``Evidence`` and the case's
    results folder; the checks it returns (id ``oracle-agrees``, a name of its
    own) join the verdict, and its failure key, before the verdict is saved. ``--oracle CMD`` is one: another reducer
    run on every crash prefix and final log (``chaos.mine.oracles.OtherOracle``).
    Pass judges to ``chaos.api.run(judges=...)`` or ``chaos.api.sweep(judges=...)``.

``AfterCase``: what to do with each verdict once judged
    ``Callable[[Verdict], object]``, called in the sweep's process once a case
    is judged and recorded; its return value is ignored. Mining new crash
    prefixes (``--mine``) is one. Pass to ``chaos.api.sweep(after=...)``.

``Pause``: a person's choice at a boundary
    ``Callable[[Paused], str]``, called with the agent frozen at its boundary
    (its workspace, its log so far, the oracle's current configuration);
    returns ``"kill"``, ``"continue"`` or ``"quit"``. ``chaos run --pause`` is
    one. Pass to ``chaos.api.run(pause=...)``.

``Fault``: one kind of trouble at a boundary
    A subclass of ``chaos.fault.Fault`` (where it lands, what the target must
    declare, what it arms in the world (a ``Misbehaviour`` the model server
    carries out), what it does at the boundary through the ``Stop``
    mechanisms, what a power cut keeps, whether it lands on a framework's
    store (``on_stores``), which checks it makes meaningful), registered in
    ``chaos.fault.FAULTS`` under its name, which is also its spelling in
    ``--fault NAME`` and ``fault = "NAME"``. What it keeps and does after its
    boundary is an ``Injection`` its ``stop`` returns: its own state, told of
    each ``Trap`` of the traced target (it may fail or shorten the call), each
    commit of the store (it may ``hold`` the next one), each tick of the phase
    loop, and its ``Landing`` record. The built-in faults use nothing else
    (``Failing`` is the disk faults' injection, ``FailingCalls`` what it fails;
    ``After`` acts once some seconds have passed: a grace period's end).
    ``tests/test_faults.py`` holds each registered fault to a shipped
    scenario, a bug it exposes, a check that catches it and a row in docs/crash-model.md.

``Protocol``: how the scripted model server speaks
    A subclass of ``chaos.world.protocols.Protocol`` (read a request's
    conversation; write one scripted ``Turn`` as an answer, plain or streamed;
    an error body; what an answer bills), registered in ``PROTOCOLS`` under the
    name a target's ``protocol`` names (and that name in
    ``chaos.scenario.target.PROTOCOL_NAMES``, which reads target files without the world).

``Store``: what a framework agent has made durable
    A subclass of ``chaos.store.Store``: the files that make up the store
    (``files``), how a commit shows at the tracer (``commit``: ``"sqlite"``
    or ``"line"``), and ``read(files) -> View`` (durable tool calls, their
    outputs, the final answer, a count of items), pure over a copy of the
    files' bytes; registered with ``chaos.store.register`` under the name a
    target's ``[store] kind`` names. Its ``saves`` (``Save``) name the calls
    where the framework begins a save off its main line, for
    ``--fault overtaken`` to hold. Nothing above ``chaos.store`` changes:
    ``tests/store_adapter.py`` adds one from outside the package, and the
    whole pipeline (run, sweep, explore, mining) runs on it. What a store's
    bytes hold is hostile: read it with ``json_value`` (bounded JSON) and
    ``pickled_value`` (a pickle read without running it: the classes of the
    modules named become ``Pickled``, any other makes chaos ``Blind``);
    raise ``Blind`` for what the framework could read and chaos cannot (no
    verdict, exit 2), ``ValueError`` for what the framework could not read
    either (a finding). ``SqliteStore`` reads a private copy of one SQLite
    database (``from_database``; ``rows`` counts what it holds), ``text_of``
    a message's text. The Google ADK and Microsoft Agent Framework adapters
    (``targets/frameworks/adk_store.py``, ``maf_store.py``) use nothing else.

``effect``: what a tool tells the ledger
    ``chaos.ledger.effect(name, *detail, call_id=...)``, called by a tool where
    it performs a real effect (a shell tool runs ``$CHAOS_EFFECT NAME``): the
    effect's start and end, the call id it runs for, and chaos's gates.

Checks: one concern, one module
    A module of ``chaos.check`` with ``CATALOG`` (check id -> what it
    guarantees), ``NEEDS`` (what it reads: the contract's ``"facts"``, a
    store's ``"view"``, or the ``"world"``) and ``judge(Evidence) -> list[Check]``, listed in
    ``chaos.check.CONCERNS`` in report order, causes first. Every check needs a
    row in the fail table (``tests/test_fail_table.py``) that makes it fail,
    and must hold for every legal variant (``tests/test_legal_variants.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from chaos.case.run import Judge
from chaos.case.verdict import Verdict
from chaos.check import CONCERNS
from chaos.check.base import Check
from chaos.cycle.drive import Pause, Paused
from chaos.cycle.evidence import Evidence
from chaos.fault import FAULTS, Arming, FailingCalls, Fault, Misbehaviour, Stop
from chaos.fault.base import After, Failing, Injection, Landing, Trap, WorldServers
from chaos.store import STORES, Call, Output, Save, Store, View, register
from chaos.store.base import text_of
from chaos.store.inert import Blind, Pickled, json_value, pickled_value
from chaos.store.sqlite import SqliteStore, rows
from chaos.world.protocols import PROTOCOLS, Protocol

AfterCase = Callable[[Verdict], object]

__all__ = [
    "CONCERNS",
    "FAULTS",
    "PROTOCOLS",
    "STORES",
    "After",
    "AfterCase",
    "Arming",
    "Blind",
    "Call",
    "Check",
    "Evidence",
    "Failing",
    "FailingCalls",
    "Fault",
    "Injection",
    "Judge",
    "Landing",
    "Misbehaviour",
    "Output",
    "Pause",
    "Paused",
    "Pickled",
    "Protocol",
    "Save",
    "SqliteStore",
    "Stop",
    "Store",
    "Trap",
    "View",
    "WorldServers",
    "json_value",
    "pickled_value",
    "register",
    "rows",
    "text_of",
]
