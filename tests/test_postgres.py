"""Stores on a real PostgreSQL server: the world's server, the wire relay that sees each commit, and the
framework targets on it (issue: the stores production agents run on).

The relay's reading of the server's messages is pure and tested on bytes; everything else runs a real
server (Debian's binaries) with psycopg, the official driver. Without the binaries or psycopg these tests
skip, unless CHAOS_REQUIRE_POSTGRES=1 (CI installs both) makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from chaos import api
from chaos.cli import main
from chaos.process.ptrace import default_signals
from chaos.scenario.model import Boundary, Strike
from chaos.scenario.target import load_target
from chaos.store import store_named
from chaos.store.postgres import server_dir
from chaos.world import postgres
from chaos.world.pgwire import Commits
from chaos.world.services import open_world
from tests.conftest import REPO, needs_modules, needs_ptrace

ONE = REPO / "scenarios" / "frameworks" / "deploy-one-service.toml"
LANGGRAPH = REPO / "targets" / "langgraph-postgres.toml"
DBOS = REPO / "targets" / "dbos-postgres.toml"
PYDANTIC_AI = REPO / "targets" / "pydantic-ai-dbos-postgres.toml"


def _usable() -> str | None:
    try:
        postgres.binaries()
    except Exception as err:
        return str(err)
    try:
        import langgraph.checkpoint.postgres  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError as err:
        return f"pip install 'durable-chaos[postgres]' ({err})"
    return None


_WHY = _usable()
if _WHY and os.environ.get("CHAOS_REQUIRE_POSTGRES") == "1":
    pytest.fail(f"CHAOS_REQUIRE_POSTGRES=1 but {_WHY}", pytrace=False)
needs_postgres = pytest.mark.skipif(bool(_WHY), reason=_WHY or "")


# -- the relay's reading, on bytes -------------------------------------------------------------------------
def _message(kind: str, body: bytes) -> bytes:
    return kind.encode() + struct.pack("!I", len(body) + 4) + body


def _complete(tag: str) -> bytes:
    return _message("C", tag.encode() + b"\0")


def _ready(status: str) -> bytes:
    return _message("Z", status.encode())


ROW = _message("D", b"\0\1\0\0\0\1x")


BEGIN = [_complete("BEGIN"), _ready("T")]
STREAMS = {  # the stream, its commits, and its writes answered inside a transaction still open
    "autocommit write": ([_complete("INSERT 0 1"), _ready("I")], 1, 0),
    "transaction of two writes": (
        [
            *BEGIN,
            _complete("INSERT 0 1"),
            _ready("T"),
            _complete("UPDATE 2"),
            _ready("T"),
            _complete("COMMIT"),
            _ready("I"),
        ],
        1,
        2,
    ),
    "transaction that only read": (
        [*BEGIN, ROW, _complete("SELECT 1"), _ready("T"), _complete("COMMIT"), _ready("I")],
        0,
        0,
    ),
    "rolled back": ([*BEGIN, _complete("INSERT 0 1"), _ready("T"), _complete("ROLLBACK"), _ready("I")], 0, 1),
    "failed": ([_complete("INSERT 0 1"), _ready("E"), _complete("ROLLBACK"), _ready("I")], 0, 0),
    "two statements of DDL": (
        [_complete("CREATE TABLE"), _ready("I"), _complete("CREATE INDEX"), _ready("I")],
        2,
        0,
    ),
}


@pytest.mark.parametrize("name", list(STREAMS))
def test_the_relay_counts_the_transactions_that_wrote_and_committed(name: str) -> None:
    """And each write answered inside a transaction still open (a ``write`` boundary: the transaction
    lost there is never committed), its ReadyForQuery a piece of its own, held as a commit's answer is."""
    stream, commits, writes = STREAMS[name]
    pieces = Commits().feed(b"".join(stream))
    assert sum(p.commit for p in pieces) == commits
    assert [p.data for p in pieces if p.write] == [_ready("T")] * writes
    assert b"".join(p.data for p in pieces) == b"".join(stream)  # nothing lost, nothing reordered


