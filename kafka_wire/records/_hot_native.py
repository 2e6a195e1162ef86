"""The records hot loops written for mypyc: v2 record decoding and encoding over ``bytes``.

Hand-written. This is the compiled flavour of :mod:`kafka_wire.records._hot`: the same results,
byte for byte and object for object, and the same errors. :mod:`_hot` uses it only when this
module was compiled (``KAFKA_WIRE_COMPILE=1``, see ``docs/compiled.md``) and the input is
``bytes``; zero-copy ``memoryview`` reads stay on the pure-Python loop. Run uncompiled, this
source is slower than ``_hot.py``: it is written for mypyc, not for CPython's interpreter.

Idioms that compile into fast code, and why they are used here:

* cursors and lengths are ``i64`` (unboxed C integers); record values (offsets, timestamps,
  zigzag payloads) stay ``int``, whose small values are also unboxed, because a varlong carries
  64 bits and ``i64`` arithmetic must not overflow;
* bytes are read one at a time (``data[pos]`` on ``bytes`` with an ``i64`` index is a C
  load); no ``struct`` calls (mypyc calls ``Struct.unpack_from`` generically);
* the encoder writes into a ``librt.strings.BytesWriter`` and only ever ``append``s ``u8``
  values (other argument types silently take a slow path: ``tests/records/test_native.py``
  checks the generated C for that).

Decoders create records with ``object.__new__`` and slot stores, as ``_hot`` does: ``Record``
is an ordinary (interpreted) class.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any, Final

from librt.strings import BytesWriter
from mypy_extensions import i64, u8

from kafka_wire.errors import CorruptBatchError, EncodeError, InvalidValueError
from kafka_wire.records._record_native import Record
from kafka_wire.records.record import EMPTY_HEADERS, record_fields

_U64: Final = 0xFFFFFFFFFFFFFFFF


def _slow_uvarint32(data: bytes, pos: i64) -> tuple[int, i64]:
    """Unsigned varint of at most 5 bytes keeping the low 32 bits: ``(value, new_pos)``."""
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


def _slow_uvarint64(data: bytes, pos: i64) -> tuple[int, i64]:
    """Unsigned varint of at most 10 bytes keeping the low 64 bits: ``(value, new_pos)``."""
    value = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & _U64, pos
        shift += 7
        if shift > 63:
            raise InvalidValueError("varlong longer than 10 bytes", offset=pos)


def _zigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


def _headers(
    data: bytes, pos: i64, rec_end: i64, count: i64, keys: dict[bytes, str]
) -> tuple[tuple[tuple[str, bytes | None], ...], i64]:
    """``count`` headers ending by ``rec_end``: ``(headers, new_pos)``."""
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        v: int = data[pos]
        if v < 0x80:
            pos += 1
        else:
            v, pos = _slow_uvarint32(data, pos)
        if v & 1:
            raise InvalidValueError("null or negative header key length", offset=pos)
        n: i64 = pos + i64(v >> 1)
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
            v, pos = _slow_uvarint32(data, pos)
        if v & 1:
            if v != 1:
                raise InvalidValueError("negative header value length", offset=pos)
            headers.append((key, None))
        else:
            n = pos + i64(v >> 1)
            if n > rec_end:
                raise CorruptBatchError("header value overruns its record", offset=pos)
            headers.append((key, data[pos:n]))
            pos = n
    return tuple(headers), pos


def _same_bytes(data: bytes, pos: i64, other: bytes, n: i64) -> bool:
    """Whether ``data[pos:pos + n] == other`` (``len(other) == n``, bounds checked), without slicing."""
    j: i64 = 0
    while j < n:
        if data[pos + j] != other[j]:
            return False
        j += 1
    return True


GC_PAUSE_MIN_RECORDS: Final = 256
"""``decode_records_v2`` pauses the cyclic GC for batches of at least this many records."""


class V2Records:
    """The records of one v2 batch in ``bytes``, decoded one at a time; an iterator of records.

    ``validate()`` walks every record without making any (so that a corrupt batch raises before
    its first record is seen, as the pure flavour, which decodes a whole batch at once) and
    returns the position after the last; ``rewind()`` then starts the iteration over. Iterating
    makes each record when it is asked for, so a consumer that drops records as it goes reuses
    the same memory and gives the cyclic GC nothing to walk.
    """

    data: bytes
    start: i64
    pos: i64
    end: i64
    count: i64
    index: i64
    base_offset: int
    base_timestamp: int
    lat: bool
    lat_value: int
    keys: dict[bytes, str]
    last_raw: bytes
    last_key: str

    def __init__(
        self,
        data: bytes,
        pos: i64,
        end: i64,
        count: i64,
        base_offset: int,
        base_timestamp: int,
        log_append_time: int | None,
        keys: dict[bytes, str],
    ) -> None:
        if count * 7 > end - pos:
            raise CorruptBatchError(
                f"{count} records cannot fit in {end - pos} bytes (a record takes at least 7)", offset=pos
            )
        if end > len(data):
            raise IndexError("records end past the buffer")
        self.data = data
        self.start = pos
        self.pos = pos
        self.end = end
        self.count = count
        self.index = 0
        self.base_offset = base_offset
        self.base_timestamp = base_timestamp
        self.lat = log_append_time is not None
        self.lat_value = 0 if log_append_time is None else log_append_time
        self.keys = keys
        self.last_raw = b""
        self.last_key = ""

    def validate(self) -> i64:
        """Walk (and check) every remaining record without making one: the position after them."""
        while self.index < self.count:
            self.next_record(False)
        return self.pos

    def rewind(self) -> None:
        self.pos = self.start
        self.index = 0

    def __iter__(self) -> V2Records:
        return self

    def __next__(self) -> Record[bytes]:
        if self.index >= self.count:
            raise StopIteration
        r = self.next_record(True)
        assert r is not None
        return r

    def next_record(self, make: bool) -> Record[bytes] | None:
        """Decode the next record (the caller checks that one is left); ``None`` unless ``make``."""
        data = self.data
        pos = self.pos
        end = self.end
        i = self.index
        keys = self.keys
        if pos >= end:
            raise CorruptBatchError(f"batch ends after {i} of {self.count} declared records", offset=pos)
        v: int = data[pos]
        if v < 0x80:
            pos += 1
        else:
            b: int = data[pos + 1]
            if b < 0x80:
                v = (v & 0x7F) | (b << 7)
                pos += 2
            else:
                v, pos = _slow_uvarint32(data, pos)
        rec_end: i64 = pos + i64(_zigzag(v))
        if rec_end > end:
            raise CorruptBatchError(
                f"record length {_zigzag(v)} overruns the batch ({end - pos} bytes left)", offset=pos
            )
        # attributes (unused) then timestampDelta
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
                    tsd, pos = _slow_uvarint64(data, pos + 1)
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
                    od, pos = _slow_uvarint32(data, pos)
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
                v, pos = _slow_uvarint32(data, pos)
        kpos: i64 = pos
        klen: i64 = -1
        if v & 1:
            if v != 1:
                raise InvalidValueError(f"negative key length {(v >> 1) ^ -1}", offset=pos)
        else:
            klen = i64(v >> 1)
            n: i64 = pos + klen
            if n > rec_end:
                raise CorruptBatchError(f"key of {v >> 1} bytes overruns its record", offset=pos)
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
                v, pos = _slow_uvarint32(data, pos)
        vpos: i64 = pos
        vlen: i64 = -1
        if v & 1:
            if v != 1:
                raise InvalidValueError(f"negative value length {(v >> 1) ^ -1}", offset=pos)
        else:
            vlen = i64(v >> 1)
            n = pos + vlen
            if n > rec_end:
                raise CorruptBatchError(f"value of {v >> 1} bytes overruns its record", offset=pos)
            pos = n
        # headers: none, exactly one (inline), or the general loop
        v = data[pos]
        pos += 1
        headers: tuple[tuple[str, bytes | None], ...] | None
        hk: str = ""
        hpos: i64 = 0
        hlen: i64 = -1
        if v == 0:
            headers = EMPTY_HEADERS
        elif v == 2:
            v = data[pos]
            if v < 0x80:
                pos += 1
            else:
                v, pos = _slow_uvarint32(data, pos)
            if v & 1:
                raise InvalidValueError("null or negative header key length", offset=pos)
            n = pos + i64(v >> 1)
            if n > rec_end:
                raise CorruptBatchError("header key overruns its record", offset=pos)
            last_raw = self.last_raw
            if n - pos == len(last_raw) and _same_bytes(data, pos, last_raw, n - pos):
                hk = self.last_key
            else:
                raw = data[pos:n]
                hk_cached = keys.get(raw)
                if hk_cached is None:
                    hk = raw.decode()
                    keys[raw] = hk
                else:
                    hk = hk_cached
                self.last_raw = raw
                self.last_key = hk
            pos = n
            v = data[pos]
            if v < 0x80:
                pos += 1
            else:
                v, pos = _slow_uvarint32(data, pos)
            if v & 1:
                if v != 1:
                    raise InvalidValueError("negative header value length", offset=pos)
            else:
                hpos = pos
                hlen = i64(v >> 1)
                n = pos + hlen
                if n > rec_end:
                    raise CorruptBatchError("header value overruns its record", offset=pos)
                pos = n
            headers = None
        else:
            if v >= 0x80:
                v, pos = _slow_uvarint32(data, pos - 1)
            if v & 1:
                raise InvalidValueError(f"negative header count {(v >> 1) ^ -1}", offset=pos)
            hc: i64 = i64(v >> 1)
            if hc > rec_end - pos:
                raise CorruptBatchError(f"header count {hc} exceeds the record's remaining bytes", offset=pos)
            headers, pos = _headers(data, pos, rec_end, hc, keys)
        if pos != rec_end:
            raise CorruptBatchError(f"record fields end at byte {pos}, its length says {rec_end}", offset=pos)
        self.pos = pos
        self.index = i + 1
        if not make:
            return None
        offset = self.base_offset + ((od >> 1) ^ -(od & 1))
        timestamp = self.lat_value if self.lat else self.base_timestamp + ((tsd >> 1) ^ -(tsd & 1))
        if headers is None:
            headers = ((hk, None if hlen < 0 else data[hpos : hpos + hlen]),)
        return Record(
            offset,
            timestamp,
            None if klen < 0 else data[kpos : kpos + klen],
            None if vlen < 0 else data[vpos : vpos + vlen],
            headers,
        )


def decode_records_v2(
    data: bytes,
    pos: i64,
    end: i64,
    count: i64,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    keys: dict[bytes, str],
) -> tuple[list[Record[bytes]], i64]:
    """Compiled twin of ``_hot.decode_records_v2`` for ``bytes`` input and a key-text dict.

    Records hold no reference cycles, so for large batches the cyclic GC is paused while the list
    is made (and restored after): otherwise every 700 new records trigger a collection that walks
    them, and the survivors are promoted towards full-heap collections. No Python code runs in
    the loop (no finalizer can run while the GC is paused), so no other thread sees the pause.
    """
    records = V2Records(data, pos, end, count, base_offset, base_timestamp, log_append_time, keys)
    out: list[Record[bytes]] = []
    paused = count >= GC_PAUSE_MIN_RECORDS and gc.isenabled()
    if paused:
        gc.disable()
    try:
        while records.index < count:
            r = records.next_record(True)
            assert r is not None
            out.append(r)
    finally:
        if paused:
            gc.enable()
    return out, records.pos


# ------------------------------------------------------------------------------------------------
# encoding
# ------------------------------------------------------------------------------------------------


def _uvarint_size(z: int) -> i64:
    n: i64 = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


def _put_uvarint(w: BytesWriter, z: int) -> None:
    while z >= 0x80:
        w.append(u8((z & 0x7F) | 0x80))
        z >>= 7
    w.append(u8(z))


def _as_bytes(obj: object, what: str) -> bytes:
    if isinstance(obj, str):
        raise EncodeError(f"{what} must be bytes-like or None, not str")
    try:
        return memoryview(obj).tobytes()  # type: ignore[arg-type]  # any buffer-protocol object is fine
    except TypeError:
        raise EncodeError(f"{what} must be bytes-like or None, not {type(obj).__name__}") from None


def _header_key(key: object) -> bytes:
    if type(key) is not str:
        raise EncodeError(f"header key must be str, not {type(key).__name__}")
    return key.encode("utf-8")


def encode_records_v2(
    out: bytearray,
    records: Sequence[object],
    base_timestamp: int,
    default_timestamp: int,
    offset_deltas: Sequence[int] | None,
) -> tuple[int, int]:
    """Compiled twin of ``_hot.encode_records_v2``."""
    w = BytesWriter()
    header_keys: dict[str, bytes] = {}
    min_ts = base_timestamp
    max_ts = base_timestamp
    i: i64 = 0
    for r in records:
        if type(r) is tuple and len(r) == 4:
            t: tuple[Any, Any, Any, Any] = r
        else:
            t = record_fields(r)
        key_o: object = t[0]
        value_o: object = t[1]
        headers: Any = t[2]
        ts_a: Any = t[3]
        ts: int = default_timestamp if ts_a is None else ts_a
        if ts > max_ts:
            max_ts = ts
        elif ts < min_ts:
            min_ts = ts
        d = ts - base_timestamp
        tsz = ((d << 1) ^ (d >> 63)) & _U64
        if offset_deltas is None:
            odz = int(i) << 1
        else:
            od = offset_deltas[i]
            odz = (od << 1) ^ (od >> 31)
        key: bytes = b""
        value: bytes = b""
        klen: i64 = -1
        vlen: i64 = -1
        if key_o is not None:
            key = key_o if type(key_o) is bytes else _as_bytes(key_o, "key")
            klen = len(key)
        if value_o is not None:
            value = value_o if type(value_o) is bytes else _as_bytes(value_o, "value")
            vlen = len(value)
        size: i64 = 1 + _uvarint_size(tsz) + _uvarint_size(odz)
        size += 1 if klen < 0 else _uvarint_size(int(klen) << 1) + klen
        size += 1 if vlen < 0 else _uvarint_size(int(vlen) << 1) + vlen
        hparts: list[bytes | None] = []
        if headers:
            size += _uvarint_size(len(headers) << 1)
            for h in headers:
                hk, hv = h
                hkb = header_keys.get(hk)
                if hkb is None:
                    hkb = _header_key(hk)
                    header_keys[hk] = hkb
                size += _uvarint_size(len(hkb) << 1) + len(hkb)
                hparts.append(hkb)
                if hv is None:
                    size += 1
                    hparts.append(None)
                else:
                    hvb: bytes = hv if type(hv) is bytes else _as_bytes(hv, "header value")
                    size += _uvarint_size(len(hvb) << 1) + len(hvb)
                    hparts.append(hvb)
        else:
            size += 1
        _put_uvarint(w, int(size) << 1)
        w.append(u8(0))
        _put_uvarint(w, tsz)
        _put_uvarint(w, odz)
        if klen < 0:
            w.append(u8(1))
        else:
            _put_uvarint(w, int(klen) << 1)
            w.write(key)
        if vlen < 0:
            w.append(u8(1))
        else:
            _put_uvarint(w, int(vlen) << 1)
            w.write(value)
        if hparts:
            _put_uvarint(w, len(hparts))  # two parts per header: (count << 1)
            j: i64 = 0
            while j < len(hparts):
                hkb2 = hparts[j]
                assert hkb2 is not None
                _put_uvarint(w, len(hkb2) << 1)
                w.write(hkb2)
                hvb2 = hparts[j + 1]
                if hvb2 is None:
                    w.append(u8(1))
                else:
                    _put_uvarint(w, len(hvb2) << 1)
                    w.write(hvb2)
                j += 2
        else:
            w.append(u8(0))
        i += 1
    if offset_deltas is not None and len(offset_deltas) != i:
        raise EncodeError(f"{len(offset_deltas)} offset deltas for {i} records")
    out += w.getvalue()
    return min_ts, max_ts
