"""The controller quorum survives the loss of a minority, and only that (issue 15, "Done when").

Three combined nodes, so three controllers. With one of them killed (the active one, the harder
case) a new controller is elected, every partition gets a live leader, ``acks=all`` produce works
and a topic can be created. With two killed the last node still serves reads of the partitions
it leads, but nothing can change leadership: the partitions the second dead node led keep it as
their leader (same leader epoch) and a produce to the survivor is refused with
NOT_LEADER_OR_FOLLOWER. Once both nodes are back a leader is elected for those partitions and
produce works on every partition again.
"""

from __future__ import annotations

import time
from typing import Final

import pytest

from kafka_wire.messages import ErrorCode
from tests.cluster.harness import FAST_FAILOVER, LocalCluster, PartitionView, wait_until

pytestmark = pytest.mark.cluster

TOPIC: Final = "quorum"
PARTITIONS: Final = 6
#: How long a leaderless quorum is watched: twice the broker session timeout and then some, so
#: a controller that could still act would have fenced the dead broker and moved its partitions.
NO_QUORUM_WATCH_S: Final = 2 * int(FAST_FAILOVER["broker.session.timeout.ms"]) / 1000 + 3


def values(tag: str, n: int = 5) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(n)]


def leaders(cluster: LocalCluster, live: set[int]) -> dict[int, int]:
    """Every partition's leader, once every live node reports a live one for each."""
    return {p: cluster.wait_leader(TOPIC, p, allowed=live) for p in range(PARTITIONS)}


def test_controller_quorum_loss(cluster: LocalCluster) -> None:
    cluster.create_topic(TOPIC, PARTITIONS, 3)
    cluster.wait_full_isr(TOPIC)
    everyone = set(cluster.nodes)

    # One controller down (the active one): the other two elect a new one and go on.
    first = cluster.quorum_leader()
    cluster.kill(first)
    two = everyone - {first}
    wait_until(
        "a new active controller among the two left",
        lambda: leader if (leader := cluster.quorum_leader()) in two else None,
        30.0,
    )
    led_by = leaders(cluster, two)
    for p, leader in led_by.items():
        error, _ = cluster.produce_to(leader, TOPIC, p, values(f"one-down-{p}"), acks=-1)
        assert error == ErrorCode.NONE, (
            f"acks=all produce to {TOPIC}-{p} on node {leader} with node {first} down: {error}"
        )
    cluster.create_topic("created-with-one-down", 2, 2)

    # Two controllers down: no quorum. The survivor must lead a partition (reads) and the other
    # victim too (its partitions must then stay as they are).
    survivor = next((n for n in two if any(led_by[p] == n for p in led_by)), None)
    second = next((n for n in two if n != survivor), None)
    assert survivor is not None and second is not None
    assert any(led_by[p] == second for p in led_by), (
        f"every partition is led by node {survivor} (leaders {led_by}): the test needs both to lead some"
    )
    before = cluster.metadata(TOPIC, cluster.nodes[survivor])
    cluster.kill(second)
    orphaned = [p for p, leader in led_by.items() if leader == second]
    served = [p for p, leader in led_by.items() if leader == survivor]
    deadline = time.monotonic() + NO_QUORUM_WATCH_S
    while time.monotonic() < deadline:
        now = cluster.metadata(TOPIC, cluster.nodes[survivor])
        for p in orphaned:
            assert_unchanged(before[p], now[p], f"{TOPIC}-{p} without a controller quorum")
        time.sleep(0.5)  # bounded polling: the survivor's view over the watch
    for p in orphaned:
        error, _ = cluster.produce_to(survivor, TOPIC, p, values("no-quorum"), acks=1)
        assert error == ErrorCode.NOT_LEADER_OR_FOLLOWER, (
            f"produce to {TOPIC}-{p} on node {survivor}: {error}"
        )
    for p in served:
        error, _, read = cluster.fetch_from(survivor, TOPIC, p)
        assert error == ErrorCode.NONE, f"fetch {TOPIC}-{p} from node {survivor} without a quorum: {error}"
        assert read == values(f"one-down-{p}"), f"fetch {TOPIC}-{p} from node {survivor}: {read}"

    # Both back: the quorum heals, the orphaned partitions get a leader, produce works everywhere.
    cluster.start_many([first, second])
    wait_until(
        "an active controller again",
        lambda: leader if (leader := cluster.quorum_leader()) >= 0 else None,
        30.0,
    )
    cluster.wait_brokers(everyone)
    healed = leaders(cluster, everyone)
    for p, leader in healed.items():
        error, _ = cluster.produce_to(leader, TOPIC, p, values(f"healed-{p}"), acks=-1)
        assert error == ErrorCode.NONE, (
            f"acks=all produce to {TOPIC}-{p} on node {leader} after healing: {error}"
        )
    cluster.wait_full_isr(TOPIC)


def assert_unchanged(before: PartitionView, now: PartitionView, what: str) -> None:
    assert (now.leader, now.leader_epoch) == (before.leader, before.leader_epoch), (
        f"{what}: leadership changed from {before} to {now}"
    )
