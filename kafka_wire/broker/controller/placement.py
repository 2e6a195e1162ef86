"""Replica placement for new topics and partitions: Kafka's rack-unaware assignment
(``AdminUtils.assignReplicasToBrokersRackUnaware``), over the unfenced brokers.

Partition ``p``'s first replica is broker ``(p + start) % n``; its other replicas follow at a
shift of ``1 + (shift + j) % (n - 1)``, where ``shift`` grows by one every ``n`` partitions so that
followers spread too. ``start`` and the initial ``shift`` come from the injected ``random.Random``
(Kafka picks them at random), unless given.
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def assign_replicas(
    brokers: Sequence[int],
    partitions: int,
    replication_factor: int,
    rng: random.Random,
    *,
    first_partition: int = 0,
    start: int | None = None,
    shift: int | None = None,
) -> list[list[int]]:
    """Replica lists for partitions ``first_partition .. first_partition + partitions - 1``.

    ``brokers`` must hold at least ``replication_factor`` ids (the caller checks)."""
    ids = sorted(brokers)
    n = len(ids)
    if not 1 <= replication_factor <= n:
        raise ValueError(f"cannot place {replication_factor} replicas on {n} brokers")
    start_index = rng.randrange(n) if start is None else start
    next_shift = rng.randrange(n) if shift is None else shift
    out: list[list[int]] = []
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            next_shift += 1
        first = (p + start_index) % n
        out.append(
            [ids[first]]
            + [ids[(first + 1 + (next_shift + j) % (n - 1)) % n] for j in range(replication_factor - 1)]
        )
    return out
