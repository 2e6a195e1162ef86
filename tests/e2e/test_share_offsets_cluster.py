"""DescribeShareGroupOffsets across a three-node cluster, on ``kafka-wire cluster`` and on a
three-node Apache Kafka 4.4 (the judge of the expectations): the Java 4.4 admin client's
``listShareGroupOffsets`` answers every share-partition's start offset and lag, though their
states are kept by share coordinators on different nodes (the group coordinator asks each,
ReadShareGroupStateSummary, and each partition's leader for its latest offset).

A Java 4.4 share consumer drains a six-partition topic (every record accepted), more records are
produced, and the admin client lists the group's offsets: all of them (the share-partitions the
group initialized, ShareGroupStatePartitionMetadata) and some asked by name. The start offsets are
the ones the partition leaders last wrote: Kafka's leader writes an acknowledgement, then moves its
start offset past the records it finished, so the state kept starts before them (and counts them
done: the lag does not).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.broker.share.state_records import ShareStateKey
from kafka_wire.messages import FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest
from tests.cluster.harness import listener_ports, metadata_brokers, wait_until
from tests.e2e.apache_kafka import KafkaNode, format_storage, random_cluster_id
from tests.e2e.brokers import kafka_wire_cli
from tests.e2e.test_cluster_command import kill_nodes_of
from tests.e2e.test_share_groups import ShareConsumer, accepted_values
from tests.interop.harness import Address, free_port, java_command

PROBE: Final = Path(__file__).resolve().parent / "java" / "ShareOffsetsProbe.java"
NODES: Final = 3
PARTITIONS: Final = 6
#: Records per partition, consumed; then as many again, left for the lag.
RECORDS: Final = 10
READY_TIMEOUT_S: Final = 120.0
DRAIN_TIMEOUT_S: Final = 120.0
#: Kafka's share groups' heartbeats every second (Kafka 4.4 assigns a partition once its state is
#: initialized, at a later heartbeat; kafka-wire's interval is set the same).
QUICK_SHARE: Final = {
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "1000",
}


@dataclass
class _KafkaVoter(KafkaNode):
    """A node of a three-voter static quorum (``controller.quorum.voters``)."""

    voters: str = ""

    def properties(self) -> dict[str, str]:
        props = super().properties()
        del props["controller.quorum.bootstrap.servers"]
        return props | {"controller.quorum.voters": self.voters}

    def format(self) -> None:
        self.write_config()
        format_storage(self.properties_path, self.cluster_id, [])

    def command(self) -> list[str]:
        java, *rest = super().command()
        return [java, "-XX:TieredStopAtLevel=1", *rest]


def _kafka_cluster(workdir: Path) -> tuple[str, list[KafkaNode]]:
    cluster_id = random_cluster_id()
    controllers = [free_port() for _ in range(NODES)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{port}" for i, port in enumerate(controllers))
    overrides = {
        "offsets.topic.replication.factor": "3",
        "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
        "group.initial.rebalance.delay.ms": "0",
        **QUICK_SHARE,
    }
    nodes: list[KafkaNode] = []
    for i in range(NODES):
        nodes.append(
            _KafkaVoter(
                "apache_kafka",
                Address("127.0.0.1", free_port()),
                workdir / f"node-{i + 1}" / "data",
                workdir / f"node-{i + 1}" / "kafka.log",
                persistent=True,
                node_id=i + 1,
                controller_port=controllers[i],
                cluster_id=cluster_id,
                overrides=overrides,
                voters=voters,
            )
        )
    errors: list[BaseException] = []

    def start(node: KafkaNode) -> None:
        try:
            node.start(READY_TIMEOUT_S)
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    # Together: a voter answers once a quorum of them elected a leader.
    threads = [threading.Thread(target=start, args=(node,)) for node in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        for node in nodes:
            node.close()
        raise errors[0]
    return ",".join(node.bootstrap for node in nodes), nodes


def _kafka_wire_cluster(workdir: Path, log: IO[bytes]) -> tuple[str, subprocess.Popen[bytes]]:
    base = listener_ports(2 * NODES)
    parent = subprocess.Popen(
        [
            str(kafka_wire_cli()),
            "cluster",
            *("--nodes", str(NODES), "--base-port", str(base), "--data-dir", str(workdir)),
            *("--set", "group.share.heartbeat.interval.ms=1000"),
            *("--set", "group.share.min.heartbeat.interval.ms=1000"),
        ],
        stdout=log,  # the nodes' logs, WARNING and above
        stderr=subprocess.STDOUT,
    )
    return ",".join(f"127.0.0.1:{base + 2 * i}" for i in range(NODES)), parent


def _wait_for_brokers(bootstrap: str, expected: set[int]) -> None:
    """Until every node's Metadata lists all the brokers: a client that asks a node still
    catching up on the registrations drops the brokers it does not list, and fails the requests
    it had sent them (librdkafka: ``_DESTROY_BROKER``)."""
    addresses = [address.rsplit(":", 1) for address in bootstrap.split(",")]

    def listed() -> bool | None:
        every = [asyncio.run(metadata_brokers(host, int(port))) for host, port in addresses]
        return True if all(brokers == expected for brokers in every) else None

    wait_until(f"brokers {sorted(expected)} in every node's Metadata", listed, READY_TIMEOUT_S)


@pytest.fixture(scope="module", params=["apache_kafka", "kafka_wire"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp(f"share-cluster-{request.param}")
    if request.param == "apache_kafka":
        bootstrap, nodes = _kafka_cluster(workdir)
        try:
            _wait_for_brokers(bootstrap, set(range(1, NODES + 1)))  # node ids 1..NODES
            yield bootstrap
        finally:
            for node in nodes:
                node.close()
        return
    with (workdir / "cluster.log").open("wb") as log:
        bootstrap, parent = _kafka_wire_cluster(workdir, log)
        try:
            _wait_for_brokers(bootstrap, set(range(NODES)))
            yield bootstrap
        finally:
            kill_nodes_of(workdir)  # the nodes (in their own session): the parent then exits
            try:
                parent.wait(timeout=60)
            except subprocess.TimeoutExpired:
                parent.kill()
                parent.wait()


def _produce(bootstrap: str, topic: str, first: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for p in range(PARTITIONS):
        for i in range(first, first + RECORDS):
            producer.produce(topic, value=f"plain-{p}-{i}".encode(), partition=p)
    assert producer.flush(60) == 0


async def _share_coordinators(bootstrap: str, group: str, topic: str) -> set[int]:
    """The nodes whose share coordinators keep the group's share-partitions of ``topic``."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    client = await KafkaClient.connect(host, int(port))
    try:
        metadata = await client.request(MetadataRequest(topics=None), 12)
        [topic_id] = [t.topic_id for t in metadata.topics if t.name == topic]
        keys = [ShareStateKey(group, topic_id, p).coordinator_key() for p in range(PARTITIONS)]
        found = await client.request(FindCoordinatorRequest(key_type=2, coordinator_keys=keys), 6)
        assert isinstance(found, FindCoordinatorResponse)
        assert all(c.error_code == 0 for c in found.coordinators), found
        return {c.node_id for c in found.coordinators}
    finally:
        await client.close()


