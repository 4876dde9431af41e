"""``temporal-crash``: the world's Temporal server crashes at a call that records history.

The server is killed (SIGKILL) the moment it recorded what a worker or a starter asked (the workflow
started, a workflow task's commands, an activity's result), its answer not yet sent, and a new server
goes on from the same database on the same port; every connection through the relay is cut. The
server's durability is trusted; what is judged is the agent's: its worker and starter meet a lost
connection with a call whose fate they cannot know, and must end, or be resumed, with the history as
Temporal promises (an activity recorded is not run again, the workflow started once). Lands only on a
store on the world's Temporal server (``[store] kind = temporal``), in the first run and in a recovery.
"""

from __future__ import annotations

from chaos.fault.postgres import ServerCrash


class TemporalCrash(ServerCrash):
    name = "temporal-crash"
    server = "temporal"
    server_name = "Temporal"
    summary = (
        "the world's Temporal server crashes at a call that records history (its answer lost) and "
        "restarts on the same database; the worker goes on"
    )
