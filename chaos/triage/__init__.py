"""Triage: each failure reported once, keyed by its root cause, with its smallest case; known failures."""
