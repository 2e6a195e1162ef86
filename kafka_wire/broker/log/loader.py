"""Opening a partition's log directory: which files make up its segments (Kafka's ``LogLoader``).

:class:`LogLoader` reads the directory listing through storage and queues, on the log's effect
queue, what recovery must change on disk: leftover ``.cleaned`` / ``.deleted`` files and stale
``.tmp`` checkpoints are deleted, a ``.log.swap`` (an interrupted compaction) replaces the
segments it covers (with its ``.txnindex.swap``), orphaned and missing indexes are dropped or
rebuilt, and every segment's tail is checked. Which segments are then fully recovered (CRC per
batch, torn tail cut, indexes rebuilt) is the :class:`RecoveryStart`'s to say, as in Kafka: none
after a clean shutdown, else the segment holding the recovery point and every later one (the
segments before it were flushed whole), so always the last; a segment whose check fails is
recovered whatever it says. Without one, the last segment is recovered (the metadata log's
rule). What the loader returns, the segments oldest first, the log takes over; the loader keeps
nothing.
"""

from __future__ import annotations

from kafka_wire.broker.log.batches import BatchScanner
from kafka_wire.broker.log.config import LogConfig
from kafka_wire.broker.log.files import EffectQueue, PendingFile
from kafka_wire.broker.log.index import OffsetIndex, TimeIndex
from kafka_wire.broker.log.segment import Segment, segment_path
from kafka_wire.broker.log.txn_index import TxnIndex
from kafka_wire.broker.storage import StorageReader
from kafka_wire.logformat.checkpoints import STATE_FILES
from kafka_wire.logformat.names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SUFFIXES,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    parse_segment_name,
)
from kafka_wire.quick_dataclass import dataclass
from kafka_wire.records.constants import RECORD_BATCH_OVERHEAD


@dataclass(frozen=True, slots=True)
class RecoveryStart:
    """What a start knows of a log's last stop: the data directory's clean-shutdown marker was
    there, and the log's entry in ``recovery-point-offset-checkpoint`` (0 when it has none)."""

    clean_shutdown: bool
    recovery_point: int = 0

    def recovers(self, next_base_offset: int | None) -> bool:
        """Whether the segment ending where the next one starts (``next_base_offset``; None: the
        last segment) is recovered: after an unclean stop, every segment from the one holding the
        recovery point on, as Kafka's ``LogLoader`` takes them (the floor segment of the point,
        and so always the last one). That segment is recovered even when the point is its end:
        the point vouches only for what was fsynced, not that it reads back intact."""
        return not self.clean_shutdown and (
            next_base_offset is None or next_base_offset > self.recovery_point
        )


