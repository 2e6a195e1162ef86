"""KIP-932 share groups through the whole engine: ShareGroupHeartbeat, then ShareFetch and
ShareAcknowledge on one node: sessions and their epochs, acquired records with delivery counts,
accept / release / reject, lock timeouts on the engine's clock and the delivery limit."""

from __future__ import annotations

import uuid

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.share.state_records import ShareStateKey
from kafka_wire.messages import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
    DescribeShareGroupOffsetsResponse,
    ErrorCode,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    MetadataRequest,
    MetadataResponse,
    ShareAcknowledgeRequest,
    ShareAcknowledgeRequestAcknowledgementBatch,
    ShareAcknowledgeRequestAcknowledgePartition,
    ShareAcknowledgeRequestAcknowledgeTopic,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchRequestAcknowledgementBatch,
    ShareFetchRequestFetchPartition,
    ShareFetchRequestFetchTopic,
    ShareFetchResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from kafka_wire.records import NewRecord, build_batch, read_records
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, produce
from tests.broker.test_engine_groups import find_coordinator

E = ErrorCode
LOCK_MS = 10_000


def setup(records: int = 10, *, warm: bool = True, **config: int) -> tuple[Engine, Client, uuid.UUID]:
    engine = Engine(
        BrokerConfig(
            group_initial_rebalance_delay_ms=0,
            group_share_record_lock_duration_ms=LOCK_MS,
            group_share_min_record_lock_duration_ms=1000,  # Kafka's lowest: group configs of 1-2 s
            **config,  # type: ignore[arg-type]
        )
    )
    client = Client(engine, 1)
    create(client, "q")
    metadata = client.request(MetadataRequest(topics=None), 12).body
    assert isinstance(metadata, MetadataResponse)
    topic_id = next(t.topic_id for t in metadata.topics if t.name == "q")
    # The share-partition starts at the high watermark (share.auto.offset.reset=latest): fetch
    # once before producing.
    find_coordinator(client, "sg")
    joined = client.request(
        ShareGroupHeartbeatRequest(
            group_id="sg", member_id="m1", member_epoch=0, subscribed_topic_names=["q"]
        ),
        1,
    ).body
    assert isinstance(joined, ShareGroupHeartbeatResponse) and joined.error_code == E.NONE
    assert joined.assignment is not None and joined.assignment.topic_partitions[0].partitions == [0]
    if warm:
        share_state_ready(engine, client, topic_id)
    return engine, client, topic_id


def share_state_ready(engine: Engine, client: Client, topic_id: uuid.UUID) -> None:
    """Fetch (as a member "warmup") until the share-partition exists and its state partition is
    served (the first share fetch asks the controller for ``__share_group_state``). The warm-up
    session then closes."""
    share = engine.broker.state.share
    assert share is not None and share.store is not None
    state_key = ShareStateKey("sg", topic_id, 0)
    for _ in range(50):
        fetch(client, topic_id, 0, member="warmup")
        if ("sg", topic_id, 0) in share.partitions and share.store.partition_of(
            state_key
        ) in share.store.served:
            fetch(client, topic_id, -1, member="warmup")
            return
        engine.advance(100)
    raise AssertionError("the share-partition never started")


def fetch_request(
    topic_id: uuid.UUID,
    epoch: int,
    *,
    member: str = "m1",
    acks: tuple[tuple[int, int, list[int]], ...] | list[tuple[int, int, list[int]]] = (),
    max_records: int = 500,
    max_wait_ms: int = 0,
) -> ShareFetchRequest:
    return ShareFetchRequest(
        group_id="sg",
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=max_records,
        batch_size=max_records,
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
                            for f, last, types in acks
                        ],
                    )
                ],
            )
        ],
    )


def fetch(
    client: Client,
    topic_id: uuid.UUID,
    epoch: int,
    *,
    member: str = "m1",
    acks: tuple[tuple[int, int, list[int]], ...] | list[tuple[int, int, list[int]]] = (),
    max_records: int = 500,
    max_wait_ms: int = 0,
    version: int = 2,
) -> ShareFetchResponse:
    request = fetch_request(
        topic_id, epoch, member=member, acks=acks, max_records=max_records, max_wait_ms=max_wait_ms
    )
    reply = client.request(request, version).body
    assert isinstance(reply, ShareFetchResponse)
    return reply


