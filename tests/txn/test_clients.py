"""Real clients run transactions that commit and abort, with offsets sent to them, against
``kafka-wire serve`` (one node, and a 3-node cluster) and, with the same test, against Apache
Kafka 4.4 (the session's node, ``apache_kafka_node``): a read_committed consumer of each client
sees exactly the committed records in order, a read_uncommitted one all of them, and the group's
offset is the last committed transaction's (``clients/common.py`` has the scenario)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as ConfluentTP
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from tests.cluster.harness import LocalCluster
from tests.e2e.brokers import kafka_wire
from tests.txn.harness import CLIENTS, COORDINATOR_ERRORS, Client, check, run_scenario

TARGETS = ("kafka_wire", "kafka_wire_cluster", "apache_kafka")


class Target:
    """A running broker or cluster: its bootstrap, how many replicas its topics get, and (for a
    kafka-wire cluster, whose nodes log at INFO here) the tails of its nodes' logs."""

    def __init__(self, bootstrap: str, replicas: int, logs: Callable[[], str] = str) -> None:
        self.bootstrap = bootstrap
        self.replicas = replicas
        self.logs = logs

    def warm_group(self, group: str, topic: str) -> None:
        """Find the group's coordinator and have it answer an OffsetFetch before the scenario:
        librdkafka's ``send_offsets_to_transaction`` can hang past its timeout when the group's
        coordinator answers a retriable error while ``__consumer_offsets`` is still being created
        or loaded (confluentinc/librdkafka#5456, #5511; seen on a fresh kafka-wire cluster)."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group})
        deadline = time.monotonic() + 60
        try:
            while True:
                try:
                    consumer.committed([ConfluentTP(topic, 0)], timeout=max(deadline - time.monotonic(), 1))
                    return
                except KafkaException as exc:  # Kafka 4.4 answers NOT_COORDINATOR at first too
                    error = exc.args[0]
                    if error.code() not in COORDINATOR_ERRORS or time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)  # the client's own retry backoff
        finally:
            consumer.close()

    def create(self, *topics: tuple[str, int]) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics(
            [NewTopic(name, partitions, self.replicas) for name, partitions in topics], request_timeout=60
        )
        for future in futures.values():
            future.result(timeout=60)


@pytest.fixture(scope="module", params=TARGETS)
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    name: str = request.param
    workdir: Path = tmp_path_factory.mktemp(name)
    if name == "kafka_wire":
        broker = kafka_wire(workdir)
        broker.start()
        try:
            yield Target(broker.bootstrap, 1)
        finally:
            broker.close()
    elif name == "apache_kafka":
        yield Target(request.getfixturevalue("apache_kafka_node").bootstrap, 1)
    elif name == "kafka_wire_cluster":
        cluster = LocalCluster(workdir, 3)
        try:
            with pytest.MonkeyPatch.context() as env:
                env.setenv("KW_CLUSTER_LOG_LEVEL", "INFO")
                cluster.start_all()
            yield Target(cluster.bootstrap, 3, lambda: "\n".join(n.tail() for n in cluster.nodes.values()))
        finally:
            cluster.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_transactions_commit_and_abort_with_offsets(target: Target, client: Client) -> None:
    topic = f"txn-{client}"
    target.create((topic, 2), (f"{topic}-src", 1))
    target.warm_group(f"{topic}-group", f"{topic}-src")
    try:
        check(run_scenario(client, target.bootstrap, topic=topic, source=f"{topic}-src"))
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n{target.logs()}") from None
