"""No acknowledged record is lost while partition leaders are SIGKILLed (issue 15's first "Done when").

Three combined ``kafka-wire serve`` nodes; a topic with replication factor 3 and
``min.insync.replicas=2``. confluent-kafka and the Java 4.4 client, each an idempotent
``acks=all`` producer in its own process, send ``RECORDS`` numbered records (values
``confluent-<n>`` and ``java4-<n>``). The test hands them credit in ``KILLS + 1`` slices; partway
through each of the first ``KILLS`` slices (records in flight) it SIGKILLs the current leader of
partition 0, waits for a new leader, starts the node again and waits until it is back in every
ISR. Then:

* a confluent-kafka consumer group reads the topic from the earliest offset: every acknowledged
  record is there exactly once, at the partition and offset its acknowledgement gave, no value
  appears twice, and per partition each producer's numbers increase;
* the nodes are stopped and each node's data directory is read through ``kafka_wire.spark.logs``:
  below the high watermark of ``replication-offset-checkpoint`` the stored batches are identical,
  byte for byte, on the three nodes (every replicated topic, ``__consumer_offsets`` included).
"""

from __future__ import annotations

import os
import time
from collections import Counter, defaultdict
from typing import Final

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.cluster.conftest import ClusterFactory
from tests.cluster.harness import LocalCluster, assert_replicas_identical
from tests.cluster.producers import ProducerProcess, confluent_command, java_producer_command

pytestmark = pytest.mark.cluster

TOPIC: Final = "failover"
PARTITIONS: Final = 3
#: Records per producer (KW_FAILOVER_RECORDS makes a quicker run while developing).
RECORDS: Final = int(os.environ.get("KW_FAILOVER_RECORDS", "100000"))
KILLS: Final = 5
#: How far into a slice of credit the kill comes (the rest of the slice is in flight across it).
KILL_AT: Final = 0.3
GROUP: Final = "failover-check"
OFFSETS_TOPIC: Final = "__consumer_offsets"
PRODUCERS_FINISH_S: Final = 180.0
CONSUME_S: Final = 120.0


