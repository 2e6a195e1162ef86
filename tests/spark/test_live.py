"""The Spark glue over the client (kafka_wire.spark.live), without Spark, against ``kafka-wire serve`` and librdkafka."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer

from kafka_wire.client import EARLIEST, LATEST, TopicPartition, partition_for_key
from kafka_wire.spark import live
from tests.spark.conftest import Cluster


def test_fetch_range_reads_exactly_its_range(cluster: Cluster) -> None:
    tp = TopicPartition("codec-lz4", 1)
    sent = sorted((s[2], s[3], s[4]) for s in cluster.sent["codec-lz4"] if s[1] == 1)
    assert live.offset_bounds(cluster.bootstrap, [tp]) == {tp: (0, len(sent))}
    # small fetches: many round trips, batches straddling both ends of the range
    got = [
        (r.offset, r.key, r.value)
        for _, rs in live.fetch_range(cluster.bootstrap, tp, 17, 121, max_bytes=1024)
        for r in rs
    ]
    assert got == sent[17:121]
    # a consumer that stops early ends the fetch thread
    first = next(live.fetch_range(cluster.bootstrap, tp, 0, len(sent)))
    assert first[1][0].offset == 0


def test_list_offsets_by_timestamp(cluster: Cluster) -> None:
    tp = TopicPartition("codec-gzip", 0)
    sent = sorted((s[2], s[6]) for s in cluster.sent["codec-gzip"] if s[1] == 0)
    offset, ts = sent[40]
    found = live.list_offsets(cluster.bootstrap, {tp: ts})
    assert found == {tp: offset}
    assert live.list_offsets(cluster.bootstrap, {tp: EARLIEST}) == {tp: 0}
    assert live.list_offsets(cluster.bootstrap, {tp: LATEST}) == {tp: len(sent)}
    assert live.list_offsets(cluster.bootstrap, {tp: sent[-1][1] + 10_000}) == {tp: None}


def test_murmur2_partitioner_matches_librdkafka(cluster: Cluster) -> None:
    cluster.create("keyed", partitions=5)
    placed: list[tuple[bytes, int]] = []

    def report(err: Any, msg: Any) -> None:
        assert err is None
        placed.append((msg.key(), msg.partition()))

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "partitioner": "murmur2_random"})
    for i in range(200):
        producer.produce("keyed", key=f"user-{i * 7919}".encode(), value=b"x", on_delivery=report)
    assert producer.flush(30) == 0
    assert len(placed) == 200 and len({p for _, p in placed}) == 5
    assert all(partition_for_key(key, 5) == p for key, p in placed)


def test_unreachable_cluster_fails_fast() -> None:
    start = time.monotonic()
    try:
        live.partitions_of("127.0.0.1:1", timeout_ms=2000)
    except ConnectionError as e:
        assert "no broker reachable" in str(e)
    else:
        raise AssertionError("expected ConnectionError")
    assert time.monotonic() - start < 10
