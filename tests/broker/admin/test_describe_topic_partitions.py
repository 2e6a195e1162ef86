"""DescribeTopicPartitions: paging by cursor and partition limit, unknown topics, and the
partitions as a single node and as a cluster's metadata image give them."""

from __future__ import annotations

from kafka_wire.messages import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsRequestCursor,
    DescribeTopicPartitionsRequestTopicRequest,
    DescribeTopicPartitionsResponse,
    ErrorCode,
)
from tests.broker.admin.cluster import TOPIC_ID, cluster_engine
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create

ALL_OPERATIONS = 0b0000_1101_1111_1000  # READ..ALTER_CONFIGS without CLUSTER_ACTION (3576)


def describe(
    client: Client, *names: str, limit: int = 2000, cursor: tuple[str, int] | None = None
) -> DescribeTopicPartitionsResponse:
    request = DescribeTopicPartitionsRequest(
        topics=[DescribeTopicPartitionsRequestTopicRequest(name=n) for n in names],
        response_partition_limit=limit,
        cursor=None
        if cursor is None
        else DescribeTopicPartitionsRequestCursor(topic_name=cursor[0], partition_index=cursor[1]),
    )
    reply = client.request(request, 0).body
    assert isinstance(reply, DescribeTopicPartitionsResponse)
    return reply


def listed(reply: DescribeTopicPartitionsResponse) -> list[tuple[str | None, list[int]]]:
    return [(t.name, [p.partition_index for p in t.partitions]) for t in reply.topics]


def cursor_of(reply: DescribeTopicPartitionsResponse) -> tuple[str, int] | None:
    c = reply.next_cursor
    return None if c is None else (c.topic_name, c.partition_index)


def three_topics() -> Client:
    client = Client(Engine(), 1)
    create(client, "b-topic", 2)
    create(client, "a-topic", 3)
    create(client, "c-topic", 1)
    return client


def test_every_topic_in_name_order_with_its_partitions() -> None:
    client = three_topics()
    reply = describe(client)
    assert listed(reply) == [("a-topic", [0, 1, 2]), ("b-topic", [0, 1]), ("c-topic", [0])]
    assert cursor_of(reply) is None
    a = reply.topics[0]
    assert (a.error_code, a.is_internal, a.topic_authorized_operations) == (
        ErrorCode.NONE,
        False,
        ALL_OPERATIONS,
    )
    p = a.partitions[0]
    assert (p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes) == (0, 1, 0, [1], [1])
    assert (p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas) == ([], [], [])


def test_paging_through_every_topic_by_cursor() -> None:
    client = three_topics()
    pages = []
    cursor: tuple[str, int] | None = None
    while True:
        reply = describe(client, limit=2, cursor=cursor)
        pages.append(listed(reply))
        cursor = cursor_of(reply)
        if cursor is None:
            break
    assert pages == [
        [("a-topic", [0, 1])],
        [("a-topic", [2]), ("b-topic", [0])],
        [("b-topic", [1]), ("c-topic", [0])],
    ]


def test_a_limit_reached_at_the_end_of_a_topic_points_at_the_next_one() -> None:
    client = three_topics()
    reply = describe(client, limit=3)
    assert listed(reply) == [("a-topic", [0, 1, 2])]
    assert cursor_of(reply) == ("b-topic", 0)


def test_named_topics_from_the_cursor_on_unknown_ones_included() -> None:
    client = three_topics()
    reply = describe(client, "c-topic", "zz-missing", "a-topic", "b-topic", "c-topic", cursor=("b-topic", 1))
    assert listed(reply) == [("b-topic", [1]), ("c-topic", [0]), ("zz-missing", [])]
    assert reply.topics[2].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    invalid = describe(client, "no/slashes")
    assert invalid.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_a_limit_below_one_still_answers_one_partition() -> None:
    client = three_topics()
    reply = describe(client, "a-topic", limit=0)
    assert listed(reply) == [("a-topic", [0])] and cursor_of(reply) == ("a-topic", 1)


def test_a_cursor_past_the_last_partition_answers_none() -> None:
    client = three_topics()
    assert listed(describe(client, "a-topic", cursor=("a-topic", 9))) == [("a-topic", [])]


def test_a_cursor_outside_the_named_topics_or_negative_is_invalid() -> None:
    client = three_topics()
    for reply in (
        describe(client, "a-topic", "b-topic", cursor=("c-topic", 0)),
        describe(client, "a-topic", "b-topic", cursor=("a-topic", -1)),
    ):
        assert [(t.name, t.error_code) for t in reply.topics] == [
            ("a-topic", ErrorCode.INVALID_REQUEST),
            ("b-topic", ErrorCode.INVALID_REQUEST),
        ]


def test_partitions_as_the_metadata_image_registers_them() -> None:
    engine, _ = cluster_engine()
    client = Client(engine, 1)
    reply = describe(client, "orders")
    (topic,) = reply.topics
    assert topic.topic_id == TOPIC_ID
    p0, p1, p2 = topic.partitions
    assert (p0.leader_id, p0.leader_epoch, p0.replica_nodes, p0.isr_nodes) == (1, 5, [1, 2, 3], [1, 2])
    assert (p0.eligible_leader_replicas, p0.offline_replicas) == ([3], [3])
    assert (p1.leader_id, p1.replica_nodes, p1.offline_replicas) == (2, [2, 3, 1], [3])
    # Offline: no leader, its only replica fenced.
    assert (p2.error_code, p2.leader_id, p2.leader_epoch, p2.offline_replicas) == (0, -1, 9, [3])
    assert p2.last_known_elr == [3]
