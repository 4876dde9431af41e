"""Stores a hostile agent wrote (issue 54): reading them runs nothing, and every read is bounded.

Each test names the numbered point of the issue it holds; each failed on the main branch before it. They
start no agent: the hostile bytes are written here, as an agent would leave them, and read as chaos reads a
crash prefix.
"""

from __future__ import annotations

import json
import pickle
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chaos.cli import main
from chaos.store import store_named
from tests.conftest import needs_modules

langgraph = needs_modules("langgraph.checkpoint.sqlite", "ormsgpack")


def _saver_database(path: Path) -> None:
    """A real SqliteSaver database holding one ordinary checkpoint of a thread."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    connection = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(connection)
    checkpoint = empty_checkpoint()
    asked = AIMessage("", tool_calls=[{"id": "call_1_1", "name": "deploy", "args": {"service": "web"}}])
    checkpoint["channel_values"] = {"messages": [HumanMessage("Deploy web."), asked]}
    saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {}, {})
    connection.close()


def _plant(path: Path, kind: str, blob: bytes) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE checkpoints SET type = ?, checkpoint = ?", (kind, blob))


def _os_system(marker: Path) -> list[tuple[str, bytes]]:
    """A checkpoint that names ``os.system``, in each of the forms LangGraph's reader would call it."""
    import ormsgpack

    command = f"touch {marker}"
    ext = [
        ormsgpack.Ext(0, ormsgpack.packb(["os", "system", command])),  # constructor, one argument
        ormsgpack.Ext(1, ormsgpack.packb(["os", "system", [command]])),  # constructor, positional
        ormsgpack.Ext(3, ormsgpack.packb(["os", "system", command, "__call__"])),  # a method
        ormsgpack.Ext(5, ormsgpack.packb(["subprocess", "Popen", {"args": command, "shell": True}, "x"])),
    ]
    forms = [("msgpack", ormsgpack.packb({"v": 4, "channel_values": {"messages": [e]}})) for e in ext]
    revived = {"lc": 2, "type": "constructor", "id": ["os", "system"], "args": [command]}
    forms.append(("json", json.dumps({"v": 4, "channel_values": {"messages": [revived]}}).encode()))
    forms.append(("pickle", pickle.dumps({"v": 4, "channel_values": {}})))
    return forms


def _read(database: Path) -> Any:
    store = store_named("langgraph")
    return store.read(store.snapshot(database.parent, database.name))


@langgraph
def test_1_a_hostile_checkpoint_runs_nothing_and_makes_chaos_blind(tmp_path: Path) -> None:
    """Point 1: LangGraph's serializer imported and called any ``module.attr(arg)`` a checkpoint named; a
    checkpoint written by a hostile agent ran ``os.system`` inside chaos. Now: nothing runs, and the store
    reads as blind (exit 2) naming the type."""
    marker = tmp_path / "ran"
    database = tmp_path / "graph.db"
    _saver_database(database)
    good = _read(database)
    assert (
        good.blind is None and [c.id for c in good.calls] == ["call_1_1"] and good.inputs == ("Deploy web.",)
    )
    for kind, blob in _os_system(marker):
        _plant(database, kind, blob)
        view = _read(database)
        assert not marker.exists(), kind
        assert view.blind is not None, kind
        assert "os.system" in view.blind or "subprocess.Popen" in view.blind or "pickle" in view.blind, view


@langgraph
def test_1_the_postgres_layout_is_read_the_same_way(tmp_path: Path) -> None:
    """Point 1, PostgreSQL: the saver's blobs and its JSON checkpoint decoded by chaos, not LangGraph."""
    import ormsgpack

    from chaos.store.langgraph import LangGraphPostgresStore

    marker = tmp_path / "ran"
    connection = sqlite3.connect(":memory:")
    connection.executescript(
        "CREATE TABLE checkpoints (thread_id, checkpoint_ns, checkpoint_id, checkpoint);"
        "CREATE TABLE checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob);"
        "CREATE TABLE checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_path, task_id, idx,"
        " type, blob);"
    )
    checkpoint = {"v": 4, "channel_values": {}, "channel_versions": {"messages": "1"}}
    connection.execute("INSERT INTO checkpoints VALUES ('t', '', '1', ?)", (json.dumps(checkpoint),))
    hostile = ormsgpack.packb([ormsgpack.Ext(0, ormsgpack.packb(["os", "system", f"touch {marker}"]))])
    connection.execute(
        "INSERT INTO checkpoint_blobs VALUES ('t', '', 'messages', '1', 'msgpack', ?)", (hostile,)
    )
    from chaos.store.inert import Blind

    with pytest.raises(Blind, match=r"os\.system"):
        LangGraphPostgresStore().from_database(connection)
    assert not marker.exists()


