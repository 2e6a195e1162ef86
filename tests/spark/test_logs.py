"""Reading logs at rest without Spark: planning, index seeks, compaction gaps, transactions."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from kafka_wire.client import TopicPartition
from kafka_wire.errors import CorruptBatchError
from kafka_wire.records import build_abort_marker, build_batch, build_commit_marker
from kafka_wire.spark.logs import (
    discover,
    earliest_offset,
    iter_segment,
    last_stable_offset,
    latest_offset,
    offset_for_timestamp,
    read_range,
)
from tests.spark.segments import write_partition

T0 = 1_700_000_000_000


def _records(first: int, count: int) -> list[tuple[bytes, bytes, tuple[tuple[str, bytes], ...], int]]:
    return [
        (f"k{i}".encode(), f"v{i}".encode(), (("h", str(i).encode()),), T0 + i)
        for i in range(first, first + count)
    ]


def _read(
    path: Path, tp: TopicPartition, start: int, end: int, *, committed: bool = False
) -> list[tuple[int, bytes | None]]:
    log = discover([path])[tp]
    return [
        (r.offset, r.value)
        for _, records in read_range(log, start, end, read_committed=committed)
        for r in records
    ]


def _plain_log(tmp_path: Path) -> Path:
    segments = []
    for seg in range(3):  # 3 segments of 4 batches of 5 records, mixed codecs and magics
        batches = []
        for b in range(4):
            base = seg * 20 + b * 5
            codec = ["none", "gzip", "snappy", "lz4", "zstd"][(seg * 4 + b) % 5]
            magic = (2, 2, 1, 0)[b]
            batches.append(
                build_batch(_records(base, 5), base_offset=base, compression=codec, magic=magic)
                if magic == 2
                else build_batch(
                    [(k, v, (), ts) for k, v, _, ts in _records(base, 5)],
                    base_offset=base,
                    compression=codec,
                    magic=magic,
                )
            )
        segments.append(batches)
    write_partition(tmp_path, "plain", 0, segments)
    return tmp_path


def test_discover_and_offsets(tmp_path: Path) -> None:
    _plain_log(tmp_path)
    (tmp_path / "plain-0.abc-delete").mkdir()
    (tmp_path / "cleaner-offset-checkpoint").write_text("0\n0\n")
    logs = discover([tmp_path])
    assert list(logs) == [TopicPartition("plain", 0)]
    log = logs[TopicPartition("plain", 0)]
    assert [s.base_offset for s in log.segments] == [0, 20, 40]
    assert (earliest_offset(log), latest_offset(log)) == (0, 60)
    assert offset_for_timestamp(log, T0 + 33) == 33
    assert offset_for_timestamp(log, T0 + 60) is None
    # a partition folder and a single segment file are paths too
    assert list(discover([tmp_path / "plain-0"])) == [TopicPartition("plain", 0)]
    one = discover([tmp_path / "plain-0" / f"{20:020d}.log"])[TopicPartition("plain", 0)]
    assert [s.base_offset for s in one.segments] == [20]


def test_log_start_offset_checkpoints(tmp_path: Path) -> None:
    tp = TopicPartition("plain", 0)
    _plain_log(tmp_path)
    # Kafka's data-directory checkpoint: retention or DeleteRecords moved the start inside segment 0
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n2\nother 0 50\nplain 0 7\n")
    assert earliest_offset(discover([tmp_path])[tp]) == 7
    assert earliest_offset(discover([tmp_path / "plain-0"])[tp]) == 7
    # kafka_wire's own per-partition file; the later of the two wins, and never past the end
    (tmp_path / "plain-0" / "log-start-offset").write_text("12\n")
    assert earliest_offset(discover([tmp_path])[tp]) == 12
    (tmp_path / "plain-0" / "log-start-offset").write_text("99\n")
    assert earliest_offset(discover([tmp_path])[tp]) == 60
    (tmp_path / "log-start-offset-checkpoint").write_text("garbage")
    (tmp_path / "plain-0" / "log-start-offset").write_bytes(b"\xff")
    assert earliest_offset(discover([tmp_path])[tp]) == 0


def test_ranges_cover_the_log_exactly(tmp_path: Path) -> None:
    tp = TopicPartition("plain", 0)
    _plain_log(tmp_path)
    whole = _read(tmp_path, tp, 0, 60)
    assert whole == [(i, f"v{i}".encode()) for i in range(60)]
    cuts = [0, 3, 7, 20, 21, 44, 59, 60]
    pieces = [row for lo, hi in itertools.pairwise(cuts) for row in _read(tmp_path, tp, lo, hi)]
    assert pieces == whole
    log = discover([tmp_path])[tp]
    types = {r.offset: (t, r.timestamp) for t, records in read_range(log, 0, 60) for r in records}
    # CreateTime for v1 and v2; magic 0 has no timestamp: type -1 and timestamp -1, as Kafka's consumer gives
    assert types == {i: (-1, -1) if i % 20 >= 15 else (0, T0 + i) for i in range(60)}


def test_compacted_log_keeps_its_offset_gaps(tmp_path: Path) -> None:
    # What the cleaner leaves: batches with holes inside (offset deltas) and between them.
    batches = [
        build_batch(
            [(b"a", b"1", (), T0), (b"b", b"2", (), T0)],
            base_offset=0,
            offset_deltas=[1, 4],
            last_offset_delta=4,
        ),
        build_batch([(b"c", b"3", (), T0)], base_offset=9, compression="zstd"),
        build_batch([(b"a", None, (), T0)], base_offset=15),  # tombstone
    ]
    write_partition(tmp_path, "compacted", 0, [batches[:2], batches[2:]])
    tp = TopicPartition("compacted", 0)
    assert _read(tmp_path, tp, 0, 16) == [(1, b"1"), (4, b"2"), (9, b"3"), (15, None)]
    assert _read(tmp_path, tp, 2, 10) == [(4, b"2"), (9, b"3")]
    assert latest_offset(discover([tmp_path])[tp]) == 16


def _transactional_log(tmp_path: Path) -> Path:
    """As a transactional producer leaves a partition: pid 7 commits, pid 8 aborts (interleaved),
    plain records in between, pid 9's transaction still open at the end."""

    def txn(pid: int, base: int, values: list[bytes]) -> bytes:
        return build_batch(
            [(None, v, (), T0) for v in values],
            base_offset=base,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=base,
            is_transactional=True,
        )

    batches = [
        txn(7, 0, [b"c0", b"c1"]),  # 0-1 committed
        txn(8, 2, [b"a0"]),  # 2 aborted
        build_batch([(None, b"p0", (), T0)], base_offset=3),  # 3 plain
        txn(7, 4, [b"c2"]),  # 4 committed
        build_commit_marker(producer_id=7, producer_epoch=0, coordinator_epoch=1, base_offset=5),
        txn(8, 6, [b"a1", b"a2"]),  # 6-7 aborted
        build_abort_marker(producer_id=8, producer_epoch=0, coordinator_epoch=1, base_offset=8),
        txn(8, 9, [b"c3"]),  # 9 committed (a new transaction of 8)
        build_commit_marker(producer_id=8, producer_epoch=0, coordinator_epoch=1, base_offset=10),
        txn(9, 11, [b"open"]),  # 11 never ended
        build_batch([(None, b"p1", (), T0)], base_offset=12),  # 12 plain
    ]
    write_partition(tmp_path, "txn", 0, [batches[:5], batches[5:]], index_every=2)
    return tmp_path