def test_the_answer_to_a_commit_is_held_whole_even_when_it_arrives_byte_by_byte() -> None:
    """The ``COMMIT``'s CommandComplete and its ReadyForQuery go on together, after the decision: a client
    that read the first would know its commit happened."""
    stream = _complete("BEGIN") + _ready("T") + _complete("INSERT 0 1") + _ready("T") + _complete("COMMIT")
    stream += _ready("I") + ROW
    relay, passed = Commits(), []
    for byte in stream:
        passed += relay.feed(bytes([byte]))
    commit = [p for p in passed if p.commit]
    assert [p.data for p in commit] == [_complete("COMMIT") + _ready("I")]
    before = b"".join(p.data for p in passed[: passed.index(commit[0])])
    assert before == _complete("BEGIN") + _ready("T") + _complete("INSERT 0 1") + _ready("T")


def test_a_huge_row_passes_as_it_comes_and_is_never_held_whole() -> None:
    """Issue 54, point 4: the relay held whole messages in memory (a 300 MB row). A row now passes as its
    bytes come; only a CommandComplete or a ReadyForQuery is read whole, and one claiming more than such a
    message can hold is no PostgreSQL."""
    claimed = 300 * 1024 * 1024
    relay = Commits()
    head = b"D" + struct.pack("!I", 4 + claimed)
    first = relay.feed(head + b"x" * 1000)
    assert b"".join(p.data for p in first) == head + b"x" * 1000 and len(relay._buffer) == 0
    assert b"".join(p.data for p in relay.feed(b"y" * 4096)) == b"y" * 4096
    with pytest.raises(ValueError, match="claims"):
        Commits().feed(b"C" + struct.pack("!I", 1 << 30))


# -- a real server, through the relay ----------------------------------------------------------------------
def _servers(root: Path) -> list[psutil.Process]:
    """The live PostgreSQL processes whose command line names a folder under ``root``."""
    return [
        proc
        for proc in psutil.process_iter(["name", "cmdline", "status"])
        if proc.info["name"] == "postgres"
        and proc.info["status"] != psutil.STATUS_ZOMBIE
        and str(root) in " ".join(proc.info["cmdline"] or [])
    ]


