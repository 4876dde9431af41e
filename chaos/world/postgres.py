"""The world's PostgreSQL server: a real one per case, for a target whose store lives on one.

The server binaries are the system's (Debian's ``postgresql`` package:
``/usr/lib/postgresql/N/bin``, or ``initdb`` and ``postgres`` on PATH); where
they are missing the target is unusable (exit 2, with the package to install).
A cluster is made once per chaos process (``initdb``, half a second) with the
database ``chaos``; each case copies it into its sandbox (about 40 MB, a few
hundredths of a second) and starts its own server on it, listening on a Unix
socket in the sandbox only. Case by case nothing is shared: no database to
clean, no connection of one case meeting the next; the server starts in well
under a second (measured in the README). It runs in a cage of its own
(``chaos.world.contain``), so it and every backend go with the world, and it
dies with chaos however chaos ends (the kernel's parent-death signal, see
``chaos.world.engine``; the next chaos removes a sandbox and a cage left so, as it does
for its own).

No other local user gets in: the socket is the server user's alone (0700, in
a folder of 0700), every connection needs a password (SCRAM), the agent's
role is made for its case (``chaos.store.postgres.AGENT``: the database's
owner, no superuser, so no ``COPY ... TO PROGRAM`` starts a process outside
the phase's cage), and the relay takes at most ``MAX_CONNECTIONS`` clients,
each with a bounded startup.

The server keeps ``fsync`` off: a process kill (of the agent, or of the server
itself) loses nothing the kernel has, and ``synchronous_commit`` stays on, so a
commit is written before the server answers it. As root (a container), the
server runs as the ``postgres`` user (PostgreSQL refuses root), and its folder
is that user's.

The agent reaches it through the relay (``chaos.world.pgwire``) at
``{postgres_url}``; chaos reads it directly (``chaos.store.postgres``).
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from chaos.errors import TargetUnusable
from chaos.store.postgres import AGENT, DATABASE, PASSWORD, PORT, USER, dsn, server_dir
from chaos.world.engine import Engine, die_with_chaos, engine, spawned
from chaos.world.pgwire import Relay
from chaos.world.sandbox import PREFIX, claim
from chaos.world.world import World

READY_WAIT = 30.0  # seconds a server has to accept connections
SEARCH = "/usr/lib/postgresql/*/bin"  # Debian's server binaries, a folder per major version
INSTALL = "install PostgreSQL's server (Debian: apt-get install postgresql), or put its bin folder on PATH"
SETTINGS = [
    "-c", "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off",
    "-c", "shared_buffers=16MB", "-c", "max_connections=40", "-c", "unix_socket_permissions=0700",
]  # fmt: skip


def binaries() -> Path:
    """The folder of ``initdb`` and ``postgres``: the newest Debian version's, else PATH's."""
    versions = sorted(glob.glob(SEARCH), key=lambda p: int(Path(p).parent.name))
    for folder in reversed(versions):
        if (Path(folder) / "postgres").is_file() and (Path(folder) / "initdb").is_file():
            return Path(folder)
    found = shutil.which("postgres")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    raise TargetUnusable(f"no PostgreSQL server here (initdb and postgres not found): {INSTALL}")


def _user() -> tuple[int, int] | None:
    """The user the server runs as, when chaos is root (None: chaos's own)."""
    if os.getuid() != 0:
        return None
    try:
        found = pwd.getpwnam("postgres")
    except KeyError:
        found = pwd.getpwnam("nobody")
    return found.pw_uid, found.pw_gid


def _base() -> str:
    """A folder for the server's own folders that its user can reach: the temporary folder, unless one of
    its parents is closed to others (pytest's are), then /tmp."""
    base = Path(tempfile.gettempdir()).resolve()
    if all(folder.stat().st_mode & stat.S_IXOTH for folder in (base, *base.parents)):
        return str(base)
    return "/tmp"


def _own(path: Path) -> None:
    """``path`` (and what it holds) belongs to the server's user."""
    user = _user()
    if user is None:
        return
    for folder, _, names in os.walk(path):
        os.chown(folder, *user)
        for name in names:
            os.chown(os.path.join(folder, name), *user)


def _become() -> None:
    """In the server's process: become the server's user, where chaos is root."""
    user = _user()
    if user is not None:
        os.setgid(user[1])
        os.setuid(user[0])


def _as_server() -> None:
    """A server program's first step (``initdb``): become the server's user, and die with chaos (the
    kernel's parent-death signal, set last: a change of user clears it)."""
    _become()
    die_with_chaos()


def _run(argv: list[str], stdin: str = "") -> None:
    done = spawned(
        lambda: subprocess.run(
            argv, input=stdin.encode(), capture_output=True, preexec_fn=_as_server, timeout=120
        )
    )
    if done.returncode != 0:
        raise TargetUnusable(
            f"{argv[0]} failed ({done.returncode}): {done.stderr.decode(errors='replace')[-400:]}"
        )


_MADE: list[Path] = []
_MAKING = threading.Lock()


def _template() -> Path:
    """This chaos process's cluster, made once (sweep workers share it): the superuser ``chaos`` with
    this process's password, and the database ``chaos`` owned by the agent's role."""
    with _MAKING:
        if not _MADE:
            _MADE.append(_initdb())
        return _MADE[0]


def _initdb() -> Path:
    bin_dir = binaries()
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}postgres-", dir=_base()))
    claim(folder)
    atexit.register(shutil.rmtree, folder, True)
    data, secret = folder / "data", folder / "password"
    secret.write_text(PASSWORD)
    _own(folder)
    os.chmod(folder, 0o700)
    try:
        _run([str(bin_dir / "initdb"), "-D", str(data), "-A", "scram-sha-256", "--pwfile", str(secret),
              "-U", USER, "-E", "UTF8", "--no-sync", "--locale=C.UTF-8"])  # fmt: skip
    finally:
        secret.unlink()
    made = f"CREATE ROLE {AGENT} LOGIN;\nCREATE DATABASE {DATABASE} OWNER {AGENT};\n"
    _run([str(bin_dir / "postgres"), "--single", "-D", str(data), "postgres"], made)
    return data


