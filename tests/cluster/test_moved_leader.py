"""A consumer whose first Fetch of a partition goes to its old leader reads every record (issue 26).

Three combined nodes, Apache Kafka 4.4 first (the judge of the test itself) and then
``kafka-wire serve``, one cluster of each for every client, each client with a topic of its own;
a topic of two partitions, replication factor 3, ``RECORDS`` records in partition 0. A consumer (confluent-kafka or the Java client, in its own
process: ``consumers.py``) reads partition 1, which fills its metadata with every partition of the
topic; then partition 0's leadership moves to another replica (a reassignment putting it first,
then a preferred election, through the admin APIs as ``kafka-wire serve --control-port``'s
``/leader`` does) and every node reports the new leader. Only then is the consumer given
partition 0: it prints the leader its metadata still names, which must be the old one, so its
first Fetch of partition 0 goes to the broker that no longer leads it. That broker answers an
error (NOT_LEADER_OR_FOLLOWER, or FENCED_LEADER_EPOCH for a client that sent the old epoch) with
empty records, as Kafka does, and from Fetch v16 the new leader with its endpoint (KIP-951). The
consumer must then read all ``RECORDS`` records at offsets 0 to ``RECORDS - 1``, in order.

A null records field (what kafka-wire answered before) makes librdkafka fail the response as
"invalid MessageSetSize -1" and send the same Fetch again forever, without refreshing its
metadata: the consumer reads nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import pytest

from kafka_wire.adapters.fault_control import FaultError, move_leader
from tests.cluster.consumers import CONSUMERS, ConsumerProcess
from tests.cluster.harness import HOST, Implementation, LocalCluster, run, wait_until

pytestmark = pytest.mark.cluster

RECORDS: Final = 300
#: Records per Produce request (one batch each).
BATCH: Final = 50
MOVED: Final = 0
WARM: Final = 1
#: How long the consumer may take to start and read one record of the warm partition.
WARM_S: Final = 60.0
#: How long it may take to read every record of the moved partition.
READ_S: Final = 60.0
#: Answers to the leader move's admin requests that a retry may cure (no active controller known
#: yet, a forwarded request that timed out).
MOVE_RETRIABLE: Final = ("NOT_CONTROLLER", "REQUEST_TIMED_OUT")


@pytest.fixture(scope="module", params=["apache_kafka", "kafka_wire"])
def moved_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """Three started nodes shared by the module's tests: ``kafka-wire serve``, and Apache Kafka 4.4
    (what every assertion must hold on first)."""
    implementation: Implementation = request.param
    cluster = LocalCluster(
        tmp_path_factory.mktemp(f"moved-{implementation}") / "cluster-0", implementation=implementation
    )
    try:
        cluster.start_all()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def consumers() -> Iterator[list[ConsumerProcess]]:
    started: list[ConsumerProcess] = []
    try:
        yield started
    finally:
        for consumer in started:
            consumer.kill()


@pytest.mark.parametrize("client", sorted(CONSUMERS))
def test_first_fetch_at_the_old_leader(
    moved_cluster: LocalCluster, consumers: list[ConsumerProcess], client: str
) -> None:
    cluster = moved_cluster
    topic = f"moved-{client}"
    cluster.create_topic(topic, 2, 3)
    cluster.wait_full_isr(topic)
    values = [f"{client}-{n}" for n in range(RECORDS)]
    for partition, wanted in ((MOVED, values), (WARM, ["warm"])):
        leader = cluster.wait_leader(topic, partition)
        for start in range(0, len(wanted), BATCH):
            error, _ = cluster.produce_to(
                leader, topic, partition, [v.encode() for v in wanted[start : start + BATCH]]
            )
            assert error == 0, f"produce to {topic}-{partition}: error {error}"

    consumer = ConsumerProcess.start(
        client, CONSUMERS[client](cluster.bootstrap, topic, WARM, MOVED, RECORDS)
    )
    consumers.append(consumer)
    consumer.wait_line("warm", WARM_S)

    old = cluster.wait_leader(topic, MOVED)
    new = next(n for n in sorted(cluster.nodes) if n != old)
    move(cluster, topic, MOVED, new)
    cluster.wait_leader(topic, MOVED, allowed=[new])

    consumer.send("go")
    believed = int(consumer.wait_line("leader ", WARM_S).split()[1])
    assert believed == old, (
        f"the consumer's metadata names {believed} as the leader, not the old leader {old}: "
        f"its first Fetch would not go to the old leader. {consumer.describe()}"
    )
    consumer.wait_line("done", READ_S)
    assert consumer.records() == list(enumerate(values)), consumer.describe()


def move(cluster: LocalCluster, topic: str, partition: int, to: int) -> None:
    """Make node ``to`` the partition's leader, retrying what a retry may cure."""

    def moved() -> bool | None:
        try:
            run(move_leader(HOST, cluster.nodes[to].port, topic, partition, to))
        except FaultError as e:
            if not any(code in str(e) for code in MOVE_RETRIABLE):
                raise
            return None
        return True

    wait_until(f"the leadership of {topic}-{partition} to move to node {to}", moved, 30.0)
