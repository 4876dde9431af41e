"""chaos: crash-injection chaos testing for durable AI agents.

The pipeline is visible in the package layout: ``contract`` (the pure oracle),
``world`` (model server, sandbox, ledger), then the run stages.
"""

from chaos.contract import ContractError, Reducer, SessionState, plan_recovery, reduce

__version__ = "0.1.0"
__all__ = ["ContractError", "Reducer", "SessionState", "__version__", "plan_recovery", "reduce"]
