"""Appending and reading: offsets, whole batches, limits, every codec and magic, validation errors."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.broker.effects import Append, FileRegion
from kafka_wire.broker.log import LogConfig, PartitionLog
from kafka_wire.messages import ErrorCode
from kafka_wire.records import build_batch, build_commit_marker, read_batches
from kafka_wire.records.constants import TimestampType
from kafka_wire.testing.memory_storage import MemoryStorage

from .helpers import CODECS, DIR, MIB, Driven, all_records, batch, contents, noise, offsets


def test_empty_log_is_created() -> None:
    d = Driven()
    assert d.log.log_start_offset == 0 == d.log.log_end_offset
    assert d.log.segment_count == 1 and d.log.size_bytes == 0
    assert DIR in d.storage.dirs
    assert sorted(d.storage.list_dir(DIR)) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
    ]
    assert d.log.read(0, 100).parts == ()
    assert d.log.offset_for_timestamp(0) is None and d.log.max_timestamp() is None


def test_offsets_are_assigned_and_epoch_stamped() -> None:
    d = Driven()
    r1 = d.append(batch(3), leader_epoch=7)
    r2 = d.append(batch(2), leader_epoch=8)
    assert (r1.error_code, r1.base_offset, r1.last_offset, r1.log_append_time) == (0, 0, 2, -1)
    assert (r2.base_offset, r2.last_offset, r2.log_start_offset) == (3, 4, 0)
    assert d.log.log_end_offset == 5
    data = d.log.read_bytes(d.log.read(0, 1 << 20))
    batches = list(read_batches(data))
    assert [(b.base_offset, b.partition_leader_epoch) for b in batches] == [(0, 7), (3, 8)]
    assert offsets(all_records(d.log)) == [0, 1, 2, 3, 4]


@settings(max_examples=25)
@given(
    sizes=st.lists(
        st.tuples(st.integers(1, 6), st.integers(0, 120_000), st.sampled_from(CODECS)),
        min_size=1,
        max_size=25,
    ),
    segment_bytes=st.integers(MIB, 2 * MIB),
    interval=st.integers(0, 150_000),
    take_every=st.integers(1, 5),
)
def test_round_trip_and_every_offset(
    sizes: list[tuple[int, int, str]], segment_bytes: int, interval: int, take_every: int
) -> None:
    storage = MemoryStorage()
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval)
    log = PartitionLog.open(DIR, config, storage, 0)
    storage.apply(log.take_effects())
    expected: list[tuple[int, bytes | None, bytes | None]] = []
    for i, (n, value_size, codec) in enumerate(sizes):
        records = [
            (b"k%d-%d" % (i, j), noise(value_size, b"%d-%d" % (i, j)), (), 10_000 + i) for j in range(n)
        ]
        result = log.append(build_batch(records, compression=codec), 10_000 + i)
        assert result.error_code == 0
        assert result.base_offset == len(expected)
        expected += [(len(expected) + j, r[0], r[1]) for j, r in enumerate(records)]
        if i % take_every == 0:
            storage.apply(log.take_effects())
    # reads serve appends that were not taken yet, and then the same after they are applied
    for _ in range(2):
        assert [(r.offset, r.key, r.value) for r in all_records(log)] == expected
        for offset in range(len(expected)):
            data = log.read_bytes(log.read(offset, 1))
            first = next(iter(read_batches(data)))
            assert first.base_offset <= offset <= first.last_offset
        storage.apply(log.take_effects())
    assert log.memory_held_bytes() == 0


def test_read_returns_whole_batches_within_max_bytes() -> None:
    d = Driven()
    sizes = [len(batch(1, value_size=100)) for _ in range(5)]
    for _ in range(5):
        d.append(batch(1, value_size=100))
    one = sizes[0]
    r = d.log.read(0, one * 2 + 10)
    assert r.size == 2 * one and r.next_offset == 2
    assert d.log.read(0, 5).size == one  # min_one_batch
    empty = d.log.read(0, 5, min_one_batch=False)
    assert empty.size == 0 and empty.parts == () and empty.next_offset == 0
    assert d.log.read(1, 10**6, max_offset=3).next_offset == 3  # stops at the high watermark
    assert d.log.read(3, 10**6, max_offset=3).size == 0
    assert d.log.read(5, 100).size == 0 and d.log.read(5, 100).error_code == 0
    assert d.log.read(6, 100).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_read_starts_at_the_batch_holding_the_offset_and_excludes_a_batch_straddling_max_offset() -> None:
    d = Driven()
    d.append(batch(4))
    d.append(batch(4))
    r = d.log.read(2, 10**6)
    assert [b.base_offset for b in read_batches(d.log.read_bytes(r))] == [0, 4]
    assert d.log.read(0, 10**6, max_offset=6).next_offset == 4


def test_parts_are_regions_of_stored_bytes_and_bytes_of_pending_ones() -> None:
    d = Driven()
    d.append(batch(1))
    d.log.append(batch(1), 0)  # not taken yet
    r = d.log.read(0, 10**6)
    assert isinstance(r.parts[0], FileRegion) and isinstance(r.parts[1], bytes)
    assert r.parts[0].path == f"{DIR}/00000000000000000000.log" and r.parts[0].position == 0
    assert sum(p.size if isinstance(p, FileRegion) else len(p) for p in r.parts) == r.size
    d.apply()
    r = d.log.read(0, 10**6)
    assert r.parts == (FileRegion(f"{DIR}/00000000000000000000.log", 0, r.size),)


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_is_stored_as_given(codec: str) -> None:
    d = Driven()
    raw = batch(5, compression=codec, value_size=300)
    d.append(batch(1))
    d.append(raw)
    stored = d.log.read_bytes(d.log.read(1, 10**6))
    assert len(stored) == len(raw) and stored[12:] != b"" and stored[61:] == raw[61:]
    assert [r.value for r in all_records(d.log, 1)] == [b"v" * 300] * 5


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_legacy_message_sets_get_offsets(magic: int, codec: str) -> None:
    d = Driven()
    d.append(batch(2))
    legacy = build_batch(
        [(b"a", b"1", (), 5000), (b"b", b"2", (), 5001), (b"c", None, (), 5002)],
        magic=magic,
        compression=codec,
    )
    r = d.append(legacy)
    assert (r.error_code, r.base_offset, r.last_offset) == (0, 2, 4)
    d.append(batch(1))
    recs = all_records(d.log)
    assert offsets(recs) == [0, 1, 2, 3, 4, 5]
    assert [x.key for x in recs[2:5]] == [b"a", b"b", b"c"]
    if magic == 1:
        assert [x.timestamp for x in recs[2:5]] == [5000, 5001, 5002]


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_log_append_time(codec: str) -> None:
    d = Driven(LogConfig(message_timestamp_type="LogAppendTime"))
    r = d.append(batch(3, compression=codec), now_ms=777_000)
    assert r.log_append_time == 777_000
    b = next(iter(read_batches(d.log.read_bytes(d.log.read(0, 10**6)))))
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME and b.max_timestamp == 777_000
    assert [x.timestamp for x in b.records()] == [777_000] * 3
    legacy = d.append(build_batch([(b"a", b"1", (), 5)], magic=1, compression=codec), now_ms=778_000)
    assert legacy.log_append_time == 778_000
    assert all_records(d.log)[-1].timestamp == 778_000
    # per-append override
    d2 = Driven()
    assert d2.append(batch(1), timestamp_type=TimestampType.LOG_APPEND_TIME, now_ms=5).log_append_time == 5


def test_validation_errors_are_codes() -> None:
    d = Driven(LogConfig(max_message_bytes=500))
    assert d.append(b"").error_code == ErrorCode.INVALID_RECORD
    assert d.append(batch(1, value_size=600)).error_code == ErrorCode.MESSAGE_TOO_LARGE
    good = bytearray(batch(2))
    good[-1] ^= 0xFF
    assert d.append(bytes(good)).error_code == ErrorCode.CORRUPT_MESSAGE
    assert d.append(batch(1)[:-3]).error_code == ErrorCode.CORRUPT_MESSAGE
    assert d.append(b"\x00" * 8 + struct.pack(">i", 3) + b"\x00" * 20).error_code == ErrorCode.CORRUPT_MESSAGE
    nonzero = batch(1, base_offset=5)
    assert d.append(nonzero).error_code == ErrorCode.INVALID_RECORD
    marker = build_commit_marker(producer_id=1, producer_epoch=0, coordinator_epoch=0)
    assert d.append(marker).error_code == ErrorCode.INVALID_RECORD
    assert d.append(marker, origin="coordinator").error_code == 0
    gappy = build_batch([(b"a", b"1"), (b"b", b"2")], offset_deltas=[0, 2])
    assert d.append(gappy).error_code == ErrorCode.INVALID_RECORD
    result = d.append(b"")
    assert result.error_message and result.log_start_offset == 0
    assert d.log.log_end_offset == 1  # only the marker went in


def test_record_list_larger_than_a_segment() -> None:
    d = Driven(LogConfig(segment_bytes=MIB, max_message_bytes=2 * MIB))
    assert d.append(batch(1, value_size=MIB + 100)).error_code == ErrorCode.RECORD_LIST_TOO_LARGE


def test_compacted_topic_needs_keys() -> None:
    d = Driven(LogConfig(cleanup_policy=("compact",)))
    records = build_batch([(b"a", b"1"), (None, b"2"), (b"c", b"3")])
    result = d.append(records)
    assert result.error_code == ErrorCode.INVALID_RECORD
    assert [e.batch_index for e in result.record_errors] == [1]
    assert d.append(build_batch([(b"a", None)])).error_code == 0


def test_timestamps_outside_the_window_are_refused() -> None:
    d = Driven(LogConfig(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=100))
    now = 1_000_000
    assert d.append(batch(1, ts=now - 1000), now_ms=now).error_code == 0
    assert d.append(batch(1, ts=now + 100), now_ms=now).error_code == 0
    late = d.append(batch(3, ts=now - 1002), now_ms=now)
    assert late.error_code == ErrorCode.INVALID_TIMESTAMP and [e.batch_index for e in late.record_errors] == [
        0,
        1,
    ]
    assert d.append(batch(1, ts=now + 101), now_ms=now).error_code == ErrorCode.INVALID_TIMESTAMP
    assert d.append(build_batch([(b"k", b"v", (), -1)]), now_ms=now).error_code == 0


def test_follower_append_keeps_offsets() -> None:
    d = Driven()
    leader = Driven()
    leader.append(batch(3), leader_epoch=2)
    leader.append(batch(2), leader_epoch=3)
    data = leader.log.read_bytes(leader.log.read(0, 10**6))
    r = d.append(data, assign_offsets=False, origin="replication")
    assert (r.error_code, r.base_offset, r.last_offset) == (0, 0, 4)
    assert d.log.read_bytes(d.log.read(0, 10**6)) == data
    again = d.append(data, assign_offsets=False, origin="replication")
    assert again.error_code == ErrorCode.INVALID_RECORD  # offsets below the log end offset
    # a follower may receive gaps (compacted batches)
    gap = build_batch([(b"x", b"1")], base_offset=9)
    assert d.append(gap, assign_offsets=False, origin="replication").error_code == 0
    assert d.log.log_end_offset == 10


def test_pending_appends_are_one_effect_per_file_per_take() -> None:
    d = Driven(LogConfig(index_interval_bytes=0))
    for _ in range(10):
        d.log.append(batch(1), 0)
    effects = d.apply()
    appends = [e for e in effects if isinstance(e, Append)]
    assert sorted(e.path.rsplit(".", 1)[1] for e in appends) == ["index", "log", "timeindex"]


def test_timestamps_lookup() -> None:
    d = Driven(LogConfig(segment_bytes=MIB, index_interval_bytes=0))
    stamps = [100, 300, 200, 400, 400, 500, 50, 900]
    v, w = b"v" * 150_000, b"w" * 150_000  # three batches to a segment
    for ts in stamps:
        d.append(build_batch([(b"k", v, (), ts), (b"k", w, (), ts + 1)]))
    assert d.log.segment_count > 2
    recs = all_records(d.log)
    for target in range(0, 1000, 7):
        want = next(((r.offset, r.timestamp) for r in recs if r.timestamp >= target), None)
        assert d.log.offset_for_timestamp(target) == want, target
    assert d.log.max_timestamp() == (901, 15)
    assert contents(d.log)[15] == (15, 901, b"k", w)
