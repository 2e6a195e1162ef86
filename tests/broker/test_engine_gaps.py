"""Engine correctness gaps found in review (issue 13), each against Kafka's behaviour: record
errors in Produce responses, ListOffsets special timestamps, InitProducerId without a
transactional id, acks=0 failures, group writes the log refuses, ``group.max.size`` and the
offsets topic's compression codec."""

from __future__ import annotations

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.group import GroupState
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.messages import (
    ErrorCode,
    InitProducerIdRequest,
    InitProducerIdResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from kafka_wire.protocol.events import NEED_DATA, Response
from kafka_wire.records import NewRecord, build_batch, read_batches
from kafka_wire.records.constants import COMPRESSION_MASK
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, produce
from tests.broker.test_engine_groups import commit, committed, find_coordinator

# -- Produce: record_errors --------------------------------------------------------------------


@pytest.mark.parametrize("version", [7, 8, 9])
def test_a_refused_batch_names_its_bad_records(version: int) -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "compacted", cleanup_policy="compact")
    batch = build_batch(
        [NewRecord(b"k", b"1"), NewRecord(None, b"2"), NewRecord(b"k", b"3"), NewRecord(None, b"4")],
        default_timestamp=engine.now_ms,
    )
    request = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequestTopicProduceData(
                name="compacted", partition_data=[ProduceRequestPartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    reply = client.request(request, version)
    assert isinstance(reply.body, ProduceResponse)
    [answer] = reply.body.responses[0].partition_responses
    assert answer.error_code == ErrorCode.INVALID_RECORD
    if version >= 8:  # the field exists from v8
        assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
            (1, "Compacted topic cannot accept message without key."),
            (3, "Compacted topic cannot accept message without key."),
        ]
    else:
        assert answer.record_errors == []


# -- ListOffsets: Kafka 4's special timestamps ---------------------------------------------------


def list_offset(client: Client, timestamp: int, version: int) -> tuple[int, int, int, int]:
    """(error, offset, timestamp, leader epoch) for partition 0 of ``lo``."""
    reply = client.request(
        ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequestTopic(
                    name="lo", partitions=[ListOffsetsRequestPartition(timestamp=timestamp)]
                )
            ],
        ),
        version,
    )
    assert isinstance(reply.body, ListOffsetsResponse)
    p = reply.body.topics[0].partitions[0]
    return p.error_code, p.offset, p.timestamp, p.leader_epoch


def test_list_offsets_answers_every_special_timestamp_as_kafka_4() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "lo")
    for i in range(3):
        produce(client, "lo", build_batch([NewRecord(None, b"x")] * 2, default_timestamp=1000 * (i + 1)))
    ok = ErrorCode.NONE
    # The old code searched for timestamp -6 and answered offset 0.
    assert list_offset(client, -6, 11) == (ok, -1, -1, -1)  # earliest pending upload (KIP-1023)
    assert list_offset(client, -1, 11) == (ok, 6, -1, 0)  # latest: the high watermark
    assert list_offset(client, -2, 11) == (ok, 0, -1, 0)  # earliest: the log start
    assert list_offset(client, -3, 11) == (ok, 4, 3000, 0)  # the first record with the largest timestamp
    assert list_offset(client, -4, 11) == (ok, 0, -1, 0)  # earliest local = earliest without tiering
    assert list_offset(client, -5, 11) == (ok, -1, -1, -1)  # latest tiered: nothing is tiered
    assert list_offset(client, 2000, 11) == (ok, 2, 2000, 0)
    assert list_offset(client, 9999, 11) == (ok, -1, -1, -1)
    # Each special timestamp needs the version that defines it; other negative ones never work.
    unsupported = (ErrorCode.UNSUPPORTED_VERSION, -1, -1, -1)
    assert list_offset(client, -6, 10) == unsupported
    assert list_offset(client, -5, 8) == unsupported
    assert list_offset(client, -4, 7) == unsupported
    assert list_offset(client, -3, 6) == unsupported
    assert list_offset(client, -7, 11) == unsupported
    assert list_offset(client, -5, 9) == (ok, -1, -1, -1)
    assert list_offset(client, -4, 8) == (ok, 0, -1, 0)
    assert list_offset(client, -1, 1)[:2] == (ok, 6)


# -- InitProducerId ------------------------------------------------------------------------------


