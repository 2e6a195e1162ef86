"""Hot loops of the records codec: varints, v2 record decoding and encoding, legacy message sets.

Everything that runs once per record lives here, as plain module-level functions over ``bytes``
(or a ``memoryview`` for zero-copy reads) with an int cursor, so that a compiled flavour of this
module can replace it without changing any caller. Callers own framing, batch CRCs and compression;
these functions only walk bytes they were told are one batch's records.

Error contract: these functions raise :class:`CorruptBatchError` / :class:`InvalidValueError`
with ``offset`` relative to ``data``, and may let ``IndexError`` / ``UnicodeDecodeError`` escape
when the input ends inside a field or a header key is not UTF-8; the caller (``batch.py``,
``legacy.py``) wraps those once per batch, never per field.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Final, Protocol
from zlib import crc32

from kafka_wire.errors import CorruptBatchError, EncodeError, InvalidValueError, ValueOutOfRangeError
from kafka_wire.flavour import compiled_module
from kafka_wire.records.record import EMPTY_HEADERS, GC_PAUSE_MIN_RECORDS, NATIVE_RECORD, B, Record
from kafka_wire.records.record import record_fields as record_fields

_new_object: Final[Callable[..., Any]] = object.__new__


def text_of_bytes(data: bytes) -> str:
    """UTF-8 text of a header key sliced from ``bytes``."""
    return data.decode()


def text_of_view(data: memoryview) -> str:
    """UTF-8 text of a header key sliced from a ``memoryview``."""
    return str(data, "utf-8")


class KeyCache(Protocol):
    """What the decoders use to remember header key text: a dict, or :class:`NoKeyCache`."""

    def get(self, raw: Any, /) -> str | None: ...

    def __setitem__(self, raw: Any, text: str, /) -> None: ...


class NoKeyCache:
    """A cache that keeps nothing: slices of views over mutable buffers cannot key a dict."""

    __slots__ = ()

    def get(self, raw: object, /) -> None:
        return None

    def __setitem__(self, raw: object, text: str, /) -> None:
        pass


NO_KEY_CACHE: Final = NoKeyCache()


# ------------------------------------------------------------------------------------------------
# varints (zigzag-signed, as Kafka's ByteUtils)
# ------------------------------------------------------------------------------------------------


def read_uvarint32(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes; like Java's ``int`` reader, keeps the low 32 bits."""
    value = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFF, pos
        shift += 7
        if shift > 28:
            raise InvalidValueError("varint longer than 5 bytes", offset=pos)


