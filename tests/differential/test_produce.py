"""Produce: every record-level refusal Kafka names (bad CRC, bad magic, a compacted topic's record
without a key, a batch over max.message.bytes, timestamps out of range both ways), acks values,
unknown topics and partitions, idempotent sequences (duplicate, out of order, unknown producer,
fenced epoch); then DescribeProducers and the records as Fetch reads them back. Produce v3 (Kafka
4's lowest it takes), v8 (record errors), v9 (flexible), v13 (topic ids)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import pytest

from kafka_wire.messages import (
    DescribeProducersRequest,
    DescribeProducersRequestTopicRequest,
    ErrorCode,
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    ProduceRequest,
)
from tests.differential.compare import Rule, clock, ignored
from tests.differential.pair import Pair, Peer, poll
from tests.differential.records import (
    RECORDS_RULES,
    batch,
    corrupt,
    fetch,
    now_ms,
    produce,
    producer_id,
    with_magic,
)

VERSIONS: Final = [3, 8, 9, 13]
HOUR_MS: Final = 3_600_000
TOPICS: Final = {
    "pr-plain": {},
    "pr-compact": {"cleanup.policy": "compact"},
    "pr-small": {"max.message.bytes": "1000"},
    "pr-before": {"message.timestamp.before.max.ms": str(HOUR_MS)},
    "pr-append-time": {"message.timestamp.type": "LogAppendTime"},
}

#: case -> (topic, batches or a function of the time, acks, partition, what Kafka answers)
Batches = Callable[[], list[bytes]]
CASES: Final[dict[str, tuple[str, Batches, int, int, int]]] = {
    "a batch": ("pr-plain", lambda: [batch()], -1, 0, ErrorCode.NONE),
    "two batches": ("pr-plain", lambda: [batch(2), batch(4)], -1, 0, ErrorCode.INVALID_RECORD),
    "gzip": ("pr-plain", lambda: [batch(5, compression="gzip")], -1, 0, ErrorCode.NONE),
    "acks 1": ("pr-plain", lambda: [batch()], 1, 0, ErrorCode.NONE),
    "acks 2": ("pr-plain", lambda: [batch()], 2, 0, ErrorCode.INVALID_REQUIRED_ACKS),
    "bad CRC": ("pr-plain", lambda: [corrupt(batch())], -1, 0, ErrorCode.CORRUPT_MESSAGE),
    "magic 1": ("pr-plain", lambda: [with_magic(batch(), 1)], -1, 0, ErrorCode.INVALID_RECORD),
    "magic 3": ("pr-plain", lambda: [with_magic(batch(), 3)], -1, 0, ErrorCode.CORRUPT_MESSAGE),
    "no records": ("pr-plain", lambda: [], -1, 0, ErrorCode.INVALID_RECORD),
    "unknown partition": ("pr-plain", lambda: [batch()], -1, 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    "compacted with keys": ("pr-compact", lambda: [batch()], -1, 0, ErrorCode.NONE),
    "compacted without a key": ("pr-compact", lambda: [batch(key=None)], -1, 0, ErrorCode.INVALID_RECORD),
    "over max.message.bytes": (
        "pr-small",
        lambda: [batch(value_size=2000)],
        -1,
        0,
        ErrorCode.MESSAGE_TOO_LARGE,
    ),
    "under max.message.bytes": ("pr-small", lambda: [batch(value_size=100)], -1, 0, ErrorCode.NONE),
    "too old": (
        "pr-before",
        lambda: [batch(timestamp_ms=now_ms() - 2 * HOUR_MS)],
        -1,
        0,
        ErrorCode.INVALID_TIMESTAMP,
    ),
    "too new": (
        "pr-plain",
        lambda: [batch(timestamp_ms=now_ms() + 2 * HOUR_MS)],
        -1,
        0,
        ErrorCode.INVALID_TIMESTAMP,
    ),
    "old enough": ("pr-before", lambda: [batch(timestamp_ms=now_ms() - HOUR_MS // 2)], -1, 0, ErrorCode.NONE),
    "log append time": ("pr-append-time", lambda: [batch()], -1, 0, ErrorCode.NONE),
}


@pytest.fixture(scope="module")
def topics(pair_module: Pair) -> None:
    for name, configs in TOPICS.items():
        pair_module.create_topic(name, configs=configs)


def by_version(
    pair: Pair, topic: str, version: int, make: Callable[[str], ProduceRequest]
) -> Callable[[Peer], ProduceRequest]:
    """Each broker's Produce of ``make(name)``: by name before v13, by that broker's topic id from
    v13."""
    ids = pair.topic_ids(topic) if version >= 13 else {}

    def request(peer: Peer) -> ProduceRequest:
        if version < 13:
            return make(topic)
        found = make("")
        found.topic_data[0].topic_id = ids[peer.side.name]
        return found

    return request


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", list(CASES))
def test_produce(pair: Pair, topics: None, case: str, version: int) -> None:
    topic, batches, acks, partition, error = CASES[case]
    data = batches()  # the same bytes to both
    make = by_version(pair, topic, version, lambda name: produce(name, *data, partition=partition, acks=acks))
    kafka, _ = pair.check_each(make, version, RECORDS_RULES)
    assert kafka.responses[0].partition_responses[0].error_code == error


@pytest.mark.parametrize("version", [3, 13])
def test_unknown_topic(pair: Pair, version: int) -> None:
    if version < 13:
        pair.check(produce("pr-unknown", batch()), version)
    else:
        from uuid import UUID

        pair.check(produce("", batch(), topic_id=UUID(int=0xBAD)), version)


def test_acks_0_then_read_back(pair: Pair, topics: None) -> None:
    """acks=0 has no answer; what it wrote is read back the same."""
    pair.create_topic("pr-acks0")
    data = batch(4)
    for peer in (pair.kafka, pair.kafka_wire):
        peer.connection.send_only(produce("pr-acks0", data, acks=0), 9)
    latest = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsRequestTopic(
                name="pr-acks0", partitions=[ListOffsetsRequestPartition(partition_index=0, timestamp=-1)]
            )
        ],
    )
    for peer in (pair.kafka, pair.kafka_wire):

        def written(peer: Peer = peer) -> bool:
            return peer.request(latest, 9).topics[0].partitions[0].offset == 4

        poll(f"{peer.side.name} to have the acks=0 records", written)
    pair.check(fetch("pr-acks0", [(0, 0)]), 12, RECORDS_RULES)


@pytest.mark.parametrize("version", [9, 13])
def test_idempotent_sequences(pair: Pair, version: int) -> None:
    """In order, a duplicate of the last batch, a gap, the next in order, an unknown producer not
    starting at 0, a new epoch, then the old epoch; DescribeProducers and Fetch afterwards."""
    topic = f"pr-idem-{version}"
    pair.create_topic(topic)
    ids = {peer.side.name: producer_id(peer) for peer in (pair.kafka, pair.kafka_wire)}
    at = now_ms()
    steps = [
        (0, 0, False, ErrorCode.NONE),
        (0, 0, False, ErrorCode.NONE),  # the same batch again: a duplicate, answered with its offset
        (0, 0, True, ErrorCode.CORRUPT_MESSAGE),  # a duplicate's header on corrupt bytes
        (0, 5, False, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
        (0, 3, False, ErrorCode.NONE),
        (None, 5, False, ErrorCode.NONE),  # a producer id the broker never saw: any sequence (KIP-360)
        (1, 0, False, ErrorCode.NONE),
        (0, 6, False, ErrorCode.INVALID_PRODUCER_EPOCH),
    ]
    for epoch, sequence, broken, error in steps:

        def make(
            peer: Peer, epoch: int | None = epoch, sequence: int = sequence, broken: bool = broken
        ) -> ProduceRequest:
            pid = ids[peer.side.name] + (0 if epoch is not None else 1000)
            data = batch(3, producer_id=pid, epoch=epoch or 0, sequence=sequence, timestamp_ms=at)
            data = corrupt(data) if broken else data
            return by_version(pair, topic, version, lambda name: produce(name, data))(peer)

        kafka, _ = pair.check_each(make, version, RECORDS_RULES)
        assert kafka.responses[0].partition_responses[0].error_code == error, (epoch, sequence, broken)
    describe = DescribeProducersRequest(
        topics=[DescribeProducersRequestTopicRequest(name=topic, partition_indexes=[0, 3])]
    )
    pair.check(describe, 0, PRODUCER_RULES)
    pair.check(fetch(topic, [(0, 0)]), 12, RECORDS_RULES)


#: DescribeProducers: ids and clocks are each broker's own.
PRODUCER_RULES: Final = (
    Rule("*producer_id", lambda v, s: v if v < 0 else "<producer id>", "each broker hands out its own ids"),
    Rule("*last_timestamp", clock, "the batch's timestamp: the same here, but compared as a time"),
    Rule("*coordinator_epoch", ignored, "no transactions"),
)