def test_last_stable_offset_stops_at_the_open_transaction(tmp_path: Path) -> None:
    _transactional_log(tmp_path / "txn")
    log = discover([tmp_path / "txn"])[TopicPartition("txn", 0)]
    assert (latest_offset(log), last_stable_offset(log)) == (13, 11)  # pid 9's transaction at 11 never ended
    _plain_log(tmp_path / "plain")
    plain = discover([tmp_path / "plain"])[TopicPartition("plain", 0)]
    assert last_stable_offset(plain) == latest_offset(plain) == 60


def test_read_committed_drops_aborted_transactions(tmp_path: Path) -> None:
    tp = TopicPartition("txn", 0)
    _transactional_log(tmp_path)
    uncommitted = _read(tmp_path, tp, 0, 13)
    assert [v for _, v in uncommitted] == [
        b"c0",
        b"c1",
        b"a0",
        b"p0",
        b"c2",
        b"a1",
        b"a2",
        b"c3",
        b"open",
        b"p1",
    ]
    committed = _read(tmp_path, tp, 0, 13, committed=True)
    assert committed == [(0, b"c0"), (1, b"c1"), (3, b"p0"), (4, b"c2"), (9, b"c3"), (12, b"p1")]
    # a range whose markers lie past its end still resolves them
    assert _read(tmp_path, tp, 1, 4, committed=True) == [(1, b"c1"), (3, b"p0")]
    assert _read(tmp_path, tp, 6, 10, committed=True) == [(9, b"c3")]