@engine
class Postgres(Engine):
    """One case's server on its copy of the cluster, in the sandbox, and the relay in front of it."""

    name = "postgres"
    client = ("psycopg", "postgres")

    def __init__(self, world: World) -> None:
        template = _template()
        self.folder = server_dir(world.box.workspace)  # where the store looks for the socket
        self.own: Path | None = None
        if _user() is not None:  # the server's user must reach its folder: one of its own, linked to
            self.own = Path(tempfile.mkdtemp(prefix=PREFIX, dir=_base()))
            claim(self.own)
            self.folder.symlink_to(self.own)
        self.real = self.own or self.folder  # what the server is told (its user cannot pass the sandbox)
        self.data = self.real / "data"
        shutil.copytree(template, self.data, symlinks=True)
        self.data.chmod(0o700)
        _own(self.real)
        self.real.chmod(0o700)  # the socket's folder: the server's user's alone
        self.password = secrets.token_urlsafe(24)  # the agent's, for this case
        self.log = world.box.home / "postgres.log"
        try:
            self.start()
        except BaseException:
            self._remove()
            raise
        self.wire = Relay(str(self.folder / f".s.PGSQL.{PORT}"))

    @property
    def address(self) -> str:
        """What the agent connects to: the relay, without TLS (it has none to offer), as its case's role."""
        return f"postgresql://{AGENT}:{self.password}@127.0.0.1:{self.wire.port}/{DATABASE}?sslmode=disable"

    def start(self) -> None:
        argv = [str(binaries() / "postgres"), "-D", str(self.data), "-k", str(self.real), "-p", str(PORT),
                *SETTINGS]  # fmt: skip
        self.spawn(argv, {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}, self.log, _become)
        self._ready()

    def _ready(self) -> None:
        import psycopg
        import psycopg.sql

        deadline = time.monotonic() + READY_WAIT
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-600:]
                raise TargetUnusable(
                    f"the world's PostgreSQL server did not start ({self.proc.returncode}): {tail}"
                )
            try:
                with psycopg.connect(dsn(self.folder), connect_timeout=2, autocommit=True) as connection:
                    role = psycopg.sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                        psycopg.sql.Identifier(AGENT), psycopg.sql.Literal(self.password)
                    )
                    connection.execute(role)
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise TargetUnusable(
                        f"the world's PostgreSQL server did not answer in {READY_WAIT:g} s"
                    ) from None
                time.sleep(0.01)

    def restart(self) -> None:
        """A server crash: every backend gone, the connections through the relay cut, and a new server
        recovering the same data (its own crash recovery) on the same socket."""
        self.stop()
        self.wire.cut()
        (self.folder / f".s.PGSQL.{PORT}").unlink(missing_ok=True)
        self.start()

    def relay(self) -> Relay:
        return self.wire

    def _remove(self) -> None:
        self.stop()
        if self.own is not None:
            shutil.rmtree(self.own, ignore_errors=True)

    def close(self) -> None:
        self.wire.close()
        self._remove()
