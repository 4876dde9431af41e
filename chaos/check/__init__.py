"""The checks: pure over a cycle's evidence, each with a test that makes it fail."""

from chaos.check.checks import CATALOG, Check, check_all

__all__ = ["CATALOG", "Check", "check_all"]
