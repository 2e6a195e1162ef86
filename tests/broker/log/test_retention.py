"""Rolling, retention by time and size, DeleteRecords, truncation, flush policy, deadlines."""

from __future__ import annotations

from kafka_wire.broker.effects import Delete, Fsync, Rename
from kafka_wire.broker.log import LogConfig
from kafka_wire.messages import ErrorCode

from .helpers import DIR, MIB, Driven, batch, contents, segment_files

HOUR = 3_600_000


def test_roll_by_size() -> None:
    d = Driven(LogConfig(segment_bytes=MIB))
    size = len(batch(1, value_size=300_000))
    for _ in range(10):
        d.append(batch(1, value_size=300_000))
    per_segment = MIB // size
    assert per_segment == 3
    assert d.log.segment_count == -(-10 // per_segment)
    assert all(s.size <= MIB for s in d.log.segments)
    assert [s.base_offset for s in d.log.segments] == list(range(0, 10, per_segment))


def test_roll_fsyncs_the_closed_segment() -> None:
    d = Driven(LogConfig(segment_bytes=MIB))
    d.append(batch(1, value_size=600_000))
    d.append(batch(1, value_size=600_000))
    syncs = [e.path for e in d.effects if isinstance(e, Fsync)]
    assert syncs == [
        f"{DIR}/00000000000000000000.log",
        f"{DIR}/00000000000000000000.index",
        f"{DIR}/00000000000000000000.timeindex",
    ]


def test_roll_by_time_on_append_and_in_maintain() -> None:
    d = Driven(LogConfig(segment_ms=HOUR))
    d.append(batch(1), now_ms=0)
    d.append(batch(1), now_ms=HOUR - 1)
    assert d.log.segment_count == 1
    assert d.log.next_deadline_ms() == HOUR
    d.append(batch(1), now_ms=HOUR)
    assert d.log.segment_count == 2 and d.log.segments[-1].base_offset == 2
    d.maintain(2 * HOUR - 1)
    assert d.log.segment_count == 2
    d.maintain(2 * HOUR)
    assert d.log.segment_count == 3 and d.log.segments[-1].is_empty
    d.maintain(10 * HOUR)  # an empty active segment does not roll
    assert d.log.segment_count == 3


def test_retention_by_time() -> None:
    d = Driven(LogConfig(segment_bytes=MIB, retention_ms=HOUR, file_delete_delay_ms=1000))
    for i in range(12):
        d.append(batch(1, value_size=400_000, ts=i * 1000), now_ms=i * 1000)
    segments = d.log.segments
    assert len(segments) > 3
    second = segments[1]
    deadline = d.log.next_deadline_ms()
    assert deadline == segments[0].max_timestamp + HOUR + 1
    d.maintain(second.max_timestamp + HOUR)
    assert d.log.segments[0].base_offset == second.base_offset
    assert d.log.log_start_offset == second.base_offset
    renamed = [e for e in d.effects if isinstance(e, Rename) and e.target.endswith(".deleted")]
    assert len(renamed) == 3
    assert d.storage.read(f"{DIR}/log-start-offset", 0, 100) == b"%d\n" % second.base_offset
    # the files go after file.delete.delay.ms
    now = second.max_timestamp + HOUR
    assert d.log.next_deadline_ms() == min(now + 1000, d.log.segments[0].max_timestamp + HOUR + 1)
    d.maintain(now + 1000)
    assert all(d.storage.size(e.target) is None for e in renamed)
    # never more than the active segment: everything expires, the log rolls and keeps its end
    leo = d.log.log_end_offset
    d.maintain(100 * HOUR)
    assert d.log.segment_count == 1 and d.log.segments[0].is_empty
    assert d.log.log_start_offset == leo == d.log.log_end_offset
    assert d.log.read(leo, 100).error_code == 0
    assert d.append(batch(1)).base_offset == leo


def test_retention_waits_for_the_high_watermark() -> None:
    d = Driven(LogConfig(segment_bytes=MIB, retention_ms=0))
    for _i in range(5):
        d.append(batch(1, value_size=600_000, ts=0), now_ms=0)
    d.maintain(10, high_watermark=2)
    assert d.log.log_start_offset == 2
    d.maintain(10)
    assert d.log.log_start_offset == 5


def test_retention_by_size() -> None:
    limit = 2_600_000
    d = Driven(LogConfig(segment_bytes=MIB, retention_bytes=limit, retention_ms=-1))
    for _ in range(20):
        d.append(batch(1, value_size=400_000))
    total = d.log.size_bytes
    d.maintain(0)
    assert d.log.size_bytes <= limit + MIB and d.log.size_bytes < total
    sizes = [s.size for s in d.log.segments]
    assert sum(sizes) - sizes[0] < limit  # one more deletion would go below the limit
    assert d.log.log_start_offset == d.log.segments[0].base_offset
    assert [c[0] for c in contents(d.log)] == list(range(d.log.log_start_offset, 20))


def test_compact_only_topics_keep_old_segments() -> None:
    d = Driven(LogConfig(segment_bytes=MIB, retention_ms=0, cleanup_policy=("compact",)))
    for i in range(5):
        d.append(batch(1, value_size=600_000, ts=0, key=b"k%d" % i), now_ms=0)
    d.maintain(10**9)
    assert d.log.log_start_offset == 0


def test_delete_records() -> None:
    d = Driven(LogConfig(segment_bytes=MIB))
    for _ in range(12):
        d.append(batch(1, value_size=400_000))
    bases = [s.base_offset for s in d.log.segments]
    assert d.log.delete_records_before(13) == (ErrorCode.OFFSET_OUT_OF_RANGE, 0)
    assert d.log.delete_records_before(bases[1] + 1) == (ErrorCode.NONE, bases[1] + 1)
    d.apply()
    assert d.log.segments[0].base_offset == bases[1]
    assert d.log.read(bases[1], 10).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert [c[0] for c in contents(d.log)] == list(range(bases[1] + 1, 12))
    assert d.log.delete_records_before(2) == (ErrorCode.NONE, bases[1] + 1)  # never moves back
    # persisted: a restart keeps it
    log = d.reopen(now_ms=5)
    assert log.log_start_offset == bases[1] + 1
    # up to the log end: the active segment stays
    assert d.log.delete_records_before(12) == (0, 12)
    d.apply()
    assert d.log.segment_count == 1 and d.log.log_end_offset == 12
    assert d.reopen().log_start_offset == 12


def test_deleted_segments_before_the_start_are_removed_at_open() -> None:
    d = Driven(LogConfig(segment_bytes=MIB, file_delete_delay_ms=10**9))
    for _ in range(12):
        d.append(batch(1, value_size=400_000))
    first_next = d.log.segments[1].base_offset
    d.log.delete_records_before(first_next)
    # the driver crashes after writing the start offset but before renaming the old segment
    effects = d.log.take_effects()
    cut = next(
        i
        for i, e in enumerate(effects)
        if isinstance(e, Rename) and e.source.endswith("log-start-offset.tmp")
    )
    d.storage.apply(effects[: cut + 1])
    log = d.reopen()
    assert log.segments[0].base_offset == first_next
    assert "00000000000000000000.log" not in segment_files(d.storage)


def test_truncate_to() -> None:
    d = Driven(LogConfig(segment_bytes=MIB, index_interval_bytes=150_000))
    for i in range(12):
        d.append(batch(2, value_size=300_000, ts=i))
    before = contents(d.log)
    d.log.truncate_to(15)
    d.apply()
    assert d.log.log_end_offset == 14  # the batch holding 14..15 goes whole
    assert contents(d.log) == before[:14]
    assert d.append(batch(1)).base_offset == 14
    d.log.truncate_to(0)
    d.apply()
    assert d.log.log_end_offset == 0 and d.log.segment_count == 1
    assert d.reopen().log_end_offset == 0


def test_truncate_below_the_start_restarts_the_log_there() -> None:
    d = Driven(LogConfig(segment_bytes=MIB))
    for _ in range(12):
        d.append(batch(1, value_size=400_000))
    d.log.delete_records_before(8)
    d.log.truncate_to(5)
    d.apply()
    assert (d.log.log_start_offset, d.log.log_end_offset) == (5, 5)
    assert d.append(batch(1)).base_offset == 5


def test_flush_messages_and_flush_ms() -> None:
    d = Driven(LogConfig(flush_messages=3))
    for _ in range(3):
        d.append(batch(1))
    assert next(e for e in d.effects if isinstance(e, Fsync)).path.endswith(".log")
    d2 = Driven(LogConfig(flush_ms=100))
    d2.append(batch(1), now_ms=1000)
    assert d2.log.next_deadline_ms() == 1100
    d2.maintain(1100)
    assert any(isinstance(e, Fsync) for e in d2.effects)
    assert d2.log.next_deadline_ms() == 1000 + 604_800_000  # segment.ms


def test_close_fsyncs_and_delete_removes_the_directory() -> None:
    d = Driven()
    d.append(batch(1))
    effects = d.log.close()
    assert [type(e) for e in effects] == [Fsync, Fsync, Fsync]
    effects = d.log.delete()
    assert effects == [Delete(DIR)]
    d.storage.apply(effects)
    assert d.storage.list_dir(DIR) == []


def test_next_deadline_when_blocked_does_not_spin() -> None:
    d = Driven(LogConfig(segment_bytes=MIB, retention_ms=0))
    for _ in range(3):
        d.append(batch(1, value_size=600_000, ts=0), now_ms=0)
    d.maintain(50, high_watermark=0)
    deadline = d.log.next_deadline_ms()
    assert deadline is not None and deadline > 50
