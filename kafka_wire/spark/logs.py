"""Kafka's logs at rest: a broker's data directory, a backup of one, or copied segment files.

A partition directory ``<topic>-<partition>`` holds segments ``<20-digit base offset>.log`` with
their ``.index`` (8-byte entries: int32 offset relative to the base, int32 file position). A read
of ``[start, end)`` opens the segment holding ``start``, seeks with its index to the last indexed
batch at or before ``start``, and reads batches forward, so a task reads only (about) its range.

What is returned is what Kafka's consumer returns: control batches never; records below
``start`` or at/after ``end`` of a batch that straddles the range are dropped; offset gaps
(compaction) are kept as they are. With ``read_committed``, records of aborted transactions are
dropped: a transactional batch of producer P is aborted when the next end-transaction marker of P
after it is ABORT (what Kafka's aborted-transaction index and consumer compute). A transaction
with no marker anywhere in the log (the copy was taken while it was open) is dropped too: its
records were never committed, and the coordinator aborts it on timeout. A read_committed query
ends at :func:`last_stable_offset` by default, as Kafka's consumer stops at the first open
transaction, so such records are only met when ``endingOffsets`` asks for them.
"""

from __future__ import annotations

import bisect
import os
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kafka_wire.client.types import TopicPartition
from kafka_wire.errors import CorruptBatchError
from kafka_wire.logformat.batch_header import MAX_HEADER_BYTES, BatchHeader, parse_header
from kafka_wire.logformat.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_FILE,
    MAX_OFFSET_FILE_BYTES,
    CheckpointError,
    parse_offset_file,
    parse_partition_checkpoint,
)
from kafka_wire.logformat.index import decode_offset_entries
from kafka_wire.logformat.names import INDEX_SUFFIX, LOG_SUFFIX, parse_segment_name
from kafka_wire.records import (
    ControlRecordType,
    ReadConfig,
    Record,
    RecordsReader,
    decode_control_key,
)
from kafka_wire.records.reader import Batch
from kafka_wire.spark.ranges import OptionError, parse_partition_dir

DEFAULT_CHUNK_BYTES: Final = 8 * 1024 * 1024
"""Bytes read from a segment at a time (Kafka's consumer fetches up to 50 MiB per response and
1 MiB per partition by default; a few MiB keeps file reads large and memory per task small)."""

_SIZE_AT: Final = 8
_LOG_OVERHEAD: Final = 12
_MAX_CHECKPOINT_BYTES: Final = 16 * 1024 * 1024
_HEADER_ONLY: Final = ReadConfig(verify_crc=False)


@dataclass(frozen=True, slots=True)
class Segment:
    base_offset: int
    log_path: str
    index_path: str | None


@dataclass(frozen=True, slots=True)
class PartitionLog:
    """The segments of one topic-partition, by base offset."""

    tp: TopicPartition
    segments: tuple[Segment, ...] = field(default=())
    log_start_offset: int | None = None
    """From the log start offset checkpoint (after retention or DeleteRecords), when one was found."""


def _segments_in(directory: Path, only: set[str] | None = None) -> list[Segment]:
    names = sorted(os.listdir(directory))
    indexes = {n for n in names if n.endswith(INDEX_SUFFIX)}
    out: list[Segment] = []
    for name in names:
        parsed = parse_segment_name(name)
        if parsed is None or parsed[1] != LOG_SUFFIX or (only is not None and name not in only):
            continue
        index = name[: -len(LOG_SUFFIX)] + INDEX_SUFFIX
        out.append(
            Segment(parsed[0], str(directory / name), str(directory / index) if index in indexes else None)
        )
    out.sort(key=lambda s: s.base_offset)
    return out


def discover(paths: Sequence[str | os.PathLike[str]]) -> dict[TopicPartition, PartitionLog]:
    """The partition logs under ``paths``: each a data directory of ``topic-partition`` folders,
    one such folder, or a ``.log`` segment file (its folder's name gives its topic-partition)."""
    found: dict[TopicPartition, list[Segment]] = {}

    def add(tp: TopicPartition, segments: list[Segment]) -> None:
        have = found.setdefault(tp, [])
        known = {s.log_path for s in have}
        have.extend(s for s in segments if s.log_path not in known)

    for raw in paths:
        path = Path(raw)
        if path.is_file():
            tp = parse_partition_dir(path.parent.name)
            if tp is None or parse_segment_name(path.name) is None:
                raise OptionError(
                    f"{path}: a segment file must be named <20 digits>.log inside a topic-partition folder"
                )
            add(tp, _segments_in(path.parent, {path.name}))
        elif path.is_dir():
            tp = parse_partition_dir(path.name)
            own = _segments_in(path) if tp is not None else []
            if tp is not None and own:
                add(tp, own)
                continue
            for child in sorted(path.iterdir()):
                child_tp = parse_partition_dir(child.name)
                if child_tp is not None and child.is_dir():
                    segments = _segments_in(child)
                    if segments:
                        add(child_tp, segments)
        else:
            raise OptionError(f"path not found: {path}")
    logs = {}
    for tp, segs in sorted(found.items()):
        ordered = tuple(sorted(segs, key=lambda s: s.base_offset))
        logs[tp] = PartitionLog(tp, ordered, _log_start_offset(tp, Path(ordered[0].log_path).parent))
    return logs


