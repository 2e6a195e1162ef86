"""The pure twin's fast path: a v2 batch's records parsed one field at a time across all records.

Only the walk from one record to the next (each record's length varint) is a Python loop; every
other field is read for all records at once by pyarrow's compute kernels over the batch's bytes
(a ``uint8`` array viewing them): varints a byte position at a time, keys, values and headers
cut out by one ``take`` each. This path accepts a batch only when every check of the record loop
of :mod:`~kafka_wire.records.columnar_pure` passes; for anything it does not take on (a varint
longer than :data:`MOST_VARINT_BYTES`, more than :data:`MOST_HEADERS` headers in a record, a
failed check, fewer than :data:`FEWEST_RECORDS` records) it raises :class:`Unfit` and the record loop decodes the batch instead, with the
same result or the same error.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

MOST_VARINT_BYTES = 4
"""The longest varint read here (28 bits): a record over 128 MiB or a timestamp delta past 37
hours goes to the record loop."""
MOST_HEADERS = 16
"""The most headers of one record read here."""
FEWEST_RECORDS = 1000
"""Batches with fewer records go to the record loop: each batch read here costs about 1.5 ms of
kernel calls (some 170) whatever its size, which the loop's 2 us a record pays back only from
about a thousand records (measured on the development machine, 2026-12-07)."""
KEPT_RANGE = 1 << 17
"""The longest ``0, 1, 2, ...`` array kept between batches (1 MiB)."""
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_ZIGZAG = tuple((v >> 1) ^ -(v & 1) for v in range(1 << 14))
_I64 = pa.int64()
_I32 = pa.int32()


class Unfit(Exception):
    """The batch is left to the record loop."""


@dataclass(slots=True)
class Chunk:
    """One batch's rows as Arrow arrays (a column not asked for is ``None``)."""

    offsets: Any
    timestamps: Any
    ts_types: Any
    keys: Any
    values: Any
    #: headers: each row's count (int32), then every header's key (string) and value (binary)
    header_counts: Any
    header_keys: Any
    header_values: Any

    def __len__(self) -> int:
        return len(self.offsets)


class _Range:
    """``0, 1, 2, ...`` as an int64 array: a slice of one kept array up to :data:`KEPT_RANGE`
    values (memory stays bounded), made anew beyond."""

    def __init__(self) -> None:
        self._values: Any = None

    def upto(self, n: int) -> Any:
        if n > KEPT_RANGE:
            return pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, _I64), n)), 1)
        if self._values is None:
            self._values = pa.array(range(KEPT_RANGE), _I64)
        return self._values.slice(0, n)


_RANGE = _Range()


def record_starts(data: bytes, pos: int, end: int, count: int) -> tuple[Any, int]:
    """Where each of ``count`` records starts (its length varint), and where the last one ends."""
    starts = array("q")
    add = starts.append
    zigzag = _ZIGZAG
    try:
        for _ in range(count):
            add(pos)
            v = data[pos]
            if v < 0x80:
                pos += 1 + zigzag[v]
                continue
            b = data[pos + 1]
            if b < 0x80:
                pos += 2 + zigzag[(v & 0x7F) | (b << 7)]
                continue
            c = data[pos + 2]
            if c >= 0x80:
                raise Unfit
            u = (v & 0x7F) | ((b & 0x7F) << 7) | (c << 14)
            pos += 3 + ((u >> 1) ^ -(u & 1))
    except IndexError:
        raise Unfit from None
    if pos > end or pos < 0:
        raise Unfit
    return pa.Array.from_buffers(_I64, count, [None, pa.py_buffer(starts)]), pos


