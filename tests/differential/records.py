"""Record batches and the data-plane requests the suite sends to both brokers.

Batches carry fixed timestamps near the time of the test (``now_ms``), so the same bytes are valid
on both brokers; an idempotent producer's batches carry each broker's own producer id
(:func:`producer_id`). :func:`corrupt` breaks a batch's CRC, :func:`with_magic` rewrites its
magic byte.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from typing import Final
from uuid import UUID

from kafka_wire.messages import (
    ErrorCode,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    InitProducerIdRequest,
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
)
from kafka_wire.records import NewRecord, build_batch
from tests.differential.compare import Rule, clock, ignored
from tests.differential.pair import Peer, poll

#: Offsets in a v2 batch header (Kafka's ``DefaultRecordBatch``).
MAGIC_OFFSET: Final = 16
CRC_OFFSET: Final = 17
INIT_PRODUCER_ID_VERSION: Final = 5

#: What differs in records read back: producer ids (each broker hands out its own), so the CRC of
#: an idempotent batch; the time a LogAppendTime topic stamps.
RECORDS_RULES: Final = (
    Rule(
        "*records.batches[].producer_id",
        lambda v, s: v if v < 0 else "<producer id>",
        "each broker's own ids",
    ),
    Rule("*records.batches[].crc", ignored, "covers the producer id; the broker checked it on append"),
    Rule("*log_append_time_ms", clock, "each broker's clock"),
    Rule("*records.batches[].max_timestamp", ignored, "LogAppendTime batches carry each broker's clock"),
)


def now_ms() -> int:
    return int(time.time() * 1000)


def batch(
    count: int = 3,
    *,
    key: bytes | None = b"k",
    timestamp_ms: int | None = None,
    producer_id: int = -1,
    epoch: int = 0,
    sequence: int = -1,
    compression: str = "none",
    value_size: int = 10,
) -> bytes:
    """``count`` records (keys ``k0``.., values of ``value_size`` bytes) at ``timestamp_ms``."""
    at = now_ms() if timestamp_ms is None else timestamp_ms
    records = [
        NewRecord(
            None if key is None else key + str(i).encode(), bytes([65 + i % 26]) * value_size, (), at + i
        )
        for i in range(count)
    ]
    return build_batch(
        records,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=epoch if producer_id >= 0 else -1,
        base_sequence=sequence,
    )


def corrupt(data: bytes) -> bytes:
    """The batch with its CRC flipped."""
    (crc,) = struct.unpack_from(">I", data, CRC_OFFSET)
    return data[:CRC_OFFSET] + struct.pack(">I", crc ^ 0xFFFFFFFF) + data[CRC_OFFSET + 4 :]


def with_magic(data: bytes, magic: int) -> bytes:
    return data[:MAGIC_OFFSET] + bytes([magic]) + data[MAGIC_OFFSET + 1 :]


def produce(
    topic: str,
    *batches: bytes,
    partition: int = 0,
    acks: int = -1,
    topic_id: UUID | None = None,
) -> ProduceRequest:
    """One Produce of ``batches`` (one records field) to one partition; by id when given (v13+)."""
    data = ProduceRequestTopicProduceData(
        name="" if topic_id is not None else topic,
        partition_data=[ProduceRequestPartitionProduceData(index=partition, records=b"".join(batches))],
    )
    if topic_id is not None:
        data.topic_id = topic_id
    return ProduceRequest(acks=acks, timeout_ms=10_000, topic_data=[data])


def fetch(
    topic: str,
    offsets: Sequence[tuple[int, int]],
    *,
    topic_id: UUID | None = None,
    session_id: int = 0,
    session_epoch: int = -1,
    max_bytes: int = 1 << 20,
    isolation_level: int = 0,
) -> FetchRequest:
    """A consumer's Fetch of ``(partition, offset)`` pairs, answering at once (max wait 0)."""
    partitions = [
        FetchRequestPartition(partition=p, fetch_offset=o, partition_max_bytes=max_bytes) for p, o in offsets
    ]
    topics = (
        [FetchRequestTopic(topic=topic if topic_id is None else "", partitions=partitions)] if offsets else []
    )
    if topic_id is not None and topics:
        topics[0].topic_id = topic_id
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=topics,
    )


def producer_id(peer: Peer) -> int:
    """A new idempotent producer id of ``peer`` (asked again while its ids are loading)."""
    request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
    answers: list[int] = []

    def granted() -> bool:
        answer = peer.request(request, INIT_PRODUCER_ID_VERSION)
        if answer.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return False
        assert answer.error_code == ErrorCode.NONE, (
            f"{peer.side.name}: InitProducerId error {answer.error_code}"
        )
        answers.append(answer.producer_id)
        return True

    poll(f"{peer.side.name} to hand out a producer id", granted)
    return answers[0]