def _read_small(path: Path, limit: int = _MAX_CHECKPOINT_BYTES) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(limit + 1)
    except OSError:
        return None


def _log_start_offset(tp: TopicPartition, folder: Path) -> int | None:
    """The partition's log start offset: kafka_wire's ``log-start-offset`` file in the folder, or
    Kafka's ``log-start-offset-checkpoint`` of the data directory, whichever is later. Unreadable
    or malformed files count as absent."""
    starts = []
    own = _read_small(folder / LOG_START_OFFSET_FILE, MAX_OFFSET_FILE_BYTES)  # what the broker itself reads
    if own is not None and (offset := parse_offset_file(own)) is not None:
        starts.append(offset)
    kafka = _read_small(folder.parent / LOG_START_OFFSET_CHECKPOINT)
    if kafka is not None and len(kafka) <= _MAX_CHECKPOINT_BYTES:
        try:
            entries = parse_partition_checkpoint(kafka.decode("utf-8"))
        except (CheckpointError, UnicodeDecodeError):
            entries = {}
        offset = entries.get((tp.topic, tp.partition))
        if offset is not None and offset >= 0:
            starts.append(offset)
    return max(starts, default=None)


def _index_position(segment: Segment, offset: int) -> int:
    """File position of the last indexed batch at or before ``offset`` (0 without an index)."""
    if segment.index_path is None or offset <= segment.base_offset:
        return 0
    try:
        with open(segment.index_path, "rb") as f:
            entries = decode_offset_entries(f.read())
    except OSError:
        return 0
    relative = [rel for rel, _ in entries]
    i = bisect.bisect_right(relative, offset - segment.base_offset) - 1
    return entries[i][1] if i >= 0 else 0


