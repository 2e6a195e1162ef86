"""A partition whose whole ISR is down, with and without unclean leader election (issue 15).

Five combined nodes, so that killing a partition's two followers leaves a controller quorum (three
of five voters) to shrink its ISR and fence its leader; with three combined nodes that would take
two of three controllers, and nothing could change at all. One partition, replication factor 3
(on three of the five nodes). Its two followers are killed and the test waits until the
ISR has shrunk to the leader alone; the leader then takes more records (``acks=1``), which the
followers never see, and is killed too. The followers start again, out of sync.

* ``unclean.leader.election.enable=false``: the partition stays offline. Both followers' Metadata
  answers give leader -1 with LEADER_NOT_AVAILABLE once the leader is fenced, never one of the
  out-of-sync replicas, and a produce to either is refused (NOT_LEADER_OR_FOLLOWER or
  LEADER_NOT_AVAILABLE). Restarting the last ISR member heals it: it leads again and every
  record, the ``acks=1`` ones included, is read back.
* ``unclean.leader.election.enable=true``: an out-of-sync follower is elected, and takes produce.
"""

from __future__ import annotations

import time
from typing import Final

import pytest

from kafka_wire.messages import ErrorCode
from tests.cluster.conftest import ClusterFactory
from tests.cluster.harness import FAST_FAILOVER, LocalCluster, wait_until

pytestmark = pytest.mark.cluster

TOPIC: Final = "unclean"
NODES: Final = 5
#: How long the offline partition is watched: past the fencing of its leader, with a margin for
#: a controller that would (wrongly) elect a replica from outside the ISR.
OFFLINE_WATCH_S: Final = 2 * int(FAST_FAILOVER["broker.session.timeout.ms"]) / 1000 + 3
REFUSALS: Final = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE}


def records(tag: str, n: int = 10) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(n)]


def strand_isr(cluster: LocalCluster) -> tuple[int, list[int]]:
    """Shrink the ISR to the leader, give it records the followers miss, kill it, and start the
    followers again; ``(the last ISR member, the out-of-sync followers)``."""
    cluster.create_topic(TOPIC, 1, 3)
    cluster.wait_full_isr(TOPIC)
    leader = cluster.wait_leader(TOPIC, 0)
    replicas = cluster.metadata(TOPIC)[0].replicas
    followers = [n for n in replicas if n != leader]
    error, _ = cluster.produce_to(leader, TOPIC, 0, records("replicated"), acks=-1)
    assert error == ErrorCode.NONE, f"acks=all produce with the full ISR: {error}"
    for follower in followers:
        cluster.kill(follower)
    cluster.wait_isr(
        TOPIC, lambda v: v.leader == leader and v.isr == (leader,), f"the ISR shrunk to [{leader}]"
    )
    error, _ = cluster.produce_to(leader, TOPIC, 0, records("leader-only"), acks=1)
    assert error == ErrorCode.NONE, f"acks=1 produce to the lone leader: {error}"
    cluster.kill(leader)
    cluster.start_many(followers)
    return leader, followers


@pytest.mark.parametrize("unclean", [False, True], ids=["unclean-disabled", "unclean-enabled"])
def test_unclean_leader_election(cluster_factory: ClusterFactory, unclean: bool) -> None:
    cluster = cluster_factory({"unclean.leader.election.enable": str(unclean).lower()}, size=NODES)
    cluster.start_all()
    last_isr, followers = strand_isr(cluster)

    if unclean:
        elected = cluster.wait_leader(TOPIC, 0, allowed=followers, timeout_s=30.0)

        def produced() -> bool | None:
            # The view asked may know of the election before the elected node has applied it
            # (NOT_LEADER_OR_FOLLOWER meanwhile): a client retries, and so does this.
            error, _ = cluster.produce_to(elected, TOPIC, 0, records("after-unclean"), acks=1)
            return True if error == ErrorCode.NONE else None

        wait_until(f"a produce accepted by the uncleanly elected leader {elected}", produced, 30.0)
        return

    offline_seen = False
    deadline = time.monotonic() + OFFLINE_WATCH_S
    while time.monotonic() < deadline:
        for follower in followers:
            view = cluster.metadata(TOPIC, cluster.nodes[follower]).get(0)
            if view is None:
                continue  # just started: the node has not replayed the topic's records yet
            assert view.leader in (last_isr, -1), (
                f"node {follower} reports {view}: a leader from outside the ISR [{last_isr}]"
            )
            if view.leader == -1:
                assert view.error_code == ErrorCode.LEADER_NOT_AVAILABLE, f"node {follower}: {view}"
                offline_seen = True
        time.sleep(0.5)  # bounded polling of the followers' view over the watch
    assert offline_seen, f"the partition never showed as offline (leader -1) within {OFFLINE_WATCH_S} s"
    final = {f: cluster.metadata(TOPIC, cluster.nodes[f]).get(0) for f in followers}
    assert all(v is not None and v.leader == -1 for v in final.values()), f"at the end of the watch: {final}"
    for follower in followers:
        error, _ = cluster.produce_to(follower, TOPIC, 0, records("offline"), acks=1)
        assert error in REFUSALS, f"produce to out-of-sync node {follower} of an offline partition: {error}"

    cluster.start(last_isr)
    assert cluster.wait_leader(TOPIC, 0, timeout_s=30.0) == last_isr
    expected = records("replicated") + records("leader-only")
    read = wait_until(
        "every record back from the healed partition",
        lambda: got if (got := cluster.fetch_from(last_isr, TOPIC, 0)[2]) == expected else None,
        30.0,
    )
    assert read == expected
    cluster.wait_full_isr(TOPIC)