def test_truncated_and_corrupt_tails(tmp_path: Path) -> None:
    tp = TopicPartition("t", 0)
    directory = write_partition(
        tmp_path, "t", 0, [[build_batch(_records(0, 3)), build_batch(_records(3, 3), base_offset=3)]]
    )
    log_file = directory / f"{0:020d}.log"
    data = log_file.read_bytes()
    log_file.write_bytes(data[:-10])  # a copy taken during an append: the partial batch is not there yet
    assert [o for o, _ in _read(tmp_path, tp, 0, 6)] == [0, 1, 2]
    log_file.write_bytes(data + bytes(4096))  # preallocated zeros
    assert [o for o, _ in _read(tmp_path, tp, 0, 6)] == [0, 1, 2, 3, 4, 5]
    log_file.write_bytes(data[:-1] + b"\x00")  # flipped byte: CRC mismatch
    with pytest.raises(CorruptBatchError):
        _read(tmp_path, tp, 0, 6)


@pytest.mark.parametrize("chunk", [100, 700, 5_000, 1 << 20])
def test_a_segment_is_read_whole_whatever_the_chunk_size(tmp_path: Path, chunk: int) -> None:
    """Batches of many sizes, one far larger than the chunk, read ``chunk`` bytes at a time from
    the start or a batch's position: the same batches at the same positions, a partial batch and a
    zero-filled tail ending the segment quietly."""
    sizes = [1, 3, 40, 2, 1, 7, 1, 25, 1, 1]
    batches, base = [], 0
    for n in sizes:
        batches.append(
            build_batch([(b"k", b"v" * 97, (), T0 + base + i) for i in range(n)], base_offset=base)
        )
        base += n
    data = b"".join(batches)
    log_file = write_partition(tmp_path, "t", 0, [batches]) / f"{0:020d}.log"
    starts = list(itertools.accumulate([0, *map(len, batches[:-1])]))
    expected = list(zip(starts, itertools.accumulate([0, *sizes[:-1]]), strict=True))

    def read(start: int = 0) -> list[tuple[int, int]]:
        return [(pos, b.base_offset) for pos, b in iter_segment(str(log_file), start, chunk_bytes=chunk)]

    assert read() == expected
    assert read(starts[5]) == expected[5:]
    log_file.write_bytes(data + batches[0][:30])  # a partial batch after the last
    assert read() == expected
    log_file.write_bytes(data + bytes(3 * chunk))  # preallocated zeros
    assert read() == expected


