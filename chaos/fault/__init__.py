"""Faults: what a case does at its boundary, one implementation of one small interface each, in one
registry (etcd's ``tests/robustness/failpoint/``). Adding a fault is one module and one line below;
``tests/test_faults.py`` holds every registered fault to a scenario, a row of the fault table, a CLI
spelling and a row in docs/crash-model.md."""

from __future__ import annotations

from chaos.fault.abort import Abort
from chaos.fault.abort_then_kill import AbortThenKill
from chaos.fault.base import IN_FLIGHT, Arming, FailingCalls, Fault, Misbehaviour, Stop
from chaos.fault.bit_flip import BitFlip
from chaos.fault.connection_lost import ConnectionLost
from chaos.fault.disk_full import DiskFull
from chaos.fault.fsync_error import FsyncError
from chaos.fault.kill import Kill
from chaos.fault.mcp import McpCutAnswer, McpError, McpRestart, McpSessionLost
from chaos.fault.network import CutStream, Duplicate, Hang, InvalidJson, Reset, Trickle
from chaos.fault.overtaken import Overtaken
from chaos.fault.paused_writer import PausedWriter
from chaos.fault.postgres import PostgresCrash
from chaos.fault.power_loss import PowerLoss
from chaos.fault.short_write import ShortWrite
from chaos.fault.temporal import TemporalCrash
from chaos.fault.terminate import Terminate
from chaos.fault.torn import Torn
from chaos.fault.write_error import WriteError

FAULTS: dict[str, Fault] = {
    fault.name: fault
    for fault in (
        Kill(),
        Abort(),
        Torn(),
        PowerLoss(),
        PausedWriter(),
        AbortThenKill(),
        Terminate(),
        DiskFull(),
        FsyncError(),
        ShortWrite(),
        WriteError(),
        BitFlip(),
        Reset(),
        CutStream(),
        Duplicate(),
        Hang(),
        InvalidJson(),
        Trickle(),
        McpRestart(),
        McpSessionLost(),
        McpCutAnswer(),
        McpError(),
        PostgresCrash(),
        ConnectionLost(),
        TemporalCrash(),
        Overtaken(),
    )
}


def fault(name: str) -> Fault:
    """The registered fault of that name, or ValueError listing them."""
    found = FAULTS.get(name)
    if found is None:
        raise ValueError(f"{name!r} is not a fault; use one of: {', '.join(FAULTS)}")
    return found


__all__ = ["FAULTS", "IN_FLIGHT", "Arming", "FailingCalls", "Fault", "Misbehaviour", "Stop", "fault"]
