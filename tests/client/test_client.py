"""kafka_wire.client against a broker served in-process (BrokerServer on 127.0.0.1), without Spark."""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import pytest

from kafka_wire import client
from kafka_wire.adapters.broker_server import BrokerServer
from kafka_wire.adapters.cluster import Cluster
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.client import (
    EARLIEST,
    LATEST,
    AbortedFilter,
    DataLossError,
    KafkaCallError,
    TopicPartition,
    murmur2,
    parse_bootstrap,
    partition_for_key,
)
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    ErrorCode,
)
from kafka_wire.records import build_batch

T = TypeVar("T")
T0 = int(time.time() * 1000) - 60_000
"""Recent timestamps: records older than retention.ms (7 days) would be deleted as they arrive."""
TP = TopicPartition("events", 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@asynccontextmanager
async def _broker(data_dir: Path) -> AsyncIterator[str]:
    port = _free_port()
    server = BrokerServer(BrokerConfig(host="127.0.0.1", port=port, auto_create_topics=False), data_dir)
    assert await server.start("127.0.0.1", port) == port, server.failure
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop()


async def _create(cluster: Cluster, topic: str, partitions: int) -> None:
    conn = await cluster.any_client()
    request = CreateTopicsRequest(
        topics=[
            CreateTopicsRequestCreatableTopic(name=topic, num_partitions=partitions, replication_factor=1)
        ]
    )
    response = await conn.request(request)
    assert [t.error_code for t in response.topics] == [ErrorCode.NONE]


def _with_cluster(tmp_path: Path, body: Callable[[Cluster], Awaitable[T]], timeout_ms: int = 10_000) -> T:
    async def main() -> T:
        async with _broker(tmp_path) as bootstrap, Cluster(bootstrap, timeout_ms=timeout_ms) as cluster:
            return await body(cluster)

    return asyncio.run(main())


def _batches(count: int, per_batch: int) -> list[bytes]:
    return [
        build_batch([(b"k%d" % n, b"v%d" % n, (), T0 + n) for n in range(i * per_batch, (i + 1) * per_batch)])
        for i in range(count)
    ]


async def _fetched(
    cluster: Cluster,
    tp: TopicPartition,
    start: int,
    end: int,
    *,
    max_bytes: int = 1 << 20,
    fail_on_data_loss: bool = True,
) -> list[int]:
    out = []
    batches = client.fetch_range(
        cluster, tp, start, end, max_bytes=max_bytes, fail_on_data_loss=fail_on_data_loss
    )
    async for _, records in batches:
        out += [r.offset for r in records]
    return out


def test_produce_offsets_and_fetch(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        await _create(cluster, "events", 2)
        assert await cluster.partitions() == [TP, TopicPartition("events", 1)]
        first = await client.produce(
            cluster, {TP: _batches(3, 10), TopicPartition("events", 1): _batches(1, 4)}
        )
        assert first == {TP: 0, TopicPartition("events", 1): 0}
        assert await client.offset_bounds(cluster, [TP]) == {TP: (0, 30)}
        found = await client.list_offsets(cluster, {TP: T0 + 17, TopicPartition("events", 1): LATEST})
        assert found == {TP: 17, TopicPartition("events", 1): 4}
        assert await client.list_offsets(cluster, {TP: T0 + 1000}) == {TP: None}
        # small fetches: several round trips, batches straddling both ends of the range
        assert await _fetched(cluster, TP, 5, 25, max_bytes=200) == list(range(5, 25))
        assert await _fetched(cluster, TP, 0, 30) == list(range(30))

    _with_cluster(tmp_path, body)


def test_removed_offsets_raise_or_are_skipped(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        await _create(cluster, "events", 1)
        await client.produce(cluster, {TP: _batches(4, 5)})
        conn = await cluster.any_client()
        partitions = [DeleteRecordsRequestPartition(partition_index=0, offset=10)]
        await conn.request(
            DeleteRecordsRequest(topics=[DeleteRecordsRequestTopic(name="events", partitions=partitions)])
        )
        assert await client.list_offsets(cluster, {TP: EARLIEST}) == {TP: 10}
        with pytest.raises(DataLossError, match=re.escape("offsets 0..9 are no longer in the log")):
            await _fetched(cluster, TP, 0, 20)
        assert await _fetched(cluster, TP, 0, 20, fail_on_data_loss=False) == list(range(10, 20))

    _with_cluster(tmp_path, body)


def test_unknown_topic_gives_up_after_timeout(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        start = time.monotonic()
        with pytest.raises(KafkaCallError, match="gave up retrying: no leader for missing-0"):
            await client.produce(cluster, {TopicPartition("missing", 0): _batches(1, 1)})
        assert time.monotonic() - start < 5

    _with_cluster(tmp_path, body, timeout_ms=300)


def test_unreachable_cluster_fails_fast() -> None:
    async def main() -> None:
        async with Cluster("127.0.0.1:1", timeout_ms=2000) as cluster:
            with pytest.raises(ConnectionError, match=re.escape("no broker reachable: 127.0.0.1:1")):
                await cluster.partitions()

    start = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - start < 10


def test_aborted_transactions_follow_kafka_consumer_rule() -> None:
    # pid 5 aborted a transaction starting at offset 10 (its ABORT marker at 14); pid 6 did not
    f = AbortedFilter([(5, 10)])
    assert not f.skip(5, 9, is_control=False, abort_marker=False)  # before its first offset
    assert f.skip(5, 11, is_control=False, abort_marker=False)
    assert not f.skip(6, 12, is_control=False, abort_marker=False)
    assert f.skip(5, 14, is_control=True, abort_marker=True)  # the marker itself is never returned
    assert not f.skip(5, 15, is_control=False, abort_marker=False)  # a later transaction of pid 5


def test_murmur2_matches_kafkas_vectors() -> None:
    """The values of Kafka's ``UtilsTest.testMurmur2``."""
    vectors = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        b"abc": 479470107,
    }
    assert {key: murmur2(key) for key in vectors} == vectors
    assert partition_for_key(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:1, [::1]:9093") == [("a", 1), ("::1", 9093)]
    for bad in ("a", "a:x", ":1"):
        with pytest.raises(ValueError, match="bad bootstrap server"):
            parse_bootstrap(bad)
