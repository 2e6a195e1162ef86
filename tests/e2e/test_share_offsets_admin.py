"""AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932's offset reset and delete), one by
one with kafka_wire's own asyncio client, on ``kafka-wire serve`` and on Apache Kafka 4.4, which
must give the same answers."""

from __future__ import annotations

import asyncio
import time
import uuid

from confluent_kafka import Producer

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
    DeleteGroupsRequest,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    ErrorCode,
    FindCoordinatorRequest,
    MetadataRequest,
    ShareGroupHeartbeatRequest,
)
from tests.e2e.brokers import BrokerProcess
from tests.e2e.test_share_errors import acquired, fetch_request
from tests.e2e.test_share_groups import create_and_produce

E = ErrorCode


def alter(group: str, topic: str, offsets: dict[int, int]) -> AlterShareGroupOffsetsRequest:
    return AlterShareGroupOffsetsRequest(
        group_id=group,
        topics=[
            AlterShareGroupOffsetsRequestTopic(
                topic_name=topic,
                partitions=[
                    AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
                    for p, o in offsets.items()
                ],
            )
        ],
    )


async def explore(target: BrokerProcess) -> list[object]:
    host, port = target.bootstrap.rsplit(":", 1)
    group, topic = f"share-off-{uuid.uuid4().hex[:8]}", f"share-off-{uuid.uuid4().hex[:8]}"
    create_and_produce(target.bootstrap, topic, 1, [])
    out: list[object] = []
    client = await KafkaClient.connect(host, int(port))
    try:
        deadline = time.monotonic() + 60
        while (await client.request(FindCoordinatorRequest(key=group, key_type=0), 3)).error_code:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        metadata = await client.request(MetadataRequest(topics=None), 12)
        topic_id = next(t.topic_id for t in metadata.topics if t.name == topic)
        # no such group
        out.append(await client.request(alter(group + "-x", topic, {0: 0}), 0))
        out.append(await client.request(DeleteShareGroupOffsetsRequest(group_id=group + "-x", topics=[DeleteShareGroupOffsetsRequestTopic(topic_name=topic)]), 0))
        member = str(uuid.uuid4())
        for _ in range(100):
            joined = await client.request(
                ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]), 1
            )
            if not joined.error_code:
                break
            await asyncio.sleep(0.2)
        out.append(joined)
        producer = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 5})
        opened = None
        for _ in range(100):
            opened = await client.request(fetch_request(group, member, 0, topic_id), 2)
            await asyncio.sleep(0.1)
            beat = await client.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=joined.member_epoch), 1)
            if beat.assignment is not None and beat.assignment.topic_partitions:
                break
        for i in range(10):
            producer.produce(topic, value=b"%d" % i, partition=0)
        assert producer.flush(30) == 0
        got = await client.request(fetch_request(group, member, 0, topic_id, wait_ms=3000), 2)
        out.append(("acquired", acquired(got)))
        # non-empty group
        out.append(await client.request(alter(group, topic, {0: 3}), 0))
        out.append(await client.request(DeleteShareGroupOffsetsRequest(group_id=group, topics=[DeleteShareGroupOffsetsRequestTopic(topic_name=topic)]), 0))
        left = await client.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=-1), 1)
        out.append(("left", left.error_code))
        await client.request(fetch_request(group, member, -1, topic_id), 2)
        # empty group: alter, unknown topic, bad partition, negative offset
        out.append(await client.request(alter(group, topic, {0: 3, 5: 1}), 0))
        out.append(await client.request(alter(group, "no-such-topic", {0: 3}), 0))
        out.append(await client.request(alter(group, topic, {0: -5}), 0))
        out.append(await client.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]), 1))
        # a member joins again and gets records from 3
        member2 = str(uuid.uuid4())
        j2 = await client.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member2, member_epoch=0, subscribed_topic_names=[topic]), 1)
        got2 = None
        for _ in range(50):
            got2 = await client.request(fetch_request(group, member2, 0, topic_id, wait_ms=500), 2)
            if acquired(got2):
                break
            await client.request(fetch_request(group, member2, -1, topic_id), 2)
            await client.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member2, member_epoch=j2.member_epoch), 1)
        out.append(("acquired-after-alter", acquired(got2) if got2 else None))
        await client.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member2, member_epoch=-1), 1)
        await client.request(fetch_request(group, member2, -1, topic_id), 2)
        out.append(await client.request(DeleteShareGroupOffsetsRequest(group_id=group, topics=[DeleteShareGroupOffsetsRequestTopic(topic_name=topic), DeleteShareGroupOffsetsRequestTopic(topic_name="no-such-topic")]), 0))
        out.append(await client.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]), 1))
        out.append(await client.request(DeleteGroupsRequest(groups_names=[group]), 2))
        out.append(await client.request(DeleteShareGroupOffsetsRequest(group_id="", topics=[]), 0))
    finally:
        await client.close()
    return out


def test_explore(disk_target: BrokerProcess) -> None:
    for item in asyncio.run(explore(disk_target)):
        print("EXPLORE", item)