def init_producer_id(client: Client, version: int, producer_id: int, epoch: int) -> tuple[int, int, int]:
    reply = client.request(
        InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=1000, producer_id=producer_id, producer_epoch=epoch
        ),
        version,
    )
    assert isinstance(reply.body, InitProducerIdResponse)
    return reply.body.error_code, reply.body.producer_id, reply.body.producer_epoch


def test_an_idempotent_producer_asking_again_gets_a_new_producer_id() -> None:
    """KIP-360: without a transactional id Kafka hands out a fresh id at epoch 0, whatever id and
    epoch the producer names (the old code answered INVALID_PRODUCER_ID_MAPPING or bumped the epoch)."""
    client = Client(Engine(), 1)
    assert init_producer_id(client, 4, -1, -1) == (ErrorCode.NONE, 0, 0)
    assert init_producer_id(client, 4, 0, 0) == (ErrorCode.NONE, 1, 0)
    assert init_producer_id(client, 4, 1, 5) == (ErrorCode.NONE, 2, 0)
    assert init_producer_id(client, 4, 77, 3) == (ErrorCode.NONE, 3, 0)  # an id this broker never gave
    assert init_producer_id(client, 4, 3, -1) == (ErrorCode.INVALID_REQUEST, -1, -1)
    assert init_producer_id(client, 4, -1, 3) == (ErrorCode.INVALID_REQUEST, -1, -1)
    assert init_producer_id(client, 2, -1, -1) == (ErrorCode.NONE, 4, 0)


# -- acks=0 ----------------------------------------------------------------------------------------


def test_a_failed_acks0_produce_closes_the_connection() -> None:
    engine = Engine()
    client = Client(engine, 1)
    other = Client(engine, 2)
    create(client, "fire")
    produce(client, "fire", build_batch([NewRecord(None, b"ok")], default_timestamp=engine.now_ms), acks=0)
    assert 1 not in engine.closed  # a successful acks=0 produce: nothing at all
    produce(client, "ghost", build_batch([NewRecord(None, b"lost")], default_timestamp=engine.now_ms), acks=0)
    assert 1 in engine.closed  # Kafka closes the connection: the producer learns of the failure
    # A request pipelined behind the failed produce on the same connection is not served.
    assert engine.take(1) == b""
    reply = other.request(MetadataRequest(topics=None))
    assert isinstance(reply.body, MetadataResponse)


def acks0_produce_to_a_missing_topic() -> ProduceRequest:
    """An acks=0 Produce that fails (its topic does not exist): Kafka closes the connection."""
    records = build_batch([NewRecord(None, b"x")])
    partition = ProduceRequestPartitionProduceData(index=0, records=records)
    topic = ProduceRequestTopicProduceData(name="ghost", partition_data=[partition])
    return ProduceRequest(acks=0, timeout_ms=1000, topic_data=[topic])


def test_requests_pipelined_after_a_failed_acks0_produce_are_not_served() -> None:
    engine = Engine()
    client = Client(engine, 1)
    bad = acks0_produce_to_a_missing_topic()
    data = client.conn.send(bad, 9) + client.conn.send(MetadataRequest(topics=None), 9)
    engine.feed(1, data)
    assert 1 in engine.closed and engine.take(1) == b""


# -- group writes the log refuses ----------------------------------------------------------------


def big_commit(client: Client, group: str, offsets: dict[int, int], metadata_bytes: int) -> list[int]:
    reply = client.request(
        OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequestTopic(
                    name="orders",
                    partitions=[
                        OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=o, committed_metadata="m" * metadata_bytes
                        )
                        for p, o in offsets.items()
                    ],
                )
            ],
        ),
        7,
    )
    assert isinstance(reply.body, OffsetCommitResponse)
    return [p.error_code for t in reply.body.topics for p in t.partitions]