class _Reader:
    """Fields read across records: ``at`` holds each record's position in ``data``."""

    def __init__(self, data: bytes) -> None:
        self.buffer = pa.py_buffer(data)
        self.bytes = pa.Array.from_buffers(pa.uint8(), len(data), [None, self.buffer])
        self.last = len(data) - 1

    def varint(self, at: Any) -> tuple[Any, Any]:
        """The zigzag varint at each position (every varint of a v2 record is one) and the
        position after it."""
        first = pc.take(self.bytes, at)
        value = pc.bit_wise_and(first, 127).cast(_I64)
        more = pc.greater_equal(first, 128)
        after = pc.add(at, 1)
        for k in range(1, MOST_VARINT_BYTES + 1):
            if not pc.any(more).as_py():
                break
            if k == MOST_VARINT_BYTES:
                raise Unfit
            byte = pc.take(self.bytes, pc.min_element_wise(pc.add(at, k), self.last))
            part = pc.shift_left(pc.bit_wise_and(byte, 127).cast(_I64), 7 * k)
            value = pc.if_else(more, pc.bit_wise_or(value, part), value)
            after = pc.add(after, more.cast(_I64))
            more = pc.and_(more, pc.greater_equal(byte, 128))
        return pc.bit_wise_xor(pc.shift_right(value, 1), pc.negate(pc.bit_wise_and(value, 1))), after

    def cut(self, start: Any, length: Any) -> Any:
        """``data[start:start + length]`` of each row as a binary array (length -1: null)."""
        n = len(length)
        null = pc.less(length, 0)
        size = pc.max_element_wise(length, 0)
        # data viewed as alternate pieces (a field, the bytes to the next one): take the fields
        index = _RANGE.upto(2 * n)
        interleave = pc.add(pc.shift_right(index, 1), pc.multiply(pc.bit_wise_and(index, 1), n))
        bounds = pc.take(pa.concat_arrays([start, pc.add(start, size)]), interleave).cast(_I32)
        pieces = pa.Array.from_buffers(pa.binary(), 2 * n - 1, [None, bounds.buffers()[1], self.buffer])
        out = pc.take(pieces, pc.multiply(index.slice(0, n), 2))
        nulls = int(pc.sum(null.cast(_I64)).as_py() or 0)
        if not nulls:
            return out
        _, offsets, data = out.buffers()
        return pa.Array.from_buffers(
            pa.binary(), n, [pc.invert(null).buffers()[1], offsets, data], null_count=nulls
        )


def _any(condition: Any) -> bool:
    return bool(pc.any(condition).as_py())


def decode_v2(
    data: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    timestamp_of: tuple[int, int | None, int],
    wanted: tuple[bool, bool, bool],
    offset_range: tuple[int, int],
) -> tuple[Chunk, int]:
    """The records of a v2 batch (``count`` of them in ``data[pos:end]``) as a :class:`Chunk`,
    and where they end; raises :class:`Unfit` for the record loop to take over.

    ``timestamp_of`` is (the batch's base timestamp, its log-append time or None, the scale to
    multiply timestamps by); ``wanted`` says whether keys, values and headers are kept; rows
    outside ``offset_range`` (lo, hi) are dropped.
    """
    if count < FEWEST_RECORDS or not _I64_MIN + (1 << 28) <= base_offset <= _I64_MAX - (1 << 28):
        raise Unfit  # too few records, or offsets where int64 wrapping would change the range test
    try:
        starts, stop = record_starts(data, pos, end, count)
        read = _Reader(data)
        length, at = read.varint(starts)  # as the walk read them
        if _any(pc.less(length, 0)):
            raise Unfit
        ends = pc.add(at, length)  # the record loop's rec_end
        tsd, at = read.varint(pc.add(at, 1))  # past the attributes byte
        od, at = read.varint(at)
        key_length, key_at = read.varint(at)
        value_length, value_at = read.varint(pc.add(key_at, pc.max_element_wise(key_length, 0)))
        header_count, at = read.varint(pc.add(value_at, pc.max_element_wise(value_length, 0)))
        fewest, most = (m.as_py() for m in pc.min_max(header_count).values())
        if (
            fewest < 0
            or most > MOST_HEADERS
            or _any(pc.less(key_length, -1))
            or _any(pc.less(value_length, -1))
        ):
            raise Unfit
        headers: list[tuple[Any, Any, Any, Any, Any]] = []  # per header slot: rows, key and value
        for slot in range(most):
            rows = None if fewest > slot else pc.indices_nonzero(pc.greater(header_count, slot))
            slot_at = at if rows is None else pc.take(at, rows)
            hkey_length, hkey_at = read.varint(slot_at)
            hvalue_length, hvalue_at = read.varint(pc.add(hkey_at, hkey_length))
            if _any(pc.less(hkey_length, 0)) or _any(pc.less(hvalue_length, -1)):
                raise Unfit
            after = pc.add(hvalue_at, pc.max_element_wise(hvalue_length, 0))
            at = after if rows is None else pc.replace_with_mask(at, pc.greater(header_count, slot), after)
            headers.append((rows, hkey_at, hkey_length, hvalue_at, hvalue_length))
        if not pc.all(pc.equal(at, ends)).as_py():
            raise Unfit

        want_key, want_value, want_headers = wanted
        header_counts = hkeys = hvalues = None
        if most:
            header_counts = header_count.cast(_I32)
            hkeys, hvalues = _headers(read, header_count, headers)
            hkeys = hkeys.view(pa.string())
            hkeys.validate(full=True)  # UTF-8, or the record loop says which key is not
        base, log_append_time, scale = timestamp_of
        offsets = pc.add(od, base_offset)
        if log_append_time is None:
            timestamps = pc.multiply(pc.add(tsd, base), scale)
        else:
            timestamps = pa.repeat(pa.scalar(_wrap64(log_append_time * scale), _I64), count)
        chunk = Chunk(
            offsets,
            timestamps,
            None,
            read.cut(key_at, key_length) if want_key else None,
            read.cut(value_at, value_length) if want_value else None,
            None,
            None,
            None,
        )
        if want_headers:
            chunk.header_counts = header_counts if most else pa.repeat(pa.scalar(0, _I32), count)
            chunk.header_keys = hkeys if most else pa.array([], pa.string())
            chunk.header_values = hvalues if most else pa.array([], pa.binary())
        lo, hi = offset_range
        if not (lo <= base_offset - (1 << 28) and base_offset + (1 << 28) <= hi):
            lo, hi = max(lo, _I64_MIN), min(hi, _I64_MAX)  # every offset here is inside int64's range
            _keep(chunk, pc.and_(pc.greater_equal(offsets, lo), pc.less(offsets, hi)))
        return chunk, stop

    except (IndexError, pa.ArrowException):  # a position past the data, an offset past int32
        raise Unfit from None


