"""Offset and time indexes of a segment, looked up through storage reads.

The entry formats are in :mod:`kafka_wire.logformat.index`. Both indexes are sparse: the log adds
an offset entry (the batch's *last* offset and the batch's position, as Kafka's
``LogSegment.append`` does) once more than ``index.interval.bytes`` of log were written since the
previous entry, and a time entry alongside it when the segment's largest timestamp grew; a
closing segment gets a final time entry holding its largest timestamp.

Only the entry count and the last entry live in memory; lookups binary-search the file through
:meth:`PendingFile.read`, one entry per probe.

Reading is tolerant: an index written by Kafka while its segment was active is preallocated with
zeros, and when it was copied before being trimmed, its tail holds zero entries that are not
entries. :func:`count_entries` scans an index of up to 64 KiB and stops at the first entry that
does not increase; a larger one is not read whole at start-up: the first all-zero entry after the
first is found by binary search (the zeros form one tail), the two entries before it must
increase, and otherwise the scan runs. Lookups stay correct over a damaged index: a lookup that
lands past its target scans the segment from the start.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from kafka_wire.broker.log.files import PendingFile
from kafka_wire.broker.storage import StorageReader
from kafka_wire.logformat.index import (
    OFFSET_ENTRY,
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY,
    TIME_ENTRY_SIZE,
    encode_offset_entry,
    encode_time_entry,
    offsets_increase,
    times_increase,
)

_SCAN_CHUNK: Final = 64 * 1024


def count_entries(
    file: PendingFile,
    storage: StorageReader,
    entry: struct.Struct,
    increasing: Callable[[tuple[int, int], tuple[int, int]], bool],
) -> int:
    """How many leading entries of ``file`` are real (see the module docstring)."""
    size = entry.size
    n = file.size // size

    def read(i: int) -> tuple[int, int] | None:
        data = file.read(storage, i * size, size)
        if len(data) != size:
            return None
        a, b = entry.unpack(data)
        return (a, b)

    if n <= 1:
        return n
    if n * size <= _SCAN_CHUNK:
        return _scan_count(file, storage, entry, increasing, n)  # small: check every entry
    lo, hi = 1, n
    while lo < hi:
        mid = (lo + hi) // 2
        probe = read(mid)
        if probe is None or probe == (0, 0):
            hi = mid
        else:
            lo = mid + 1
    count = lo
    if count >= 2:
        last, before = read(count - 1), read(count - 2)
        if last is not None and before is not None and increasing(before, last):
            return count
    return _scan_count(file, storage, entry, increasing, count)


def _scan_count(
    file: PendingFile,
    storage: StorageReader,
    entry: struct.Struct,
    increasing: Callable[[tuple[int, int], tuple[int, int]], bool],
    count: int,
) -> int:
    """Scan, stopping at the first entry that does not increase."""
    size = entry.size
    valid = 0
    previous: tuple[int, int] | None = None
    for start in range(0, count * size, _SCAN_CHUNK):
        data = file.read(storage, start, min(_SCAN_CHUNK, count * size - start))
        for pair in entry.iter_unpack(data[: len(data) // size * size]):
            current = (pair[0], pair[1])
            if previous is not None and not increasing(previous, current):
                return valid
            previous = current
            valid += 1
    return valid


class OffsetIndex:
    """A segment's ``.index``: sparse ``offset -> position`` entries."""

    __slots__ = ("base_offset", "entries", "file", "last_offset", "last_position")

    def __init__(
        self, file: PendingFile, base_offset: int, entries: int = 0, last: tuple[int, int] | None = None
    ) -> None:
        self.file = file
        self.base_offset = base_offset
        self.entries = entries
        self.last_offset, self.last_position = last if last is not None else (base_offset - 1, -1)

    @classmethod
    def load(cls, file: PendingFile, storage: StorageReader, base_offset: int) -> OffsetIndex:
        entries = count_entries(file, storage, OFFSET_ENTRY, offsets_increase)
        index = cls(file, base_offset, entries)
        if entries:
            index.last_offset, index.last_position = index.entry(storage, entries - 1)
        return index

    def append(self, offset: int, position: int) -> None:
        if self.file.size != self.entries * OFFSET_ENTRY_SIZE:
            self.file.truncate(self.entries * OFFSET_ENTRY_SIZE)  # drop a tolerated zero tail first
        self.file.append(encode_offset_entry(offset - self.base_offset, position))
        self.entries += 1
        self.last_offset, self.last_position = offset, position

    def entry(self, storage: StorageReader, i: int) -> tuple[int, int]:
        """The ``i``-th entry as ``(absolute offset, position)``."""
        data = self.file.read(storage, i * OFFSET_ENTRY_SIZE, OFFSET_ENTRY_SIZE)
        if len(data) != OFFSET_ENTRY_SIZE:
            return (self.base_offset - 1, 0)  # a vanished entry reads as "no entry": scan from 0
        rel, position = OFFSET_ENTRY.unpack(data)
        return (self.base_offset + rel, position)

    def lookup(self, storage: StorageReader, offset: int) -> tuple[int, int] | None:
        """The entry with the largest offset <= ``offset``, or None."""
        lo, hi = 0, self.entries
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(storage, mid)[0] <= offset:
                lo = mid + 1
            else:
                hi = mid
        return None if lo == 0 else self.entry(storage, lo - 1)

    def entries_before_position(self, storage: StorageReader, position: int) -> int:
        """How many entries point before byte ``position``."""
        lo, hi = 0, self.entries
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(storage, mid)[1] < position:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def truncate_entries(self, storage: StorageReader, count: int) -> None:
        if count >= self.entries and self.file.size == self.entries * OFFSET_ENTRY_SIZE:
            return
        count = min(count, self.entries)
        self.file.truncate(count * OFFSET_ENTRY_SIZE)
        self.entries = count
        if count:
            self.last_offset, self.last_position = self.entry(storage, count - 1)
        else:
            self.last_offset, self.last_position = self.base_offset - 1, -1

    def is_full(self, max_entries: int) -> bool:
        return self.entries >= max_entries


