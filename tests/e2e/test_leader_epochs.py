"""kafka_wire's client names the leader epoch it knows in each Fetch (KIP-320), and both brokers
(Kafka 4.4 and ``kafka-wire serve``: ``disk_target``) answer an epoch the leader does not have yet
with UNKNOWN_LEADER_EPOCH, which the client treats as a leadership change: a node behind on the
metadata log cannot hand it a log that ends too early."""

from __future__ import annotations

import asyncio
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from kafka_wire.adapters.cluster import Cluster
from kafka_wire.client import RangeRead, TopicPartition, fetch_range
from kafka_wire.client.cluster import FETCH_VERSION
from kafka_wire.messages import ApiKey, ErrorCode
from tests.e2e.brokers import BrokerProcess

RECORDS = 5


def test_fetches_name_the_leader_epoch_and_a_newer_one_is_unknown(disk_target: BrokerProcess) -> None:
    topic = f"epochs-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": disk_target.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": disk_target.bootstrap})
    for i in range(RECORDS):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(30) == 0
    tp = TopicPartition(topic, 0)

    async def run() -> tuple[list[bytes | None], int, int, int]:
        async with Cluster(disk_target.bootstrap, timeout_ms=30_000) as cluster:
            values = [r.value async for _, records in fetch_range(cluster, tp, 0, RECORDS) for r in records]
            epoch = cluster.metadata.epoch(tp)
            _, client = await cluster.leader(tp)
            version = cluster.version(client, ApiKey.FETCH, FETCH_VERSION)
            codes = []
            for asked in (epoch, epoch + 1):
                response = await client.request(RangeRead(tp, 0, RECORDS).request(asked), version)
                codes.append(response.responses[0].partitions[0].error_code)
            return values, epoch, codes[0], codes[1]

    values, epoch, current, newer = asyncio.run(run())
    assert values == [b"v%d" % i for i in range(RECORDS)]
    assert epoch >= 0
    assert (current, newer) == (ErrorCode.NONE, ErrorCode.UNKNOWN_LEADER_EPOCH)