def acknowledge(
    client: Client,
    topic_id: uuid.UUID,
    epoch: int,
    acks: list[tuple[int, int, list[int]]],
    member: str = "m1",
) -> ShareAcknowledgeResponse:
    reply = client.request(
        ShareAcknowledgeRequest(
            group_id="sg",
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
        ),
        2,
    ).body
    assert isinstance(reply, ShareAcknowledgeResponse)
    return reply


def acquired(reply: ShareFetchResponse) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in reply.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


def produce_values(engine: Engine, client: Client, values: list[bytes]) -> None:
    batch = build_batch([NewRecord(b"k", v) for v in values], default_timestamp=engine.now_ms)
    reply = produce(client, "q", batch)
    assert reply is not None and reply.responses[0].partition_responses[0].error_code == E.NONE


def test_fetch_acknowledge_release_reject_and_redelivery() -> None:
    engine, client, topic_id = setup()
    first = fetch(client, topic_id, 0)
    assert first.error_code == E.NONE and first.acquisition_lock_timeout_ms == LOCK_MS
    part = first.responses[0].partitions[0]
    assert part.records == b"" and part.acquired_records == []  # nothing yet: full answer, no records
    produce_values(engine, client, [b"%d" % i for i in range(10)])
    second = fetch(client, topic_id, 1, max_records=4)
    assert acquired(second) == [(0, 3, 1)]
    records = second.responses[0].partitions[0].records
    assert records is not None and [r.value for r in read_records(records)][:4] == [b"0", b"1", b"2", b"3"]
    # Accept 0-1, release 2, reject 3 (one type per offset), and fetch on.
    third = fetch(client, topic_id, 2, acks=[(0, 3, [1, 1, 2, 3])])
    part = third.responses[0].partitions[0]
    assert part.acknowledge_error_code == E.NONE
    assert acquired(third) == [(2, 2, 2), (4, 9, 1)]  # 2 comes back with its second delivery
    # Records not held: INVALID_RECORD_STATE, and nothing of the batch moves.
    refused = acknowledge(client, topic_id, 3, [(2, 2, [1]), (3, 3, [1])])
    assert refused.responses[0].partitions[0].error_code == E.INVALID_RECORD_STATE
    ok = acknowledge(client, topic_id, 4, [(2, 2, [1]), (4, 9, [1])])
    assert ok.error_code == E.NONE and ok.responses[0].partitions[0].error_code == E.NONE
    # Bad batches: overlapping, type list of the wrong length, unknown type.
    bad: list[list[tuple[int, int, list[int]]]] = [
        [(10, 12, [1]), (12, 13, [1])],
        [(10, 12, [1, 1])],
        [(10, 10, [9])],
        [(10, 10, [4])],  # RENEW outside a renew acknowledgement
    ]
    for epoch, batches in enumerate(bad, start=5):
        answer = acknowledge(client, topic_id, epoch, batches)
        assert answer.responses[0].partitions[0].error_code == E.INVALID_REQUEST
    produce_values(engine, client, [b"later"])
    assert acquired(fetch(client, topic_id, 9)) == [(10, 10, 1)]


def test_session_epochs_and_limit() -> None:
    _, client, topic_id = setup(max_share_session_cache_size=1)
    assert fetch(client, topic_id, 3).error_code == E.SHARE_SESSION_NOT_FOUND
    assert fetch(client, topic_id, 0).error_code == E.NONE
    assert fetch(client, topic_id, 2).error_code == E.INVALID_SHARE_SESSION_EPOCH
    assert fetch(client, topic_id, 1).error_code == E.NONE
    assert fetch(client, topic_id, 0, acks=[(0, 0, [1])]).error_code == E.INVALID_REQUEST
    assert fetch(client, topic_id, 0, member="m2").error_code == E.SHARE_SESSION_LIMIT_REACHED
    assert acknowledge(client, topic_id, 0, [(0, 0, [1])]).error_code == E.INVALID_SHARE_SESSION_EPOCH
    assert fetch(client, topic_id, -1).error_code == E.NONE  # closes it
    assert fetch(client, topic_id, 0, member="m2").error_code == E.NONE
    assert (
        acknowledge(client, topic_id, 5, [(0, 0, [1])], member="m2").error_code
        == E.INVALID_SHARE_SESSION_EPOCH
    )


