"""Shrinking a failing run: replay its seed with subsets of the faults it recorded (delta
debugging: halves first, then smaller pieces, down to single faults), keeping a subset when the
replay fails with the same anomaly. The result is a minimal fault list and its trace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final

from kafka_wire.sim.faults import Fault
from kafka_wire.sim.run import SimOptions, SimResult, simulate

#: Replays a shrink may spend before it returns the smallest failing list found so far.
DEFAULT_MAX_RUNS: Final = 200


@dataclass(slots=True)
class Shrunk:
    #: The fault indices of the minimal failing replay (its ``--faults``).
    script: frozenset[int]
    faults: list[Fault]
    #: The minimal replay, run with its trace.
    result: SimResult
    runs: int


def shrink(
    options: SimOptions,
    failed: SimResult,
    *,
    run: Callable[[SimOptions], SimResult] = simulate,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> Shrunk:
    """The smallest subset of ``failed.faults`` whose replay still fails with the same anomaly."""
    anomaly = failed.anomaly
    if anomaly is None:
        raise ValueError("shrink needs a failing run")
    runs = 0

    def fails(subset: list[int]) -> bool:
        nonlocal runs
        runs += 1
        result = run(replace(options, script=frozenset(subset), trace=False))
        return result.anomaly == anomaly

    current = sorted(f.index for f in failed.faults)
    if current and fails([]):
        current = []
    granularity = 2
    while len(current) >= 2 and runs < max_runs:
        size = -(-len(current) // granularity)
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        reduced = False
        for chunk in chunks:  # a piece alone
            if runs >= max_runs:
                break
            if len(chunks) > 2 and fails(chunk):  # with two chunks, complements test the same
                current, granularity, reduced = chunk, 2, True
                break
        if not reduced:
            for chunk in chunks:  # everything but a piece
                if runs >= max_runs:
                    break
                rest = [i for i in current if i not in chunk]
                if fails(rest):
                    current, granularity, reduced = rest, max(granularity - 1, 2), True
                    break
        if not reduced:
            if granularity >= len(current):
                break
            granularity = min(len(current), granularity * 2)
    final = run(replace(options, script=frozenset(current), trace=True))
    runs += 1
    if final.anomaly != anomaly:  # cannot happen for a deterministic run; keep the original
        final = run(replace(options, script=None, trace=True))
        current = sorted(f.index for f in failed.faults)
        runs += 1
    return Shrunk(frozenset(f.index for f in final.faults), list(final.faults), final, runs)