def read_uvarint64(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 10 bytes, keeping the low 64 bits (Java's ``long`` reader)."""
    value = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift > 63:
            raise InvalidValueError("varlong longer than 10 bytes", offset=pos)


def read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Zigzag varint (int32): ``(value, new_pos)``."""
    v, pos = read_uvarint32(data, pos)
    return (v >> 1) ^ -(v & 1), pos


def read_varlong(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Zigzag varlong (int64): ``(value, new_pos)``."""
    v, pos = read_uvarint64(data, pos)
    return (v >> 1) ^ -(v & 1), pos


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
_UVARINT_TABLE: Final[list[bytes]] = [uvarint_bytes(z) for z in range(_TABLE_LIMIT)]
"""Encoded unsigned varints below 2**14 (one or two bytes): the encode loop's lookup table."""


def varint_bytes(value: int) -> bytes:
    """Encode a signed int as a zigzag varint (int32 range) or varlong (int64 range)."""
    z = (value << 1) ^ (value >> 63)
    return _UVARINT_TABLE[z] if z < _TABLE_LIMIT else uvarint_bytes(z)


# ------------------------------------------------------------------------------------------------
# v2 records
# ------------------------------------------------------------------------------------------------


def _overrun(v: int, pos: int, end: int) -> CorruptBatchError:
    """The error for a record whose declared length runs past the batch end."""
    return CorruptBatchError(
        f"record length {(v >> 1) ^ -(v & 1)} overruns the batch ({end - pos} bytes left)", offset=pos
    )


def decode_headers(
    data: B, pos: int, rec_end: int, count: int, text: Callable[[B], str], keys: KeyCache
) -> tuple[tuple[tuple[str, B | None], ...], int]:
    """Decode ``count`` record headers ending by ``rec_end``: ``(headers, new_pos)``."""
    headers: list[tuple[str, B | None]] = []
    for _ in range(count):
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            v, pos = read_uvarint32(data, pos)
        if v & 1:
            raise InvalidValueError("null or negative header key length", offset=pos)
        n = pos + (v >> 1)
        if n > rec_end:
            raise CorruptBatchError("header key overruns its record", offset=pos)
        raw = data[pos:n]
        key = keys.get(raw)
        if key is None:
            key = text(raw)
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
            headers.append((key, data[pos:n]))
            pos = n
    return tuple(headers), pos


def _decode_records_v2_py(
    data: B,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    text: Callable[[B], str],
    keys: KeyCache,
) -> tuple[list[Record[B]], int]:
    """Decode ``count`` v2 records from ``data[pos:end]``: ``(records, position after the last)``.

    Each record must use exactly the bytes its length varint declares. The record timestamp is
    ``log_append_time`` when that is not ``None`` (LogAppendTime batches), otherwise
    ``base_timestamp + timestampDelta``. ``text`` turns a header key slice into ``str``
    (:func:`text_of_bytes` or :func:`text_of_view`) and ``keys`` remembers the results (a fresh
    dict for ``bytes``; :data:`NO_KEY_CACHE` for views, whose slices may not be hashable). The
    loop never allocates from a declared count: each iteration consumes at least one record's
    bytes or raises.
    """
    if count * 7 > end - pos:
        raise CorruptBatchError(
            f"{count} records cannot fit in {end - pos} bytes (a record takes at least 7)", offset=pos
        )
    # preallocating is safe now: the bytes back the count
    out: list[Any] = [None] * count
    new = _new_object
    rec_cls = Record
    by_init = NATIVE_RECORD  # the compiled Record refuses object.__new__ (zero-copy reads get here)
    slow32 = read_uvarint32
    slow64 = read_uvarint64
    lat = log_append_time is not None
    for i in range(count):
        if pos >= end:
            raise CorruptBatchError(f"batch ends after {i} of {count} declared records", offset=pos)
        # length: varint; the fast paths cover one and two bytes
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            b = data[pos + 1]
            if b < 0x80:
                v = (v & 0x7F) | (b << 7)
                pos += 2
            else:
                v, pos = slow32(data, pos)
        rec_end = pos + ((v >> 1) ^ -(v & 1))
        if rec_end > end:
            raise _overrun(v, pos, end)
        # attributes (unused) then timestampDelta: varlong
        tsd = data[pos + 1]
        if tsd < 0x80:
            pos += 2
        else:
            b = data[pos + 2]
            if b < 0x80:
                tsd = (tsd & 0x7F) | (b << 7)
                pos += 3
            else:
                b2 = data[pos + 3]
                if b2 < 0x80:
                    tsd = (tsd & 0x7F) | ((b & 0x7F) << 7) | (b2 << 14)
                    pos += 4
                else:
                    tsd, pos = slow64(data, pos + 1)
        # offsetDelta: varint, fast paths up to three bytes (batches of up to 2**20 records)
        od = data[pos]
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
                    od, pos = slow32(data, pos)
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
                v, pos = slow32(data, pos)
        if v & 1:
            if v != 1:
                raise InvalidValueError(f"negative key length {(v >> 1) ^ -1}", offset=pos)
            key = None
        else:
            n = pos + (v >> 1)
            if n > rec_end:
                raise CorruptBatchError(f"key of {v >> 1} bytes overruns its record", offset=pos)
            key = data[pos:n]
            pos = n
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
                v, pos = slow32(data, pos)
        if v & 1:
            if v != 1:
                raise InvalidValueError(f"negative value length {(v >> 1) ^ -1}", offset=pos)
            value = None
        else:
            n = pos + (v >> 1)
            if n > rec_end:
                raise CorruptBatchError(f"value of {v >> 1} bytes overruns its record", offset=pos)
            value = data[pos:n]
            pos = n
        # headers: none, exactly one (inline), or the general loop
        v = data[pos]
        pos += 1
        if v == 0:
            headers: Any = EMPTY_HEADERS
        elif v == 2:
            v = data[pos]
            if v < 0x80:
                pos += 1
            else:
                v, pos = slow32(data, pos)
            if v & 1:
                raise InvalidValueError("null or negative header key length", offset=pos)
            n = pos + (v >> 1)
            if n > rec_end:
                raise CorruptBatchError("header key overruns its record", offset=pos)
            raw = data[pos:n]
            hk = keys.get(raw)
            if hk is None:
                hk = text(raw)
                keys[raw] = hk
            pos = n
            v = data[pos]
            if v < 0x80:
                pos += 1
            else:
                v, pos = slow32(data, pos)
            if v & 1:
                if v != 1:
                    raise InvalidValueError("negative header value length", offset=pos)
                headers = ((hk, None),)
            else:
                n = pos + (v >> 1)
                if n > rec_end:
                    raise CorruptBatchError("header value overruns its record", offset=pos)
                headers = ((hk, data[pos:n]),)
                pos = n
        else:
            if v >= 0x80:
                v, pos = slow32(data, pos - 1)
            if v & 1:
                raise InvalidValueError(f"negative header count {(v >> 1) ^ -1}", offset=pos)
            hc = v >> 1
            if hc > rec_end - pos:
                raise CorruptBatchError(f"header count {hc} exceeds the record's remaining bytes", offset=pos)
            headers, pos = decode_headers(data, pos, rec_end, hc, text, keys)
        if pos != rec_end:
            raise CorruptBatchError(f"record fields end at byte {pos}, its length says {rec_end}", offset=pos)
        if by_init:
            out[i] = rec_cls(
                base_offset + ((od >> 1) ^ -(od & 1)),
                base_timestamp + ((tsd >> 1) ^ -(tsd & 1)) if log_append_time is None else log_append_time,
                key,
                value,
                headers,
            )
            continue
        r = new(rec_cls)
        r.offset = base_offset + ((od >> 1) ^ -(od & 1))
        r.timestamp = log_append_time if lat else base_timestamp + ((tsd >> 1) ^ -(tsd & 1))
        r.key = key
        r.value = value
        r.headers = headers
        out[i] = r
    return out, pos


def _as_bytes(obj: object, what: str) -> bytes:
    """Slow path of the encoder: a bytes-like key/value/header value that is not ``bytes``."""
    if isinstance(obj, str):
        raise EncodeError(f"{what} must be bytes-like or None, not str")
    try:
        return memoryview(obj).tobytes()  # type: ignore[arg-type]  # any buffer-protocol object is fine
    except TypeError:
        raise EncodeError(f"{what} must be bytes-like or None, not {type(obj).__name__}") from None


def header_key_bytes(key: object) -> bytes:
    """A header key as written: varint length + UTF-8 bytes."""
    if type(key) is not str:
        raise EncodeError(f"header key must be str, not {type(key).__name__}")
    raw = key.encode("utf-8")
    return varint_bytes(len(raw)) + raw


def _encode_records_v2_py(
    out: bytearray,
    records: Sequence[object],
    base_timestamp: int,
    default_timestamp: int,
    offset_deltas: Sequence[int] | None,
) -> tuple[int, int]:
    """Append records to ``out`` as the body of a v2 batch: ``(min_timestamp, max_timestamp)``.

    ``records`` items are ``(key, value, headers, timestamp)`` tuples (the fast path), shorter
    tuples, or objects with those attributes. Timestamp deltas are relative to
    ``base_timestamp``; offset deltas are ``0..n-1`` unless ``offset_deltas`` is given. Raises
    :class:`EncodeError` for values that cannot be written; ``TypeError`` / ``ValueError``
    from exotic inputs are left to the caller to wrap. Timestamps are range-checked by the
    caller from the returned minimum and maximum.
    """
    if offset_deltas is not None and len(offset_deltas) != len(records):
        raise EncodeError(f"{len(offset_deltas)} offset deltas for {len(records)} records")
    table = _UVARINT_TABLE
    limit = _TABLE_LIMIT
    slow = uvarint_bytes
    fields = record_fields
    join = b"".join
    header_keys: dict[object, bytes] = {}
    min_ts = max_ts = base_timestamp
    i = -1
    for r in records:
        i += 1
        if type(r) is tuple and len(r) == 4:
            key, value, headers, ts = r
        else:
            key, value, headers, ts = fields(r)
        if ts is None:
            ts = default_timestamp
        if ts > max_ts:
            max_ts = ts
        elif ts < min_ts:
            min_ts = ts
        d = ts - base_timestamp
        z = (d << 1) ^ (d >> 63)
        tsb = table[z] if z < limit else slow(z & 0xFFFFFFFFFFFFFFFF)
        if offset_deltas is None:
            z = i << 1
        else:
            d = offset_deltas[i]
            z = (d << 1) ^ (d >> 31)
        odb = table[z] if z < limit else slow(z)
        if key is None:
            kb = b"\x01"
            key = b""
        else:
            if type(key) is not bytes:
                key = _as_bytes(key, "key")
            z = len(key) << 1
            kb = table[z] if z < limit else slow(z)
        if value is None:
            vb = b"\x01"
            value = b""
        else:
            if type(value) is not bytes:
                value = _as_bytes(value, "value")
            z = len(value) << 1
            vb = table[z] if z < limit else slow(z)
        if not headers:
            body = join((b"\x00", tsb, odb, kb, key, vb, value, b"\x00"))
        elif len(headers) == 1:
            ((hk, hv),) = headers
            hkp = header_keys.get(hk)
            if hkp is None:
                hkp = header_keys[hk] = header_key_bytes(hk)
            if hv is None:
                body = join((b"\x00", tsb, odb, kb, key, vb, value, b"\x02", hkp, b"\x01"))
            else:
                if type(hv) is not bytes:
                    hv = _as_bytes(hv, "header value")
                z = len(hv) << 1
                body = join(
                    (
                        b"\x00",
                        tsb,
                        odb,
                        kb,
                        key,
                        vb,
                        value,
                        b"\x02",
                        hkp,
                        table[z] if z < limit else slow(z),
                        hv,
                    )
                )
        else:
            z = len(headers) << 1
            parts = [b"\x00", tsb, odb, kb, key, vb, value, table[z] if z < limit else slow(z)]
            for hk, hv in headers:
                hkp = header_keys.get(hk)
                if hkp is None:
                    hkp = header_keys[hk] = header_key_bytes(hk)
                parts.append(hkp)
                if hv is None:
                    parts.append(b"\x01")
                else:
                    if type(hv) is not bytes:
                        hv = _as_bytes(hv, "header value")
                    z = len(hv) << 1
                    parts.append(table[z] if z < limit else slow(z))
                    parts.append(hv)
            body = join(parts)
        z = len(body) << 1
        out += table[z] if z < limit else slow(z)
        out += body
    return min_ts, max_ts


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


def decode_legacy_message(data: B, pos: int, end: int) -> tuple[LegacyMessage, int]:
    """Parse one complete legacy message at ``pos``: ``(fields, position after it)``.

    Checks that the message fits ``end``, that its magic is 0 or 1, and that the key and value
    use exactly the declared size. Does not check the CRC (the caller decides).
    """
    if end - pos < 12 + 14:
        raise CorruptBatchError(f"legacy message needs at least 26 bytes, {end - pos} left", offset=pos)
    magic = data[pos + 16]
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


def legacy_record(data: B, key_pos: int, end: int, offset: int, timestamp: int) -> Record[B]:
    """The record of an uncompressed legacy message whose header the caller has read.

    ``key_pos`` is where the key length sits (18 bytes into a v0 message, 26 into v1) and
    ``end`` where the message ends; the key and value must fill it exactly.
    """
    if end - key_pos < 8:
        raise CorruptBatchError("legacy message too short for its key and value lengths", offset=key_pos)
    (klen,) = _I32.unpack_from(data, key_pos)
    p = key_pos + 4
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
    if NATIVE_RECORD:
        return Record(offset, timestamp, key, value, EMPTY_HEADERS)
    r: Record[B] = _new_object(Record)
    r.offset = offset
    r.timestamp = timestamp
    r.key = key
    r.value = value
    r.headers = EMPTY_HEADERS
    return r


def decode_legacy_message_set(data: B, pos: int, end: int, verify_crc: bool) -> list[LegacyMessage]:
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


# ------------------------------------------------------------------------------------------------
# flavour selection: the mypyc-compiled twin of the v2 loops, when it was built
# ------------------------------------------------------------------------------------------------


def _load_native() -> ModuleType | None:
    """``_hot_native`` if it is a compiled extension (and ``KAFKA_WIRE_PURE`` is not set)."""
    return compiled_module("kafka_wire.records._hot_native")


NATIVE: ModuleType | None = _load_native()
"""The compiled flavour in use, or ``None`` (pure Python). Tests swap it to compare the two."""


def decode_records_v2(
    data: B,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    text: Callable[[B], str],
    keys: KeyCache,
) -> tuple[list[Record[B]], int]:
    """Decode ``count`` v2 records from ``data[pos:end]``: ``(records, position after the last)``.

    Each record must use exactly the bytes its length varint declares. The record timestamp is
    ``log_append_time`` when that is not ``None`` (LogAppendTime batches), otherwise
    ``base_timestamp + timestampDelta``. ``text`` turns a header key slice into ``str``
    (:func:`text_of_bytes` or :func:`text_of_view`) and ``keys`` remembers the results (a fresh
    dict for ``bytes``; :data:`NO_KEY_CACHE` for views, whose slices may not be hashable).
    Runs the compiled loop for ``bytes`` input with a dict cache when it is built.
    """
    native = NATIVE
    if native is not None and type(data) is bytes and type(keys) is dict:
        result: tuple[list[Record[B]], int] = native.decode_records_v2(
            data, pos, end, count, base_offset, base_timestamp, log_append_time, keys
        )
        return result
    # The records are a tree of new objects without cycles: collections triggered by their
    # allocations find nothing, so a large list is built with the collector paused, as the
    # message codec does for large inputs (kafka_wire.codec.runtime explains the trade-off).
    if count >= GC_PAUSE_MIN_RECORDS and gc.isenabled():
        gc.disable()
        try:
            return _decode_records_v2_py(
                data, pos, end, count, base_offset, base_timestamp, log_append_time, text, keys
            )
        finally:
            gc.enable()
    return _decode_records_v2_py(data, pos, end, count, base_offset, base_timestamp, log_append_time, text, keys)


def encode_records_v2(
    out: bytearray,
    records: Sequence[object],
    base_timestamp: int,
    default_timestamp: int,
    offset_deltas: Sequence[int] | None,
) -> tuple[int, int]:
    """Append records to ``out`` as the body of a v2 batch: ``(min_timestamp, max_timestamp)``.

    See :func:`_encode_records_v2_py`; runs the compiled loop when it is built.
    """
    body, min_ts, max_ts = encode_records_v2_body(records, base_timestamp, default_timestamp, offset_deltas)
    out += body
    return min_ts, max_ts


def encode_records_v2_body(
    records: Sequence[object],
    base_timestamp: int,
    default_timestamp: int,
    offset_deltas: Sequence[int] | None,
) -> tuple[bytes | bytearray, int, int]:
    """The body of a v2 batch (its records) and ``(min_timestamp, max_timestamp)``.

    The compiled loop (when built) handles lists and tuples of the usual record shapes and hands
    anything else back to :func:`_encode_records_v2_py`, which gives the same bytes or error.
    """
    native = NATIVE
    if native is not None and type(records) in (list, tuple):
        result: tuple[bytes, int, int] | None = native.encode_records_v2(
            records, base_timestamp, default_timestamp, offset_deltas
        )
        if result is not None:
            return result
    body = bytearray()
    min_ts, max_ts = _encode_records_v2_py(body, records, base_timestamp, default_timestamp, offset_deltas)
    return body, min_ts, max_ts