def test_failover_no_acked_loss(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory()
    cluster.start_all()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    cluster.wait_full_isr(TOPIC)

    producers = [
        ProducerProcess.start(
            "confluent", confluent_command(cluster.bootstrap, TOPIC, RECORDS, "confluent"), RECORDS
        ),
        ProducerProcess.start(
            "java4", java_producer_command(cluster.bootstrap, TOPIC, RECORDS, "java4"), RECORDS
        ),
    ]
    kills: list[str] = []
    try:
        slices = KILLS + 1
        for i in range(slices):
            for producer in producers:
                producer.credit((i + 1) * RECORDS // slices)
            if i == KILLS:
                break
            for producer in producers:
                producer.wait_completed(int((i + KILL_AT) * RECORDS / slices), 120.0)
            kills.append(kill_and_restart_leader(cluster))
        for producer in producers:
            producer.finish(PRODUCERS_FINISH_S)
    finally:
        for producer in producers:
            producer.kill()
    summary = f"kills: {kills}; " + "; ".join(
        f"{p.name}: {len(p.acked)} acked, {len(p.failed)} failed" for p in producers
    )
    assert len(kills) == KILLS, summary
    for producer in producers:
        assert producer.acked, f"{producer.name} got no acknowledgement. {producer.describe()}"

    consumed = consume_all(cluster)
    check_consumed(consumed, producers, summary)

    time.sleep(2.0)  # followers learn the last high watermark with their next fetch
    statuses = cluster.stop_all()
    check_replicas_identical(cluster, producers, f"{summary}; exit statuses on SIGTERM: {statuses}")


def kill_and_restart_leader(cluster: LocalCluster) -> str:
    """SIGKILL partition 0's leader, wait for another leader, restart the node, wait for full ISRs."""
    leader = cluster.wait_leader(TOPIC, 0)
    started = time.monotonic()
    cluster.kill(leader)
    others = [n for n in cluster.nodes if n != leader]
    new_leader = cluster.wait_leader(TOPIC, 0, allowed=others)
    elected_s = time.monotonic() - started
    cluster.start(leader)
    cluster.wait_brokers(set(cluster.nodes))
    cluster.wait_full_isr(TOPIC)
    if cluster.metadata(OFFSETS_TOPIC):
        cluster.wait_full_isr(OFFSETS_TOPIC)
    return f"{leader}->{new_leader} in {elected_s:.1f} s, back in {time.monotonic() - started:.1f} s"


def consume_all(cluster: LocalCluster) -> dict[int, list[tuple[int, str]]]:
    """Every record of the topic through a consumer group (from the earliest offset), up to the
    high watermarks; per partition, ``(offset, value)`` in the order consumed."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    try:
        ends = {}
        for p in range(PARTITIONS):
            _low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30.0)
            ends[p] = high
        consumer.subscribe([TOPIC])
        out: dict[int, list[tuple[int, str]]] = defaultdict(list)
        positions = dict.fromkeys(range(PARTITIONS), 0)
        deadline = time.monotonic() + CONSUME_S
        while any(positions[p] < ends[p] for p in range(PARTITIONS)):
            assert time.monotonic() < deadline, f"consumed up to {positions}, high watermarks {ends}"
            for message in consumer.consume(10_000, timeout=1.0):
                error = message.error()
                assert error is None, f"consumer error: {error}"
                partition, offset = message.partition(), message.offset()
                value = message.value()
                assert partition is not None and offset is not None and value is not None
                out[partition].append((offset, value.decode()))
                positions[partition] = offset + 1
        consumer.commit(asynchronous=False)
        return out
    finally:
        consumer.close()


def check_consumed(
    consumed: dict[int, list[tuple[int, str]]], producers: list[ProducerProcess], summary: str
) -> None:
    everything = [value for records in consumed.values() for _, value in records]
    duplicates = [value for value, n in Counter(everything).items() if n > 1]
    assert not duplicates, (
        f"{len(duplicates)} values consumed more than once, e.g. {duplicates[:5]}. {summary}"
    )
    where = {
        value: (partition, offset) for partition, records in consumed.items() for offset, value in records
    }
    for producer in producers:
        missing = [n for n in producer.acked if f"{producer.name}-{n}" not in where]
        assert not missing, (
            f"{producer.name}: {len(missing)} acknowledged records lost, e.g. {sorted(missing)[:10]}. {summary}"
        )
        moved = {
            n: (at, where[f"{producer.name}-{n}"])
            for n, at in producer.acked.items()
            if where[f"{producer.name}-{n}"] != at
        }
        assert not moved, (
            f"{producer.name}: records not where their acknowledgement put them: {list(moved.items())[:5]}"
        )
    for partition, records in consumed.items():
        offsets = [offset for offset, _ in records]
        assert offsets == sorted(offsets), f"partition {partition}: offsets out of order"
        last: dict[str, int] = {}
        for offset, value in records:
            name, _, number = value.rpartition("-")
            assert int(number) > last.get(name, -1), (
                f"partition {partition} offset {offset}: {value} after {name}-{last[name]}. {summary}"
            )
            last[name] = int(number)


def check_replicas_identical(cluster: LocalCluster, producers: list[ProducerProcess], summary: str) -> None:
    """Every node has the topic's partitions; below the high watermarks (which cover every
    acknowledged record) the nodes hold the same batches, byte for byte."""
    last_acked: dict[tuple[str, int], int] = {(TOPIC, p): -1 for p in range(PARTITIONS)}
    for producer in producers:
        for partition, offset in producer.acked.values():
            last_acked[(TOPIC, partition)] = max(last_acked[(TOPIC, partition)], offset)
    compared = assert_replicas_identical(cluster, last_acked, summary)
    assert set(last_acked) <= compared, f"compared only {sorted(compared)}. {summary}"