def test_stream_reader_honours_spark_read_limits(tmp_path: Path) -> None:
    """Spark 4.2+ passes the previous end and a read limit to ``latestOffset``."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

    from kafka_wire.spark.plan import Settings
    from kafka_wire.spark.source import KafkaWireStreamReader

    for partition in (0, 1):
        write_partition(tmp_path, "s", partition, [[build_batch(_records(0, 10), base_offset=0)]])
    reader = KafkaWireStreamReader(
        Settings.parse(
            {"path": str(tmp_path), "subscribe": "s", "startingOffsets": "earliest"}, streaming=True
        ),
        ["offset"],
    )
    start = reader.initialOffset()
    assert start == {"s": {"0": 0, "1": 0}}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"s": {"0": 10, "1": 10}}
    assert reader.latestOffset(start, ReadMaxRows(14)) == {"s": {"0": 10, "1": 4}}
    assert reader.latestOffset({"s": {"0": 10, "1": 4}}, ReadMaxRows(100)) == {"s": {"0": 10, "1": 10}}
    assert reader.latestOffset({"s": {"0": 10, "1": 4}}, ReadMinRows(7)) == {"s": {"0": 10, "1": 4}}
    assert reader.latestOffset({"s": {"0": 10, "1": 4}}, ReadMinRows(6)) == {"s": {"0": 10, "1": 10}}
    # maxTriggerDelay: a micro-batch below the minimum goes ahead once the delay has passed
    eager = KafkaWireStreamReader(
        Settings.parse(
            {"path": str(tmp_path), "subscribe": "s", "minOffsetsPerTrigger": "50", "maxTriggerDelay": "0ms"},
            streaming=True,
        ),
        ["offset"],
    )
    assert eager.getDefaultReadLimit() == ReadMinRows(50)
    assert eager.latestOffset({"s": {"0": 10, "1": 4}}, ReadMinRows(50)) == {"s": {"0": 10, "1": 10}}
    # Trigger.AvailableNow: the end offsets seen at the start, whatever is appended later
    capped = KafkaWireStreamReader(
        Settings.parse(
            {"path": str(tmp_path), "subscribe": "s", "maxOffsetsPerTrigger": "8"}, streaming=True
        ),
        ["offset"],
    )
    assert capped.getDefaultReadLimit() == ReadMaxRows(8)
    capped.prepareForTriggerAvailableNow()
    write_partition(tmp_path, "s", 0, [[build_batch(_records(10, 20), base_offset=10)]])
    assert capped.latestOffset({"s": {"0": 0, "1": 0}}, ReadMaxRows(8)) == {"s": {"0": 8, "1": 0}}
    assert capped.latestOffset({"s": {"0": 8, "1": 0}}, ReadAllAvailable()) == {"s": {"0": 10, "1": 10}}


def test_options_split_refuse_and_end_by_timestamp(tmp_path: Path) -> None:
    from kafka_wire.spark.plan import Settings, Source
    from kafka_wire.spark.ranges import OffsetRange, OptionError, split_ranges

    assert split_ranges([OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 5, 6)], None, 4) == [
        OffsetRange("t", 0, 0, 3),
        OffsetRange("t", 0, 3, 6),
        OffsetRange("t", 0, 6, 10),
        OffsetRange("t", 1, 5, 6),
    ]
    base = {"path": str(tmp_path), "subscribe": "s"}
    for name in ("kafka.group.id", "maxOffsetsPerTrigger", "startingOffsetsByTimestampStrategy"):
        with pytest.raises(OptionError, match=name):
            Settings.parse({**base, name: "1"})
    with pytest.raises(OptionError, match="endingOffsetsByTimestamp"):
        Settings.parse({**base, "endingOffsetsByTimestamp": '{"s": {"0": 1}}'}, streaming=True)
    with pytest.raises(OptionError, match="maxTriggerDelay"):
        Settings.parse({**base, "maxTriggerDelay": "soon"}, streaming=True)
    write_partition(tmp_path, "s", 0, [[build_batch(_records(0, 30), base_offset=0)]])
    ranges = Source(
        Settings.parse(
            {
                **base,
                "startingOffsetsByTimestamp": json.dumps({"s": {"0": T0 + 5}}),
                "endingTimestamp": str(T0 + 25),
                "maxRecordsPerPartition": "7",
            }
        )
    ).plan()
    assert [(r.start, r.end) for r in ranges] == [(5, 11), (11, 18), (18, 25)]