def _list_offsets(bootstrap: str, group: str, *partitions: str) -> list[dict[str, object]]:
    result = subprocess.run(
        java_command(PROBE, bootstrap, group, *partitions, client="java4"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, (result.stdout, result.stderr[-2000:])
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_share_group_offsets_are_listed_across_the_cluster(cluster: str) -> None:
    bootstrap = cluster
    name = f"share-cluster-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=3)])[name].result(60)
    _produce(bootstrap, name, 0)
    config = ShareConsumer("java4", bootstrap, name, name, "config", "--earliest", "--config-only")
    assert config.process.wait(60) == 0, config.describe()
    config.stop()
    consumer = ShareConsumer("java4", bootstrap, name, name, "member")
    try:
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while consumer.process.poll() is None and time.monotonic() < deadline:
            if len(accepted_values(consumer.snapshot())) == PARTITIONS * RECORDS:
                break
            time.sleep(0.5)  # polling the consumer's log under the deadline
    finally:
        consumer.stop()
    events = consumer.snapshot()
    assert len(accepted_values(events)) == PARTITIONS * RECORDS, consumer.describe()
    assert all(e["errors"] == 0 for e in events if e["event"] == "committed"), consumer.describe()
    _produce(bootstrap, name, RECORDS)

    # The share-partitions' states are kept on several nodes.
    assert len(asyncio.run(_share_coordinators(bootstrap, name, name))) > 1
    # Every share-partition the group initialized, its state as the last write kept it (the
    # acknowledgement of its first RECORDS records, one batch: the start offset from before it,
    # those records done with past it), and as many records to go.
    expected = [(name, p, 0, RECORDS) for p in range(PARTITIONS)]
    listed = _list_offsets(bootstrap, name)
    assert [(o["topic"], o["partition"], o["start"], o["lag"]) for o in listed] == expected, listed
    asked = _list_offsets(bootstrap, name, f"{name}:1", f"{name}:4")
    assert [(o["topic"], o["partition"], o["start"], o["lag"]) for o in asked] == expected[1:5:3], asked
