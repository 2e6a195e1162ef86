"""Build-then-read round trips for random records, every codec and magic; zero-copy reads agree."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.records import (
    BatchBuilder,
    LegacyBatch,
    NewRecord,
    Record,
    RecordBatch,
    RecordsReader,
    TimestampType,
    build_batch,
    read_batches,
    read_records,
)
from tests.records.helpers import CODECS_LEGACY, CODECS_V2, EXAMPLES, legacy_records, our_contents, v2_records


def _expected(records: list[tuple[Any, ...]], base_offset: int, magic: int = 2) -> list[tuple[Any, ...]]:
    return [(base_offset + i, ts if magic else -1, k, v, list(h)) for i, (k, v, h, ts) in enumerate(records)]


@pytest.mark.parametrize("codec", CODECS_V2)
@settings(max_examples=EXAMPLES)
@given(records=v2_records(), base_offset=st.integers(0, 2**62), epoch=st.integers(-1, 2**31 - 1))
def test_v2_round_trip(codec: str, records: list[tuple[Any, ...]], base_offset: int, epoch: int) -> None:
    data = build_batch(records, compression=codec, base_offset=base_offset, partition_leader_epoch=epoch)
    assert our_contents(data) == _expected(records, base_offset)
    assert our_contents(data, zero_copy=True) == _expected(records, base_offset)
    [batch] = list(read_batches(data))
    assert isinstance(batch, RecordBatch)
    assert batch.compression == codec and batch.magic == 2 and batch.is_valid()
    assert batch.record_count == len(records) and batch.partition_leader_epoch == epoch
    assert batch.base_offset == base_offset and batch.last_offset == base_offset + len(records) - 1
    assert batch.size_in_bytes == batch.batch_length + 12 == len(data)
    if records:
        stamps = [ts for *_, ts in records]
        assert batch.base_timestamp == stamps[0] and batch.max_timestamp == max(stamps[0], *stamps)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS_LEGACY)
@settings(max_examples=EXAMPLES)
@given(records=legacy_records(), base_offset=st.integers(0, 2**40))
def test_legacy_round_trip(magic: int, codec: str, records: list[tuple[Any, ...]], base_offset: int) -> None:
    data = build_batch(records, magic=magic, compression=codec, base_offset=base_offset)
    assert our_contents(data) == _expected(records, base_offset, magic)
    assert our_contents(data, zero_copy=True) == _expected(records, base_offset, magic)
    batches = list(read_batches(data))
    assert all(isinstance(b, LegacyBatch) and b.magic == magic and b.is_valid() for b in batches)
    assert len(batches) == (len(records) if codec == "none" else 1)
    assert batches[0].base_offset == base_offset
    assert batches[-1].last_offset == base_offset + len(records) - 1
    assert sum(b.record_count for b in batches) == len(records)
    if codec != "none" and magic == 1:
        assert batches[0].max_timestamp == max(ts for *_, ts in records)


@settings(max_examples=EXAMPLES)
@given(batches=st.lists(st.tuples(st.sampled_from(CODECS_V2), v2_records(max_size=4)), max_size=5))
def test_payload_of_many_batches(batches: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
    payload = b""
    expected: list[tuple[Any, ...]] = []
    offset = 0
    for codec, records in batches:
        payload += build_batch(records, compression=codec, base_offset=offset)
        expected += _expected(records, offset)
        offset += len(records)
    reader = RecordsReader(payload)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for b in reader for r in b] == expected
    assert reader.truncated_tail == 0 and reader.position == len(payload)
    assert [r.astuple() for r in read_records(payload)] == [
        (o, t, k, v, tuple(h)) for o, t, k, v, h in expected
    ]


def test_zero_copy_gives_views_of_the_input() -> None:
    data = build_batch([(b"key", b"value", [("h", b"hv")], 5)])
    [batch] = list(RecordsReader(data, zero_copy=True))
    [record] = list(batch)
    assert isinstance(record.key, memoryview) and isinstance(record.value, memoryview)
    assert record.key.obj is data  # a view of the caller's bytes, nothing copied
    header_value = record.headers[0][1]
    assert isinstance(header_value, memoryview) and header_value.tobytes() == b"hv"
    [plain] = list(next(iter(read_batches(data))))
    assert type(plain.key) is bytes and plain == record


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_other_buffer_types(kind: type) -> None:
    records: list[tuple[bytes, bytes, list[tuple[str, bytes]], int]] = [
        (b"k%d" % i, b"v" * i, [], 10 + i) for i in range(5)
    ]
    data = kind(build_batch(records, compression="lz4") + build_batch(records, magic=1, base_offset=5))
    got = [(r.offset, r.key, r.value) for b in read_batches(data) for r in b]
    assert got == [(i, b"k%d" % (i % 5), b"v" * (i % 5)) for i in range(10)]
    assert all(type(r.key) is bytes for b in read_batches(data) for r in b)


def test_records_as_objects_tuples_and_new_records() -> None:
    class Obj:
        def __init__(self, key: bytes, value: bytes) -> None:
            self.key = key
            self.value = value

    src = [
        (b"a", b"1"),
        (b"b", b"2", [("x", b"y")]),
        (b"c", b"3", (), 77),
        NewRecord(b"d", b"4", timestamp=78),
        Obj(b"e", b"5"),
        Record(0, 79, b"f", b"6", (("z", None),)),
    ]
    data = build_batch(src, default_timestamp=50)
    got = [(r.key, r.value, list(r.headers), r.timestamp) for b in read_batches(data) for r in b]
    assert got == [
        (b"a", b"1", [], 50),
        (b"b", b"2", [("x", b"y")], 50),
        (b"c", b"3", [], 77),
        (b"d", b"4", [], 78),
        (b"e", b"5", [], 50),
        (b"f", b"6", [("z", None)], 79),
    ]


def test_all_v2_header_fields_settable() -> None:
    data = build_batch(
        [(b"k", b"v", (), 1000), (b"k2", None, (), 900)],
        base_offset=1 << 40,
        partition_leader_epoch=12,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=5000,
        producer_id=99,
        producer_epoch=3,
        base_sequence=2**31 - 1,
        is_transactional=True,
        delete_horizon_ms=4000,
        offset_deltas=[0, 5],
        last_offset_delta=9,
        compression="zstd",
    )
    [batch] = list(read_batches(data))
    assert isinstance(batch, RecordBatch)
    assert batch.base_offset == 1 << 40 and batch.partition_leader_epoch == 12
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.max_timestamp == 5000
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (99, 3, 2**31 - 1)
    assert batch.last_sequence == 8  # wraps after int32 max
    assert batch.sequence_of(batch.base_offset) == 2**31 - 1 and batch.sequence_of(batch.base_offset + 5) == 4
    assert batch.is_transactional and not batch.is_control
    assert batch.has_delete_horizon and batch.delete_horizon_ms == 4000 == batch.base_timestamp
    assert batch.last_offset_delta == 9 and batch.record_count == 2 and batch.next_offset == (1 << 40) + 10
    assert batch.attributes == 4 | 0x08 | 0x10 | 0x40
    # LogAppendTime: every record reads the batch's max timestamp
    assert [(r.offset - batch.base_offset, r.timestamp) for r in batch] == [(0, 5000), (5, 5000)]


def test_batch_builder() -> None:
    builder = BatchBuilder(compression="gzip", base_offset=10, default_timestamp=3)
    assert builder.append(b"k", b"v") == 0
    assert builder.append(None, b"w", [("h", None)], 9) == 1
    assert len(builder) == 2 and builder.estimated_size > 61
    data = builder.build()
    assert [(r.offset, r.key, r.timestamp) for b in read_batches(data) for r in b] == [
        (10, b"k", 3),
        (11, None, 9),
    ]
    with pytest.raises(TypeError):
        BatchBuilder(nonsense=1)


def test_empty_v2_batch() -> None:
    data = build_batch(
        [], base_offset=5, last_offset_delta=3, producer_id=1, producer_epoch=0, base_sequence=0
    )
    [batch] = list(read_batches(data))
    assert batch.record_count == 0 and list(batch) == [] and batch.next_offset == 9


def test_record_value_semantics() -> None:
    record = Record(3, 4, b"k", None, (("h", b"v"),))
    assert record == Record(3, 4, b"k", None, [("h", b"v")])
    assert record != Record(3, 4, b"k", b"", (("h", b"v"),)) and record != (3, 4, b"k", None, ())
    offset, timestamp, key, value, headers = record
    assert (offset, timestamp, key, value, headers) == (3, 4, b"k", None, (("h", b"v"),))
    assert record.astuple() == (3, 4, b"k", None, (("h", b"v"),))
    assert "offset=3" in repr(record)
    with pytest.raises(TypeError):
        hash(record)


def test_zero_copy_over_a_bytearray() -> None:
    buf = bytearray(build_batch([(b"key", b"value", [("h", b"x")], 1)], compression="none"))
    [batch] = list(RecordsReader(buf, zero_copy=True))
    [record] = list(batch)
    assert (
        isinstance(record.value, memoryview) and record.value.readonly and record.value.tobytes() == b"value"
    )
    assert record.headers[0][0] == "h"