def test_lock_timeout_redelivers_and_the_delivery_limit_archives() -> None:
    engine, client, topic_id = setup(group_share_delivery_count_limit=2)
    fetch(client, topic_id, 0)
    produce_values(engine, client, [b"poison"])
    assert acquired(fetch(client, topic_id, 1)) == [(0, 0, 1)]
    engine.advance(LOCK_MS)  # the lock runs out on the engine's timer
    assert acquired(fetch(client, topic_id, 2)) == [(0, 0, 2)]
    # Released at the limit (2 deliveries): archived, never delivered again.
    reply = fetch(client, topic_id, 3, acks=[(0, 0, [2])])
    assert reply.responses[0].partitions[0].acknowledge_error_code == E.NONE and acquired(reply) == []
    engine.advance(LOCK_MS)
    assert acquired(fetch(client, topic_id, 4)) == []


def test_two_members_never_hold_the_same_record() -> None:
    engine, client, topic_id = setup()
    other = Client(engine, 2)
    fetch(client, topic_id, 0)
    fetch(other, topic_id, 0, member="m2")
    produce_values(engine, client, [b"%d" % i for i in range(6)])
    a = acquired(fetch(client, topic_id, 1, max_records=3))
    b = acquired(fetch(other, topic_id, 1, member="m2", max_records=10))
    assert a == [(0, 2, 1)] and b == [(3, 5, 1)]
    # m2's records are not m1's to acknowledge.
    assert acknowledge(client, topic_id, 2, [(3, 3, [1])]).responses[0].partitions[0].error_code == (
        E.INVALID_RECORD_STATE
    )
    # m1's connection closes: its records come back to m2.
    engine.close(1)
    assert acquired(fetch(other, topic_id, 2, member="m2")) == [(0, 2, 2)]


def test_a_held_fetch_answers_when_records_arrive() -> None:
    engine, client, topic_id = setup()
    fetch(client, topic_id, 0)
    producer = Client(engine, 2)
    client.send(
        ShareFetchRequest(
            group_id="sg",
            member_id="m1",
            share_session_epoch=1,
            max_wait_ms=5000,
            min_bytes=1,
            max_bytes=1 << 20,
            max_records=100,
            batch_size=100,
            topics=[
                ShareFetchRequestFetchTopic(
                    topic_id=topic_id, partitions=[ShareFetchRequestFetchPartition(partition_index=0)]
                )
            ],
        ),
        2,
    )
    assert client.responses() == []  # held
    produce_values(engine, producer, [b"x", b"y"])
    engine.advance(0)  # the acquisition's write to the share coordinator (the loopback) goes round
    answered = client.responses()
    assert len(answered) == 1
    body = answered[0].body
    assert isinstance(body, ShareFetchResponse) and acquired(body) == [(0, 1, 1)]


def alter_group(client: Client, name: str, value: str, group: str = "sg") -> int:
    reply = client.request(
        IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestAlterConfigsResource(
                    resource_type=32,
                    resource_name=group,
                    configs=[
                        IncrementalAlterConfigsRequestAlterableConfig(
                            name=name, config_operation=0, value=value
                        )
                    ],
                )
            ]
        )
    ).body
    assert isinstance(reply, IncrementalAlterConfigsResponse)
    return reply.responses[0].error_code


def test_share_auto_offset_reset_earliest_is_a_group_config() -> None:
    engine, client, topic_id = setup(warm=False)
    produce_values(engine, client, [b"old"])
    assert alter_group(client, "share.auto.offset.reset", "sometime") == E.INVALID_CONFIG
    assert alter_group(client, "no.such.config", "1") == E.INVALID_CONFIG
    assert alter_group(client, "share.auto.offset.reset", "earliest") == E.NONE
    engine.advance(0)
    assert fetch_until_acquired(engine, client, topic_id) == [(0, 0, 1)]