def test_a_commit_too_large_to_store_is_refused_and_not_applied() -> None:
    """Over 1 MiB (``max.message.bytes``): the old code answered success and lost it at restart."""
    engine = Engine()
    client = Client(engine, 1)
    create(client, "orders", partitions=300)  # every partition committed exists
    assert commit(client, "billing", "orders", {0: 5}) == [ErrorCode.NONE]
    many = {p: 100 + p for p in range(300)}  # 300 x 4000 bytes of metadata: about 1.2 MB
    errors = big_commit(client, "billing", many, 4000)
    assert errors == [ErrorCode.UNKNOWN_SERVER_ERROR] * 300  # Kafka 4's coordinator maps MESSAGE_TOO_LARGE so
    assert committed(client, "billing", "orders", [0, 1]) == {0: 5, 1: -1}
    again = Client(Engine(storage=engine.storage), 1)
    assert committed(again, "billing", "orders", [0, 1]) == {0: 5, 1: -1}
    # A commit that fits is stored as before.
    assert big_commit(again, "billing", {0: 6, 1: 7}, 4000) == [ErrorCode.NONE, ErrorCode.NONE]
    assert committed(again, "billing", "orders", [0, 1]) == {0: 6, 1: 7}


def join(client: Client, group: str, member_id: str = "") -> JoinGroupResponse:
    find_coordinator(client, group)
    reply = client.request(
        JoinGroupRequest(
            group_id=group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
            ],
        ),
        5,
    )
    assert isinstance(reply.body, JoinGroupResponse)
    return reply.body


def sync(client: Client, group: str, joined: JoinGroupResponse, assignment: bytes) -> SyncGroupResponse:
    reply = client.request(
        SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            assignments=[SyncGroupRequestAssignment(member_id=joined.member_id, assignment=assignment)],
        ),
        3,
    )
    assert isinstance(reply.body, SyncGroupResponse)
    return reply.body


def test_an_assignment_too_large_to_store_fails_the_sync_and_rebalances() -> None:
    engine = Engine()
    client = Client(engine, 1)
    first = join(client, "big")
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    joined = join(client, "big", first.member_id)
    assert joined.error_code == ErrorCode.NONE and joined.leader == joined.member_id
    failed = sync(client, "big", joined, b"a" * 1_100_000)
    assert (failed.error_code, failed.assignment) == (ErrorCode.UNKNOWN_SERVER_ERROR, b"")
    assert engine.broker.group_coordinator.state_of("big") is GroupState.PREPARING_REBALANCE
    rejoined = join(client, "big", joined.member_id)
    assert rejoined.generation_id == joined.generation_id + 1
    stored = sync(client, "big", rejoined, b"small")
    assert (stored.error_code, stored.assignment) == (ErrorCode.NONE, b"small")


# -- configuration ----------------------------------------------------------------------------------


def test_group_max_size_limits_joins() -> None:
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, group_max_size=1))
    first, second = Client(engine, 1), Client(engine, 2)
    joined = join(first, "small", join(first, "small").member_id)
    assert joined.error_code == ErrorCode.NONE
    assert sync(first, "small", joined, b"").error_code == ErrorCode.NONE
    full = join(second, "small")
    assert (full.error_code, full.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")


def test_group_writes_use_the_offsets_topic_compression_codec() -> None:
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, offsets_topic_compression_codec=1))
    client = Client(engine, 1)
    create(client, "orders")
    assert commit(client, "zipped", "orders", {0: 5}) == [ErrorCode.NONE]
    stored = [
        batch
        for (topic, _), replica in engine.broker.state.partitions.items()
        if topic == OFFSETS_TOPIC and replica.log_end_offset
        for batch in read_batches(replica.log.read_bytes(replica.log.read(0, 1 << 20)))
    ]
    assert len(stored) == 1 and stored[0].attributes & COMPRESSION_MASK == 1  # gzip
    assert committed(Client(Engine(storage=engine.storage), 1), "zipped", "orders", [0]) == {0: 5}


def test_answers_to_requests_before_a_failed_acks0_produce_go_out_before_the_close() -> None:
    """Found by ``kafka-wire fuzz`` (a CreateTopics then a failing acks=0 Produce, pipelined):
    Kafka reads one request at a time, so what came before the produce is answered, then the
    connection closes; the engine used to close at once and drop those answers."""
    engine = Engine()
    client = Client(engine, 1)
    bad = acks0_produce_to_a_missing_topic()
    data = client.conn.send(MetadataRequest(topics=None), 9) + client.conn.send(bad, 9)
    data += client.conn.send(MetadataRequest(topics=None), 9)
    engine.feed(1, data)
    assert 1 in engine.closed
    client.conn.receive_data(engine.take(1))
    reply = client.conn.next_event()
    assert isinstance(reply, Response) and isinstance(reply.body, MetadataResponse)
    assert client.conn.next_event() is NEED_DATA  # the Metadata after the produce is not served
