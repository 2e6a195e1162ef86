"""The records hot loops and ``Record``: one source, run as Python or compiled by mypyc.

Hand-written. Everything that runs once per record lives here: ``Record``, varints, the v2
record decoder (a list, or a stream for the compiled flavour), the v2 record encoder and the
legacy (magic 0/1) message walkers. ``kafka_wire.records.loops`` chooses the flavour once at
import: this module's compiled extension when it is built and ``KAFKA_WIRE_PURE`` is unset,
otherwise this same source run by the interpreter; in the compiled flavour ``Record`` and the
loops that make records (the v2 decoders, ``legacy_record``) come from the C extension
``recordwalk/`` instead, whose pure twin is this source. Callers own framing, batch CRCs and
compression; these functions only walk bytes they were told are one batch's records.

The source is written so that both runs are fast:

* cursors and lengths are annotated ``i64`` (unboxed C integers when compiled; plain ``int``
  when interpreted, where annotations cost nothing; no ``i64(...)`` call appears in a loop);
  record values (offsets, timestamps, zigzag payloads) stay ``int``, because a varlong carries
  64 bits and ``i64`` arithmetic must not overflow;
* bytes are read one at a time from ``bytes`` (a C load when compiled, the fastest read when
  interpreted); no ``struct`` call in the v2 loops;
* the decoder records where key, value and header value sit and slices them only when it makes
  the record, so that the compiled stream's validating pass allocates nothing;
* varints and record pieces are ``bytes`` from a table of encoded values where that is what
  the interpreter does fastest (one join per record), C integers written into a
  ``librt.strings.BytesWriter`` where mypyc does (``append`` only ever of ``u8`` values).

Where the fastest idiom differs between the two runs, the code branches on :data:`COMPILED`
(a constant): making a record, header key text, a header pair, writing a record. Everything
else, every check and every error, is one text for both.

Error contract: these functions raise :class:`CorruptBatchError` / :class:`InvalidValueError`
with ``offset`` relative to ``data``, and may let ``IndexError`` / ``UnicodeDecodeError`` /
``struct.error`` escape when the input ends inside a field or a header key is not UTF-8; the
caller (``batch.py``, ``legacy.py``) wraps those once per batch, never per field.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Final, Generic, TypeVar
from zlib import crc32

from librt.strings import BytesWriter
from mypy_extensions import i64, u8

from kafka_wire.errors import CorruptBatchError, EncodeError, InvalidValueError, ValueOutOfRangeError

B = TypeVar("B", bytes, memoryview)
"""Buffer type of keys, values and header values: ``bytes`` or (zero-copy) ``memoryview``."""


class Record(Generic[B]):
    """One record. ``headers`` is a tuple of ``(key, value)`` pairs; legacy records have none.

    Records compare equal when all five fields are equal, unpack as ``offset, timestamp, key,
    value, headers``, and are not hashable. When the compiled flavour is in use this is a mypyc
    native class: ``offset`` and ``timestamp`` must then be ``int`` (a ``TypeError`` otherwise)
    and interpreted classes cannot subclass it.
    """

    __slots__ = ("headers", "key", "offset", "timestamp", "value")
    __match_args__: ClassVar[tuple[str, str, str, str, str]] = (
        "offset",
        "timestamp",
        "key",
        "value",
        "headers",
    )

    offset: int
    timestamp: int
    key: B | None
    value: B | None
    headers: Sequence[tuple[str, B | None]]

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: B | None,
        value: B | None,
        headers: Sequence[tuple[str, B | None]] = (),
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers

    def astuple(self) -> tuple[int, int, B | None, B | None, tuple[tuple[str, B | None], ...]]:
        """``(offset, timestamp, key, value, headers)`` with headers as a tuple."""
        return (self.offset, self.timestamp, self.key, self.value, tuple(self.headers))

    def __iter__(self) -> Iterator[object]:
        return iter((self.offset, self.timestamp, self.key, self.value, self.headers))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return self.astuple() == other.astuple()

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={self.headers!r})"
        )


COMPILED: Final[bool] = hasattr(Record, "__mypyc_attrs__")
"""This module runs compiled by mypyc (``Record`` is then a native class). The few places where
the fastest idiom differs branch on it: making a record (a native class is made through its
constructor, and refuses ``object.__new__``; interpreted, ``object.__new__`` and slot stores cost
less than a Python ``__init__`` call), header key text (compared in place with the previous
record's), a header pair (a typed unpack), and writing a record (C integers)."""
_new: Final[Callable[..., Any]] = object.__new__

EMPTY_HEADERS: Final[tuple[()]] = ()

GC_PAUSE_MIN_RECORDS: Final = 256
"""List decoders pause the cyclic GC for batches of at least this many records."""

STREAM_CHUNK: Final = 64
"""Records a :class:`RecordStream` makes at a time."""
STREAM_MIN_RECORDS: Final = 64
"""Smaller batches are iterated from a list even when compiled (a validating pass and a stream
cost more than the list they would save)."""


def record_fields(r: object) -> tuple[Any, Any, Any, Any]:
    """``(key, value, headers, timestamp)`` of a record given as a tuple or an object."""
    if type(r) is tuple:
        t: tuple[Any, ...] = r
        n = len(t)
        if n == 4:
            return t
        if n == 2:
            return t[0], t[1], (), None
        if n == 3:
            return t[0], t[1], t[2], None
        raise EncodeError(f"a record tuple has 2-4 items (key, value, headers, timestamp), not {n}")
    try:
        key = r.key  # type: ignore[attr-defined]  # duck-typed record objects
        value = r.value  # type: ignore[attr-defined]  # duck-typed record objects
    except AttributeError:
        raise EncodeError(f"a record must be a tuple or have key and value, not {type(r).__name__}") from None
    return key, value, getattr(r, "headers", ()) or (), getattr(r, "timestamp", None)


# ------------------------------------------------------------------------------------------------
# varints (zigzag-signed, as Kafka's ByteUtils)
# ------------------------------------------------------------------------------------------------


def read_uvarint32(data: bytes, pos: i64) -> tuple[int, i64]:
    """Unsigned varint of at most 5 bytes; like Java's ``int`` reader, keeps the low 32 bits."""
    value = 0
    shift = 0
    while True:
        b: int = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFF, pos
        shift += 7
        if shift > 28:
            raise InvalidValueError("varint longer than 5 bytes", offset=pos)


def read_uvarint64(data: bytes, pos: i64) -> tuple[int, i64]:
    """Unsigned varint of at most 10 bytes, keeping the low 64 bits (Java's ``long`` reader)."""
    value = 0
    shift = 0
    while True:
        b: int = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift > 63:
            raise InvalidValueError("varlong longer than 10 bytes", offset=pos)


def uvarint_bytes(z: int) -> bytes:
    """Encode a non-negative int as an unsigned varint (any width)."""
    if z < 0x200000:
        if z < 0x80:
            return bytes((z,))
        if z < 0x4000:
            return bytes(((z & 0x7F) | 0x80, z >> 7))
        return bytes(((z & 0x7F) | 0x80, ((z >> 7) & 0x7F) | 0x80, z >> 14))
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


_TABLE_LIMIT: Final = 1 << 14
_ONE_BYTE: Final[list[bytes]] = [bytes((z,)) for z in range(0x80)]
_LOW_BYTE: Final[list[bytes]] = [bytes((z | 0x80,)) for z in range(0x80)]
_UVARINT_TABLE: Final[list[bytes]] = _ONE_BYTE + [
    low + _ONE_BYTE[high] for high in range(1, 0x80) for low in _LOW_BYTE
]
"""Encoded unsigned varints below 2**14 (one or two bytes): the encode loop's lookup table, built
from 256 one-byte strings (a fifth of the time of 16,384 encodings at import)."""


def varint_bytes(value: int) -> bytes:
    """Encode a signed int as a zigzag varint (int32 range) or varlong (int64 range)."""
    z = (value << 1) ^ (value >> 63)
    return _UVARINT_TABLE[z] if z < _TABLE_LIMIT else uvarint_bytes(z)


# ------------------------------------------------------------------------------------------------
# v2 records: decoding
# ------------------------------------------------------------------------------------------------


def _same_bytes(data: bytes, pos: i64, other: bytes) -> bool:
    """Whether ``data[pos:pos + len(other)] == other`` (bounds checked by the caller), without a slice."""
    n: i64 = len(other)
    j: i64 = 0
    while j < n:
        if data[pos + j] != other[j]:
            return False
        j += 1
    return True


def decode_headers(
    data: bytes, view: memoryview | None, pos: i64, rec_end: i64, count: i64, keys: dict[bytes, str]
) -> tuple[tuple[tuple[str, Any], ...], i64]:
    """Decode ``count`` record headers ending by ``rec_end``: ``(headers, new_pos)``.

    Values are sliced from ``view`` when it is given (zero-copy reads), else from ``data``.
    """
    headers: list[tuple[str, Any]] = []
    for _ in range(count):
        v: int = data[pos]
        if v < 0x80:
            pos += 1
        else:
            v, pos = read_uvarint32(data, pos)
        if v & 1:
            raise InvalidValueError("null or negative header key length", offset=pos)
        n: i64 = pos + (v >> 1)
        if n > rec_end:
            raise CorruptBatchError("header key overruns its record", offset=pos)
        raw = data[pos:n]
        key = keys.get(raw)
        if key is None:
            key = raw.decode()
            keys[raw] = key
        pos = n
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            v, pos = read_uvarint32(data, pos)
        if v & 1:
            if v != 1:
                raise InvalidValueError("negative header value length", offset=pos)
            headers.append((key, None))
        else:
            n = pos + (v >> 1)
            if n > rec_end:
                raise CorruptBatchError("header value overruns its record", offset=pos)
            headers.append((key, data[pos:n] if view is None else view[pos:n]))
            pos = n
    return tuple(headers), pos


def decode_run(
    data: bytes,
    view: memoryview | None,
    pos: i64,
    end: i64,
    index: i64,
    stop: i64,
    count: i64,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    keys: dict[bytes, str],
    out: list[Any] | None,
) -> i64:
    """Decode records ``index .. stop - 1`` of the ``count`` a batch declares; the new position.

    The records start at ``data[pos]`` and may not run past ``end``; each must use exactly the
    bytes its length varint declares. With ``out`` (a list of at least ``stop - index`` items)
    record ``i`` is stored at ``out[i - index]``; without it the records are only checked (the
    compiled stream's validating pass). Keys, values and header values are slices of ``view``
    when it is given (zero-copy reads: ``data`` then holds the same bytes), else of ``data``.
    The record timestamp is ``log_append_time`` when that is not ``None`` (LogAppendTime
    batches), otherwise ``base_timestamp + timestampDelta``; ``keys`` remembers header key text.
    """
    lat = log_append_time is not None
    lat_value = 0 if log_append_time is None else log_append_time
    compiled = COMPILED
    new = _new
    record_cls: Any = Record
    last_raw = b""
    last_key = ""
    for i in range(index, stop):
        if pos >= end:
            raise CorruptBatchError(f"batch ends after {i} of {count} declared records", offset=pos)
        # length: varint; the fast paths cover one and two bytes
        v: int = data[pos]
        if v < 0x80:
            pos += 1
        else:
            b: int = data[pos + 1]
            if b < 0x80:
                v = (v & 0x7F) | (b << 7)
                pos += 2
            else:
                v, pos = read_uvarint32(data, pos)
        rec_end: i64 = pos + ((v >> 1) ^ -(v & 1))
        if rec_end > end:
            raise CorruptBatchError(
                f"record length {(v >> 1) ^ -(v & 1)} overruns the batch ({end - pos} bytes left)", offset=pos
            )
        # attributes (unused) then timestampDelta: varlong
        tsd: int = data[pos + 1]
        if tsd < 0x80:
            pos += 2
        else:
            b = data[pos + 2]
            if b < 0x80:
                tsd = (tsd & 0x7F) | (b << 7)
                pos += 3
            else:
                b2: int = data[pos + 3]
                if b2 < 0x80:
                    tsd = (tsd & 0x7F) | ((b & 0x7F) << 7) | (b2 << 14)
                    pos += 4
                else:
                    tsd, pos = read_uvarint64(data, pos + 1)
        # offsetDelta: varint, fast paths up to three bytes (batches of up to 2**20 records)
        od: int = data[pos]
        if od < 0x80:
            pos += 1
        else:
            b = data[pos + 1]
            if b < 0x80:
                od = (od & 0x7F) | (b << 7)
                pos += 2
            else:
                b2 = data[pos + 2]
                if b2 < 0x80:
                    od = (od & 0x7F) | ((b & 0x7F) << 7) | (b2 << 14)
                    pos += 3
                else:
                    od, pos = read_uvarint32(data, pos)
        # key
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            b = data[pos + 1]
            if b < 0x80:
                v = (v & 0x7F) | (b << 7)
                pos += 2
            else:
                v, pos = read_uvarint32(data, pos)
        kpos: i64 = pos
        kend: i64 = -1
        if v & 1:
            if v != 1:
                raise InvalidValueError(f"negative key length {(v >> 1) ^ -1}", offset=pos)
        else:
            kend = pos + (v >> 1)
            if kend > rec_end:
                raise CorruptBatchError(f"key of {v >> 1} bytes overruns its record", offset=pos)
            pos = kend
        # value
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            b = data[pos + 1]
            if b < 0x80:
                v = (v & 0x7F) | (b << 7)
                pos += 2
            else:
                v, pos = read_uvarint32(data, pos)
        vpos: i64 = pos
        vend: i64 = -1
        if v & 1:
            if v != 1:
                raise InvalidValueError(f"negative value length {(v >> 1) ^ -1}", offset=pos)
        else:
            vend = pos + (v >> 1)
            if vend > rec_end:
                raise CorruptBatchError(f"value of {v >> 1} bytes overruns its record", offset=pos)
            pos = vend
        # headers: none, exactly one (inline), or the general loop
        v = data[pos]
        pos += 1
        headers: tuple[tuple[str, Any], ...] | None = EMPTY_HEADERS
        if v == 2:
            v = data[pos]
            if v < 0x80:
                pos += 1
            else:
                v, pos = read_uvarint32(data, pos)
            if v & 1:
                raise InvalidValueError("null or negative header key length", offset=pos)
            n: i64 = pos + (v >> 1)
            if n > rec_end:
                raise CorruptBatchError("header key overruns its record", offset=pos)
            if compiled and n - pos == len(last_raw) and _same_bytes(data, pos, last_raw):
                hk = last_key  # compiled: the previous record's key, compared in place
            else:
                raw = data[pos:n]
                hk_cached = keys.get(raw)
                if hk_cached is None:
                    hk = raw.decode()
                    keys[raw] = hk
                else:
                    hk = hk_cached
                last_raw = raw
                last_key = hk
            pos = n
            v = data[pos]
            if v < 0x80:
                pos += 1
            else:
                v, pos = read_uvarint32(data, pos)
            if v & 1:
                if v != 1:
                    raise InvalidValueError("negative header value length", offset=pos)
                hend: i64 = -1
            else:
                hpos: i64 = pos
                hend = pos + (v >> 1)
                if hend > rec_end:
                    raise CorruptBatchError("header value overruns its record", offset=pos)
                pos = hend
            headers = None
        elif v != 0:
            if v >= 0x80:
                v, pos = read_uvarint32(data, pos - 1)
            if v & 1:
                raise InvalidValueError(f"negative header count {(v >> 1) ^ -1}", offset=pos)
            hc: i64 = v >> 1
            if hc > rec_end - pos:
                raise CorruptBatchError(f"header count {hc} exceeds the record's remaining bytes", offset=pos)
            headers, pos = decode_headers(data, view, pos, rec_end, hc, keys)
        if pos != rec_end:
            raise CorruptBatchError(f"record fields end at byte {pos}, its length says {rec_end}", offset=pos)
        if out is not None:
            offset = base_offset + ((od >> 1) ^ -(od & 1))
            timestamp = lat_value if lat else base_timestamp + ((tsd >> 1) ^ -(tsd & 1))
            key: Any
            value: Any
            if view is None:
                key = None if kend < 0 else data[kpos:kend]
                value = None if vend < 0 else data[vpos:vend]
                if headers is None:
                    headers = ((hk, None if hend < 0 else data[hpos:hend]),)
            else:
                key = None if kend < 0 else view[kpos:kend]
                value = None if vend < 0 else view[vpos:vend]
                if headers is None:
                    headers = ((hk, None if hend < 0 else view[hpos:hend]),)
            if compiled:
                out[i - index] = Record(offset, timestamp, key, value, headers)
            else:
                r: Record[Any] = new(record_cls)
                r.offset = offset
                r.timestamp = timestamp
                r.key = key
                r.value = value
                r.headers = headers
                out[i - index] = r
    return pos


def _overfull(pos: i64, end: i64, count: i64) -> CorruptBatchError:
    """The error for a count that the bytes cannot back (a record takes at least 7 bytes)."""
    return CorruptBatchError(
        f"{count} records cannot fit in {end - pos} bytes (a record takes at least 7)", offset=pos
    )


def decode_records_v2(
    data: bytes,
    view: memoryview | None,
    pos: i64,
    end: i64,
    count: i64,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> tuple[list[Any], i64]:
    """Decode ``count`` v2 records from ``data[pos:end]``: ``(records, position after the last)``.

    See :func:`decode_run`. The loop never allocates from a declared count that the bytes do not
    back. Records hold no reference cycles, so for large batches the cyclic GC is paused while
    the list is made (and restored after): otherwise every 700 new records trigger a collection
    that walks them all.
    """
    if count * 7 > end - pos:
        raise _overfull(pos, end, count)
    out: list[Any] = [None] * count  # safe now: the bytes back the count
    keys: dict[bytes, str] = {}
    if count >= GC_PAUSE_MIN_RECORDS and gc.isenabled():
        gc.disable()
        try:
            pos = decode_run(
                data, view, pos, end, 0, count, count, base_offset, base_timestamp, log_append_time, keys, out
            )
        finally:
            gc.enable()
    else:
        pos = decode_run(
            data, view, pos, end, 0, count, count, base_offset, base_timestamp, log_append_time, keys, out
        )
    return out, pos


class RecordStream:
    """The records of one v2 batch, made :data:`STREAM_CHUNK` at a time; an iterator.

    ``validate()`` walks every record without making any (so that a corrupt batch raises before
    its first record is seen, as a list decode does) and returns the position after the last;
    iteration then makes records as they are asked for, so a consumer that drops them as it goes
    reuses the same memory and gives the cyclic GC little to walk. :func:`iterate_records_v2`
    uses it when compiled; interpreted, the list decode is faster.
    """

    data: bytes
    view: memoryview | None
    start: i64
    pos: i64
    end: i64
    count: i64
    index: i64
    base_offset: int
    base_timestamp: int
    log_append_time: int | None
    keys: dict[bytes, str]
    chunk: list[Any]
    taken: i64
    made: i64

    def __init__(
        self,
        data: bytes,
        view: memoryview | None,
        pos: i64,
        end: i64,
        count: i64,
        base_offset: int,
        base_timestamp: int,
        log_append_time: int | None,
    ) -> None:
        if count * 7 > end - pos:
            raise _overfull(pos, end, count)
        self.data = data
        self.view = view
        self.start = pos
        self.pos = pos
        self.end = end
        self.count = count
        self.index = 0
        self.base_offset = base_offset
        self.base_timestamp = base_timestamp
        self.log_append_time = log_append_time
        self.keys = {}
        self.chunk = [None] * STREAM_CHUNK
        self.taken = 0
        self.made = 0

    def validate(self) -> i64:
        """Check every record without making one: the position after the last."""
        return decode_run(
            self.data,
            None,
            self.start,
            self.end,
            0,
            self.count,
            self.count,
            self.base_offset,
            self.base_timestamp,
            self.log_append_time,
            self.keys,
            None,
        )

    def __iter__(self) -> RecordStream:
        return self

    def __next__(self) -> Any:
        taken = self.taken
        if taken < self.made:
            self.taken = taken + 1
            return self.chunk[taken]
        index = self.index
        if index >= self.count:
            raise StopIteration
        stop: i64 = index + STREAM_CHUNK
        if stop > self.count:
            stop = self.count
        self.pos = decode_run(
            self.data,
            self.view,
            self.pos,
            self.end,
            index,
            stop,
            self.count,
            self.base_offset,
            self.base_timestamp,
            self.log_append_time,
            self.keys,
            self.chunk,
        )
        self.index = stop
        self.made = stop - index
        self.taken = 1
        return self.chunk[0]


def iterate_records_v2(
    data: bytes,
    view: memoryview | None,
    pos: i64,
    end: i64,
    count: i64,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> tuple[Iterator[Any], i64]:
    """The records of :func:`decode_records_v2` as an iterator: ``(records, position after the last)``.

    Every record is checked before the iterator is returned, so a corrupt batch raises before its
    first record is seen. Compiled, batches of :data:`STREAM_MIN_RECORDS` or more are streamed
    (:class:`RecordStream`); interpreted, making the list is faster.
    """
    if COMPILED and count >= STREAM_MIN_RECORDS:
        stream = RecordStream(data, view, pos, end, count, base_offset, base_timestamp, log_append_time)
        return stream, stream.validate()
    records, pos = decode_records_v2(
        data, view, pos, end, count, base_offset, base_timestamp, log_append_time
    )
    return iter(records), pos


# ------------------------------------------------------------------------------------------------
# v2 records: encoding
# ------------------------------------------------------------------------------------------------


def _as_bytes(obj: object, what: str) -> bytes:
    """Slow path of the encoder: a bytes-like key/value/header value that is not ``bytes``."""
    if isinstance(obj, str):
        raise EncodeError(f"{what} must be bytes-like or None, not str")
    try:
        return memoryview(obj).tobytes()  # type: ignore[arg-type]  # any buffer-protocol object is fine
    except TypeError:
        raise EncodeError(f"{what} must be bytes-like or None, not {type(obj).__name__}") from None


def _header_key(key: object, header_keys: dict[object, bytes]) -> bytes:
    """``key`` as written (:func:`header_key_bytes`), remembered in ``header_keys``."""
    data = header_keys[key] = header_key_bytes(key)
    return data


def header_key_bytes(key: object) -> bytes:
    """A header key as written: varint length + UTF-8 bytes."""
    if type(key) is not str:
        raise EncodeError(f"header key must be str, not {type(key).__name__}")
    raw = key.encode("utf-8")
    return varint_bytes(len(raw)) + raw


_ZZ_MAX: Final = (1 << 62) - 1
"""Zigzag timestamp deltas up to this (a C integer in mypyc) take the compiled encoder's fast path."""


def _size64(z: i64) -> i64:
    """Bytes of the unsigned varint of ``z`` (``0 <= z < 2**63``)."""
    if z < 0x80:
        return 1
    if z < 0x4000:
        return 2
    n: i64 = 3
    z >>= 21
    while z > 0:
        z >>= 7
        n += 1
    return n


def _put64(w: BytesWriter, z: i64) -> None:
    """Write ``z`` (``0 <= z < 2**63``) as an unsigned varint."""
    while z >= 0x80:
        w.append(u8((z & 0x7F) | 0x80))
        z >>= 7
    w.append(u8(z))


def _header_pair(h: object) -> tuple[Any, Any]:
    """A header that is not a ``(key, value)`` tuple: a two-item sequence, or an error."""
    if isinstance(h, (list, tuple)) and len(h) == 2:
        return h[0], h[1]
    items = f" of {len(h)} items" if isinstance(h, (list, tuple)) else ""
    raise EncodeError(f"a header is a (key, value) pair, not a {type(h).__name__}{items}")


def _timestamp(ts: object) -> int:
    """A record timestamp that is not ``None`` and not exactly an ``int``: a ``bool``, or an error."""
    if isinstance(ts, int):
        return int(ts)
    raise EncodeError(f"record timestamp must be an int or None, not {type(ts).__name__}")


def encode_records_v2(
    records: Sequence[object],
    base_timestamp: int,
    default_timestamp: int,
    offset_deltas: Sequence[int] | None,
) -> tuple[bytes, int, int]:
    """The records of a v2 batch body: ``(bytes, min_timestamp, max_timestamp)``.

    ``records`` items are ``(key, value, headers, timestamp)`` tuples (the fast path), shorter
    tuples, or objects with those attributes. Timestamp deltas are relative to
    ``base_timestamp``; offset deltas are ``0..n-1`` unless ``offset_deltas`` is given. Raises
    :class:`EncodeError` for values that cannot be written; ``TypeError`` / ``ValueError`` from
    exotic inputs (headers that are not pairs) are left to the caller to wrap. Timestamps are
    range-checked by the caller from the returned minimum and maximum.
    """
    n_records = len(records)
    if offset_deltas is not None and len(offset_deltas) != n_records:
        raise EncodeError(f"{len(offset_deltas)} offset deltas for {n_records} records")
    table = _UVARINT_TABLE
    limit = _TABLE_LIMIT
    join = b"".join
    w = BytesWriter()
    compiled = COMPILED
    header_keys: dict[object, bytes] = {}
    min_ts = base_timestamp
    max_ts = base_timestamp
    last_hk: object = None
    last_h1 = b""
    i: i64 = 0
    items: list[object] = records if type(records) is list else list(records)
    for r in items:
        fields: tuple[Any, Any, Any, Any] = r if type(r) is tuple and len(r) == 4 else record_fields(r)
        key, value, headers, ts_o = fields
        if type(ts_o) is int:
            ts = ts_o
        elif ts_o is None:
            ts = default_timestamp
        else:
            ts = _timestamp(ts_o)
        if ts > max_ts:
            max_ts = ts
        elif ts < min_ts:
            min_ts = ts
        d = ts - base_timestamp
        tsz = (d << 1) ^ (d >> 63)
        if offset_deltas is None:
            odz = i << 1
        else:
            d = offset_deltas[i]
            odz = (d << 1) ^ (d >> 31)
        kv = vv = b""
        klen: i64 = -1
        vlen: i64 = -1
        if key is not None:
            kv = key if type(key) is bytes else _as_bytes(key, "key")
            klen = len(kv)
        if value is not None:
            vv = value if type(value) is bytes else _as_bytes(value, "value")
            vlen = len(vv)
        # the headers as four pieces: count, then (one header) key, value length, value, or
        # (several) all of them in the second piece
        h1 = h2 = h3 = b""
        if not headers:
            h0 = b"\x00"
        elif len(headers) == 1:
            h0 = b"\x02"
            if compiled:  # typed: a C struct, where a generic unpack would iterate
                h = headers[0] if type(headers) is list else next(iter(headers))
                pair: tuple[Any, Any] = h if type(h) is tuple and len(h) == 2 else _header_pair(h)
                hk, hv = pair
            else:  # one unpack, the interpreter's fastest
                try:
                    ((hk, hv),) = headers
                except (TypeError, ValueError):
                    hk, hv = _header_pair(headers[0] if type(headers) is list else next(iter(headers)))
            if hk is last_hk:
                h1 = last_h1
            else:
                h1 = header_keys.get(hk) or _header_key(hk, header_keys)
                last_hk = hk
                last_h1 = h1
            if hv is None:
                h2 = b"\x01"
            else:
                h3 = hv if type(hv) is bytes else _as_bytes(hv, "header value")
                z = len(h3) << 1
                h2 = table[z] if z < limit else uvarint_bytes(z)
        else:
            z = len(headers) << 1
            h0 = table[z] if z < limit else uvarint_bytes(z)
            hparts: list[bytes] = []
            for h in headers:
                pair = h if type(h) is tuple and len(h) == 2 else _header_pair(h)
                hk, hv = pair
                hparts.append(header_keys.get(hk) or _header_key(hk, header_keys))
                if hv is None:
                    hparts.append(b"\x01")
                else:
                    hvv = hv if type(hv) is bytes else _as_bytes(hv, "header value")
                    z = len(hvv) << 1
                    hparts.append(table[z] if z < limit else uvarint_bytes(z))
                    hparts.append(hvv)
            h1 = join(hparts)
        if compiled and -_ZZ_MAX <= tsz <= _ZZ_MAX:
            # compiled: C integers, the size summed first, each piece written once
            tz: i64 = tsz
            oz: i64 = odz
            size: i64 = 1 + _size64(tz) + _size64(oz) + len(h0) + len(h1) + len(h2) + len(h3)
            size += 1 if klen < 0 else _size64(klen << 1) + klen
            size += 1 if vlen < 0 else _size64(vlen << 1) + vlen
            _put64(w, size << 1)
            w.append(u8(0))
            _put64(w, tz)
            _put64(w, oz)
            if klen < 0:
                w.append(u8(1))
            else:
                _put64(w, klen << 1)
                w.write(kv)
            if vlen < 0:
                w.append(u8(1))
            else:
                _put64(w, vlen << 1)
                w.write(vv)
            w.write(h0)
            w.write(h1)
            w.write(h2)
            w.write(h3)
        else:
            # interpreted: encoded varints from the table, one join for the body
            tsb = table[tsz] if tsz < limit else uvarint_bytes(tsz & 0xFFFFFFFFFFFFFFFF)
            odb = table[odz] if odz < limit else uvarint_bytes(odz)
            if klen < 0:
                kb = b"\x01"
            else:
                z = klen << 1
                kb = table[z] if z < limit else uvarint_bytes(z)
            if vlen < 0:
                vb = b"\x01"
            else:
                z = vlen << 1
                vb = table[z] if z < limit else uvarint_bytes(z)
            body = join((b"\x00", tsb, odb, kb, kv, vb, vv, h0, h1, h2, h3))
            z = len(body) << 1
            w.write(table[z] if z < limit else uvarint_bytes(z))
            w.write(body)
        i += 1
    return w.getvalue(), min_ts, max_ts


# ------------------------------------------------------------------------------------------------
# legacy message sets (magic 0 / 1): offset, size, crc, magic, attributes, [timestamp], key, value
# ------------------------------------------------------------------------------------------------

LEGACY_HEAD_V0: Final = struct.Struct(">qiIbbi")
"""offset, size, crc, magic, attributes, key length: 22 bytes."""
LEGACY_HEAD_V1: Final = struct.Struct(">qiIbbqi")
"""offset, size, crc, magic, attributes, timestamp, key length: 30 bytes."""
_I32: Final = struct.Struct(">i")

LegacyMessage = tuple[int, int, int, int, int, Any, Any, int]
"""``(offset, crc, magic, attributes, timestamp, key, value, message_start)``."""


def decode_legacy_message(data: Any, pos: int, end: int) -> tuple[LegacyMessage, int]:
    """Parse one complete legacy message at ``pos``: ``(fields, position after it)``.

    Checks that the message fits ``end``, that its magic is 0 or 1, and that the key and value
    use exactly the declared size. Does not check the CRC (the caller decides).
    """
    if end - pos < 12 + 14:
        raise CorruptBatchError(f"legacy message needs at least 26 bytes, {end - pos} left", offset=pos)
    magic: int = data[pos + 16]
    if magic == 0:
        offset, size, crc, magic, attributes, klen = LEGACY_HEAD_V0.unpack_from(data, pos)
        timestamp = -1
        p = pos + 22
    elif magic == 1:
        if end - pos < 12 + 22:
            raise CorruptBatchError(
                f"legacy v1 message needs at least 34 bytes, {end - pos} left", offset=pos
            )
        offset, size, crc, magic, attributes, timestamp, klen = LEGACY_HEAD_V1.unpack_from(data, pos)
        p = pos + 30
    else:
        raise CorruptBatchError(f"legacy message magic {magic} (expected 0 or 1)", offset=pos + 16)
    msg_end = pos + 12 + size
    if size < (14 if magic == 0 else 22) or msg_end > end:
        raise CorruptBatchError(
            f"legacy message size {size} does not fit ({end - pos - 12} bytes left)", offset=pos
        )
    key: Any
    value: Any
    if klen == -1:
        key = None
    elif 0 <= klen <= msg_end - p - 4:
        key = data[p : p + klen]
        p += klen
    else:
        raise CorruptBatchError(f"legacy key length {klen} does not fit its message", offset=p - 4)
    (vlen,) = _I32.unpack_from(data, p)
    p += 4
    if vlen == -1 and p == msg_end:
        value = None
    elif vlen == msg_end - p:
        value = data[p:msg_end]
    else:
        raise CorruptBatchError(
            f"legacy value length {vlen} does not match the {msg_end - p} bytes left in its message",
            offset=p - 4,
        )
    return (offset, crc, magic, attributes, timestamp, key, value, pos), msg_end


def legacy_record(data: Any, key_pos: int, end: int, offset: int, timestamp: int) -> Record[Any]:
    """The record of an uncompressed legacy message whose header the caller has read.

    ``key_pos`` is where the key length sits (18 bytes into a v0 message, 26 into v1) and
    ``end`` where the message ends; the key and value must fill it exactly.
    """
    if end - key_pos < 8:
        raise CorruptBatchError("legacy message too short for its key and value lengths", offset=key_pos)
    (klen,) = _I32.unpack_from(data, key_pos)
    p = key_pos + 4
    key: Any
    value: Any
    if klen == -1:
        key = None
    elif 0 <= klen <= end - p - 4:
        key = data[p : p + klen]
        p += klen
    else:
        raise CorruptBatchError(f"legacy key length {klen} does not fit its message", offset=key_pos)
    (vlen,) = _I32.unpack_from(data, p)
    p += 4
    if vlen == -1 and p == end:
        value = None
    elif vlen == end - p:
        value = data[p:end]
    else:
        raise CorruptBatchError(
            f"legacy value length {vlen} does not match the {end - p} bytes left in its message", offset=p - 4
        )
    if COMPILED:
        return Record(offset, timestamp, key, value, EMPTY_HEADERS)
    r: Record[Any] = _new(Record)
    r.offset = offset
    r.timestamp = timestamp
    r.key = key
    r.value = value
    r.headers = EMPTY_HEADERS
    return r


def decode_legacy_message_set(data: Any, pos: int, end: int, verify_crc: bool) -> list[LegacyMessage]:
    """Parse a whole legacy message set (a compressed wrapper's inner messages) that must end at ``end``."""
    out: list[LegacyMessage] = []
    while pos < end:
        msg, nxt = decode_legacy_message(data, pos, end)
        if verify_crc:
            actual = crc32(data[pos + 16 : nxt])
            if actual != msg[1]:
                raise CorruptBatchError(
                    f"inner message CRC-32 0x{msg[1]:08x} != computed 0x{actual:08x} (inner offset {msg[0]})",
                    offset=pos,
                )
        out.append(msg)
        pos = nxt
    return out


_LEGACY_V0_BODY: Final = struct.Struct(">bbi")
_LEGACY_V1_BODY: Final = struct.Struct(">bbqi")
_OFFSET_SIZE_CRC: Final = struct.Struct(">qiI")


def encode_legacy_message(
    out: bytearray, offset: int, magic: int, attributes: int, timestamp: int, key: object, value: object
) -> None:
    """Append one legacy message (offset, size, CRC-32, body) to ``out``."""
    kb = None if key is None else key if type(key) is bytes else _as_bytes(key, "key")
    vb = None if value is None else value if type(value) is bytes else _as_bytes(value, "value")
    klen = -1 if kb is None else len(kb)
    if magic == 0:
        body = bytearray(_LEGACY_V0_BODY.pack(0, attributes, klen))
    else:
        body = bytearray(_LEGACY_V1_BODY.pack(1, attributes, timestamp, klen))
    if kb is not None:
        body += kb
    body += _I32.pack(-1 if vb is None else len(vb))
    if vb is not None:
        body += vb
    if len(body) + 4 > 0x7FFFFFFF:
        raise ValueOutOfRangeError("legacy message larger than 2 GiB")
    out += _OFFSET_SIZE_CRC.pack(offset, len(body) + 4, crc32(body))
    out += body