def fetch_until_acquired(
    engine: Engine, client: Client, topic_id: uuid.UUID, member: str = "m1"
) -> list[tuple[int, int, int]]:
    """A new session's fetches until it acquires something (its share-partition starts once
    ``__share_group_state`` exists and is loaded)."""
    epoch = 0
    for _ in range(50):
        got = acquired(fetch(client, topic_id, epoch, member=member))
        if got:
            return got
        epoch += 1
        engine.advance(100)
    raise AssertionError("nothing acquired")


def test_the_share_state_survives_a_restart() -> None:
    """The share-partition's state is written to ``__share_group_state`` with every change, so a
    broker killed and started again on the same data knows what was acknowledged, rejected and
    delivered: only unacknowledged records come back, with their delivery counts."""
    engine, client, topic_id = setup()
    produce_values(engine, client, [b"%d" % i for i in range(10)])
    assert acquired(fetch(client, topic_id, 0)) == [(0, 9, 1)]
    ok = acknowledge(client, topic_id, 1, [(0, 2, [1]), (3, 3, [3]), (4, 4, [2])])
    assert ok.responses[0].partitions[0].error_code == E.NONE
    store = engine.broker.state.share
    assert store is not None and store.store is not None and store.store.states
    # Killed: no shutdown; the next broker starts on what the first one stored.
    restarted = Engine(storage=engine.storage)
    again = Client(restarted, 1)
    # 0-2 accepted and 3 rejected never come back; 4 (released) and 5-9 (acquired when the broker
    # died) do, each delivered a second time.
    assert fetch_until_acquired(restarted, again, topic_id, member="m2") == [(4, 9, 2)]
    # The share group is there too, its member at its epoch (ShareGroupHeartbeat answers as
    # before the restart).
    find_coordinator(again, "sg")
    beat = again.request(ShareGroupHeartbeatRequest(group_id="sg", member_id="m1", member_epoch=1), 1).body
    assert isinstance(beat, ShareGroupHeartbeatResponse)
    assert (beat.error_code, beat.member_epoch) == (E.NONE, 1)


def test_group_configs_set_the_lock_duration_and_the_delivery_limit() -> None:
    engine, client, topic_id = setup()
    assert alter_group(client, "share.record.lock.duration.ms", "999") == E.INVALID_CONFIG  # Kafka: >= 1000
    assert alter_group(client, "share.delivery.count.limit", "1") == E.INVALID_CONFIG  # Kafka: >= 2
    # The broker's bounds: group.share.min.record.lock.duration.ms (set to 1 s by setup) and
    # group.share.max.delivery.count.limit (10).
    assert alter_group(client, "share.delivery.count.limit", "11") == E.INVALID_CONFIG
    assert alter_group(client, "share.record.lock.duration.ms", "2000") == E.NONE
    assert alter_group(client, "share.delivery.count.limit", "2") == E.NONE
    engine.advance(0)
    assert fetch(client, topic_id, 0).acquisition_lock_timeout_ms == 2000
    produce_values(engine, client, [b"p"])
    assert acquired(fetch(client, topic_id, 1)) == [(0, 0, 1)]
    engine.advance(2000)
    assert acquired(fetch(client, topic_id, 2)) == [(0, 0, 2)]
    engine.advance(2000)  # expired at the group's limit of two deliveries: archived
    assert acquired(fetch(client, topic_id, 3)) == []


def test_group_configs_are_bounded_by_the_broker() -> None:
    # Kafka 4.4's defaults: share.record.lock.duration.ms between 15 s and 60 s.
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0))
    client = Client(engine, 1)
    assert alter_group(client, "share.record.lock.duration.ms", "14999") == E.INVALID_CONFIG
    assert alter_group(client, "share.record.lock.duration.ms", "15000") == E.NONE
    assert alter_group(client, "share.record.lock.duration.ms", "60001") == E.INVALID_CONFIG


