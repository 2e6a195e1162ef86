"""RangeRead: Kafka consumer's rules over Fetch responses, with no broker (responses built here)."""

from __future__ import annotations

from kafka_wire.client import READ_COMMITTED, READ_UNCOMMITTED, RangeRead, TopicPartition
from kafka_wire.messages import (
    FetchResponse,
    FetchResponseAbortedTransaction,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
)
from kafka_wire.records import build_abort_marker, build_batch, build_commit_marker

TP = TopicPartition("t", 0)


def _txn(base: int, count: int, producer_id: int) -> bytes:
    values = [(None, b"%d" % (base + i)) for i in range(count)]
    return build_batch(values, base_offset=base, producer_id=producer_id, producer_epoch=0, base_sequence=0,
                       is_transactional=True)  # fmt: skip


# 0-2 plain; 3-4 pid 5 (aborted); 5-6 pid 6; 7 ABORT of pid 5; 8 COMMIT of pid 6; 9-11 pid 5 again
LOG = b"".join(
    [
        build_batch([(None, b"%d" % i) for i in range(3)]),
        _txn(3, 2, 5),
        _txn(5, 2, 6),
        build_abort_marker(producer_id=5, producer_epoch=0, coordinator_epoch=0, base_offset=7),
        build_commit_marker(producer_id=6, producer_epoch=0, coordinator_epoch=0, base_offset=8),
        _txn(9, 3, 5),
    ]
)


def _part(
    records: bytes = LOG, *, high_watermark: int = 12, last_stable_offset: int = 12
) -> FetchResponsePartitionData:
    return FetchResponsePartitionData(
        partition_index=0,
        high_watermark=high_watermark,
        last_stable_offset=last_stable_offset,
        aborted_transactions=[FetchResponseAbortedTransaction(producer_id=5, first_offset=3)],
        records=records,
    )


def _offsets(read: RangeRead, part: FetchResponsePartitionData) -> list[int]:
    return [r.offset for _, records in read.take(part) for r in records]


def test_read_committed_drops_aborted_transactions_and_markers() -> None:
    read = RangeRead(TP, 1, 11, read_committed=True)
    assert read.request().isolation_level == READ_COMMITTED
    assert _offsets(read, _part()) == [1, 2, 5, 6, 9, 10]
    assert read.progressed and read.done and read.offset == 12  # the last batch straddles the end


def test_read_uncommitted_keeps_aborted_records_but_never_markers() -> None:
    read = RangeRead(TP, 0, 100)
    assert read.request().isolation_level == READ_UNCOMMITTED
    assert _offsets(read, _part()) == [0, 1, 2, 3, 4, 5, 6, 9, 10, 11]
    assert read.offset == 12 and not read.done


def test_batches_already_read_are_skipped_and_the_next_request_asks_from_there() -> None:
    read = RangeRead(TP, 0, 100, max_bytes=1000)
    read.offset = 5  # a previous response got 0..4
    assert _offsets(read, _part()) == [5, 6, 9, 10, 11]
    request = read.request()
    partition = request.topics[0].partitions[0]
    assert (request.topics[0].topic, partition.partition, partition.fetch_offset) == ("t", 0, 12)
    assert (request.max_bytes, partition.partition_max_bytes) == (1000, 1000)
    assert partition.current_leader_epoch == -1
    assert read.request(7).topics[0].partitions[0].current_leader_epoch == 7  # KIP-320's fencing


def test_nothing_new_waits_or_ends() -> None:
    read = RangeRead(TP, 20, 30)
    assert _offsets(read, _part(b"", high_watermark=20)) == [] and not read.progressed
    assert not read.ended(_part(b"", high_watermark=20))  # offsets 20.. are not written yet: wait
    assert read.ended(_part(b"", high_watermark=25))  # the log goes on but has nothing for us: removed
    committed = RangeRead(TP, 20, 30, read_committed=True)
    assert not committed.ended(_part(b"", high_watermark=25, last_stable_offset=20))  # an open transaction


def test_partition_of_a_response() -> None:
    read = RangeRead(TP, 0, 10)
    part = _part()
    response = FetchResponse(responses=[FetchResponseFetchableTopicResponse(topic="t", partitions=[part])])
    assert read.partition(response) is part
    assert RangeRead(TopicPartition("t", 1), 0, 10).partition(response) is None