@needs_postgres
def test_the_relay_holds_each_commit_until_it_is_decided_and_the_server_goes_with_the_world() -> None:
    import psycopg

    world = open_world(api.load(ONE), load_target(LANGGRAPH), {})
    root = world.box.root
    folder = server_dir(world.box.workspace).resolve()  # (the server's user's own folder, run as root)
    assert world.relay is not None and world.engine_address.startswith("postgresql://agent:")
    store = store_named("langgraph-postgres")
    seen: list[tuple[int, bytes]] = []

    def decide() -> bool:
        files = store.snapshot(world.box.workspace, "postgres.db")  # the server has it; the client waits
        seen.append((len(files), files.get("postgres.db", b"")))
        return len(seen) != 3  # the third commit's answer never reaches its client

    try:
        world.relay.on_commit = decide
        with psycopg.connect(world.engine_address, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (n int)")  # 1
            conn.execute("SELECT count(*) FROM t").fetchone()  # reads: no commit
            with conn.transaction():
                conn.execute("INSERT INTO t VALUES (1)")
                conn.execute("INSERT INTO t VALUES (2)")  # 2: one transaction, one commit
            with pytest.raises(psycopg.OperationalError):
                conn.execute("INSERT INTO t VALUES (3)")  # 3: made, its answer dropped
        assert len(seen) == 3 and world.relay.commits == 3
        with psycopg.connect(world.engine_address, autocommit=True) as conn:
            world.relay.on_commit = None
            assert conn.execute("SELECT count(*) FROM t").fetchone() == (3,)  # the third commit was made
        view = store.read({"postgres.db": seen[2][1]})
        assert view.unreadable is None  # an image of the server's tables, read as a SQLite database
        assert _servers(folder), "no server ran in the world's folder"
    finally:
        world.close()
    assert not root.exists() and not folder.exists()
    assert not _servers(folder)


@needs_postgres
def test_without_the_server_binaries_a_target_on_postgres_is_unusable_and_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(postgres, "SEARCH", str(tmp_path / "no-postgresql" / "*" / "bin"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(postgres, "_MADE", [])
    code = main(["run", str(ONE), "--target", str(LANGGRAPH), "--results", str(tmp_path / "r")])
    said = capsys.readouterr()
    assert code == 2, said
    assert "apt-get install postgresql" in said.out + said.err


# -- the framework targets on it ---------------------------------------------------------------------------
@needs_postgres
@needs_ptrace
@pytest.mark.slow
def test_langgraph_on_postgres_is_killed_exactly_at_the_server_answer_and_keeps_its_promise(
    tmp_path: Path,
) -> None:
    """PostgresSaver in sync mode, killed at the commit that makes the deploy call durable (the relay
    holds the server's answer), and at its fifth commit: exact kills, and the resume keeps LangGraph's
    at-least-once promise; so does ``AsyncPostgresSaver`` (``--saver async``). In async mode the same graph runs the deploy before its call is durable, as on
    SQLite (measured: 70 kill cases of the two bundled scenarios, 30 failing, one group)."""
    for boundary in (Boundary("call-durable", {"tool": "deploy"}), Boundary("commit", {}, 5)):
        verdict = api.run(
            api.load(ONE).with_crash(Strike(boundary)), LANGGRAPH, results=tmp_path / boundary.what
        )
        start = verdict.evidence.start
        assert start.landing.reached and start.landing.exact and start.landing.mechanism == "wire", start
        assert verdict.ok, [c.cause for c in verdict.failed]
    aio = tmp_path / "aio.toml"  # AsyncPostgresSaver with ainvoke, as an asyncio application runs it
    aio.write_text(LANGGRAPH.read_text().replace('"sync"', '"sync", "--saver", "async"'))
    crash = Strike(Boundary("call-durable", {"tool": "deploy"}))
    verdict = api.run(api.load(ONE).with_crash(crash), aio, results=tmp_path / "aio")
    assert verdict.evidence.start.landing.exact and verdict.ok, [c.cause for c in verdict.failed]
    slow = REPO / "scenarios" / "frameworks" / "deploy-slow-store.toml"
    verdict = api.run(
        api.load(slow), REPO / "targets" / "langgraph-postgres-async.toml", results=tmp_path / "a"
    )
    assert "effect deploy ran before its tool call was durable in the store" in [
        c.cause for c in verdict.failed
    ]


@needs_postgres
@needs_ptrace
@pytest.mark.slow
def test_a_kill_sweep_of_langgraph_on_postgres_lands_every_kill_and_leaves_nothing(tmp_path: Path) -> None:
    done = api.sweep([ONE], LANGGRAPH, results=tmp_path, jobs=2, faults=("kill",))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert done.ok, [g.label for g in done.summary.groups]
    assert summary["reached"] >= 20 and summary["exact"] == summary["reached"], summary


@needs_postgres
@needs_ptrace
@pytest.mark.slow
@pytest.mark.parametrize(
    "target", [DBOS, pytest.param(PYDANTIC_AI, marks=needs_modules("pydantic_ai.durable_exec.dbos"))]
)
def test_dbos_on_postgres_recovers_its_recorded_steps(target: Path, tmp_path: Path) -> None:
    """DBOS on a PostgreSQL system database (a workflow of its own, and Pydantic AI's durable agent in
    one): killed while the deploy step runs, the recovery runs it again under its recorded call id (at
    least once, as DBOS documents), and the run passes; killed at a commit of its schema's migration (one
    commit per statement on PostgreSQL), the next start finishes it."""
    running = api.load(ONE).with_crash(Strike(Boundary("effect-running", {"effect": "deploy"})))
    verdict = api.run(running, target, results=tmp_path / "running")
    assert verdict.ok and verdict.evidence.start.landing.exact, [c.cause for c in verdict.failed]
    assert len({e["callId"] for e in verdict.evidence.effects()}) == 1
    migrating = api.load(ONE).with_crash(Strike(Boundary("commit", {}, 40)))
    verdict = api.run(migrating, target, results=tmp_path / "migrating")
    assert verdict.evidence.start.landing.exact and verdict.evidence.start.landing.mechanism == "wire"
    assert verdict.ok, [c.cause for c in verdict.failed]


@needs_postgres
@needs_ptrace
@pytest.mark.slow
def test_a_server_crash_at_a_commit_is_met_by_the_agent_and_recovered(tmp_path: Path) -> None:
    """postgres-crash: the server dies whole at the commit that makes the deploy call durable (its answer
    lost), a new one recovers the data; the LangGraph driver meets its lost connection by resuming the
    thread from what the server kept (the call was durable: the deploy runs once), and passes. The bug that
    starts the run over sends the prompt again: caught by inputs-once (tests/test_faults.py)."""
    crash = Strike(Boundary("call-durable", {"tool": "deploy"}), "postgres-crash")
    verdict = api.run(api.load(ONE).with_crash(crash), LANGGRAPH, results=tmp_path)
    start = verdict.evidence.start
    assert (
        start.landing.reached
        and start.landing.exact
        and not start.process.killed
        and start.process.outcome == "completed"
    ), start
    assert "the database connection was lost" in (tmp_path / "start.stderr").read_text()
    assert verdict.ok, [c.cause for c in verdict.failed]
    assert len(verdict.evidence.effects()) == 1  # the deploy ran once
    refused = main(["run", str(ONE), "--target", "langgraph", "--fault", "postgres-crash"])
    assert refused == 2


@needs_postgres
@needs_ptrace
@pytest.mark.slow
def test_two_executors_on_one_store_a_woken_langgraph_runs_the_deploy_again(tmp_path: Path) -> None:
    """paused-writer on a server store: the first executor frozen at a commit (the relay sees it), a
    second recovers the run, then the first wakes. LangGraph fences no executor: frozen at its first
    checkpoint after the saver's setup (commit 21 of this release: the input, no model answer yet), the
    second deploys and ends, and the woken one asks the model again from its own memory and deploys under
    a new call id. DBOS, frozen where the deploy's call is durable, passes. A store in files cannot host
    it (its commits are the tracer's): exit 2, saying why."""
    frozen = Strike(Boundary("commit", {}, 21), "paused-writer")
    verdict = api.run(api.load(ONE).with_crash(frozen), LANGGRAPH, results=tmp_path / "langgraph")
    phases = [p.name for p in verdict.evidence.phases]
    assert {"resume-1", "start-continued"} <= set(phases), phases  # (which went first: how B waited)
    assert verdict.evidence.start.landing.reached
    assert [c.id for c in verdict.failed] == ["effects-as-declared"], [c.cause for c in verdict.failed]
    assert "repeated under a new call id" in verdict.failed[0].cause
    frozen = Strike(Boundary("call-durable", {"tool": "deploy"}), "paused-writer")
    verdict = api.run(api.load(ONE).with_crash(frozen), DBOS, results=tmp_path / "dbos")
    assert "start-continued" in [p.name for p in verdict.evidence.phases]
    assert verdict.evidence.start.landing.reached and verdict.ok, [c.cause for c in verdict.failed]
    refused = main(["run", str(ONE), "--target", "langgraph", "--fault", "paused-writer"])
    assert refused == 2


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary folder the server's user can reach (pytest's are closed to others), as chaos's TMPDIR:
    the sandboxes, the cluster and the servers' folders all in it."""
    folder = Path(tempfile.mkdtemp(prefix="pgtest-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _sweep_until_a_server_runs(tmp: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    args = [sys.executable, "-m", "chaos", "sweep", str(ONE), "--target", str(LANGGRAPH), "-j", "2"]
    with (tmp / "stderr").open("wb") as err:
        proc = subprocess.Popen(
            [*args, "--results", str(tmp / "r")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=default_signals,
        )  # fmt: skip  (Ctrl-C is SIGINT)
    deadline = time.monotonic() + 120
    while not _servers(tmp) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if not _servers(tmp):
        proc.kill()
        proc.wait()
        pytest.fail(f"no server started: {(tmp / 'stderr').read_text()[-2000:]}")
    return proc


def _gone(tmp: Path) -> bool:
    deadline = time.monotonic() + 10
    while _servers(tmp) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _servers(tmp)


@needs_postgres
@pytest.mark.slow
@pytest.mark.parametrize("how", ["interrupted", "killed"])
def test_no_server_outlives_a_chaos_interrupted_or_killed(how: str, open_tmp: Path) -> None:
    """Interrupted (SIGINT), chaos removes every server, cluster and sandbox and exits 130; killed outright
    (SIGKILL), it can remove nothing, and its servers die with it (the kernel's parent-death signal)."""
    tmp_path = open_tmp
    proc = _sweep_until_a_server_runs(tmp_path)
    proc.send_signal(signal.SIGINT if how == "interrupted" else signal.SIGKILL)
    code = proc.wait(120)
    assert _gone(tmp_path), [p.info["cmdline"] for p in _servers(tmp_path)]
    if how == "interrupted":
        assert code == 130
        assert not list(tmp_path.glob("chaos-*")), list(tmp_path.iterdir())
    for child in psutil.Process().children(recursive=True):  # what the killed chaos left (the agent)
        child.kill()


@needs_postgres
def test_no_one_but_the_case_reaches_the_server_and_the_agent_runs_no_program(tmp_path: Path) -> None:
    """Issue 54, point 3: trust authentication and a 0777 socket in a 0755 folder let any local user in as
    superuser, and ``COPY ... TO PROGRAM`` ran commands outside the phase's cage. Now the socket is the
    server user's alone, every login needs a password, the agent's role (its case's password, in
    ``{postgres_url}``) owns the database and is no superuser; the relay refuses a startup packet that
    claims 2 GiB and stays up past as many idle clients as it serves."""
    import socket as sockets

    import psycopg

    from chaos.world.pgwire import MAX_CONNECTIONS

    world = open_world(api.load(ONE), load_target(LANGGRAPH), {})
    marker = tmp_path / "ran"
    try:
        assert world.relay is not None
        folder = server_dir(world.box.workspace).resolve()
        assert folder.stat().st_mode & 0o777 == 0o700
        assert (folder / ".s.PGSQL.5432").stat().st_mode & 0o777 == 0o700
        url = world.engine_address
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (n int)")  # the agent's role owns the database
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"COPY (SELECT 1) TO PROGRAM 'touch {marker}'")
        assert not marker.exists()
        port = world.relay.port
        for user in ("chaos", "agent", "postgres"):  # without the password, nobody logs in
            with pytest.raises(psycopg.OperationalError, match="password"):
                psycopg.connect(f"postgresql://{user}@127.0.0.1:{port}/chaos?sslmode=disable").close()
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(url.replace(url.split(":")[2].split("@")[0], "guessed")).close()
        # a startup claiming 2 GiB is dropped; as many idle clients as the relay serves, and one more
        with sockets.create_connection(("127.0.0.1", port)) as huge:
            huge.sendall(struct.pack("!II", 1 << 31, 196608))
            assert huge.recv(10) == b""
        idle = [sockets.create_connection(("127.0.0.1", port)) for _ in range(MAX_CONNECTIONS + 1)]
        assert idle[-1].recv(10) == b""  # closed at once: the relay serves no more
        for sock in idle:
            sock.close()
        deadline = time.monotonic() + 10
        while True:
            try:
                with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
                    assert conn.execute("SELECT 1").fetchone() == (1,)
                break
            except psycopg.OperationalError:
                assert time.monotonic() < deadline, "the relay stopped for good"
                time.sleep(0.1)
        if os.geteuid() == 0 and os.access("/usr/bin/python3", os.X_OK):  # another local user, at the socket
            probe = "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])"
            done = subprocess.run(
                ["/usr/bin/python3", "-c", probe, str(folder / ".s.PGSQL.5432")],
                user="nobody",
                capture_output=True,
                text=True,
                timeout=30,
                cwd="/",
            )
            assert done.returncode != 0 and "PermissionError" in done.stderr, done.stderr
    finally:
        world.close()