def test_group_configs_outside_the_brokers_bounds_are_taken_at_the_nearest() -> None:
    # Stored while the bounds allowed them; the broker restarts with Kafka's default bounds
    # (lock 15-60 s, deliveries 2-10, record locks 100-4000): Kafka 4.4's GroupConfigManager
    # takes each at the nearest bound.
    engine, client, topic_id = setup(
        group_share_max_delivery_count_limit=25, group_share_max_partition_max_record_locks=10_000
    )
    assert alter_group(client, "share.record.lock.duration.ms", "2000") == E.NONE
    assert alter_group(client, "share.delivery.count.limit", "20") == E.NONE
    assert alter_group(client, "share.partition.max.record.locks", "9000") == E.NONE
    engine.advance(0)
    assert engine.broker.state.share is not None
    assert engine.broker.state.share.lock_duration_ms("sg") == 2000
    produce_values(engine, client, [b"p"])
    restarted = Engine(
        BrokerConfig(group_initial_rebalance_delay_ms=0),
        storage=engine.storage,
    )
    restarted.advance(0)
    share = restarted.broker.state.share
    assert share is not None
    assert share.lock_duration_ms("sg") == 15_000
    again = Client(restarted, 1)
    fetch_until_acquired(restarted, again, topic_id, member="m2")
    (partition,) = share.partitions.values()
    assert (partition.lock_duration_ms, partition.delivery_limit, partition.max_in_flight) == (
        15_000,
        10,
        4000,
    )


def test_describe_share_group_offsets() -> None:
    engine, client, topic_id = setup()
    produce_values(engine, client, [b"%d" % i for i in range(10)])
    fetch(client, topic_id, 0, max_records=6)  # 0-5 acquired
    acknowledge(client, topic_id, 1, [(0, 2, [1]), (4, 4, [1])])  # start moves to 3 once written
    reply = client.request(
        DescribeShareGroupOffsetsRequest(
            groups=[
                DescribeShareGroupOffsetsRequestGroup(group_id="sg", topics=None),
                DescribeShareGroupOffsetsRequestGroup(
                    group_id="sg",
                    topics=[
                        DescribeShareGroupOffsetsRequestTopic(topic_name="q", partitions=[0, 5]),
                        DescribeShareGroupOffsetsRequestTopic(topic_name="nope", partitions=[0]),
                    ],
                ),
                DescribeShareGroupOffsetsRequestGroup(group_id="other", topics=None),
            ]
        ),
        1,
    ).body
    assert isinstance(reply, DescribeShareGroupOffsetsResponse)
    every, some, other = reply.groups
    assert [
        (t.topic_name, [(p.partition_index, p.start_offset, p.lag) for p in t.partitions])
        for t in every.topics
    ] == [
        # the start offset the last write kept (as Kafka's leader, it moves past 0-2 after that
        # write): 10 - 0 - the four done past it
        ("q", [(0, 0, 6)])
    ]
    assert [
        (t.topic_name, t.topic_id, [(p.start_offset, p.lag) for p in t.partitions]) for t in some.topics
    ] == [  # Kafka's order: the topics the metadata lacks first
        ("nope", uuid.UUID(int=0), [(-1, -1)]),
        ("q", topic_id, [(0, 6), (-1, -1)]),
    ]
    assert other.topics == []


def test_a_fetch_held_for_a_replaced_session_acquires_nothing() -> None:
    """A share fetch held on a connection its member gave up (reset on the client's side only)
    ends with its share session: once the member opened a new one on another connection, the old
    fetch is answered without records, and what is produced next goes to the new session (the old
    fetch took a released record for no one: ``kafka-wire simulate --workload share-strict --seed
    17``)."""
    engine, client, topic_id = setup()
    gone = Client(engine, 2)
    gone.send(fetch_request(topic_id, 0, max_wait_ms=60_000), 2)
    assert gone.responses() == []  # held: nothing to acquire yet
    assert acquired(fetch(client, topic_id, 0)) == []  # the member's new session
    produce_values(engine, client, [b"a"])
    [answer] = gone.responses()
    assert isinstance(answer.body, ShareFetchResponse) and acquired(answer.body) == []
    assert acquired(fetch(client, topic_id, 1)) == [(0, 0, 1)]
