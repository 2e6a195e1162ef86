"""Groups through the whole engine: FindCoordinator, a simple offset commit, persistence in
``__consumer_offsets`` across a restart, and offsets dropped with their topic."""

from __future__ import annotations

import pytest

from kafka_wire.messages import (
    DeleteTopicsRequest,
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create


def find_coordinator(client: Client, group: str) -> FindCoordinatorResponse:
    """FindCoordinator until it names one, as a client does: the first one asks the controller
    for ``__consumer_offsets`` (COORDINATOR_NOT_AVAILABLE meanwhile, as Kafka answers)."""
    for _ in range(5):
        reply = client.request(FindCoordinatorRequest(key=group, key_type=0), 3).body
        assert isinstance(reply, FindCoordinatorResponse)
        if reply.error_code == ErrorCode.NONE:
            client.engine.advance(0)  # its partition opened and loaded (in slices of the budget)
            return reply
        assert reply.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        client.engine.advance(100)
    raise AssertionError(f"no coordinator for {group}")


def commit(client: Client, group: str, topic: str, offsets: dict[int, int]) -> list[int]:
    find_coordinator(client, group)
    reply = client.request(
        OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=p, committed_offset=o)
                        for p, o in offsets.items()
                    ],
                )
            ],
        ),
        7,
    )
    assert isinstance(reply.body, OffsetCommitResponse)
    return [p.error_code for t in reply.body.topics for p in t.partitions]


def committed(client: Client, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    find_coordinator(client, group)
    reply = client.request(
        OffsetFetchRequest(
            group_id=group, topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)]
        ),
        7,
    )
    assert isinstance(reply.body, OffsetFetchResponse)
    return {p.partition_index: p.committed_offset for t in reply.body.topics for p in t.partitions}


def test_committed_offsets_survive_a_restart_and_go_with_their_topic() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "orders", 3)
    found = find_coordinator(client, "billing")
    assert (found.error_code, found.node_id, found.port) == (ErrorCode.NONE, 1, 9092)
    assert commit(client, "billing", "orders", {0: 5, 2: 9}) == [ErrorCode.NONE, ErrorCode.NONE]
    assert committed(client, "billing", "orders", [0, 1, 2]) == {0: 5, 1: -1, 2: 9}
    # Internal topic: listed with every topic, flagged internal.
    listing = client.request(MetadataRequest(topics=None))
    assert isinstance(listing.body, MetadataResponse)
    internal = {t.name: t.is_internal for t in listing.body.topics}
    assert internal == {"orders": False, "__consumer_offsets": True}

    restarted = Engine(storage=engine.storage)
    again = Client(restarted, 1)
    assert committed(again, "billing", "orders", [0, 2]) == {0: 5, 2: 9}
    # An unknown topic cannot take commits.
    assert commit(again, "billing", "ghost", {0: 1}) == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]

    again.request(DeleteTopicsRequest(topic_names=["orders"], timeout_ms=100), 5)
    meta = again.request(
        MetadataRequest(topics=[MetadataRequestTopic(name="orders")], allow_auto_topic_creation=False)
    )
    assert (
        isinstance(meta.body, MetadataResponse)
        and meta.body.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    third = Client(Engine(storage=restarted.storage), 1)
    assert committed(third, "billing", "orders", [0, 2]) == {0: -1, 2: -1}


@pytest.mark.parametrize("retention_ms", [(1 << 63) - 1, -(1 << 63), 1 << 62])
def test_an_offset_commit_with_an_extreme_retention_is_stored(retention_ms: int) -> None:
    """Found by ``kafka-wire fuzz``: OffsetCommit v2-v4 with ``retention_time_ms`` near the int64
    limits made an expiry past int64, and encoding the offset record raised in the engine."""
    engine = Engine()
    client = Client(engine, 1)
    create(client, "orders", 1)
    find_coordinator(client, "extreme")
    reply = client.request(
        OffsetCommitRequest(
            group_id="extreme",
            generation_id_or_member_epoch=-1,
            member_id="",
            retention_time_ms=retention_ms,
            topics=[
                OffsetCommitRequestTopic(
                    name="orders",
                    partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=5)],
                )
            ],
        ),
        2,
    )
    assert isinstance(reply.body, OffsetCommitResponse)
    assert [p.error_code for t in reply.body.topics for p in t.partitions] == [ErrorCode.NONE]
    assert commit(client, "extreme", "orders", {0: 6}) == [ErrorCode.NONE]  # the engine still serves


def test_a_commit_to_a_partition_the_topic_lacks_is_unknown_topic_or_partition() -> None:
    """Kafka's broker checks each committed partition exists before its coordinator sees it
    (found by tests/differential); the other partitions are committed."""
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t", 2)
    assert commit(client, "g", "t", {0: 5, 1: 6, 9: 1}) == [0, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert committed(client, "g", "t", [0, 1]) == {0: 5, 1: 6}
    stale = client.request(
        OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=3,
            member_id="nobody",
            topics=[
                OffsetCommitRequestTopic(
                    name="t",
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=0, committed_offset=1),
                        OffsetCommitRequestPartition(partition_index=9, committed_offset=1),
                    ],
                )
            ],
        ),
        9,
    ).body
    assert isinstance(stale, OffsetCommitResponse)  # the partition's own error comes first
    assert [p.error_code for p in stale.topics[0].partitions][1] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