def iter_segment(
    path: str, position: int = 0, config: ReadConfig | None = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> Iterator[tuple[int, Batch[bytes]]]:
    """``(file position, batch)`` for each complete batch of a segment file from ``position``.

    Reads ``chunk_bytes`` at a time (more when one batch is larger). A partial batch at the end
    (a copy taken during an append) and a zero-filled tail (a preallocated segment) end the
    segment quietly; anything else malformed raises ``CorruptBatchError``.
    """
    with open(path, "rb") as f:
        f.seek(position)
        buf = b""
        base = position
        while True:
            want = chunk_bytes
            if len(buf) >= _LOG_OVERHEAD:
                declared = int.from_bytes(buf[_SIZE_AT:_LOG_OVERHEAD], "big", signed=True)
                want = max(want, declared + _LOG_OVERHEAD - len(buf))
            data = f.read(want)
            if not data:
                return
            buf = buf + data if buf else data
            reader = RecordsReader(buf, config)
            try:
                for batch in reader:
                    yield base + batch.position, batch
            except CorruptBatchError:
                if not any(buf[reader.position : reader.position + _LOG_OVERHEAD]):
                    return
                raise
            buf = buf[reader.position :]
            base += reader.position


def _batches_from(
    log: PartitionLog, segment_index: int, position: int, config: ReadConfig | None
) -> Iterator[tuple[int, int, Batch[bytes]]]:
    """``(segment index, file position, batch)`` from a place in the log to its end."""
    for i in range(segment_index, len(log.segments)):
        for pos, batch in iter_segment(
            log.segments[i].log_path, position if i == segment_index else 0, config
        ):
            yield i, pos, batch


def _segment_for(log: PartitionLog, offset: int) -> int:
    bases = [s.base_offset for s in log.segments]
    return max(0, bisect.bisect_right(bases, offset) - 1)


def earliest_offset(log: PartitionLog) -> int:
    """The first offset a consumer can read: the base of the first batch, or the log start offset
    when a checkpoint puts it later (records below it stay in their segment until it is deleted);
    the log end for an empty log."""
    for _, _, batch in _batches_from(log, 0, 0, _HEADER_ONLY):
        start = log.log_start_offset
        if start is None or start <= batch.base_offset:
            return batch.base_offset
        return min(start, latest_offset(log))
    return latest_offset(log)


def latest_offset(log: PartitionLog) -> int:
    """The log end offset: the offset after the last batch (an empty last segment's base offset,
    as after a roll)."""
    for i in range(len(log.segments) - 1, -1, -1):
        segment = log.segments[i]
        position = _index_position(segment, 2**63 - 1)
        last = None
        for _, batch in iter_segment(segment.log_path, position, _HEADER_ONLY):
            last = batch
        if last is not None:
            return last.last_offset + 1 if last.magic == 2 else last.next_offset
        if i == len(log.segments) - 1 and os.path.getsize(segment.log_path) == 0:
            return segment.base_offset
    return 0


def _headers(path: str) -> Iterator[BatchHeader]:
    """The batch headers of a segment file, read by seeking from one batch to the next (bodies are
    never read). Ends quietly at a partial batch or a zero-filled tail, like :func:`iter_segment`."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        position = 0
        while True:
            f.seek(position)
            try:
                header = parse_header(f.read(MAX_HEADER_BYTES), 0, position)
            except CorruptBatchError:
                return
            if header is None or header.end > size:
                return
            yield header
            position = header.end


def last_stable_offset(log: PartitionLog) -> int:
    """The first offset of the oldest transaction with no end marker in the log, or the log end
    when every transaction ended: where Kafka's read_committed consumer stops."""
    open_since: dict[int, int] = {}
    for segment in log.segments:
        for header in _headers(segment.log_path):
            if header.is_transactional:
                if header.is_control:
                    open_since.pop(header.producer_id, None)
                else:
                    open_since.setdefault(header.producer_id, header.base_offset)
    return min(open_since.values(), default=latest_offset(log))


def offset_for_timestamp(log: PartitionLog, timestamp_ms: int) -> int | None:
    """The first offset whose record timestamp is at or after ``timestamp_ms`` (what ListOffsets
    answers), or None when there is none. Scans batch headers by their max timestamp."""
    for _, _, batch in _batches_from(log, 0, 0, _HEADER_ONLY):
        if batch.magic == 2 and batch.is_control:
            continue
        if batch.max_timestamp >= timestamp_ms:
            for record in batch.records():
                if record.timestamp >= timestamp_ms:
                    return record.offset
    return None


class _TxnResolver:
    """Whether a transactional batch commits: the type of its producer's next marker after it,
    found by scanning batch headers ahead of the reader (each batch is scanned at most once)."""

    def __init__(self, log: PartitionLog) -> None:
        self._log = log
        self._ahead: Iterator[tuple[int, int, Batch[bytes]]] | None = None
        self._markers: dict[int, deque[tuple[int, bool]]] = {}
        self._done = False

    def committed(self, producer_id: int, offset: int, segment_index: int, position: int) -> bool:
        if self._ahead is None:
            self._ahead = _batches_from(self._log, segment_index, position, _HEADER_ONLY)
        queue = self._markers.setdefault(producer_id, deque())
        while True:
            while queue and queue[0][0] < offset:
                queue.popleft()
            if queue:
                return queue[0][1]
            if self._done or not self._advance():
                return False

    def _advance(self) -> bool:
        assert self._ahead is not None
        for _, _, batch in self._ahead:
            if batch.magic == 2 and batch.is_control and batch.is_transactional:
                kind = _marker_type(batch)
                if kind is not None:
                    self._markers.setdefault(batch.producer_id, deque()).append((batch.base_offset, kind))
                    return True
        self._done = True
        return False


def _marker_type(batch: Batch[bytes]) -> bool | None:
    """True for a COMMIT marker, False for ABORT, None for other control records."""
    for record in batch.records():
        control = decode_control_key(record.key).type
        if control == ControlRecordType.COMMIT:
            return True
        if control == ControlRecordType.ABORT:
            return False
    return None


def read_batches(
    log: PartitionLog,
    start: int,
    end: int,
    *,
    read_committed: bool = False,
    config: ReadConfig | None = None,
) -> Iterator[Batch[bytes]]:
    """The batches holding the records of ``[start, end)``, control batches and (with
    ``read_committed``) aborted ones left out; a batch that straddles an end of the range is
    yielded whole."""
    if start >= end or not log.segments:
        return
    first = _segment_for(log, start)
    position = _index_position(log.segments[first], start)
    resolver = _TxnResolver(log) if read_committed else None
    for segment_index, pos, batch in _batches_from(log, first, position, config):
        if batch.base_offset >= end:
            return
        if batch.next_offset <= start:
            continue
        if batch.magic == 2:
            if batch.is_control:
                continue
            if (
                resolver is not None
                and batch.is_transactional
                and not resolver.committed(batch.producer_id, batch.base_offset, segment_index, pos)
            ):
                continue
        yield batch


def read_range(
    log: PartitionLog,
    start: int,
    end: int,
    *,
    read_committed: bool = False,
    config: ReadConfig | None = None,
) -> Iterator[tuple[int, list[Record[bytes]]]]:
    """The records of ``[start, end)`` as ``(timestamp type, records)`` per batch read."""
    for batch in read_batches(log, start, end, read_committed=read_committed, config=config):
        records = batch.records()
        if records and (records[0].offset < start or records[-1].offset >= end):
            records = [r for r in records if start <= r.offset < end]
        if records:
            yield int(batch.timestamp_type), records
