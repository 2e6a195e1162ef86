"""One log segment: a ``.log`` file of batches, its ``.index`` / ``.timeindex`` and, once it holds
an ABORT marker, its ``.txnindex`` (:mod:`kafka_wire.broker.log.txn_index`).

Files are named by the segment's base offset, zero-padded to 20 digits, in the partition
directory (``orders-0/00000000000000000042.log``; see :mod:`kafka_wire.logformat.names`). In memory a segment keeps only its base
offset, next offset, largest timestamp (and the offset of the batch holding it), index entry
counts and a few clock values; its bytes stay in storage (plus the not-yet-taken appends, see
:mod:`kafka_wire.broker.log.files`).
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka_wire.broker.log.batches import DEFAULT_SCAN_CHUNK, BatchScanner
from kafka_wire.broker.log.config import INT_MAX, LogConfig
from kafka_wire.broker.log.files import EffectQueue, PendingFile
from kafka_wire.broker.log.index import OffsetIndex, TimeIndex
from kafka_wire.broker.log.txn_index import TxnIndex
from kafka_wire.broker.storage import StorageReader
from kafka_wire.errors import DecodeError
from kafka_wire.logformat.batch_header import BatchHeader, check_batch
from kafka_wire.logformat.index import OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE
from kafka_wire.logformat.names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_file_name,
)
from kafka_wire.records import read_batches


def segment_path(directory: str, base_offset: int, suffix: str) -> str:
    return f"{directory}/{segment_file_name(base_offset, suffix)}"


class Segment:
    """One segment. Create with :meth:`create` (a new empty one) or :meth:`open` (stored files)."""

    __slots__ = (
        "base_offset",
        "bytes_since_index",
        "directory",
        "first_append_ms",
        "first_unflushed_ms",
        "index",
        "last_append_ms",
        "log",
        "max_timestamp",
        "next_offset",
        "offset_of_max_timestamp",
        "time_index",
        "txn_index",
        "unflushed_offsets",
    )

    def __init__(
        self,
        directory: str,
        base_offset: int,
        log: PendingFile,
        index: OffsetIndex,
        time_index: TimeIndex,
        txn_index: TxnIndex,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log = log
        self.index = index
        self.time_index = time_index
        self.txn_index = txn_index
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.bytes_since_index = 0
        #: Broker time of the first append (the segment.ms clock); None while empty.
        self.first_append_ms: int | None = None
        #: Broker time of the last append (stands in for the largest timestamp of a segment
        #: without timestamps, as Kafka uses the file's modification time).
        self.last_append_ms = 0
        self.unflushed_offsets = 0
        self.first_unflushed_ms: int | None = None

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def create(cls, queue: EffectQueue, directory: str, base_offset: int, now_ms: int) -> Segment:
        log = PendingFile.create(queue, segment_path(directory, base_offset, LOG_SUFFIX))
        index = OffsetIndex(
            PendingFile.create(queue, segment_path(directory, base_offset, INDEX_SUFFIX)), base_offset
        )
        time_index = TimeIndex(
            PendingFile.create(queue, segment_path(directory, base_offset, TIME_INDEX_SUFFIX)), base_offset
        )
        txn_index = TxnIndex(queue, segment_path(directory, base_offset, TXN_INDEX_SUFFIX))
        segment = cls(directory, base_offset, log, index, time_index, txn_index)
        segment.last_append_ms = now_ms
        return segment

    @classmethod
    def open(
        cls,
        queue: EffectQueue,
        storage: StorageReader,
        directory: str,
        base_offset: int,
        now_ms: int,
        *,
        log_suffix: str = LOG_SUFFIX,
    ) -> Segment:
        """The stored segment, indexes loaded but not checked (see :meth:`check` / :meth:`recover`)."""
        log_path = segment_path(directory, base_offset, log_suffix)
        log = PendingFile(queue, log_path, storage.size(log_path) or 0)
        files: list[PendingFile] = []
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            path = segment_path(directory, base_offset, suffix)
            size = storage.size(path)
            files.append(
                PendingFile(queue, path, size) if size is not None else PendingFile.create(queue, path)
            )
        segment = cls(
            directory,
            base_offset,
            log,
            OffsetIndex.load(files[0], storage, base_offset),
            TimeIndex.load(files[1], storage, base_offset),
            TxnIndex.open(queue, storage, segment_path(directory, base_offset, TXN_INDEX_SUFFIX)),
        )
        segment.last_append_ms = now_ms
        return segment

    # -- sizes and names --------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.log.size

    @property
    def is_empty(self) -> bool:
        return self.log.size == 0

    def files(self) -> tuple[PendingFile, ...]:
        txn = self.txn_index.file
        return (self.log, self.index.file, self.time_index.file, *(() if txn is None else (txn,)))

    def holds_memory(self) -> int:
        """Bytes of file content this segment keeps in memory (appends storage may not hold yet)."""
        return sum(len(f.pending) for f in self.files())

    def retention_timestamp(self) -> int:
        """The largest timestamp, or the last append time when the segment has no timestamps."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_append_ms

    # -- appending --------------------------------------------------------------------------------
    def should_roll(
        self, config: LogConfig, size: int, first_offset: int, last_offset: int, now_ms: int
    ) -> bool:
        """Whether ``size`` more bytes with these offsets must go to a new segment (Kafka's rules)."""
        if self.is_empty:
            return False
        return (
            self.size > config.segment_bytes - size
            or (self.first_append_ms is not None and now_ms - self.first_append_ms >= config.segment_ms)
            or self.index.is_full(config.segment_index_bytes // OFFSET_ENTRY_SIZE)
            or self.time_index.is_full(config.segment_index_bytes // TIME_ENTRY_SIZE)
            or last_offset - self.base_offset > INT_MAX
            or first_offset < self.base_offset
        )

    def append(
        self, data: bytes | bytearray, headers: list[BatchHeader], now_ms: int, config: LogConfig
    ) -> None:
        """Append ``data`` (batches whose headers, positioned within ``data``, are ``headers``)."""
        start = self.log.size
        if self.first_append_ms is None:
            self.first_append_ms = now_ms
        self.log.append(data)
        for header in headers:
            self._index_batch(
                header.position + start, header.last_offset, header.max_timestamp, header.size, config
            )
        if headers:
            self.next_offset = max(self.next_offset, headers[-1].next_offset)
            self.unflushed_offsets += headers[-1].next_offset - headers[0].base_offset
            if self.first_unflushed_ms is None:
                self.first_unflushed_ms = now_ms
        self.last_append_ms = now_ms

    def _index_batch(
        self, position: int, last_offset: int, max_timestamp: int, size: int, config: LogConfig
    ) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if self.bytes_since_index > config.index_interval_bytes:
            self.index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index = 0
        self.bytes_since_index += size

    def flush(self) -> None:
        for file in self.files():
            file.fsync()
        self.unflushed_offsets = 0
        self.first_unflushed_ms = None

    def close_for_appends(self) -> None:
        """On roll: a final time-index entry with the largest timestamp, then fsync every file."""
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.flush()

    # -- reading ----------------------------------------------------------------------------------
    def scan(
        self,
        storage: StorageReader,
        start: int = 0,
        *,
        with_data: bool = False,
        chunk: int = DEFAULT_SCAN_CHUNK,
    ) -> BatchScanner:
        return BatchScanner(self.log, storage, start, with_data=with_data, chunk=chunk)

    def translate(self, storage: StorageReader, offset: int) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset`` (None when there is none)."""
        entry = self.index.lookup(storage, offset)
        start = 0 if entry is None or not 0 <= entry[1] < self.size else entry[1]
        found, trusted = self._first_batch_ending_at_or_after(storage, offset, start)
        if not trusted:
            found, _ = self._first_batch_ending_at_or_after(storage, offset, 0)
        return found

    def _first_batch_ending_at_or_after(
        self, storage: StorageReader, offset: int, start: int
    ) -> tuple[BatchHeader | None, bool]:
        """The batch, and False when the index entry used looks wrong (so scan from 0 instead)."""
        first = True
        for header, _ in self.scan(storage, start):
            if first and start > 0 and header.magic == 2 and header.base_offset > offset:
                return None, False  # the index pointed past the batch holding ``offset``
            first = False
            if header.last_offset >= offset:
                return header, True
        return None, not (first and start > 0)

    def batches_from(
        self, storage: StorageReader, offset: int, *, with_data: bool = False
    ) -> Iterator[tuple[BatchHeader, bytes | None]]:
        """Batches from the one holding ``offset`` to the end of the segment."""
        header = self.translate(storage, offset)
        if header is None:
            return iter(())
        return iter(self.scan(storage, header.position, with_data=with_data))

    def find_timestamp(
        self, storage: StorageReader, timestamp: int, min_offset: int
    ) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``min_offset`` with a timestamp >= ``timestamp``."""
        if self.max_timestamp < timestamp:
            return None
        # Records before the batch of the time-index entry found are all older than ``timestamp``.
        entry = self.time_index.lookup(storage, timestamp)
        begin = max(min_offset, self.base_offset if entry is None else entry[1])
        located = self.index.lookup(storage, begin)
        start = 0 if located is None or not 0 <= located[1] < self.size else located[1]
        for header, data in self.scan(storage, start, with_data=True):
            if header.last_offset < min_offset or header.max_timestamp < timestamp or data is None:
                continue
            try:
                for batch in read_batches(data):
                    for record in batch.records():
                        if record.offset >= min_offset and record.timestamp >= timestamp:
                            return record.offset, record.timestamp
            except DecodeError:
                continue
        return None

    def record_with_timestamp(self, storage: StorageReader, timestamp: int, batch_last_offset: int) -> int:
        """The offset of the first record stamped ``timestamp`` in the batch ending at ``batch_last_offset``."""
        header = self.translate(storage, batch_last_offset)
        if header is None:
            return batch_last_offset
        data = self.log.read(storage, header.position, header.size)
        try:
            for batch in read_batches(data):
                for record in batch.records():
                    if record.timestamp == timestamp:
                        return record.offset
        except DecodeError:
            pass
        return batch_last_offset

    # -- checking and recovery -------------------------------------------------------------------
    def check(self, storage: StorageReader, next_base_offset: int | None, *, closed: bool = True) -> bool:
        """Cheap sanity check of a segment: indexes plausible, tail of the log well formed.

        Walks batch headers from the last offset-index entry to the end of the file (at most
        ``index.interval.bytes`` plus one batch). Sets ``next_offset`` and the largest timestamp
        (the time index's last entry and the walked tail); a ``closed`` segment's time index gets
        its final entry. False means: recover the segment.
        """
        if self.index.file.size % OFFSET_ENTRY_SIZE or self.time_index.file.size % TIME_ENTRY_SIZE:
            return False
        start = 0
        if self.index.entries:
            if not 0 <= self.index.last_position < self.size or self.index.last_offset < self.base_offset:
                return False
            start = self.index.last_position
        if self.time_index.entries and self.time_index.last_offset < self.base_offset:
            return False
        self.max_timestamp = self.time_index.last_timestamp if self.time_index.entries else -1
        self.offset_of_max_timestamp = (
            self.time_index.last_offset if self.time_index.entries else self.base_offset
        )
        scanner = self.scan(storage, start)
        last: BatchHeader | None = None
        for header, _ in scanner:
            if last is None and start and header.base_offset > self.index.last_offset:
                return False  # the last index entry does not point at a batch it covers
            if header.last_offset < self.base_offset or (
                last is not None and header.last_offset <= last.last_offset
            ):
                return False
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp = header.max_timestamp
                self.offset_of_max_timestamp = header.last_offset
            last = header
        if scanner.error is not None or scanner.position != self.size:
            return False
        self.next_offset = self.base_offset if last is None else last.next_offset
        if next_base_offset is not None and self.next_offset > next_base_offset:
            return False
        if closed and self.max_timestamp >= 0 and self.time_index.last_timestamp < self.max_timestamp:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        return True

    def recover(
        self,
        storage: StorageReader,
        config: LogConfig,
        *,
        closed: bool = False,
        next_base_offset: int | None = None,
    ) -> int:
        """Scan every batch, check its CRC, cut a torn or corrupt tail, rebuild both indexes.

        A batch must hold offsets at or above the segment's base, above the previous batch's,
        within an int32 of the base and, for a segment followed by another, below that one's
        base (``next_base_offset``; a v2 batch's base offset is outside its CRC, so a corrupt one
        can pass the CRC check and would hide the next segment's offsets from readers). The indexes are rebuilt in memory and rewritten only
        when they differ from the stored ones; a ``closed`` segment gets its final time-index
        entry. Returns the number of log bytes cut.
        """
        real_index, real_time_index = self.index, self.time_index
        scratch = EffectQueue()
        self.index = OffsetIndex(PendingFile(scratch, real_index.file.path, 0), self.base_offset)
        self.time_index = TimeIndex(PendingFile(scratch, real_time_index.file.path, 0), self.base_offset)
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        self.bytes_since_index = 0
        next_offset = self.base_offset
        scanner = self.scan(storage, 0, with_data=True)
        valid = 0
        for header, data in scanner:
            assert data is not None
            if (
                (header.magic == 2 and header.base_offset < next_offset)
                or header.last_offset < next_offset
                or header.last_offset - self.base_offset > INT_MAX
                or (next_base_offset is not None and header.last_offset >= next_base_offset)
            ):
                break
            try:
                check_batch(data, header)
            except DecodeError:
                break
            self._index_batch(header.position, header.last_offset, header.max_timestamp, header.size, config)
            next_offset = header.next_offset
            valid = header.end
        cut = self.size - valid
        if cut:
            self.log.truncate(valid)
        self.next_offset = next_offset if valid else self.base_offset
        self.txn_index.truncate_to(storage, self.next_offset)
        if closed:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        built = (self.index, self.time_index)
        self.index, self.time_index = real_index, real_time_index
        for real, rebuilt in ((real_index, built[0]), (real_time_index, built[1])):
            fresh = bytes(rebuilt.file.pending)
            if real.file.size != len(fresh) or real.file.read(storage, 0, len(fresh)) != fresh:
                real.file.truncate(0)
                real.file.append(fresh)
        real_index.entries, real_index.last_offset, real_index.last_position = (
            built[0].entries,
            built[0].last_offset,
            built[0].last_position,
        )
        real_time_index.entries, real_time_index.last_timestamp, real_time_index.last_offset = (
            built[1].entries,
            built[1].last_timestamp,
            built[1].last_offset,
        )
        return cut

    def truncate_to(self, storage: StorageReader, offset: int, config: LogConfig) -> None:
        """Drop every batch whose last offset is >= ``offset`` (a batch holding it goes whole)."""
        header = self.translate(storage, offset)
        if header is None:
            return
        self.log.truncate(header.position)
        self.recover(storage, config)
        self.txn_index.truncate_to(storage, offset)
        if self.is_empty:
            self.first_append_ms = None
