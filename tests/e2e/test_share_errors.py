"""KIP-932 requests one by one (kafka_wire's own asyncio client), on ``kafka-wire serve`` and on
Apache Kafka 4.4, which must give the same answers: ShareGroupHeartbeat's validation, epochs and
leave; share session epochs (ShareFetch, ShareAcknowledge); acquired records and their delivery
counts; acknowledgements of records the member does not hold; ShareGroupDescribe."""

from __future__ import annotations

import asyncio
import time
import uuid

from confluent_kafka import Producer

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.messages import (
    ApiKey,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
    ErrorCode,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    ListGroupsRequest,
    MetadataRequest,
    ShareAcknowledgeRequest,
    ShareAcknowledgeRequestAcknowledgementBatch,
    ShareAcknowledgeRequestAcknowledgePartition,
    ShareAcknowledgeRequestAcknowledgeTopic,
    ShareFetchRequest,
    ShareFetchRequestAcknowledgementBatch,
    ShareFetchRequestFetchPartition,
    ShareFetchRequestFetchTopic,
    ShareFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from tests.e2e.brokers import BrokerProcess
from tests.e2e.test_share_groups import create_and_produce

E = ErrorCode
Acks = list[tuple[int, int, list[int]]]


def fetch_request(
    group: str,
    member: str,
    epoch: int,
    topic_id: uuid.UUID,
    acks: Acks | None = None,
    wait_ms: int = 0,
) -> ShareFetchRequest:
    return ShareFetchRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=500,
        batch_size=500,
        topics=[
            ShareFetchRequestFetchTopic(
                topic_id=topic_id,
                partitions=[
                    ShareFetchRequestFetchPartition(
                        partition_index=0,
                        acknowledgement_batches=[
                            ShareFetchRequestAcknowledgementBatch(
                                first_offset=f, last_offset=last, acknowledge_types=types
                            )
                            for f, last, types in acks or []
                        ],
                    )
                ],
            )
        ],
    )


def ack_request(
    group: str, member: str, epoch: int, topic_id: uuid.UUID, acks: Acks
) -> ShareAcknowledgeRequest:
    return ShareAcknowledgeRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        topics=[
            ShareAcknowledgeRequestAcknowledgeTopic(
                topic_id=topic_id,
                partitions=[
                    ShareAcknowledgeRequestAcknowledgePartition(
                        partition_index=0,
                        acknowledgement_batches=[
                            ShareAcknowledgeRequestAcknowledgementBatch(
                                first_offset=f, last_offset=last, acknowledge_types=types
                            )
                            for f, last, types in acks
                        ],
                    )
                ],
            )
        ],
    )


def acquired(reply: ShareFetchResponse) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in reply.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