def _headers(
    read: _Reader, header_count: Any, slots: list[tuple[Any, Any, Any, Any, Any]]
) -> tuple[Any, Any]:
    """Every header's key and value, row after row, from the slots read a header at a time."""
    if len(slots) == 1 and slots[0][0] is None:  # one header in every record
        _, key_at, key_length, value_at, value_length = slots[0]
    else:
        first = pc.subtract(pc.cumulative_sum(header_count), header_count)  # each row's first header
        where = [
            pc.add(first if rows is None else pc.take(first, rows), slot)
            for slot, (rows, *_) in enumerate(slots)
        ]
        order = pc.sort_indices(pa.concat_arrays(where))
        key_at, key_length, value_at, value_length = (
            pc.take(pa.concat_arrays([s[i] for s in slots]), order) for i in (1, 2, 3, 4)
        )
    return read.cut(key_at, key_length), read.cut(value_at, value_length)


def _keep(chunk: Chunk, keep: Any) -> None:
    """Drop the rows of ``chunk`` where ``keep`` is false (their headers too)."""
    if chunk.header_counts is not None and len(chunk.header_keys):
        ends = pc.cumulative_sum(chunk.header_counts)
        lists = pa.ListArray.from_arrays(
            pa.concat_arrays([pa.array([0], _I32), ends]), _RANGE.upto(len(chunk.header_keys))
        )
        held = pc.filter(lists, keep).flatten()
        chunk.header_keys = pc.take(chunk.header_keys, held)
        chunk.header_values = pc.take(chunk.header_values, held)
    for name in ("offsets", "timestamps", "keys", "values", "header_counts"):
        column = getattr(chunk, name)
        if column is not None:
            setattr(chunk, name, pc.filter(column, keep))


def _wrap64(v: int) -> int:
    return (v - _I64_MIN) % (1 << 64) + _I64_MIN


def repeat_int32(value: int, n: int) -> Any:
    return pa.repeat(pa.scalar(value, _I32), n)


def from_lists(
    offsets: array[int],
    timestamps: array[int],
    ts_types: array[int],
    keys: list[Any] | None,
    values: list[Any] | None,
    headers: tuple[array[int], list[str], list[bytes | None]] | None,
) -> Chunk:
    """The record loop's rows as a :class:`Chunk` (``headers``: each row's end in the flat
    header keys and values, from 0)."""
    n = len(offsets)
    counts = hkeys = hvalues = None
    if headers is not None:
        ends, hkey_list, hvalue_list = headers
        bounds = pa.Array.from_buffers(_I32, n + 1, [None, pa.py_buffer(ends)])
        counts = pc.subtract(bounds.slice(1), bounds.slice(0, n))
        hkeys, hvalues = pa.array(hkey_list, pa.string()), pa.array(hvalue_list, pa.binary())
    return Chunk(
        pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(offsets)]),
        pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(timestamps)]),
        pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(ts_types)]),
        None if keys is None else pa.array(keys, pa.binary()),
        None if values is None else pa.array(values, pa.binary()),
        counts,
        hkeys,
        hvalues,
    )


def concat(chunks: list[Chunk], wanted: tuple[bool, bool, bool]) -> Chunk:
    """``chunks`` as one (columns not ``wanted``, keys, values and headers, stay ``None``)."""
    if len(chunks) == 1:
        return chunks[0]
    want_key, want_value, want_headers = wanted
    kinds = {
        "offsets": (True, _I64),
        "timestamps": (True, _I64),
        "ts_types": (True, _I32),
        "keys": (want_key, pa.binary()),
        "values": (want_value, pa.binary()),
        "header_counts": (want_headers, _I32),
        "header_keys": (want_headers, pa.string()),
        "header_values": (want_headers, pa.binary()),
    }
    columns = {
        name: (pa.concat_arrays([getattr(c, name) for c in chunks]) if chunks else pa.array([], kind))
        if kept
        else None
        for name, (kept, kind) in kinds.items()
    }
    return Chunk(**columns)