@dataclass(frozen=True, slots=True)
class LogLoader:
    """Recovers the segments of the log in ``directory`` (its effects go to ``queue``)."""

    directory: str
    config: LogConfig
    storage: StorageReader
    queue: EffectQueue
    start: RecoveryStart | None = None

    def _path(self, name: str) -> str:
        return f"{self.directory}/{name}"

    def load(self, now_ms: int) -> list[Segment]:
        """The directory's segments, oldest first, recovered (empty when it holds none; a missing
        directory is created)."""
        storage, queue = self.storage, self.queue
        names = storage.list_dir(self.directory)
        if not names:
            queue.make_dir(self.directory)
        bases: set[int] = set()
        index_files: dict[int, list[str]] = {}
        swaps: list[int] = []
        txn_swaps: set[int] = set()
        for name in names:
            if name.endswith(".tmp") and name[: -len(".tmp")] in STATE_FILES:
                queue.delete(self._path(name))
                continue
            parsed = parse_segment_name(name)
            if parsed is None:
                continue  # partition.metadata and other files that are not ours
            base, suffix = parsed
            if suffix.endswith((DELETED_SUFFIX, CLEANED_SUFFIX)):
                queue.delete(self._path(name))
            elif suffix == LOG_SUFFIX + SWAP_SUFFIX:
                swaps.append(base)
            elif suffix == TXN_INDEX_SUFFIX + SWAP_SUFFIX:
                txn_swaps.add(base)  # completed with its log swap, else deleted below
            elif suffix.endswith(SWAP_SUFFIX):
                queue.delete(self._path(name))  # index swaps: the indexes are rebuilt
            elif suffix == LOG_SUFFIX:
                bases.add(base)
            elif suffix in SUFFIXES or suffix == TXN_INDEX_SUFFIX:
                index_files.setdefault(base, []).append(name)
        swapped: dict[int, Segment] = {}
        for base in sorted(swaps):
            swapped[base] = self._complete_swap(base, bases, now_ms, txn_swap=base in txn_swaps)
        for base in txn_swaps - set(swaps):
            queue.delete(segment_path(self.directory, base, TXN_INDEX_SUFFIX + SWAP_SUFFIX))
        for base, files in index_files.items():
            if base not in bases and base not in swapped:
                for name in files:
                    queue.delete(self._path(name))  # orphaned index
        ordered = sorted(bases | set(swapped))
        segments: list[Segment] = []
        for i, base in enumerate(ordered):
            last = i == len(ordered) - 1
            next_base = None if last else ordered[i + 1]
            if base in swapped:
                segment = swapped[base]
                segment.recover(storage, self.config, closed=not last, next_base_offset=next_base)
            else:
                missing = any(
                    storage.size(segment_path(self.directory, base, s)) is None for s in SUFFIXES[1:]
                )
                segment = Segment.open(queue, storage, self.directory, base, now_ms)
                if (
                    missing
                    or not segment.check(storage, next_base, closed=not last)
                    or (last if self.start is None else self.start.recovers(next_base))
                ):
                    segment.recover(storage, self.config, closed=not last, next_base_offset=next_base)
            if segment.first_append_ms is None and not segment.is_empty:
                first = next(iter(segment.scan(storage, chunk=RECORD_BATCH_OVERHEAD)), None)
                stamp = first[0].max_timestamp if first is not None else -1
                segment.first_append_ms = stamp if 0 <= stamp <= now_ms else now_ms
            segments.append(segment)
        return segments

    def _complete_swap(self, base: int, bases: set[int], now_ms: int, *, txn_swap: bool) -> Segment:
        """Finish an interrupted compaction: the ``.log.swap`` (and ``.txnindex.swap``, renamed
        after it) replaces every segment it covers (their bases leave ``bases``)."""
        queue, storage = self.queue, self.storage
        swap_path = segment_path(self.directory, base, LOG_SUFFIX + SWAP_SUFFIX)
        swap = PendingFile(queue, swap_path, storage.size(swap_path) or 0)
        next_offset = base
        for header, _ in BatchScanner(swap, storage):
            next_offset = header.next_offset
        for old in sorted(bases):
            if base <= old < max(next_offset, base + 1):
                for suffix in (*SUFFIXES, TXN_INDEX_SUFFIX):
                    if old != base or suffix != LOG_SUFFIX:
                        queue.delete(segment_path(self.directory, old, suffix))
                bases.discard(old)
        swap.rename(segment_path(self.directory, base, LOG_SUFFIX))
        txn_path = segment_path(self.directory, base, TXN_INDEX_SUFFIX)
        index = OffsetIndex(PendingFile.create(queue, segment_path(self.directory, base, INDEX_SUFFIX)), base)
        time_index = TimeIndex(
            PendingFile.create(queue, segment_path(self.directory, base, TIME_INDEX_SUFFIX)), base
        )
        txn_index = TxnIndex.open(queue, storage, txn_path + SWAP_SUFFIX if txn_swap else txn_path)
        if txn_swap:
            txn_index.rename(txn_path)
        segment = Segment(self.directory, base, swap, index, time_index, txn_index)
        segment.last_append_ms = now_ms
        return segment
