"""Answers of the data plane as Apache Kafka 4.4 gives them (found by tests/differential).

Produce: a refused partition has offsets -1; one refused for its records (a record errors list)
names the log start; by topic id, an unknown partition of a known topic is
UNKNOWN_TOPIC_OR_PARTITION; a duplicate batch is answered with its timestamp. ListOffsets: a
partition named twice is answered once."""

from __future__ import annotations

from kafka_wire.messages import (
    ErrorCode,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
    ProduceResponsePartitionProduceResponse,
)
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, produce


def answer(reply: ProduceResponse | None) -> tuple[int, int, int, int]:
    assert reply is not None
    result: ProduceResponsePartitionProduceResponse = reply.responses[0].partition_responses[0]
    return result.error_code, result.base_offset, result.log_append_time_ms, result.log_start_offset


def test_refused_partitions_have_no_offsets_unless_records_were_refused() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "plain")
    create(client, "compacted", cleanup_policy="compact")
    batch = build_batch([NewRecord(b"k", b"v")], default_timestamp=engine.now_ms)
    assert answer(produce(client, "plain", batch)) == (ErrorCode.NONE, 0, -1, 0)
    assert answer(produce(client, "plain", batch, acks=2)) == (ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, -1)
    assert answer(produce(client, "plain", batch, partition=3)) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        -1,
        -1,
        -1,
    )
    assert answer(produce(client, "plain", b"")) == (ErrorCode.INVALID_RECORD, -1, -1, -1)
    keyless = build_batch([NewRecord(None, b"v")], default_timestamp=engine.now_ms)
    assert answer(produce(client, "compacted", keyless)) == (ErrorCode.INVALID_RECORD, -1, -1, 0)


def test_by_topic_id_an_unknown_partition_is_unknown_topic_or_partition() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    found = client.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12).body
    assert isinstance(found, MetadataResponse)
    batch = build_batch([NewRecord(b"k", b"v")], default_timestamp=engine.now_ms)

    def by_id(partition: int) -> ProduceResponse:
        data = ProduceRequestTopicProduceData(
            topic_id=found.topics[0].topic_id,
            partition_data=[ProduceRequestPartitionProduceData(index=partition, records=batch)],
        )
        reply = client.request(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[data]), 13).body
        assert isinstance(reply, ProduceResponse)
        return reply

    assert answer(by_id(0))[0] == ErrorCode.NONE
    assert answer(by_id(4))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_duplicate_is_answered_with_its_offsets_and_its_timestamp() -> None:
    """Kafka answers a retained batch sent again with the first one's offsets and, as the log
    append time, its timestamp, on a CreateTime topic too."""
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    at = engine.now_ms - 5
    batch = build_batch([NewRecord(b"k", b"v", (), at)], producer_id=7, producer_epoch=0, base_sequence=0)
    assert answer(produce(client, "t", batch)) == (ErrorCode.NONE, 0, -1, 0)
    assert answer(produce(client, "t", batch)) == (ErrorCode.NONE, 0, at, 0)


def test_list_offsets_answers_a_partition_named_twice_once_invalid_request() -> None:
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t", 2)
    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsRequestTopic(
                name="t",
                partitions=[
                    ListOffsetsRequestPartition(partition_index=0, timestamp=-1),
                    ListOffsetsRequestPartition(partition_index=1, timestamp=-1),
                    ListOffsetsRequestPartition(partition_index=0, timestamp=-2),
                ],
            )
        ],
    )
    reply = client.request(request, 11).body
    assert isinstance(reply, ListOffsetsResponse)
    assert [(p.partition_index, p.error_code, p.offset) for p in reply.topics[0].partitions] == [
        (0, ErrorCode.INVALID_REQUEST, -1),
        (1, ErrorCode.NONE, 0),
    ]


def test_a_refused_sequence_names_the_log_start() -> None:
    """Kafka names the log start for refusals of the log (a sequence out of order), not for those
    of the batch's bytes (a CRC mismatch, found before the batch is taken for a duplicate)."""
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")
    first = build_batch([NewRecord(b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=0)
    gap = build_batch([NewRecord(b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=5)
    assert answer(produce(client, "t", first))[0] == ErrorCode.NONE
    assert answer(produce(client, "t", gap)) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1, 0)
    corrupt = bytearray(first)
    corrupt[-1] ^= 0xFF
    assert answer(produce(client, "t", bytes(corrupt))) == (ErrorCode.CORRUPT_MESSAGE, -1, -1, -1)
