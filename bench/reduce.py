"""Reducer throughput and scaling: one-shot and incremental, on logs of 1x, 4x and 16x N operations.

Run: python bench/reduce.py [--base N] [--instructions]. Prints MB/s per size and
mode, the time growth ratio against the byte growth ratio (linear means 16x the
bytes in at most 18x the time), the memory the reduced state keeps and how many
containers Python's cyclic collector must scan in it (both should grow with the
bytes, no faster), with --instructions the instruction-count ratio under
callgrind (immune to machine noise), and the cost of a writer's candidate commit
early and late in a long log (commit 10,000 must cost what commit 10 costs).
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from chaos.contract import Reducer
from chaos.contract import facts as F
from chaos.contract.synth import synthesize


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _incremental(data: bytes, chunk: int = 4096) -> None:
    reducer = Reducer()
    for pos in range(0, len(data), chunk):
        reducer.feed(data[pos : pos + chunk])
    assert reducer.error is None


def _one_shot(data: bytes) -> None:
    reducer = Reducer()
    reducer.feed(data)
    assert reducer.error is None
    reducer.result()


def _commit_cost(data: bytes, samples: int = 200) -> float:
    """Mean seconds of one candidate commit (a user prompt + runStarted) on top of ``data``."""
    reducer = Reducer()
    reducer.feed(data)
    writer = F.Writer(reducer, F.counter_ids(1_900_000_000_000))
    start = time.perf_counter()
    for _ in range(samples):
        writer.commit(*F.start_run(writer.new_id, "next prompt"))
        op = writer.state.operation
        assert op is not None
        writer.commit(F.abort_requested(op, "model"))
        writer.commit(F.operation_finished(op, {"outcome": "aborted"}))
    return (time.perf_counter() - start) / (3 * samples)


def _footprint(data: bytes) -> tuple[int, int]:
    """Bytes the reduced state keeps (tracemalloc) and the containers in it the cyclic collector tracks."""
    gc.collect()
    before = len(gc.get_objects())
    tracemalloc.start()
    reducer = Reducer.of(data)
    kept = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    gc.collect()
    tracked = len(gc.get_objects()) - before
    assert reducer.error is None
    return kept, tracked


def _instructions(path: str, reduce_it: bool) -> int:
    """Instructions callgrind counts for one process that reads ``path`` (and reduces it)."""
    code = "import sys; from chaos.contract import Reducer; d = open(sys.argv[1], 'rb').read()"
    if reduce_it:
        code += "; r = Reducer(); r.feed(d); r.result()"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code, path],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))  # type: ignore[union-attr]


def instruction_ratio(small: bytes, large: bytes) -> None:
    """Instruction counts (callgrind) are what noise cannot move: the algorithm's own growth."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, data in (("small", small), ("large", large)):
            paths.append(str(Path(tmp) / f"{name}.jsonl"))
            Path(paths[-1]).write_bytes(data)
        base = _instructions(paths[0], False)
        counts = [_instructions(p, True) - base for p in paths]
    print(
        f"instructions (callgrind, minus start-up): {counts[0] / 1e6:.0f}M vs {counts[1] / 1e6:.0f}M, "
        f"{counts[1] / counts[0]:.2f}x for {len(large) / len(small):.2f}x the bytes"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=int, default=420, help="operations in the 1x log")
    parser.add_argument(
        "--rounds", type=int, default=7, help="interleaved timing rounds (the minimum is kept)"
    )
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions under callgrind (minutes)"
    )
    args = parser.parse_args()
    logs = {factor: synthesize(random.Random(factor), args.base * factor) for factor in (1, 4, 16)}
    best: dict[tuple[int, str], float] = {}
    for _ in range(args.rounds):  # interleaved rounds, minimum per cell: robust to a noisy machine
        for factor, data in logs.items():
            for mode, fn in (("one", _one_shot), ("inc", _incremental)):
                elapsed = _best(lambda d=data, f=fn: f(d), 1)
                best[factor, mode] = min(best.get((factor, mode), elapsed), elapsed)
    rows = []
    for factor, data in logs.items():
        lines = data.count(b"\n") - 1
        one, inc = best[factor, "one"], best[factor, "inc"]
        rows.append((factor, len(data), lines, one, inc))
        mb = len(data) / 1e6
        print(
            f"{factor:>2}x  {mb:7.1f} MB  {lines:>7} transactions  "
            f"one-shot {mb / one:6.1f} MB/s  incremental {mb / inc:6.1f} MB/s",
            flush=True,
        )
    _, b1, _, o1, i1 = rows[0]
    _, b16, _, o16, i16 = rows[-1]
    print(f"16x/1x bytes {b16 / b1:.1f}x   one-shot time {o16 / o1:.1f}x   incremental time {i16 / i1:.1f}x")
    print(
        "linear (time ratio <= 18x for ~16x bytes):",
        o16 / o1 <= 18 * (b16 / b1) / 16 and i16 / i1 <= 18 * (b16 / b1) / 16,
    )
    (kept1, tracked1), (kept16, tracked16) = _footprint(logs[1]), _footprint(logs[16])
    print(
        f"state kept: {kept1 / 1e6:.1f} MB vs {kept16 / 1e6:.1f} MB ({kept16 / kept1:.1f}x; "
        f"{kept16 / b16:.2f} bytes per log byte), collector-tracked containers {tracked1} vs {tracked16} "
        f"({tracked16 / tracked1:.1f}x)"
    )
    if args.instructions:
        instruction_ratio(logs[1], logs[16])
    small = synthesize(random.Random(7), 3)
    large = synthesize(random.Random(16), args.base * 16)
    early, late = _commit_cost(small), _commit_cost(large)
    n_small, n_large = small.count(b"\n"), large.count(b"\n")
    print(
        f"candidate commit: after {n_small} lines {early * 1e6:.1f} us, "
        f"after {n_large} lines {late * 1e6:.1f} us, ratio {late / early:.2f}"
    )


if __name__ == "__main__":
    main()
