"""The world chaos builds around an agent: a scripted model server, a sandbox, an effect ledger."""

from chaos.world.model_server import ModelServer, Turn
from chaos.world.sandbox import Sandbox, WorkspaceFile, make_sandbox

__all__ = ["ModelServer", "Sandbox", "Turn", "WorkspaceFile", "make_sandbox"]
