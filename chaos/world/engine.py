"""The servers a world runs beside the agent because its store lives on one: a database (PostgreSQL,
``chaos.world.postgres``), a workflow engine (Temporal, ``chaos.world.temporal``). One interface
(``Engine``), one registry (``ENGINES``, by the store adapter's ``server``): a second engine is one more
implementation, started, crashed and closed the same way.

Every engine runs per case, its data in the case's sandbox, and dies with the world and with chaos
however chaos ends: its process is started from one thread that lives as long as chaos (``spawned``)
with the kernel's parent-death signal (``die_with_chaos``), in a cage of its own
(``chaos.world.contain``) that the world's close empties."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import queue
import signal
import subprocess
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from chaos.errors import TargetUnusable
from chaos.world.contain import Cage
from chaos.world.pgwire import Relay
from chaos.world.world import World

T = TypeVar("T")
_LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def die_with_chaos() -> None:
    """In a server's process before it runs (its last step: a change of user clears it): the kernel kills
    it when the thread that started it dies, which is ``spawned``'s, alive as long as chaos."""
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class _Spawner:
    """Starts every server from one thread that lives as long as chaos: the parent-death signal is the
    death of the thread that forked, so a server started from a case's thread (or a relay's, for a
    server crash) would die with that thread; started here, it dies only with chaos, however chaos ends."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], queue.Queue[Any]]] = queue.Queue()
        threading.Thread(target=self._serve, name="chaos-engine-spawner", daemon=True).start()

    def _serve(self) -> None:
        while True:
            job, answer = self._jobs.get()
            try:
                answer.put((job(), None))
            except BaseException as err:  # handed to the caller, raised there
                answer.put((None, err))

    def run(self, job: Callable[[], T]) -> T:
        answer: queue.Queue[Any] = queue.Queue()
        self._jobs.put((job, answer))
        result, err = answer.get()
        if err is not None:
            raise err
        return cast(T, result)


_SPAWNER: list[_Spawner] = []
_STARTING = threading.Lock()


def spawned(job: Callable[[], T]) -> T:
    """``job`` (a ``subprocess`` call) run in the spawner's thread."""
    with _STARTING:
        if not _SPAWNER:
            _SPAWNER.append(_Spawner())
    return _SPAWNER[0].run(job)


class Engine(ABC):
    """One case's server: started on the world's sandbox as it is made, the agent given its ``address``
    (the target's ``{<placeholder>}``, the store adapter's ``server_placeholder``), crashed and restarted
    on the same data by a fault (``restart``), gone with the world (``close``)."""

    name: ClassVar[str]  # the store adapter's ``server``
    client: ClassVar[tuple[str, str]]  # the module chaos reads the engine with, and the extra that brings it
    proc: subprocess.Popen[bytes] | None = None  # the server's process, while it runs
    cage: Cage | None = None  # and the cage it and what it starts run in

    def spawn(
        self, argv: list[str], env: dict[str, str], log: Path, become: Callable[[], None] = lambda: None
    ) -> subprocess.Popen[bytes]:
        """Start the server's process in a cage of its own, from the spawner's thread: before it runs, it
        enters its cage, becomes its user (``become``) and dies with chaos (last: a change of user clears
        the parent-death signal). Its output goes to ``log``."""
        self.cage = cage = Cage()

        def first() -> None:
            cage.enter()
            become()
            die_with_chaos()

        with log.open("ab") as out:
            self.proc = spawned(
                lambda: subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                    preexec_fn=first,
                    env=env,
                )
            )
        return self.proc

    def stop(self) -> None:
        """The server dies at once with all it started (SIGKILL: what it answered is on its disk)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.cage is not None:
            self.cage.remove()
        self.proc.wait()
        self.proc = None

    @abstractmethod
    def __init__(self, world: World) -> None:
        """Start the server (``TargetUnusable`` where it cannot run here: what to install)."""

    @property
    @abstractmethod
    def address(self) -> str:
        """What the agent connects to."""

    @abstractmethod
    def restart(self) -> None:
        """A server crash: it dies at once and a new one recovers the same data."""

    @abstractmethod
    def close(self) -> None:
        """The server and everything it started are gone."""

    def relay(self) -> Relay | None:
        """Where chaos sees the store's commits on the wire (``chaos.world.pgwire``), if it does."""
        return None


ENGINES: dict[str, type[Engine]] = {}


def engine(kind: type[Engine]) -> type[Engine]:
    """Register an engine by the ``server`` its store adapters name."""
    ENGINES[kind.name] = kind
    return kind


def serve_engine(world: World) -> None:
    """Start the server the target's store lives on, where it lives on one."""
    store = world.store
    if store.server is None:
        return
    kind = ENGINES[store.server]
    module, extra = kind.client
    if importlib.util.find_spec(module) is None:
        raise TargetUnusable(
            f"{world.target.path}: [store] kind = {store.name!r} is read from a {kind.name} server with "
            f"{module}, which is not installed here; install it with: pip install 'durable-chaos[{extra}]'"
        )
    server = kind(world)
    world.closers.append(server.close)
    world.engine_address, world.restart_engine, world.relay = server.address, server.restart, server.relay()
