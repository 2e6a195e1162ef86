"""``controller_mutation_rate`` in the engine (KIP-599): a token bucket of partitions per second;
CreateTopics v6+, CreatePartitions v3+ and DeleteTopics v5+ refuse a topic once the bucket is
below zero (THROTTLING_QUOTA_EXCEEDED and the time until it refills), older versions are only
told the throttle time; the connection is muted for it."""

from __future__ import annotations

from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.quotas.rate import TokenBucket
from kafka_wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    DeleteTopicsResponse,
    ErrorCode,
)
from tests.broker.engine import Client, Engine
from tests.broker.quotas.test_quota_admin import alter, entry

THROTTLED = ErrorCode.THROTTLING_QUOTA_EXCEEDED


def _create(client: Client, *topics: tuple[str, int], version: int | None = None) -> CreateTopicsResponse:
    body = CreateTopicsRequest(
        topics=[
            CreateTopicsRequestCreatableTopic(name=n, num_partitions=p, replication_factor=1)
            for n, p in topics
        ],
        timeout_ms=5000,
    )
    reply = client.request(body, version).body
    assert isinstance(reply, CreateTopicsResponse)
    return reply


def test_the_token_bucket_refills_at_the_quota_up_to_its_burst() -> None:
    bucket = TokenBucket(11, 1000, 2.0, 0)
    assert bucket.measure(2.0, 0) == 22.0  # 2 per second over 11 windows of 1 s
    bucket.record(25, 2.0, 0)
    assert bucket.tokens == -3.0
    assert bucket.measure(2.0, 1500) == 0.0
    assert bucket.measure(2.0, 100_000) == 22.0


def test_create_topics_over_the_rate_is_refused_per_topic() -> None:
    engine = Engine()
    client = Client(engine, 1)
    assert alter(client, entry({"client-id": "client-1"}, {"controller_mutation_rate": 2.0})) == [(0, None)]
    first = _create(client, ("a", 20), ("b", 5))  # 22 credits: both pass, the second leaves -3
    assert [(t.name, t.error_code) for t in first.topics] == [("a", 0), ("b", 0)]
    assert first.throttle_time_ms == 0
    second = _create(client, ("c", 1), ("a", 1))  # below zero: "c" refused; "a" exists, counts nothing
    assert [(t.name, t.error_code) for t in second.topics] == [
        ("c", THROTTLED),
        ("a", ErrorCode.TOPIC_ALREADY_EXISTS),
    ]
    assert second.topics[0].error_message == "The throttling quota has been exceeded."
    assert 1400 <= second.throttle_time_ms <= 1500  # -3 credits at 2 per second
    assert 1 in engine.paused  # muted for it once answered
    engine.advance(1600)
    assert 1 not in engine.paused
    third = _create(client, ("c", 1))
    assert [(t.name, t.error_code) for t in third.topics] == [("c", 0)]


def test_old_versions_are_throttled_but_not_refused() -> None:
    engine = Engine()
    client = Client(engine, 1)
    assert alter(client, entry({"client-id": None}, {"controller_mutation_rate": 1.0})) == [(0, None)]
    reply = _create(client, ("a", 10), ("b", 10), version=5)  # permissive before v6
    assert [t.error_code for t in reply.topics] == [0, 0]
    assert 8_000 <= reply.throttle_time_ms <= 9_000  # 11 credits, 20 taken: 9 s to refill


def test_create_partitions_and_delete_topics_count_partitions() -> None:
    engine = Engine()
    client = Client(engine, 1)
    _create(client, ("a", 1), ("b", 4))
    assert alter(client, entry({"user": None}, {"controller_mutation_rate": 1.0})) == [(0, None)]
    grown = client.request(
        CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequestTopic(name="a", count=13, assignments=None),
                CreatePartitionsRequestTopic(name="b", count=6, assignments=None),
            ],
            timeout_ms=5000,
        )
    ).body
    assert isinstance(grown, CreatePartitionsResponse)
    assert [(r.name, r.error_code) for r in grown.results] == [
        ("a", 0),
        ("b", THROTTLED),
    ]  # 12 of 11 taken: -1
    engine.advance(grown.throttle_time_ms + 100)
    deleted = client.request(
        DeleteTopicsRequest(topics=[DeleteTopicsRequestDeleteTopicState(name="b")], timeout_ms=5000)
    ).body
    assert isinstance(deleted, DeleteTopicsResponse)
    assert [(r.name, r.error_code) for r in deleted.responses] == [("b", 0)]  # strict: checked before
    again = client.request(
        DeleteTopicsRequest(topics=[DeleteTopicsRequestDeleteTopicState(name="a")], timeout_ms=5000)
    ).body
    assert isinstance(again, DeleteTopicsResponse)
    assert [(r.name, r.error_code) for r in again.responses] == [("a", THROTTLED)]
    assert again.throttle_time_ms > 2_000


def test_the_burst_follows_the_controller_quota_windows() -> None:
    """``controller.quota.window.num`` x ``controller.quota.window.size.seconds`` (not the client
    quota windows) bound the bucket: 2 windows of 1 s at 2 per second hold 4 credits."""
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, controller_quota_window_num=2))
    client = Client(engine, 1)
    assert alter(client, entry({"client-id": "client-1"}, {"controller_mutation_rate": 2.0})) == [(0, None)]
    first = _create(client, ("a", 5))  # 4 credits: passes, leaves -1
    assert [t.error_code for t in first.topics] == [0]
    second = _create(client, ("b", 1))
    assert [t.error_code for t in second.topics] == [THROTTLED]
    assert 400 <= second.throttle_time_ms <= 500
