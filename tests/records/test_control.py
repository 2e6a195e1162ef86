"""Control records: keys, transaction markers, KRaft control batches."""

from __future__ import annotations

import struct

import pytest

from kafka_wire.errors import EncodeError, InvalidValueError
from kafka_wire.records import (
    ControlRecordKey,
    ControlRecordType,
    EndTransactionMarker,
    RecordBatch,
    build_abort_marker,
    build_commit_marker,
    build_control_batch,
    build_end_txn_marker,
    control_key,
    decode_control_key,
    decode_end_txn_marker,
    read_batches,
)
from tests.records.peers import AioMemoryRecords, KpMemoryRecords


def _one(data: bytes) -> RecordBatch[bytes]:
    [batch] = list(read_batches(data))
    assert isinstance(batch, RecordBatch)
    return batch


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_markers(commit: bool) -> None:
    build = build_commit_marker if commit else build_abort_marker
    data = build(
        producer_id=77,
        producer_epoch=4,
        coordinator_epoch=12,
        base_offset=30,
        timestamp=1234,
        partition_leader_epoch=2,
    )
    assert data == build_end_txn_marker(
        commit,
        producer_id=77,
        producer_epoch=4,
        coordinator_epoch=12,
        base_offset=30,
        timestamp=1234,
        partition_leader_epoch=2,
    )
    batch = _one(data)
    assert batch.is_control and batch.is_transactional and batch.record_count == 1
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 4, -1)
    assert (batch.base_offset, batch.partition_leader_epoch, batch.max_timestamp) == (30, 2, 1234)
    [record] = list(batch)
    key = decode_control_key(record.key)
    assert key == ControlRecordKey(
        0, ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, int(commit)
    )
    assert decode_end_txn_marker(record.value) == EndTransactionMarker(0, 12)
    assert record.key == struct.pack(">hh", 0, int(commit)) and record.value == struct.pack(">hi", 0, 12)
    # the peers see a control batch with the same key and value
    for reader in (KpMemoryRecords, AioMemoryRecords):
        peer_batch = reader(data).next_batch()
        assert peer_batch.is_control_batch and peer_batch.is_transactional


@pytest.mark.parametrize(
    "kind",
    [
        ControlRecordType.LEADER_CHANGE,
        ControlRecordType.SNAPSHOT_HEADER,
        ControlRecordType.SNAPSHOT_FOOTER,
        ControlRecordType.KRAFT_VERSION,
        ControlRecordType.KRAFT_VOTERS,
    ],
)
def test_kraft_control_batches(kind: ControlRecordType) -> None:
    value = bytes([0, 1, 2, 3, kind])
    data = build_control_batch(kind, value, base_offset=9, timestamp=55, partition_leader_epoch=4)
    batch = _one(data)
    assert batch.is_control and not batch.is_transactional and batch.producer_id == -1
    [record] = list(batch)
    assert decode_control_key(record.key).type is kind and record.value == value
    assert record.offset == 9 and record.timestamp == 55


def test_control_key_rules() -> None:
    assert decode_control_key(struct.pack(">hh", 3, 1)) == ControlRecordKey(3, ControlRecordType.COMMIT, 1)
    assert decode_control_key(struct.pack(">hh", 0, 99)) == ControlRecordKey(0, ControlRecordType.UNKNOWN, 99)
    assert decode_control_key(struct.pack(">hh", 0, 2) + b"extra").type is ControlRecordType.LEADER_CHANGE
    for bad in (None, b"", b"\x00\x00\x00", struct.pack(">hh", -1, 0)):
        with pytest.raises(InvalidValueError):
            decode_control_key(bad)
    for bad_value in (None, b"\x00" * 5, struct.pack(">hi", -2, 0)):
        with pytest.raises(InvalidValueError):
            decode_end_txn_marker(bad_value)
    assert decode_end_txn_marker(struct.pack(">hi", 1, -7) + b"more") == EndTransactionMarker(1, -7)
    assert control_key(ControlRecordType.KRAFT_VOTERS) == b"\x00\x00\x00\x06"
    with pytest.raises(EncodeError):
        control_key(1 << 20)


def test_marker_needs_producer() -> None:
    with pytest.raises(EncodeError, match="producer id"):
        build_commit_marker(producer_id=-1, producer_epoch=0, coordinator_epoch=0)
