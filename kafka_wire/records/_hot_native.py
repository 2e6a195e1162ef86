"""The records hot loops written for mypyc: v2 record decoding and encoding over ``bytes``.

Hand-written. This is the compiled flavour of :mod:`kafka_wire.records._hot`: the same results,
byte for byte and object for object, and the same errors. :mod:`_hot` uses it only when this
module was compiled (``KAFKA_WIRE_COMPILE=1``, see ``docs/internals/compiled.md``) and the input is
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
from typing import Final, cast

from librt.strings import BytesWriter
from mypy_extensions import i64, u8

from kafka_wire.errors import CorruptBatchError, EncodeError, InvalidValueError
from kafka_wire.records._record_native import Record
from kafka_wire.records.record import EMPTY_HEADERS, GC_PAUSE_MIN_RECORDS, record_fields

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


def _size64(z: i64) -> i64:
    """Bytes of the varint of ``z`` (``0 <= z < 2**63``)."""
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


def _cached_key(key: object, header_keys: dict[str, bytes]) -> bytes:
    """``key`` (a ``str``, checked by the caller) as UTF-8, remembered in ``header_keys``."""
    text = cast(str, key)
    data = header_keys.get(text)
    if data is None:
        data = _header_key(text)
        header_keys[text] = data
    return data


_ZZ_MAX: Final = (1 << 62) - 1
"""Timestamp deltas within +-(2**62 - 1) (a C integer in mypyc) zigzag into a non-negative ``i64``; others take the pure loop."""


def encode_records_v2(
    records: object,
    base_timestamp: int,
    default_timestamp: int,
    offset_deltas: Sequence[int] | None,
) -> tuple[bytes, int, int] | None:
    """Compiled twin of ``_hot.encode_records_v2``: ``(body, min_timestamp, max_timestamp)``.

    ``records`` is a list or a tuple. Returns ``None`` (nothing written anywhere) for inputs
    outside the shapes it handles exactly as the pure loop does: a timestamp that is not an
    ``int``, a delta beyond +-2**62, a header that is not a ``(str, value)`` tuple, headers that
    are not a list or tuple, offset deltas whose count differs from the records'; the caller then
    runs the pure loop, which gives the result or the error.
    """
    seq: list[object] = (
        cast(list[object], records) if type(records) is list else list(cast(tuple[object, ...], records))
    )
    n_records: i64 = len(seq)
    if offset_deltas is not None and len(offset_deltas) != n_records:
        return None
    w = BytesWriter()
    header_keys: dict[str, bytes] = {}
    last_hk: object = None
    last_hkb = b""
    hbuf: list[object] = []
    min_ts = base_timestamp
    max_ts = base_timestamp
    i: i64 = 0
    while i < n_records:
        r = seq[i]
        key_o: object
        value_o: object
        headers_o: object = None
        ts_o: object = None
        if type(r) is tuple:
            t = cast(tuple[object, ...], r)
            nt: i64 = len(t)
            if nt == 4:
                key_o = t[0]
                value_o = t[1]
                headers_o = t[2]
                ts_o = t[3]
            elif nt == 2:
                key_o = t[0]
                value_o = t[1]
            elif nt == 3:
                key_o = t[0]
                value_o = t[1]
                headers_o = t[2]
            else:
                return None
        else:
            f = record_fields(r)
            key_o = f[0]
            value_o = f[1]
            headers_o = f[2]
            ts_o = f[3]
        if ts_o is None:
            ts = default_timestamp
        elif type(ts_o) is int:
            ts = ts_o
        else:
            return None
        if ts > max_ts:
            max_ts = ts
        elif ts < min_ts:
            min_ts = ts
        d = ts - base_timestamp
        if d > _ZZ_MAX or d < -_ZZ_MAX:
            return None
        d64: i64 = i64(d)
        tsz: i64 = (d64 << 1) ^ (d64 >> 63)
        odz: i64
        if offset_deltas is None:
            odz = i << 1
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
        size: i64 = 1 + _size64(tsz) + _size64(odz)
        if klen < 0:
            size += 1
        else:
            size += _size64(klen << 1) + klen
        if vlen < 0:
            size += 1
        else:
            size += _size64(vlen << 1) + vlen
        # headers: none, one (kept in locals), or several (converted into hbuf first)
        nh: i64 = 0
        h0: object = None
        hseq: list[object] = hbuf
        if type(headers_o) is list:
            hseq = cast(list[object], headers_o)
            nh = len(hseq)
        elif type(headers_o) is tuple:
            htup = cast(tuple[object, ...], headers_o)
            nh = len(htup)
            if nh == 1:
                h0 = htup[0]
            elif nh > 1:
                hseq = list(htup)
        elif headers_o is not None and headers_o:
            return None
        hkb = b""
        hvb = b""
        hvlen: i64 = -1
        if nh == 1:
            if h0 is None:
                h0 = hseq[0]
            if type(h0) is not tuple:
                return None
            ht = cast(tuple[object, ...], h0)
            if len(ht) != 2:
                return None
            hk = ht[0]
            if type(hk) is not str:
                return None
            if hk is last_hk:
                hkb = last_hkb
            else:
                hkb = _cached_key(hk, header_keys)
                last_hk = hk
                last_hkb = hkb
            hv = ht[1]
            if hv is not None:
                hvb = hv if type(hv) is bytes else _as_bytes(hv, "header value")
                hvlen = len(hvb)
            size += 1 + _size64(i64(len(hkb)) << 1) + len(hkb)
            if hvlen < 0:
                size += 1
            else:
                size += _size64(hvlen << 1) + hvlen
        elif nh > 1:
            hbuf.clear()
            size += _size64(nh << 1)
            j: i64 = 0
            while j < nh:
                h = hseq[j]
                if type(h) is not tuple:
                    return None
                ht = cast(tuple[object, ...], h)
                if len(ht) != 2:
                    return None
                hk = ht[0]
                if type(hk) is not str:
                    return None
                hkb = _cached_key(hk, header_keys)
                size += _size64(i64(len(hkb)) << 1) + len(hkb)
                hbuf.append(hkb)
                hv = ht[1]
                if hv is None:
                    size += 1
                    hbuf.append(None)
                else:
                    hvb = hv if type(hv) is bytes else _as_bytes(hv, "header value")
                    size += _size64(i64(len(hvb)) << 1) + len(hvb)
                    hbuf.append(hvb)
                j += 1
        else:
            size += 1
        _put64(w, size << 1)
        w.append(u8(0))
        if tsz < 0x80:
            w.append(u8(tsz))
        else:
            _put64(w, tsz)
        if odz < 0x80:
            w.append(u8(odz))
        else:
            _put64(w, odz)
        if klen < 0:
            w.append(u8(1))
        else:
            _put64(w, klen << 1)
            w.write(key)
        if vlen < 0:
            w.append(u8(1))
        else:
            _put64(w, vlen << 1)
            w.write(value)
        if nh == 1:
            w.append(u8(2))
            _put64(w, i64(len(hkb)) << 1)
            w.write(hkb)
            if hvlen < 0:
                w.append(u8(1))
            else:
                _put64(w, hvlen << 1)
                w.write(hvb)
        elif nh > 1:
            _put64(w, nh << 1)
            j = 0
            while j < len(hbuf):
                part = hbuf[j]
                if part is None:
                    w.append(u8(1))
                else:
                    pb = cast(bytes, part)
                    _put64(w, i64(len(pb)) << 1)
                    w.write(pb)
                j += 1
        else:
            w.append(u8(0))
        i += 1
    return w.getvalue(), min_ts, max_ts