class TimeIndex:
    """A segment's ``.timeindex``: sparse ``timestamp -> offset`` entries, timestamps increasing."""

    __slots__ = ("base_offset", "entries", "file", "last_offset", "last_timestamp")

    def __init__(
        self, file: PendingFile, base_offset: int, entries: int = 0, last: tuple[int, int] | None = None
    ) -> None:
        self.file = file
        self.base_offset = base_offset
        self.entries = entries
        self.last_timestamp, self.last_offset = last if last is not None else (-1, base_offset)

    @classmethod
    def load(cls, file: PendingFile, storage: StorageReader, base_offset: int) -> TimeIndex:
        entries = count_entries(file, storage, TIME_ENTRY, times_increase)
        index = cls(file, base_offset, entries)
        if entries:
            index.last_timestamp, index.last_offset = index.entry(storage, entries - 1)
        return index

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add ``(timestamp, offset)`` if ``timestamp`` is larger than the last entry's."""
        if timestamp <= self.last_timestamp:
            return
        if self.file.size != self.entries * TIME_ENTRY_SIZE:
            self.file.truncate(self.entries * TIME_ENTRY_SIZE)
        self.file.append(encode_time_entry(timestamp, offset - self.base_offset))
        self.entries += 1
        self.last_timestamp, self.last_offset = timestamp, offset

    def entry(self, storage: StorageReader, i: int) -> tuple[int, int]:
        """The ``i``-th entry as ``(timestamp, absolute offset)``."""
        data = self.file.read(storage, i * TIME_ENTRY_SIZE, TIME_ENTRY_SIZE)
        if len(data) != TIME_ENTRY_SIZE:
            return (-1, self.base_offset)
        timestamp, rel = TIME_ENTRY.unpack(data)
        return (timestamp, self.base_offset + rel)

    def lookup(self, storage: StorageReader, timestamp: int) -> tuple[int, int] | None:
        """The entry with the largest timestamp <= ``timestamp``, or None."""
        lo, hi = 0, self.entries
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(storage, mid)[0] <= timestamp:
                lo = mid + 1
            else:
                hi = mid
        return None if lo == 0 else self.entry(storage, lo - 1)

    def truncate_entries(self, storage: StorageReader, count: int) -> None:
        count = min(count, self.entries)
        self.file.truncate(count * TIME_ENTRY_SIZE)
        self.entries = count
        if count:
            self.last_timestamp, self.last_offset = self.entry(storage, count - 1)
        else:
            self.last_timestamp, self.last_offset = -1, self.base_offset

    def is_full(self, max_entries: int) -> bool:
        return self.entries >= max_entries
