"""Sweeps: every boundary of every scenario, in parallel, sharded, journaled and resumable."""