async def scenario(target: BrokerProcess) -> None:
    host, port = target.bootstrap.rsplit(":", 1)
    group, topic = f"share-errors-{uuid.uuid4().hex[:8]}", f"share-errors-{uuid.uuid4().hex[:8]}"
    create_and_produce(target.bootstrap, topic, 1, [])
    client = await KafkaClient.connect(host, int(port))
    try:
        deadline = time.monotonic() + 60
        while (await client.request(FindCoordinatorRequest(key=group, key_type=0), 3)).error_code:
            assert time.monotonic() < deadline, "no group coordinator"
            await asyncio.sleep(0.1)  # the coordinator is being set up: poll under the deadline
        metadata = await client.request(MetadataRequest(topics=None), 12)
        topic_id = next(t.topic_id for t in metadata.topics if t.name == topic)
        # share.auto.offset.reset=earliest for the group: its share-partition starts at the log
        # start whenever its leader starts it. With latest (the default) the records produced
        # below are skipped if the leader starts it after they are written: Kafka starts it from
        # the first share fetch and finishes asynchronously, our reading of a loaded run where
        # Apache Kafka acquired none of them.
        earliest = IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestAlterConfigsResource(
                    resource_type=32,  # GROUP
                    resource_name=group,
                    configs=[
                        IncrementalAlterConfigsRequestAlterableConfig(
                            name="share.auto.offset.reset", config_operation=0, value="earliest"
                        )
                    ],
                )
            ]
        )
        assert [r.error_code for r in (await client.request(earliest, 1)).responses] == [E.NONE]

        async def beat(
            member: str, epoch: int, topics: list[str] | None = None
        ) -> ShareGroupHeartbeatResponse:
            """A heartbeat, again while the coordinator is not ready (as clients retry)."""
            request = ShareGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics
            )
            deadline = time.monotonic() + 30
            while True:
                answer = await client.request(request, 1)
                retry = answer.error_code in (E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS)
                if not retry or time.monotonic() > deadline:
                    return answer
                await asyncio.sleep(0.1)  # the coordinator is loading: poll under the deadline

        member = str(uuid.uuid4())
        # ShareGroupHeartbeat.
        assert (await beat("", 0, [topic])).error_code == E.INVALID_REQUEST
        no_topics = await beat(member, 0)
        assert (no_topics.error_code, no_topics.error_message) == (
            E.INVALID_REQUEST,
            "SubscribedTopicNames must be set in first request.",
        )
        assert (await beat(member, -2)).error_code == E.INVALID_REQUEST
        not_found = await beat(member, 3, [topic])
        assert (not_found.error_code, not_found.error_message) == (
            E.GROUP_ID_NOT_FOUND,
            f"Share group {group} not found.",
        )
        joined = await beat(member, 0, [topic])
        assert (joined.error_code, joined.member_id) == (E.NONE, member)
        assert joined.assignment is not None  # a join's answer always has one
        # Kafka 4.4 assigns a partition once its share-group state is initialized (a later
        # heartbeat); kafka-wire at once. Heartbeat as a member does until it has partition 0.
        epoch, assignment = joined.member_epoch, joined.assignment.topic_partitions
        while [(tp.topic_id, tp.partitions) for tp in assignment] != [(topic_id, [0])]:
            assert time.monotonic() < deadline, f"never assigned: {assignment}"
            await asyncio.sleep(0.5)  # the heartbeat interval, shortened: poll under the deadline
            answer = await beat(member, epoch)
            assert answer.error_code == E.NONE, answer
            if answer.assignment is not None:
                assignment = answer.assignment.topic_partitions
            epoch = answer.member_epoch
        fenced = await beat(member, epoch + 1)
        assert fenced.error_code == E.FENCED_MEMBER_EPOCH
        assert fenced.error_message == (
            f"The share group member has a greater member epoch ({epoch + 1}) than the one known by the "
            f"group coordinator ({epoch}). The member must abandon all its partitions and rejoin."
        )
        unknown = str(uuid.uuid4())
        assert (await beat(unknown, 1)).error_message == f"Member {unknown} is not a member of group {group}."
        same = await beat(member, epoch)
        assert (same.error_code, same.member_epoch, same.assignment) == (E.NONE, epoch, None)
        described = await client.request(ShareGroupDescribeRequest(group_ids=[group]), 1)
        [found] = described.groups
        assert (found.error_code, found.group_state, found.group_epoch, found.assignor_name) == (
            E.NONE,
            "Stable",
            epoch,
            "simple",
        )
        assert [(m.member_id, m.member_epoch) for m in found.members] == [(member, epoch)]
        # Other protocols on the share group's id, and DeleteGroups while it has a member.
        cgh = await client.request(
            ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id=str(uuid.uuid4()),
                member_epoch=0,
                rebalance_timeout_ms=1000,
                subscribed_topic_names=[topic],
                topic_partitions=[],
            ),
            1,
        )
        assert (cgh.error_code, cgh.error_message) == (
            E.GROUP_ID_NOT_FOUND,
            f"Group {group} is not a consumer group.",
        )
        join = await client.request(
            JoinGroupRequest(
                group_id=group,
                session_timeout_ms=10_000,
                rebalance_timeout_ms=10_000,
                member_id="",
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
            ),
            9,
        )
        assert (join.error_code, join.member_id, join.generation_id) == (
            E.INCONSISTENT_GROUP_PROTOCOL,
            "",
            -1,
        )
        busy = await client.request(DeleteGroupsRequest(groups_names=[group]), 2)
        assert busy.results[0].error_code == E.NON_EMPTY_GROUP
        listed = await client.request(ListGroupsRequest(types_filter=["share"]), 5)
        assert [
            (g.group_type, g.group_state, g.protocol_type) for g in listed.groups if g.group_id == group
        ] == [("share", "Stable", "share")]

        # Share sessions.
        no_session = await client.request(fetch_request(group, member, 3, topic_id), 2)
        assert (no_session.error_code, no_session.acquisition_lock_timeout_ms) == (
            E.SHARE_SESSION_NOT_FOUND,
            0,
        )
        no_member = await client.request(fetch_request(group, "", 0, topic_id), 2)
        assert (no_member.error_code, no_member.acquisition_lock_timeout_ms) == (E.INVALID_REQUEST, 0)
        unknown_topic = await client.request(fetch_request(group, str(uuid.uuid4()), 0, uuid.uuid4()), 2)
        assert unknown_topic.error_code == E.NONE
        [[part]] = [t.partitions for t in unknown_topic.responses]
        assert (part.error_code, part.records, part.acquired_records) == (E.UNKNOWN_TOPIC_ID, b"", [])
        with_acks = await client.request(fetch_request(group, member, 0, topic_id, [(0, 0, [1])]), 2)
        assert with_acks.error_code == E.INVALID_REQUEST
        opened = await client.request(fetch_request(group, member, 0, topic_id), 2)
        assert opened.error_code == E.NONE and acquired(opened) == []
        assert (await client.request(fetch_request(group, member, 5, topic_id), 2)).error_code == (
            E.INVALID_SHARE_SESSION_EPOCH
        )
        ack0 = await client.request(ack_request(group, member, 0, topic_id, [(0, 0, [1])]), 2)
        assert ack0.error_code == E.INVALID_SHARE_SESSION_EPOCH

        # Records: ten in one batch, from the log start (earliest).
        producer = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 50})
        for i in range(10):
            producer.produce(topic, value=b"%d" % i, partition=0)
        assert producer.flush(30) == 0
        got = await client.request(fetch_request(group, member, 1, topic_id, wait_ms=5000), 2)
        assert got.error_code == E.NONE and acquired(got) == [(0, 9, 1)], got
        records = got.responses[0].partitions[0].records
        assert records, "records of the acquired offsets"
        # Release 0-4 (one type for the range), accept 5-9; then 0-4 come back, delivered twice.
        again = await client.request(
            fetch_request(group, member, 2, topic_id, [(0, 4, [2]), (5, 9, [1])], wait_ms=5000), 2
        )
        assert again.responses[0].partitions[0].acknowledge_error_code == E.NONE
        assert acquired(again) == [(0, 4, 2)]
        # Acknowledging what is not held: done with (5), or never fetched (past the end).
        done = await client.request(ack_request(group, member, 3, topic_id, [(5, 5, [1])]), 2)
        assert done.error_code == E.NONE
        assert done.responses[0].partitions[0].error_code == E.INVALID_RECORD_STATE
        ok = await client.request(ack_request(group, member, 4, topic_id, [(0, 4, [3])]), 2)
        assert ok.responses[0].partitions[0].error_code == E.NONE
        # DescribeShareGroupOffsets: everything is done with, so no lag (the start offsets differ:
        # Kafka reports the one it last wrote); unknown topics and groups as Kafka answers them.
        # Without topics it lists the share-partitions whose state the group coordinator
        # initialized: Kafka's before it assigned them, kafka-wire's after (it assigns at once, and
        # its initialization may still be under way): ask again until it is, under the deadline.
        describe_offsets = DescribeShareGroupOffsetsRequest(
            groups=[
                DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),
                DescribeShareGroupOffsetsRequestGroup(
                    group_id=group,
                    topics=[
                        DescribeShareGroupOffsetsRequestTopic(topic_name="no-such-topic", partitions=[0])
                    ],
                ),
                DescribeShareGroupOffsetsRequestGroup(group_id=f"{group}-none", topics=None),
            ]
        )
        deadline = time.monotonic() + 30
        while not (described_offsets := await client.request(describe_offsets, 1)).groups[0].topics:
            assert time.monotonic() < deadline, f"never initialized: {described_offsets}"
            await asyncio.sleep(0.1)  # the initialization is under way: poll under the deadline
        ours, absent, nobody = described_offsets.groups
        assert [
            (t.topic_name, [(p.partition_index, p.lag, p.error_code) for p in t.partitions])
            for t in ours.topics
        ] == [(topic, [(0, 0, E.NONE)])]
        [missing] = absent.topics
        assert (missing.topic_id, [(p.start_offset, p.lag) for p in missing.partitions]) == (
            uuid.UUID(int=0),
            [(-1, -1)],
        )
        assert nobody.topics == []
        left = await beat(member, -1)
        assert (left.error_code, left.member_epoch) == (E.NONE, -1)
        deleted = await client.request(DeleteGroupsRequest(groups_names=[group]), 2)
        assert deleted.results[0].error_code == E.NONE
        gone = await client.request(ShareGroupDescribeRequest(group_ids=[group]), 1)
        assert gone.groups[0].error_code == E.GROUP_ID_NOT_FOUND
        closing = await client.request(fetch_request(group, member, -1, topic_id), 2)
        assert closing.error_code == E.NONE
    finally:
        await client.close()


