"""Exploration: Hypothesis-generated scenarios and crash plans, each failure shrunk on its own."""