@langgraph
def test_1_fixtures_check_of_a_hostile_corpus_runs_nothing_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Point 1: a data-only fixture corpus ran the same code under ``chaos fixtures check`` (which then
    reported "1 of 1 still match")."""
    marker = tmp_path / "ran"
    corpus = tmp_path / "corpus"
    files = corpus / "store-fixtures" / "hostile"
    files.mkdir(parents=True)
    _saver_database(files / "graph.db")
    kind, blob = _os_system(marker)[0]
    _plant(files / "graph.db", kind, blob)
    view = {"calls": [], "outputs": [], "final": None}
    (corpus / "store-fixtures" / "hostile.expected.json").write_text(
        json.dumps({"store": "langgraph", "view": view})
    )
    manifest = {"fixtures": [{"name": "hostile", "files": "hostile", "expected": "hostile.expected.json"}]}
    (corpus / "store-fixtures" / "manifest.json").write_text(json.dumps(manifest))
    assert main(["fixtures", "check", str(corpus)]) == 2
    assert not marker.exists()
    assert "os.system" in capsys.readouterr().err


def _dbos_database(path: Path, outputs: list[str]) -> dict[str, bytes]:
    """A DBOS system database holding one workflow whose recorded step outputs are ``outputs`` (pickles,
    base64, as DBOS writes them)."""
    with sqlite3.connect(path) as connection:
        connection.executescript(
            "CREATE TABLE workflow_status (workflow_uuid, status, serialization);"
            "CREATE TABLE workflow_input (workflow_uuid, inputs);"
            "CREATE TABLE workflow_output (workflow_uuid, output);"
            "CREATE TABLE operation_outputs (workflow_uuid, function_id, output, serialization);"
            "INSERT INTO workflow_status VALUES ('w', 'PENDING', NULL);"
        )
        connection.executemany(
            "INSERT INTO operation_outputs VALUES ('w', ?, ?, NULL)", list(enumerate(outputs))
        )
    return {path.name: path.read_bytes()}


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def _shared_references(levels: int) -> bytes:
    """A pickle of a list holding the list before it twice, ``levels`` deep: a few hundred bytes whose
    text is 2**levels items long."""
    ops = b"\x80\x02]q\x00"
    for level in range(1, levels):
        ops += b"](h" + bytes([level - 1]) + b"h" + bytes([level - 1]) + b"eq" + bytes([level])
    return ops + b"."


HOSTILE_PICKLES = {
    "empty": (b"", "unreadable"),
    "deeply nested": (b"\x80\x02" + b"]" * 100_000 + b"a" * 99_999 + b".", "blind"),
    "a huge length": (b"\x80\x04\x8e" + (1 << 62).to_bytes(8, "little") + b"x.", "blind"),
    "shared references": (_shared_references(200), "blind"),
}


@pytest.mark.parametrize("name", list(HOSTILE_PICKLES))
def test_4_5_a_hostile_pickle_is_a_refusal_or_a_finding_and_costs_little(name: str, tmp_path: Path) -> None:
    """Points 4 and 5: an empty, deeply nested or huge-length pickle crashed chaos (exit 3); a 1 kB pickle
    of shared references grew chaos by 13 MB/s without end, deaf to SIGINT. Each is now read within
    bounds: unreadable (a finding: the agent's store is damaged) or blind (exit 2: beyond what chaos
    reads), and the read returns."""
    data, expected = HOSTILE_PICKLES[name]
    view = store_named("dbos").read(_dbos_database(tmp_path / "dbos.sqlite", [_b64(data)]))
    assert (view.unreadable is not None, view.blind is not None) == (
        expected == "unreadable",
        expected == "blind",
    ), view


@pytest.mark.parametrize(
    "row, expected",
    [("[" * 100_000 + "]" * 100_000, "blind"), ("[1, 2]", "unreadable"), ('"text"', "unreadable")],
    ids=["deeply nested", "a list", "a string"],
)
def test_5_a_hostile_agents_sdk_row_is_a_refusal_or_a_finding(
    row: str, expected: str, tmp_path: Path
) -> None:
    """Point 5: a deeply nested or non-object Agents SDK row crashed chaos (exit 3)."""
    path = tmp_path / "session.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, message_data TEXT)")
        connection.execute("INSERT INTO agent_messages (message_data) VALUES (?)", (row,))
    view = store_named("openai-agents").read({"session.db": path.read_bytes()})
    assert (view.unreadable is not None, view.blind is not None) == (
        expected == "unreadable",
        expected == "blind",
    ), view


def test_4_5_a_sparse_terabyte_state_file_costs_a_bounded_read_and_makes_chaos_blind(tmp_path: Path) -> None:
    """Points 4 and 5: a sparse 1 GiB store file cost 5.5 GB of memory and 1.1 GB of results; a 1 TiB
    sparse state file crashed chaos. A store file is copied up to a bound, and one larger is named."""
    from chaos.store.base import MAX_FILE

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with (workspace / "run-state.json").open("wb") as sparse:
        sparse.truncate(1 << 40)
    store = store_named("openai-agents")
    files = store.snapshot(workspace, "session.db", "run-state.json")
    assert len(files["run-state.json"]) == MAX_FILE + 1
    view = store.read(files)
    assert view.blind is not None and "run-state.json is larger than" in view.blind


def test_9_a_store_glob_does_not_follow_a_link_out_of_the_workspace(tmp_path: Path) -> None:
    """Point 9: a ``[store] state`` or ``path`` glob followed a symlink out of the workspace and copied the
    host file into the results."""
    host = tmp_path / "host-secret.json"
    host.write_text('{"host": "only"}')
    workspace = tmp_path / "workspace"
    (workspace / "approvals").mkdir(parents=True)
    (workspace / "approvals" / "run.json").symlink_to(host)
    (workspace / "state.db").symlink_to(host)
    (workspace / "approvals" / "own.json").write_text("{}")
    store = store_named("openai-agents")
    assert sorted(store.snapshot(workspace, "state.db", "approvals/*.json")) == ["approvals/own.json"]
    assert store_named("langgraph").snapshot(workspace, "*.db") == {}


def _split_secret_database(path: Path, secret: str) -> None:
    """A database (WAL mode, checkpointed) holding ``secret`` in a long value, placed where SQLite splits
    the value across an overflow page so that its bytes never hold the secret whole."""
    for offset in range(0, 4000, 8):  # (the value's length fixed: where SQLite splits it stays put)
        path.unlink(missing_ok=True)
        with sqlite3.connect(path) as connection:
            connection.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)")
            connection.execute(
                "INSERT INTO messages (body) VALUES (?)", ("x" * offset + secret + "y" * (5000 - offset),)
            )
        if secret.encode() not in path.read_bytes():
            return
    raise AssertionError("no offset splits the secret")


def test_6_a_secret_sqlite_splits_across_overflow_pages_is_scrubbed(tmp_path: Path) -> None:
    """Point 6: a ``--target-env`` value that SQLite split across overflow pages was not scrubbed from a saved
    database (read back whole with sqlite3). The rows are scrubbed now, and the database rewritten."""
    from chaos.secrets import register_env, scrub_store

    secret = "sk-overflow-0123456789abcdef-planted"
    register_env({"OVERFLOW_API_KEY": secret})
    path = tmp_path / "state.db"
    _split_secret_database(path, secret)
    saved = scrub_store({"state.db": path.read_bytes()})
    assert list(saved) == ["state.db"] and secret.encode() not in saved["state.db"]
    copy = tmp_path / "saved.db"
    copy.write_bytes(saved["state.db"])
    with sqlite3.connect(copy) as connection:
        (body,) = connection.execute("SELECT body FROM messages").fetchone()
    assert secret not in body and "${OVERFLOW_API_KEY}" in body


def test_6_a_database_without_a_secret_is_kept_byte_for_byte_with_its_wal(tmp_path: Path) -> None:
    """Point 6: scrubbing rewrote a WAL's bytes, which then failed their checksums: the saved WAL read as
    nothing durable. A database that holds no secret is kept as it was, its WAL with it."""
    from chaos.secrets import scrub_store

    path = tmp_path / "state.db"
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA wal_autocheckpoint = 0")
    connection.execute("CREATE TABLE t (v TEXT)")
    connection.execute("INSERT INTO t VALUES ('Deploy web to production.')")
    connection.commit()
    files = {"state.db": path.read_bytes(), "state.db-wal": Path(f"{path}-wal").read_bytes()}
    connection.close()
    assert files["state.db-wal"] and scrub_store(files) == files


def test_6_a_configuration_value_is_not_taken_for_a_secret() -> None:
    """Point 6: ``APP_STAGE=production`` turned the scenario's prompt into ``Deploy web to ${APP_STAGE}.``,
    so the reproduce command ran another scenario. Only values named as secrets, or long and opaque, are."""
    from chaos.secrets import looks_secret, register_env, scrub_text

    register_env({"APP_STAGE": "production", "APP_REGION": "europe-west", "DEPLOY_TOKEN": "tok-42abc"})
    assert (
        scrub_text("Deploy web to production in europe-west.") == "Deploy web to production in europe-west."
    )
    assert scrub_text("token tok-42abc") == "token ${DEPLOY_TOKEN}"
    assert looks_secret("NOTE", "4f1d0c9a-opaque-credential") and not looks_secret(
        "NOTE", "a long plain sentence"
    )
