"""AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932's offset reset and delete), one
request at a time with kafka_wire's own asyncio client, on ``kafka-wire serve`` and on Apache
Kafka 4.4, which must give the same answers: a group with members refused, unknown topics and
partitions, the start offset an alter sets as DescribeShareGroupOffsets reports it, a delete that
leaves nothing to describe, an empty group id."""

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
    AlterShareGroupOffsetsResponse,
    DeleteGroupsRequest,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    ErrorCode,
    FindCoordinatorRequest,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from tests.e2e.brokers import BrokerProcess
from tests.e2e.test_share_groups import create_and_produce

E = ErrorCode
ZERO = uuid.UUID(int=0)
NOT_HOSTED = "This server does not host this topic-partition."


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


def delete(group: str, *topics: str) -> DeleteShareGroupOffsetsRequest:
    return DeleteShareGroupOffsetsRequest(
        group_id=group, topics=[DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics]
    )


def altered(
    reply: AlterShareGroupOffsetsResponse,
) -> list[tuple[str, uuid.UUID, list[tuple[int, int, str | None]]]]:
    return [
        (t.topic_name, t.topic_id, [(p.partition_index, p.error_code, p.error_message) for p in t.partitions])
        for t in reply.responses
    ]


def deleted(reply: DeleteShareGroupOffsetsResponse) -> list[tuple[str, uuid.UUID, int, str | None]]:
    return [(t.topic_name, t.topic_id, t.error_code, t.error_message) for t in reply.responses]


async def scenario(target: BrokerProcess) -> None:
    host, port = target.bootstrap.rsplit(":", 1)
    group, topic = f"share-off-{uuid.uuid4().hex[:8]}", f"share-off-{uuid.uuid4().hex[:8]}"
    create_and_produce(target.bootstrap, topic, 1, [])
    client = await KafkaClient.connect(host, int(port))
    try:
        deadline = time.monotonic() + 60
        while (await client.request(FindCoordinatorRequest(key=group, key_type=0), 3)).error_code:
            assert time.monotonic() < deadline, "no group coordinator"
            await asyncio.sleep(0.1)  # the coordinator is being set up: poll under the deadline
        member = str(uuid.uuid4())
        while True:  # Kafka's coordinator may still load its partition: NOT_COORDINATOR meanwhile
            joined = await client.request(
                ShareGroupHeartbeatRequest(
                    group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]
                ),
                1,
            )
            assert isinstance(joined, ShareGroupHeartbeatResponse)
            if joined.error_code != E.NOT_COORDINATOR:
                break
            assert time.monotonic() < deadline, "the share group never formed"
            await asyncio.sleep(0.1)
        assert joined.error_code == E.NONE
        producer = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 5})
        for i in range(10):
            producer.produce(topic, value=b"%d" % i, partition=0)
        assert producer.flush(30) == 0

        # A group with a member: refused whole.
        busy = await client.request(alter(group, topic, {0: 3}), 0)
        assert (busy.error_code, busy.error_message, busy.responses) == (
            E.NON_EMPTY_GROUP,
            "The group is not empty.",
            [],
        )
        busy_delete = await client.request(delete(group, topic), 0)
        assert (busy_delete.error_code, busy_delete.error_message, busy_delete.responses) == (
            E.NON_EMPTY_GROUP,
            "The group is not empty.",
            [],
        )
        left = await client.request(
            ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=-1), 1
        )
        assert left.error_code == E.NONE

        # Empty: each partition altered, or the metadata has no such topic or partition.
        done = await client.request(alter(group, topic, {0: 3, 5: 1}), 0)
        assert done.error_code == E.NONE
        [(name, topic_id, parts)] = altered(done)
        assert (name, parts) == (topic, [(0, E.NONE, None), (5, E.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)])
        assert topic_id != ZERO
        unknown = await client.request(alter(group, "no-such-topic", {0: 3}), 0)
        assert altered(unknown) == [("no-such-topic", ZERO, [(0, E.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)])]
        described = await client.request(
            DescribeShareGroupOffsetsRequest(
                groups=[DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]
            ),
            1,
        )
        assert [
            (t.topic_name, [(p.partition_index, p.start_offset, p.lag, p.error_code) for p in t.partitions])
            for t in described.groups[0].topics
        ] == [(topic, [(0, 3, 7, E.NONE)])]

        # Delete: per topic; then there is nothing to describe.
        gone = await client.request(delete(group, topic, "no-such-topic"), 0)
        assert gone.error_code == E.NONE
        assert deleted(gone) == [
            (topic, topic_id, E.NONE, None),
            ("no-such-topic", ZERO, E.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED),
        ]
        after = await client.request(
            DescribeShareGroupOffsetsRequest(
                groups=[DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]
            ),
            1,
        )
        assert after.groups[0].topics == []
        blank = await client.request(delete("", topic), 0)
        assert (blank.error_code, blank.error_message) == (E.INVALID_GROUP_ID, "The group id is invalid.")
        assert (await client.request(DeleteGroupsRequest(groups_names=[group]), 2)).results[0].error_code == 0
    finally:
        await client.close()


def test_share_group_offsets_are_altered_and_deleted_as_kafka_does(disk_target: BrokerProcess) -> None:
    asyncio.run(scenario(disk_target))
