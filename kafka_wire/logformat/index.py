"""Entries of a segment's offset index (``.index``) and time index (``.timeindex``).

``.index`` entries are 8 bytes: ``int32 offset relative to the segment's base, int32 file
position`` (big-endian), increasing in both. ``.timeindex`` entries are 12 bytes: ``int64
timestamp, int32 relative offset``, with increasing timestamps. Both are sparse.

Kafka preallocates the index of an active segment with zeros, so a copy taken before the index
was trimmed ends in all-zero entries that are not entries: the decoders stop at the first entry
that does not increase.
"""

from __future__ import annotations

import struct
from typing import Final

from kafka_wire.records.record import BufferLike

OFFSET_ENTRY: Final = struct.Struct(">ii")
"""``.index`` entry: relative offset, position."""
TIME_ENTRY: Final = struct.Struct(">qi")
"""``.timeindex`` entry: timestamp, relative offset."""
OFFSET_ENTRY_SIZE: Final = 8
TIME_ENTRY_SIZE: Final = 12


def encode_offset_entry(relative_offset: int, position: int) -> bytes:
    return OFFSET_ENTRY.pack(relative_offset, position)


def encode_time_entry(timestamp: int, relative_offset: int) -> bytes:
    return TIME_ENTRY.pack(timestamp, relative_offset)


def offsets_increase(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether offset-index entry ``b`` may follow ``a``: a larger offset, no smaller position."""
    return b[0] > a[0] and b[1] >= a[1]


def times_increase(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether time-index entry ``b`` may follow ``a``: a larger timestamp, no smaller offset."""
    return b[0] > a[0] and b[1] >= a[1]


def decode_offset_entries(data: BufferLike) -> list[tuple[int, int]]:
    """``(relative offset, position)`` pairs, stopping at the first entry that does not increase
    (and ignoring a partial entry at the end)."""
    view = memoryview(data).cast("B")
    out: list[tuple[int, int]] = []
    for rel, pos in OFFSET_ENTRY.iter_unpack(view[: len(view) // OFFSET_ENTRY_SIZE * OFFSET_ENTRY_SIZE]):
        if out and not offsets_increase(out[-1], (rel, pos)):
            break
        out.append((rel, pos))
    return out


def decode_time_entries(data: BufferLike) -> list[tuple[int, int]]:
    """``(timestamp, relative offset)`` pairs, stopping at the first entry that does not increase
    (and ignoring a partial entry at the end)."""
    view = memoryview(data).cast("B")
    out: list[tuple[int, int]] = []
    for ts, rel in TIME_ENTRY.iter_unpack(view[: len(view) // TIME_ENTRY_SIZE * TIME_ENTRY_SIZE]):
        if out and not times_increase(out[-1], (ts, rel)):
            break
        out.append((ts, rel))
    return out
