"""A partition's log: segments in Kafka's on-disk format, pure (storage effects out, reads in).

Every method returns values; what must change on disk is queued as storage effects and handed
out by :meth:`PartitionLog.take_effects`. Until the driver has applied them the log serves reads
of its own appends from memory (see :mod:`kafka_wire.broker.log.files`). Errors the client should see are Kafka error codes in the
results; exceptions mean a bug or caller misuse.

Memory: per segment a few integers (and the appends storage may not hold yet: those not taken, or
in a batch not yet applied); index lookups and batch scans read storage. Nothing else grows with the log.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Final, NamedTuple

from kafka_wire.broker.effects import FileRegion, StorageEffect, WriteProgress
from kafka_wire.broker.log.checkpoints import read_offset, write_offset
from kafka_wire.broker.log.config import LONG_MAX, LogConfig
from kafka_wire.broker.log.files import EffectQueue
from kafka_wire.broker.log.loader import LogLoader, RecoveryStart
from kafka_wire.broker.log.retention import apply_retention, retention_deadlines
from kafka_wire.broker.log.segment import Segment
from kafka_wire.broker.log.validation import AppendOrigin, RecordError, Rejection, validate_records
from kafka_wire.broker.storage import StorageReader
from kafka_wire.logformat.checkpoints import CLEANER_OFFSET_FILE, LOG_START_OFFSET_FILE
from kafka_wire.logformat.names import DELETED_SUFFIX
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass
from kafka_wire.records.constants import TimestampType

if TYPE_CHECKING:  # compaction (cleaner.py) loads when a compacted log first needs it
    from kafka_wire.broker.log.cleaner import CleanerJob
    from kafka_wire.broker.log.cleaner_txn import ProducerLookup

BLOCKED_RETRY_MS: Final = 1000
"""When due work cannot run yet (the high watermark lags), ask to be called again this much later."""

DEFAULT_CLEANER_MAP_ENTRIES: Final = 100_000
"""Keys one compaction pass maps (Kafka: ``log.cleaner.dedupe.buffer.size`` 128 MiB / 24 bytes per
entry; a Python dict entry with a 16-byte key costs ~100 bytes, so this is ~10 MiB)."""
DEFAULT_CLEANER_BYTES_PER_CALL: Final = 4 * 1024 * 1024
"""Segment bytes one ``maintain`` call reads while compacting (Kafka's cleaner I/O buffer is
``log.cleaner.io.buffer.size`` 512 KiB, throttled by ``log.cleaner.io.max.bytes.per.second``)."""


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an append did: Kafka's error code, or the offsets the records got."""

    error_code: int
    base_offset: int = -1
    last_offset: int = -1
    log_append_time: int = -1
    """The append time stamped on the batches, -1 for CreateTime."""
    log_start_offset: int = -1
    record_errors: tuple[RecordError, ...] = ()
    error_message: str | None = None
    work_bytes: int = 0
    """Decoding the validation did (see ``validation.ValidRecords.work_bytes``)."""


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Whole batches from the one holding the fetch offset: stored file regions and pending bytes."""

    error_code: int
    parts: tuple[FileRegion | bytes, ...] = ()
    size: int = 0
    next_offset: int = -1
    """The offset after the last batch returned (the fetch offset when nothing was)."""
    end_segment: int = -1
    """The base offset of the segment the last batch returned is in (-1: nothing returned)."""
    end_position: int = -1
    """Where that batch ends in its segment."""


class DeleteRecordsResult(NamedTuple):
    error_code: int
    low_watermark: int


@dataclass(slots=True)
class _PendingDelete:
    due_ms: int
    paths: tuple[str, ...] = field(default=())


class PartitionLog:
    """One partition's log. Open with :meth:`open`."""

    def __init__(
        self, directory: str, config: LogConfig, storage: StorageReader, progress: WriteProgress | None = None
    ) -> None:
        self.directory = directory
        self.config = config
        self.storage = storage
        self._queue = EffectQueue(progress)
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        #: Everything below it is fsynced (Kafka's recovery point, what
        #: ``recovery-point-offset-checkpoint`` records): an unclean stop may have lost only what
        #: is above it.
        self.recovery_point = 0
        self._pending_deletes: list[_PendingDelete] = []
        self._now_ms = 0
        self._maintained_at: int | None = None
        #: First offset not yet compacted (Kafka's cleaner checkpoint), persisted in ``cleaner-offset``.
        self.cleaner_offset = 0
        #: Earliest tombstone delete horizon written by the cleaner (None: none known).
        self.delete_horizon_ms: int | None = None
        #: The compaction pass in progress, and its limits (see cleaner.py).
        self.cleaner_job: CleanerJob | None = None
        self.cleaner_map_entries = DEFAULT_CLEANER_MAP_ENTRIES
        self.cleaner_bytes_per_call = DEFAULT_CLEANER_BYTES_PER_CALL

    # -- opening ----------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        directory: str,
        config: LogConfig,
        storage: StorageReader,
        now_ms: int,
        *,
        progress: WriteProgress | None = None,
        start: RecoveryStart | None = None,
    ) -> PartitionLog:
        """Load (and recover) the log in ``directory``; create the directory when it is missing.
        With the engine's ``progress``, appended bytes stay in memory until their batch is applied
        (see :mod:`kafka_wire.broker.log.files`); without, until they are taken. Recovery of
        the segment files is :class:`~kafka_wire.broker.log.loader.LogLoader`'s (``start`` says
        which segments it recovers); then segments wholly below the persisted log start offset
        are deleted.
        """
        log = cls(directory, config, storage, progress)
        log._now_ms = now_ms
        log._load(now_ms, start)
        return log

    def _path(self, name: str) -> str:
        return f"{self.directory}/{name}"

    def _load(self, now_ms: int, start: RecoveryStart | None) -> None:
        segments = LogLoader(self.directory, self.config, self.storage, self._queue, start).load(now_ms)
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        persisted = read_offset(self.storage, self._path(LOG_START_OFFSET_FILE))
        if not segments:
            self._add_segment(Segment.create(self._queue, self.directory, persisted or 0, now_ms))
        self.log_start_offset = max(persisted or 0, self._segments[0].base_offset)
        if self.log_start_offset > self.log_end_offset:
            self._truncate_fully_and_start_at(self.log_start_offset, now_ms, deferred=False)
        else:
            self._delete_below_log_start(now_ms, deferred=False)
        self.cleaner_offset = max(
            read_offset(self.storage, self._path(CLEANER_OFFSET_FILE)) or 0, self.log_start_offset
        )
        self.recovery_point = self.log_end_offset
        if start is not None and not start.clean_shutdown:
            self.recovery_point = min(start.recovery_point, self.recovery_point)

    # -- offsets and sizes ------------------------------------------------------------------------
    @property
    def _active(self) -> Segment:
        return self._segments[-1]

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._segments[-1].next_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The segments, oldest first (read-only view for inspection and tests)."""
        return tuple(self._segments)

    def _add_segment(self, segment: Segment) -> None:
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    def _segment_index(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    # -- effects ----------------------------------------------------------------------------------
    def take_effects(self) -> list[StorageEffect]:
        """The storage effects queued since the last take, in order (see ``open`` for when they
        must be applied)."""
        return self._queue.take()

    def close(self) -> list[StorageEffect]:
        """Fsync the active segment and hand out every queued effect."""
        self._flush_active()
        return self.take_effects()

    def _flush_active(self) -> None:
        self._active.flush()
        self.recovery_point = self.log_end_offset

    def delete(self) -> list[StorageEffect]:
        """Effects that remove the partition directory (after anything still queued)."""
        self.cleaner_job = None
        self._queue.delete(self.directory)
        effects = self.take_effects()
        self._segments = []
        self._bases = []
        self._pending_deletes = []
        return effects

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    # -- appending --------------------------------------------------------------------------------
    def append(
        self,
        records: bytes | bytearray | memoryview,
        now_ms: int,
        *,
        leader_epoch: int = 0,
        assign_offsets: bool = True,
        timestamp_type: TimestampType | None = None,
        origin: AppendOrigin = "client",
    ) -> AppendResult:
        """Validate and append ``records`` (one or more batches, any magic).

        With ``assign_offsets`` (a leader append) the batches get offsets from the log end
        offset, v2 batches the partition leader epoch, and with LogAppendTime (the topic's
        ``message.timestamp.type``, or ``timestamp_type``) the append time. Without it (a
        follower append) offsets are kept and must lie above the log end offset.
        """
        self._now_ms = now_ms
        config = self.config
        lat = (
            config.log_append_time
            if timestamp_type is None
            else timestamp_type == TimestampType.LOG_APPEND_TIME
        )
        leo = self.log_end_offset
        checked = validate_records(
            bytes(records),
            config,
            now_ms,
            next_offset=leo,
            leader_epoch=leader_epoch,
            assign_offsets=assign_offsets,
            origin=origin,
            log_append_time=lat,
        )
        if isinstance(checked, Rejection):
            return AppendResult(
                checked.error_code,
                log_start_offset=self.log_start_offset,
                record_errors=checked.record_errors,
                error_message=checked.message,
                work_bytes=checked.work_bytes,
            )
        first = leo if assign_offsets else checked.first_offset
        last = checked.last_offset
        if self._active.should_roll(config, len(checked.data), first, last, now_ms):
            self._roll(now_ms, first)
        active = self._active
        active.append(checked.data, list(checked.headers), now_ms, config)
        if active.unflushed_offsets >= config.flush_messages:
            self._flush_active()
        return AppendResult(
            ErrorCode.NONE,
            base_offset=first,
            last_offset=last,
            log_append_time=checked.log_append_time,
            log_start_offset=self.log_start_offset,
            work_bytes=checked.work_bytes,
        )

    def roll(self, now_ms: int) -> None:
        """Close the active segment (if it holds anything) and start a new one at the log end offset."""
        self._now_ms = now_ms
        if not self._active.is_empty:
            self._roll(now_ms, self.log_end_offset)

    def _roll(self, now_ms: int, base_offset: int) -> None:
        active = self._active
        if active.is_empty:
            if active.base_offset == base_offset:
                return
            for file in active.files():
                file.delete()
            self._segments.pop()
            self._bases.pop()
        else:
            active.close_for_appends()
            self.recovery_point = max(self.recovery_point, active.next_offset)
        self._add_segment(Segment.create(self._queue, self.directory, base_offset, now_ms))

    # -- reading ----------------------------------------------------------------------------------
    def read(
        self, offset: int, max_bytes: int, *, max_offset: int | None = None, min_one_batch: bool = True
    ) -> ReadResult:
        """Whole batches from the one holding ``offset``.

        Stops before a batch whose last offset is >= ``max_offset`` (the high watermark or last
        stable offset; batches are never split, as Kafka reads up to the position of the batch
        holding ``max_offset``), and before going over ``max_bytes``, except that with
        ``min_one_batch`` the first batch comes whole whatever its size. OFFSET_OUT_OF_RANGE when
        ``offset`` is below the log start offset or above the log end offset.
        """
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            return ReadResult(ErrorCode.OFFSET_OUT_OF_RANGE, next_offset=offset)
        limit = leo if max_offset is None else min(max_offset, leo)
        parts: list[FileRegion | bytes] = []
        total = 0
        next_offset = offset
        end_segment = end_position = -1
        done = offset >= limit
        i = self._segment_index(offset)
        while not done and i < len(self._segments):
            segment = self._segments[i]
            i += 1
            first = segment.translate(self.storage, next_offset)
            if first is None:
                continue
            run_start = run_end = first.position
            for header, _ in segment.scan(self.storage, first.position):
                if header.last_offset >= limit or (
                    total + header.size > max_bytes and not (total == 0 and min_one_batch)
                ):
                    done = True
                    break
                total += header.size
                run_end = header.end
                next_offset = header.next_offset
            if run_end > run_start:
                region, tail = segment.log.split(run_start, run_end - run_start)
                if region is not None:
                    parts.append(FileRegion(segment.log.path, region[0], region[1]))
                if tail:
                    parts.append(tail)
                end_segment, end_position = segment.base_offset, run_end
        return ReadResult(ErrorCode.NONE, tuple(parts), total, next_offset, end_segment, end_position)

    def read_bytes(self, result: ReadResult) -> bytes:
        """The bytes of a read's parts (file regions read through storage)."""
        return b"".join(
            self.storage.read(part.path, part.position, part.size) if isinstance(part, FileRegion) else part
            for part in result.parts
        )

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after the log start with a timestamp >= ``timestamp``."""
        for segment in self._segments[self._segment_index(self.log_start_offset) :]:
            found = segment.find_timestamp(self.storage, timestamp, self.log_start_offset)
            if found is not None:
                return found
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record carrying the log's largest timestamp."""
        best: Segment | None = None
        for segment in self._segments:
            if segment.max_timestamp >= 0 and (best is None or segment.max_timestamp > best.max_timestamp):
                best = segment
        if best is None:
            return None
        return best.max_timestamp, best.record_with_timestamp(
            self.storage, best.max_timestamp, best.offset_of_max_timestamp
        )

    # -- moving the start, truncating -------------------------------------------------------------
    def delete_records_before(self, offset: int) -> DeleteRecordsResult:
        """Advance the log start offset to ``offset`` (DeleteRecords); delete segments wholly below it.

        OFFSET_OUT_OF_RANGE when ``offset`` is above the log end offset (the caller checks the
        high watermark). The low watermark returned is the log start offset after the call.
        """
        if offset > self.log_end_offset:
            return DeleteRecordsResult(ErrorCode.OFFSET_OUT_OF_RANGE, self.log_start_offset)
        if offset > self.log_start_offset:
            self._set_log_start_offset(offset)
            self._delete_below_log_start(self._now_ms, deferred=True)
        return DeleteRecordsResult(ErrorCode.NONE, self.log_start_offset)

    def _set_log_start_offset(self, offset: int) -> None:
        self.log_start_offset = offset
        write_offset(self._queue, self._path(LOG_START_OFFSET_FILE), offset)
        if self.cleaner_offset < offset:
            self.cleaner_offset = offset

    def _delete_below_log_start(self, now_ms: int, *, deferred: bool) -> None:
        count = 0
        while (
            count + 1 < len(self._segments) and self._segments[count + 1].base_offset <= self.log_start_offset
        ):
            count += 1
        if count:
            self._remove_segments(self._segments[:count], now_ms, deferred=deferred)

    def truncate_to(self, offset: int) -> None:
        """Drop every record at or above ``offset`` (a follower truncating; a batch holding it goes whole)."""
        now_ms = self._now_ms
        if offset >= self.log_end_offset:
            return
        self.recovery_point = min(self.recovery_point, offset)
        if offset <= self._segments[0].base_offset or offset < self.log_start_offset:
            self._truncate_fully_and_start_at(offset, now_ms, deferred=True)
            return
        self._abandon_compaction()
        doomed = [s for s in self._segments if s.base_offset > offset]
        if doomed:
            self._remove_segments(doomed, now_ms, deferred=True)
        active = self._active
        active.truncate_to(self.storage, offset, self.config)
        if not active.is_empty and active.first_append_ms is None:
            active.first_append_ms = now_ms
        if self.cleaner_offset > self.log_end_offset:
            self.cleaner_offset = self.log_end_offset
            write_offset(self._queue, self._path(CLEANER_OFFSET_FILE), self.cleaner_offset)

    def truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        """Drop every segment and start the log empty at ``offset`` (a follower whose log end is
        below its leader's log start)."""
        self._now_ms = now_ms
        self._truncate_fully_and_start_at(offset, now_ms, deferred=True)

    def _truncate_fully_and_start_at(self, offset: int, now_ms: int, *, deferred: bool) -> None:
        self._remove_segments(list(self._segments), now_ms, deferred=deferred)
        self._add_segment(Segment.create(self._queue, self.directory, offset, now_ms))
        self._set_log_start_offset(offset)
        self.recovery_point = offset
        self.cleaner_offset = offset
        write_offset(self._queue, self._path(CLEANER_OFFSET_FILE), offset)

    def _remove_segments(self, doomed: Iterable[Segment], now_ms: int, *, deferred: bool) -> None:
        """Take segments out of the log; their files are renamed ``.deleted`` and removed after
        ``file.delete.delay.ms`` (at once when not ``deferred``, as at start-up). A running
        compaction pass is abandoned."""
        self._abandon_compaction()
        self.retire_segments(doomed, now_ms, deferred=deferred)

    def _abandon_compaction(self) -> None:
        """Drop the running compaction pass, if any (``cleaner.abandon``)."""
        if self.cleaner_job is not None:
            from kafka_wire.broker.log.cleaner import abandon

            abandon(self)

    @property
    def queue(self) -> EffectQueue:
        """Where the log's storage effects gather (for the cleaner)."""
        return self._queue

    def insert_segment(self, segment: Segment) -> None:
        """Put a segment in base-offset order (the cleaner's swapped-in segment)."""
        at = bisect.bisect_left(self._bases, segment.base_offset)
        self._segments.insert(at, segment)
        self._bases.insert(at, segment.base_offset)

    def retire_segments(self, doomed: Iterable[Segment], now_ms: int, *, deferred: bool = True) -> None:
        """Take segments out of the log and delete their files (after ``file.delete.delay.ms``)."""
        gone = {id(s) for s in doomed}
        paths: list[str] = []
        for segment in [s for s in self._segments if id(s) in gone]:
            for file in segment.files():
                if deferred and self.config.file_delete_delay_ms > 0:
                    file.rename(file.path + DELETED_SUFFIX)
                    paths.append(file.path)
                else:
                    file.delete()
        self._segments = [s for s in self._segments if id(s) not in gone]
        self._bases = [s.base_offset for s in self._segments]
        if paths:
            self._pending_deletes.append(
                _PendingDelete(now_ms + self.config.file_delete_delay_ms, tuple(paths))
            )

    # -- background work --------------------------------------------------------------------------
    def maintain(
        self,
        now_ms: int,
        *,
        high_watermark: int | None = None,
        stable_offset: int | None = None,
        producers: ProducerLookup | None = None,
    ) -> None:
        """Due work: delayed file deletions, flush.ms, segment.ms rolls, retention, compaction.

        ``high_watermark`` bounds what retention may delete (default: the log end offset);
        compaction stops at ``stable_offset`` too (the last stable offset: no open transaction
        is compacted), and keeps the markers ``producers`` (the partition's producer state; None:
        no producer) still needs (``cleaner_txn``).
        """
        self._now_ms = now_ms
        self._maintained_at = now_ms
        self._run_due_deletes(now_ms)
        config = self.config
        active = self._active
        if active.first_unflushed_ms is not None and now_ms - active.first_unflushed_ms >= config.flush_ms:
            self._flush_active()
        if self._roll_due(now_ms):
            self._roll(now_ms, self.log_end_offset)
        hw = self.log_end_offset if high_watermark is None else min(high_watermark, self.log_end_offset)
        if config.delete:
            apply_retention(self, now_ms, hw)
        if config.compact:
            from kafka_wire.broker.log.cleaner import clean_log
            from kafka_wire.broker.log.cleaner_txn import no_producers

            upper = hw if stable_offset is None else min(hw, stable_offset)
            clean_log(self, now_ms, upper, no_producers if producers is None else producers)

    def _roll_due(self, now_ms: int) -> bool:
        active = self._active
        return (
            not active.is_empty
            and active.first_append_ms is not None
            and now_ms - active.first_append_ms >= self.config.segment_ms
        )

    def _run_due_deletes(self, now_ms: int) -> None:
        keep: list[_PendingDelete] = []
        for pending in self._pending_deletes:
            if pending.due_ms <= now_ms:
                for path in pending.paths:
                    self._queue.delete(path)
            else:
                keep.append(pending)
        self._pending_deletes = keep

    def drop_oldest(self, count: int, now_ms: int) -> None:
        """Delete the ``count`` oldest segments (retention); the log start offset moves to the
        next one. When that takes in the (non-empty) active segment, the log rolls first, as Kafka
        does, so the active segment itself is never deleted."""
        if count == len(self._segments):
            self._roll(now_ms, self.log_end_offset)
        doomed = self._segments[:count]
        new_start = self._segments[count].base_offset
        if new_start > self.log_start_offset:
            self._set_log_start_offset(new_start)
        self._remove_segments(doomed, now_ms, deferred=True)

    def next_deadline_ms(self) -> int | None:
        """When :meth:`maintain` has work next (None: nothing scheduled)."""
        config = self.config
        now = self._now_ms
        deadlines: list[int] = [p.due_ms for p in self._pending_deletes]
        active = self._active
        if active.first_unflushed_ms is not None and config.flush_ms < LONG_MAX:
            deadlines.append(active.first_unflushed_ms + config.flush_ms)
        if not active.is_empty and active.first_append_ms is not None:
            deadlines.append(active.first_append_ms + config.segment_ms)
        if config.delete:
            deadlines += retention_deadlines(self, now)
        if config.compact:
            from kafka_wire.broker.log.cleaner import cleaner_deadline

            found = cleaner_deadline(self, now)
            if found is not None:
                deadlines.append(found)
        if not deadlines:
            return None
        soonest = min(deadlines)
        if self._maintained_at is not None and soonest <= self._maintained_at:
            return self._maintained_at + BLOCKED_RETRY_MS  # due, yet maintain could not do it
        return soonest

    # -- inspection -------------------------------------------------------------------------------
    def memory_held_bytes(self) -> int:
        """File content held in memory: the appends storage may not hold yet (0 once what was taken
        is applied)."""
        return sum(s.holds_memory() for s in self._segments)
