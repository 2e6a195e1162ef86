"""Log compaction, as Kafka's ``LogCleaner``: keep the latest record per key, offsets unchanged.

A pass runs when the log is *cleanable*: among the closed segments wholly below the high
watermark and older than ``min.compaction.lag.ms`` (their largest timestamp, or last append time
when they have none), the *dirty* ones (holding offsets at or above the cleaner offset, Kafka's
cleaner checkpoint) make up at least ``min.cleanable.dirty.ratio`` of the bytes; or the first
dirty segment started more than ``max.compaction.lag.ms`` ago; or a tombstone's delete horizon
has passed. The active segment is never touched.

A pass is a job that runs over several :meth:`PartitionLog.maintain` calls, reading at most
``PartitionLog.cleaner_bytes_per_call`` bytes per call, so that what it writes is handed out
(and leaves memory) between calls:

1. *map*: read the dirty records and build ``key digest -> latest offset`` (16-byte BLAKE2b
   digests, as Kafka's ``SkimpyOffsetMap`` keeps 16-byte MD5s). The map holds at most
   ``cleaner_map_entries`` keys; when it is full the pass covers only the offsets mapped so far
   and the next pass continues from there.
2. *clean*: rewrite every closed segment from the log start up to the end of the map, in groups
   of consecutive segments whose sizes add up to at most ``segment.bytes``, into
   ``<base>.log.cleaned`` (and ``.index.cleaned`` / ``.timeindex.cleaned``). A record goes when a
   later record of the same key is in the map. A tombstone (null value) stays until its batch's
   delete horizon (KIP-534) has passed: a batch that keeps a tombstone and has no horizon yet is
   rewritten with ``delete horizon = now + delete.retention.ms``. Kept records keep their offsets
   (``offset_deltas``) and a rewritten batch keeps its base offset, last offset delta, producer
   fields and codec (it is recompressed). A batch left without records is dropped, unless it
   carries a producer id: then it stays as an empty batch so the producer's state survives
   (Kafka keeps only the last batch of each active producer). Transactions (``cleaner_txn``):
   aborted records go, committed ones are compacted like the rest, a marker goes
   ``delete.retention.ms`` after its transaction's records are gone, and the cleaned segment
   takes the ``.txnindex`` entries of the segments it replaces but those of removed markers.
   Other control batches (KRaft's) are kept whole. Legacy (magic 0/1) messages are kept or
   dropped whole and their tombstones are kept.
3. *swap*: per group, fsync the cleaned files, rename them to ``.swap``, rename the old
   segments' files to ``.deleted`` (removed after ``file.delete.delay.ms``), rename the
   ``.swap`` files to their final names. :meth:`PartitionLog.open` completes a swap that a crash
   interrupted. Then the cleaner offset moves to the end of the map and is persisted.

Anything that removes or truncates segments meanwhile (retention, DeleteRecords, truncation)
abandons the running pass; its ``.cleaned`` files are deleted.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kafka_wire.broker.log.checkpoints import write_offset
from kafka_wire.broker.log.cleaner_txn import AbortedRanges, ProducerLookup, TxnCleaning, no_producers
from kafka_wire.broker.log.config import INT_MAX
from kafka_wire.broker.log.files import PendingFile
from kafka_wire.broker.log.index import OffsetIndex, TimeIndex
from kafka_wire.broker.log.segment import Segment, segment_path
from kafka_wire.broker.log.txn_index import TxnIndex
from kafka_wire.errors import DecodeError, EncodeError
from kafka_wire.logformat.batch_header import BatchHeader, parse_header
from kafka_wire.logformat.checkpoints import CLEANER_OFFSET_FILE
from kafka_wire.logformat.names import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from kafka_wire.records import RecordBatch, build_batch, read_batches
from kafka_wire.records.constants import TimestampType
from kafka_wire.records.record import Record

if TYPE_CHECKING:
    from kafka_wire.broker.log.log import PartitionLog


def key_digest(key: bytes) -> bytes:
    return hashlib.blake2b(key, digest_size=16).digest()


@dataclass(slots=True)
class CleanerJob:
    """A compaction pass in progress (see the module docstring)."""

    phase: Literal["map", "clean"]
    dirty: list[Segment]
    """Segments whose records are mapped, oldest first."""
    first_dirty_offset: int
    keys: dict[bytes, int] = field(default_factory=dict)
    map_index: int = 0
    map_position: int = 0
    map_end: int = -1
    """Offsets below this are in the map (the pass's end)."""
    groups: list[list[Segment]] = field(default_factory=list)
    group_index: int = 0
    source_index: int = 0
    source_position: int = 0
    output: Segment | None = None
    txn: TxnCleaning = field(default_factory=lambda: TxnCleaning(AbortedRanges(())))


# -- deciding ------------------------------------------------------------------------------------


def _first_uncleanable(log: PartitionLog, now_ms: int, hw: int) -> int:
    """How many leading segments the cleaner may rewrite."""
    segments = log.segments
    lag = log.config.min_compaction_lag_ms
    for i, segment in enumerate(segments[:-1]):
        upper = segments[i + 1].base_offset
        if upper > hw or (lag > 0 and segment.retention_timestamp() > now_ms - lag):
            return i
    return max(0, len(segments) - 1)


def _plan(log: PartitionLog, now_ms: int, hw: int) -> CleanerJob | None:
    segments = log.segments
    count = _first_uncleanable(log, now_ms, hw)
    cleanable = segments[:count]
    if not cleanable:
        return None
    first_dirty = max(log.cleaner_offset, log.log_start_offset)
    dirty = [s for i, s in enumerate(cleanable) if _upper(segments, i) > first_dirty]
    clean_bytes = sum(s.size for s in cleanable if s not in dirty)
    dirty_bytes = sum(s.size for s in dirty)
    horizon_due = log.delete_horizon_ms is not None and log.delete_horizon_ms <= now_ms
    lag_due = bool(dirty) and any(
        s.first_append_ms is not None and now_ms - s.first_append_ms > log.config.max_compaction_lag_ms
        for s in dirty[:1]
    )
    ratio_due = (
        dirty_bytes > 0 and dirty_bytes / (clean_bytes + dirty_bytes) >= log.config.min_cleanable_dirty_ratio
    )
    if not (ratio_due or lag_due or horizon_due):
        return None
    return CleanerJob("map", dirty, first_dirty, map_end=first_dirty if not dirty else -1)


def _upper(segments: tuple[Segment, ...], i: int) -> int:
    return segments[i + 1].base_offset if i + 1 < len(segments) else segments[i].next_offset


def cleaner_deadline(log: PartitionLog, now_ms: int) -> int | None:
    """When compaction has work: now while a pass runs or the log is cleanable, else a known horizon."""
    if log.cleaner_job is not None:
        return now_ms
    if _plan(log, now_ms, log.log_end_offset) is not None:
        return now_ms
    deadlines = []
    if log.delete_horizon_ms is not None:
        deadlines.append(log.delete_horizon_ms)
    lag = log.config.min_compaction_lag_ms
    segments = log.segments
    count = _first_uncleanable(log, now_ms, log.log_end_offset)
    if lag > 0 and count < len(segments) - 1:
        deadlines.append(segments[count].retention_timestamp() + lag + 1)
    return min(deadlines) if deadlines else None


# -- running -------------------------------------------------------------------------------------


def clean_log(
    log: PartitionLog, now_ms: int, upper_bound: int, producers: ProducerLookup = no_producers
) -> None:
    """Advance compaction by at most ``log.cleaner_bytes_per_call`` bytes read; a new pass covers
    offsets below ``upper_bound`` (the high watermark, or the last stable offset below it)."""
    job = log.cleaner_job
    if job is None:
        job = _plan(log, now_ms, upper_bound)
        if job is None:
            return
        aborted = AbortedRanges(e for s in log.segments for e in s.txn_index.entries(log.storage))
        job.txn = TxnCleaning(aborted, producers)
        log.cleaner_job = job
    budget = log.cleaner_bytes_per_call
    if job.phase == "map":
        budget = _map(log, job, budget)
        if job.phase == "map":
            return
    _clean(log, job, now_ms, budget)


def _map(log: PartitionLog, job: CleanerJob, budget: int) -> int:
    limit = log.cleaner_map_entries
    while job.map_index < len(job.dirty):
        segment = job.dirty[job.map_index]
        scanner = segment.scan(log.storage, job.map_position, with_data=True)
        for header, data in scanner:
            if header.last_offset >= job.first_dirty_offset and data is not None:
                if not _map_batch(job, header, data, limit):
                    job.map_end = max(job.map_end, job.first_dirty_offset)  # the map is full
                    return _start_cleaning(log, job, budget)
            job.map_position = header.end
            job.map_end = max(job.map_end, header.next_offset)
            budget -= header.size
            if budget <= 0:
                return 0
        job.map_end = max(job.map_end, _upper(log.segments, log.segments.index(segment)))
        job.map_index += 1
        job.map_position = 0
    return _start_cleaning(log, job, budget)


def _map_batch(job: CleanerJob, header: BatchHeader, data: bytes, limit: int) -> bool:
    """Add a batch's keys; False (adding nothing) when they would not fit in the map."""
    if header.is_control or job.txn.aborted.holds(header):
        return True
    try:
        records = [r for b in read_batches(data) for r in b.records()]
    except DecodeError:
        return True
    new = {key_digest(r.key) for r in records if r.key is not None and r.offset >= job.first_dirty_offset}
    if len(job.keys) + len(new - job.keys.keys()) > limit and job.keys:
        return False
    for record in records:
        if record.key is not None and record.offset >= job.first_dirty_offset:
            job.keys[key_digest(record.key)] = record.offset
    return True


def _start_cleaning(log: PartitionLog, job: CleanerJob, budget: int) -> int:
    job.phase = "clean"
    log.delete_horizon_ms = None  # recomputed from what this pass writes
    end = job.map_end
    sources = [s for s in log.segments[:-1] if s.base_offset < end]
    groups: list[list[Segment]] = []
    for segment in sources:
        group = groups[-1] if groups else None
        if (
            group is not None
            and sum(s.size for s in group) + segment.size <= log.config.segment_bytes
            and segment.next_offset - group[0].base_offset <= INT_MAX
        ):
            group.append(segment)
        else:
            groups.append([segment])
    job.groups = groups
    return budget


def _clean(log: PartitionLog, job: CleanerJob, now_ms: int, budget: int) -> None:
    config = log.config
    while job.group_index < len(job.groups):
        group = job.groups[job.group_index]
        if job.output is None:
            job.output = _cleaned_segment(log, group[0].base_offset, now_ms)
        output = job.output
        while job.source_index < len(group):
            source = group[job.source_index]
            for header, data in source.scan(log.storage, job.source_position, with_data=True):
                assert data is not None
                kept, horizon = _clean_batch(data, header, job, now_ms, config.delete_retention_ms)
                if kept is not None:
                    parsed = parse_header(kept, 0, 0)
                    assert parsed is not None
                    output.append(kept, [parsed], now_ms, config)
                if horizon is not None and (log.delete_horizon_ms is None or horizon < log.delete_horizon_ms):
                    log.delete_horizon_ms = horizon
                job.source_position = header.end
                budget -= header.size
                if budget <= 0:
                    return
            job.source_index += 1
            job.source_position = 0
        _swap(log, group, output, job.txn.dropped_markers, now_ms)
        job.output = None
        job.group_index += 1
        job.source_index = 0
    log.cleaner_job = None
    log.cleaner_offset = max(log.cleaner_offset, job.map_end)
    write_offset(log.queue, f"{log.directory}/{CLEANER_OFFSET_FILE}", log.cleaner_offset)


def _cleaned_segment(log: PartitionLog, base: int, now_ms: int) -> Segment:
    queue = log.queue
    files = [
        PendingFile.create(queue, segment_path(log.directory, base, s + CLEANED_SUFFIX))
        for s in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
    ]
    txn_index = TxnIndex(queue, segment_path(log.directory, base, TXN_INDEX_SUFFIX + CLEANED_SUFFIX))
    segment = Segment(
        log.directory, base, files[0], OffsetIndex(files[1], base), TimeIndex(files[2], base), txn_index
    )
    segment.last_append_ms = now_ms
    return segment


def _swap(
    log: PartitionLog, group: list[Segment], output: Segment, dropped_markers: set[int], now_ms: int
) -> None:
    for source in group:  # the aborted transactions whose markers stay
        for txn in source.txn_index.entries(log.storage):
            if txn.last_offset not in dropped_markers:
                output.txn_index.append(txn)
    output.close_for_appends()
    output.next_offset = max(output.next_offset, group[-1].next_offset)
    output.last_append_ms = max(s.last_append_ms for s in group)
    output.first_append_ms = group[0].first_append_ms
    finals = [f.path[: -len(CLEANED_SUFFIX)] for f in output.files()]
    for file in output.files():
        file.rename(file.path[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX)
    log.retire_segments(group, now_ms)
    for file, final in zip(output.files(), finals, strict=True):
        file.rename(final)
    output.txn_index.path = segment_path(log.directory, output.base_offset, TXN_INDEX_SUFFIX)
    log.insert_segment(output)


def _clean_batch(
    data: bytes, header: BatchHeader, job: CleanerJob, now_ms: int, delete_retention_ms: int
) -> tuple[bytes | None, int | None]:
    """The batch to write (None: drop it) and its delete horizon if it keeps tombstones (or is a
    marker waiting for its horizon)."""
    if header.is_control and not header.is_transactional:
        return data, None
    try:
        batch = next(iter(read_batches(data)))
        records = batch.records()
    except (DecodeError, StopIteration):
        return data, None
    if header.is_control:
        assert isinstance(batch, RecordBatch)
        return _clean_marker(data, batch, job, now_ms, delete_retention_ms)
    aborted = job.txn.aborted.holds(header)
    kept: list[Record[bytes]] = []
    tombstones = False
    horizon = batch.delete_horizon_ms
    for record in records:
        if record.offset >= job.map_end:
            kept.append(record)
            continue
        if aborted:
            continue
        if record.key is not None:
            latest = job.keys.get(key_digest(record.key))
            if latest is not None and latest > record.offset:
                continue
            if record.value is None and header.magic >= 2:
                if horizon is not None and now_ms >= horizon:
                    continue
                tombstones = True
        kept.append(record)
    if header.magic < 2:
        return (data if kept else None), None
    assert isinstance(batch, RecordBatch)
    if batch.is_transactional and batch.producer_id >= 0 and not job.txn.keeps(batch, len(kept)):
        return None, None
    new_horizon = horizon if horizon is not None else (now_ms + delete_retention_ms if tombstones else None)
    if len(kept) == len(records) and new_horizon == horizon:
        return data, horizon if tombstones else None
    if not kept and batch.producer_id < 0:
        return None, None
    rebuilt = _rebuilt(batch, kept, new_horizon if kept else None)
    if rebuilt is None:
        return data, None
    return rebuilt, new_horizon if tombstones else None


def _clean_marker(
    data: bytes, marker: RecordBatch[bytes], job: CleanerJob, now_ms: int, delete_retention_ms: int
) -> tuple[bytes | None, int | None]:
    """A transaction's marker: kept, given its delete horizon, or dropped (``cleaner_txn``)."""
    if marker.last_offset >= job.map_end:
        return data, None
    verdict = job.txn.marker(marker, now_ms)
    if verdict == "drop":
        return None, None
    if verdict == "keep":
        horizon = marker.delete_horizon_ms
        return data, horizon if horizon is not None and horizon > now_ms else None
    horizon = now_ms + delete_retention_ms
    rebuilt = _rebuilt(marker, list(marker.records()), horizon)
    return (data, None) if rebuilt is None else (rebuilt, horizon)


def _rebuilt(batch: RecordBatch[bytes], kept: list[Record[bytes]], horizon: int | None) -> bytes | None:
    """``batch`` with only the ``kept`` records (offsets unchanged) and the delete horizon
    ``horizon``; None when it cannot be encoded."""
    log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    try:
        return build_batch(
            [(r.key, r.value, r.headers, r.timestamp) for r in kept],
            compression=batch.compression,
            base_offset=batch.base_offset,
            partition_leader_epoch=batch.partition_leader_epoch,
            timestamp_type=batch.timestamp_type if log_append else TimestampType.CREATE_TIME,
            log_append_time=batch.max_timestamp if log_append else None,
            max_timestamp=batch.max_timestamp if log_append else max((r.timestamp for r in kept), default=-1),
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            is_control=batch.is_control,
            delete_horizon_ms=horizon,
            offset_deltas=[r.offset - batch.base_offset for r in kept],
            last_offset_delta=batch.last_offset_delta,
        )
    except EncodeError:
        return None


def abandon(log: PartitionLog) -> None:
    """Drop a running pass and delete its ``.cleaned`` files."""
    job = log.cleaner_job
    if job is None:
        return
    if job.output is not None:
        for file in job.output.files():
            file.delete()
    log.cleaner_job = None
