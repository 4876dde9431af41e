"""The contract oracle: strict reducer and recovery planner, pure functions over bytes and data."""

from chaos.contract.digest import digest
from chaos.contract.planner import plan_recovery
from chaos.contract.reducer import SYNTHETIC_CONTENT, ContractError, Reducer, SessionState, reduce

__all__ = [
    "SYNTHETIC_CONTENT",
    "ContractError",
    "Reducer",
    "SessionState",
    "digest",
    "plan_recovery",
    "reduce",
]