def test_share_requests_are_answered_as_kafka_does(disk_target: BrokerProcess) -> None:
    asyncio.run(scenario(disk_target))


async def share_api_versions(target: BrokerProcess) -> dict[int, tuple[int, int]]:
    host, port = target.bootstrap.rsplit(":", 1)
    client = await KafkaClient.connect(host, int(port))
    try:
        keys = (
            ApiKey.SHARE_GROUP_HEARTBEAT,
            ApiKey.SHARE_GROUP_DESCRIBE,
            ApiKey.SHARE_FETCH,
            ApiKey.SHARE_ACKNOWLEDGE,
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
            ApiKey.ALTER_SHARE_GROUP_OFFSETS,
            ApiKey.DELETE_SHARE_GROUP_OFFSETS,
        )
        return {int(k): client.api_versions[k] for k in keys if k in client.api_versions}
    finally:
        await client.close()


def test_share_apis_are_served_at_kafkas_versions(disk_target: BrokerProcess) -> None:
    """ShareGroupHeartbeat and ShareGroupDescribe v1, ShareFetch and ShareAcknowledge v1-v2 (v0,
    the early access of Kafka 4.0, is gone since 4.1), DescribeShareGroupOffsets v0-v1,
    AlterShareGroupOffsets and DeleteShareGroupOffsets v0."""
    assert asyncio.run(share_api_versions(disk_target)) == {
        76: (1, 1),
        77: (1, 1),
        78: (1, 2),
        79: (1, 2),
        90: (0, 1),
        91: (0, 0),
        92: (0, 0),
    }
