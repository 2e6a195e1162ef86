"""Mutations of record batches: rebuilt under another magic and codec, or changed inside and
closed again (lengths, record count and CRC recomputed, the CRC most of the time).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import crc32c as _crc32c

from kafka_wire.errors import DecodeError, EncodeError
from kafka_wire.records import NewRecord, build_batch, read_batches
from kafka_wire.records.compression import compress, decompress
from kafka_wire.testing.mutations.primitives import (
    I8,
    I16,
    I32,
    I64,
    INT32_MAX,
    U32,
    overlong,
    read_zigzag,
    zigzag,
)
from kafka_wire.testing.mutations.wire import Token

if TYPE_CHECKING:
    from kafka_wire.testing.mutator import Mutator

#: Chance that a mutation inside a record batch recomputes the CRC (else it is left wrong).
CRC_FIX_CHANCE: Final = 0.85
#: Decompressed payloads the mutator opens are capped at this many bytes.
MAX_INFLATE: Final = 1 << 20


_V2_FIELDS: Final = (  # (name, offset, struct) of the v2 batch header
    ("base_offset", 0, I64),
    ("batch_length", 8, I32),
    ("partition_leader_epoch", 12, I32),
    ("magic", 16, I8),
    ("attributes", 21, I16),
    ("last_offset_delta", 23, I32),
    ("base_timestamp", 27, I64),
    ("max_timestamp", 35, I64),
    ("producer_id", 43, I64),
    ("producer_epoch", 51, I16),
    ("base_sequence", 53, I32),
    ("records_count", 57, I32),
)
_V2_HEADER: Final = 61
#: Attribute bits a mutation flips: codec (including the unknown ids 5 to 7), timestamp type,
#: transactional, control, delete horizon, and bits Kafka does not define.
_ATTRIBUTE_BITS: Final = (0x01, 0x02, 0x04, 0x05, 0x06, 0x07, 0x08, 0x10, 0x20, 0x40, 0x80, 0x100, 0x8000)


def split_batches(data: bytes) -> list[bytes] | None:
    """The batches of a records payload by their size fields, or None when they do not add up."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 17:
            return None
        (size,) = I32.unpack_from(data, pos + 8)
        end = pos + 12 + size
        if size < 5 or end > len(data):
            return None
        out.append(data[pos:end])
        pos = end
    return out


def _fix_v2(batch: bytearray, fix_crc: bool) -> bytes:
    I32.pack_into(batch, 8, len(batch) - 12)
    if fix_crc:
        U32.pack_into(batch, 17, _crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def _fix_legacy(msg: bytearray, fix_crc: bool) -> bytes:
    I32.pack_into(msg, 8, len(msg) - 12)
    if fix_crc:
        U32.pack_into(msg, 12, zlib.crc32(bytes(msg[16:])))
    return bytes(msg)


def _interesting_int(m: Mutator, width: int, value: int) -> int:
    bits = 8 * width
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return m.rng.choice((lo, hi, 0, -1, 1, value + 1, value - 1, value * 2 + 1 if value else 2))


def _batch_header_field(m: Mutator, batch: bytes) -> bytes:
    """One header field of a batch set to a boundary or neighbour value (any magic)."""
    buf = bytearray(batch)
    if batch[16] >= 2 and len(batch) >= _V2_HEADER:
        name, at, s = m.rng.choice(_V2_FIELDS)
        (value,) = s.unpack_from(buf, at)
        if name == "magic":
            new = m.rng.choice((0, 1, 3, -1))
        elif name == "attributes":
            flipped = (value ^ m.rng.choice(_ATTRIBUTE_BITS)) & 0xFFFF
            new = flipped - 0x10000 if flipped >= 0x8000 else flipped
        else:
            new = _interesting_int(m, s.size, value)
        s.pack_into(buf, at, max(-(1 << (8 * s.size - 1)), min(new, (1 << (8 * s.size - 1)) - 1)))
        return _crc_maybe(m, buf, 21, 17, crc32c=True)
    fields = [("offset", 0, I64), ("size", 8, I32), ("magic", 16, I8), ("attributes", 17, I8)]
    if batch[16] == 1 and len(batch) >= 26:
        fields.append(("timestamp", 18, I64))
    key_at = 18 + (8 if batch[16] == 1 else 0)
    if len(batch) >= key_at + 4:
        fields.append(("key_length", key_at, I32))
    name, at, s = m.rng.choice(fields)
    if len(buf) < at + s.size:
        return m.mutate_bytes(batch)
    (value,) = s.unpack_from(buf, at)
    new = m.rng.choice((0, 1, 2, 3, -1)) if name == "magic" else _interesting_int(m, s.size, value)
    if name == "attributes":
        new = m.rng.choice((1, 2, 3, 4, 5, 7, 8, 9, -1))
    s.pack_into(buf, at, max(-(1 << (8 * s.size - 1)), min(new, (1 << (8 * s.size - 1)) - 1)))
    return _crc_maybe(m, buf, 16, 12, crc32c=False)


def _crc_maybe(m: Mutator, buf: bytearray, start: int, at: int, *, crc32c: bool) -> bytes:
    if len(buf) >= start and m.rng.random() < CRC_FIX_CHANCE:
        crc = _crc32c.crc32c(bytes(buf[start:])) if crc32c else zlib.crc32(bytes(buf[start:]))
        U32.pack_into(buf, at, crc)
        m.applied.append("crc_fixed")
    return bytes(buf)


def _batch_crc_wrong(m: Mutator, batch: bytes) -> bytes:
    buf = bytearray(batch)
    at = 17 if batch[16] >= 2 else 12
    if len(buf) >= at + 4:
        buf[at + m.rng.randrange(4)] ^= 1 << m.rng.randrange(8)
    return bytes(buf)


def _records_of(batch: bytes) -> list[NewRecord] | None:
    try:
        return [
            NewRecord(
                None if r.key is None else bytes(r.key),
                None if r.value is None else bytes(r.value),
                [(k, None if v is None else bytes(v)) for k, v in r.headers],
                r.timestamp,
            )
            for b in read_batches(batch)
            for r in b
        ]
    except (DecodeError, ValueError):
        return None


def _batch_rebuild(m: Mutator, batch: bytes) -> bytes:
    """The batch's records rebuilt under another magic and codec (every pair is reached)."""
    records = _records_of(batch)
    if records is None:
        return m.mutate_bytes(batch)
    return build_any_batch(m, records)


def build_any_batch(m: Mutator, records: list[NewRecord]) -> bytes:
    magic = m.rng.choice((0, 1, 2, 2))
    codecs = ("none", "gzip", "snappy", "lz4", "zstd") if magic == 2 else ("none", "gzip", "snappy", "lz4")
    codec = m.rng.choice(codecs)
    if magic < 2:
        records = [
            NewRecord(r.key, r.value, (), None if magic == 0 else max(r.timestamp or 0, 0)) for r in records
        ]
        if not records:
            records = [NewRecord(None, b"", (), None)]
    m.applied.append(f"magic{magic}_{codec}")
    try:
        built: bytes = build_batch(records, magic=magic, compression=codec)
    except EncodeError:
        built = build_batch(records, magic=2)
    return built


def _v2_record_tokens(section: bytes) -> list[list[Token]] | None:
    """A v2 records section as one token list per record (the first token is its length)."""
    out: list[list[Token]] = []
    pos = 0
    try:
        while pos < len(section):
            start = pos
            length, pos = read_zigzag(section, pos)
            rec = [Token("varint", section[start:pos], length)]
            end = pos + length
            if length < 0 or end > len(section):
                return None
            rec.append(Token("raw", section[pos : pos + 1]))  # attributes
            pos += 1
            for _ in range(2):  # timestamp delta, offset delta
                s = pos
                value, pos = read_zigzag(section, pos)
                rec.append(Token("varint", section[s:pos], value))
            for _ in range(2):  # key, value
                pos = _v2_blob(section, pos, rec)
            s = pos
            count, pos = read_zigzag(section, pos)
            rec.append(Token("varint", section[s:pos], count))
            for _ in range(max(0, count)):
                pos = _v2_blob(section, pos, rec)
                pos = _v2_blob(section, pos, rec)
            if pos != end:
                return None
            out.append(rec)
    except (IndexError, ValueError):
        return None
    return out


def _v2_blob(section: bytes, pos: int, rec: list[Token]) -> int:
    s = pos
    n, pos = read_zigzag(section, pos)
    rec.append(Token("varint", section[s:pos], n))
    if n > 0:
        if pos + n > len(section):
            raise ValueError("blob past the end")
        rec.append(Token("raw", section[pos : pos + n]))
        pos += n
    return pos


def _varint_token(m: Mutator, t: Token) -> None:
    value = t.info
    choice = m.rng.randrange(5)
    if choice == 0:
        t.data = zigzag(value + m.rng.choice((-1, 1)))
    elif choice == 1:
        t.data = zigzag(m.rng.choice((-1, -2, INT32_MAX, -(1 << 31), (1 << 63) - 1)))
    elif choice == 2:  # overlong: accepted up to 5 (varint) or 10 (varlong) bytes
        t.data = overlong((value << 1) ^ (value >> 63), m.rng.randint(1, 6))
    elif choice == 3:
        t.data = b"\xff" * m.rng.randint(5, 11)  # never ends within its limit
    else:
        t.data = zigzag(0)


def _v2_open(batch: bytes) -> tuple[int, bytes] | None:
    """A v2 batch's codec and its decompressed records section."""
    if len(batch) < _V2_HEADER or batch[16] != 2:
        return None
    codec = I16.unpack_from(batch, 21)[0] & 0x07
    section = batch[_V2_HEADER:]
    if codec:
        try:
            section = decompress(codec, section, magic=2, max_bytes=MAX_INFLATE)
        except (DecodeError, EncodeError, ValueError):
            return None
    return codec, section


def _v2_close(m: Mutator, batch: bytes, codec: int, section: bytes, count: int | None) -> bytes:
    payload = compress(codec, section, magic=2) if codec else section
    buf = bytearray(batch[:_V2_HEADER]) + payload
    if count is not None:
        I32.pack_into(buf, 57, count)
    fix = m.rng.random() < CRC_FIX_CHANCE
    if fix:
        m.applied.append("crc_fixed")
    return _fix_v2(buf, fix)


def _batch_record_wire(m: Mutator, batch: bytes) -> bytes:
    """One varint or blob inside a v2 record changed (inside the compression, if any)."""
    opened = _v2_open(batch)
    if opened is None:
        return _legacy_inner(m, batch)
    codec, section = opened
    records = _v2_record_tokens(section)
    if not records:
        return _batch_header_field(m, batch)
    rec = records[m.rng.randrange(len(records))]
    i = m.rng.randrange(len(rec))
    t = rec[i]
    if t.kind == "varint":
        _varint_token(m, t)
    else:
        t.data = m.mutate_bytes(t.data) if t.data else b"\x00"
    if i and m.rng.random() < 0.7:  # the record's length follows the change, usually
        rec[0].data = zigzag(sum(len(x.data) for x in rec[1:]))
    return _v2_close(m, batch, codec, b"".join(x.data for r in records for x in r), None)


def _batch_records_reorder(m: Mutator, batch: bytes) -> bytes:
    """Records dropped or duplicated, the count kept or made to follow."""
    opened = _v2_open(batch)
    if opened is None:
        return _legacy_inner(m, batch)
    codec, section = opened
    records = _v2_record_tokens(section)
    if records is None:
        return _batch_header_field(m, batch)
    if records and m.rng.random() < 0.5:
        del records[m.rng.randrange(len(records))]
    elif records:
        at = m.rng.randrange(len(records))
        records.insert(at, records[at])
    count = len(records) if m.rng.random() < 0.5 else None
    return _v2_close(m, batch, codec, b"".join(x.data for r in records for x in r), count)


def _batch_compressed_frame(m: Mutator, batch: bytes) -> bytes:
    """The compressed payload (compressing it first if it was not) changed at the byte level."""
    opened = _v2_open(batch)
    if opened is None:
        return _legacy_inner(m, batch)
    codec, section = opened
    buf = bytearray(batch[:_V2_HEADER])
    if not codec:
        codec = m.rng.randint(1, 4)
        attributes = (I16.unpack_from(buf, 21)[0] & ~0x07) | codec
        I16.pack_into(buf, 21, attributes)
    frame = compress(codec, section, magic=2)
    buf += m.mutate_bytes(frame)
    fix = m.rng.random() < CRC_FIX_CHANCE
    return _fix_v2(buf, fix)


def _legacy_inner(m: Mutator, batch: bytes) -> bytes:
    """A legacy message: a compressed wrapper's inner set mutated and recompressed, or its key or
    value length changed."""
    if len(batch) < 26 or batch[16] not in (0, 1):
        return _batch_header_field(m, batch)
    magic = batch[16]
    key_at = 18 + (8 if magic == 1 else 0)
    try:
        (key_len,) = I32.unpack_from(batch, key_at)
        value_at = key_at + 4 + max(0, key_len)
        (value_len,) = I32.unpack_from(batch, value_at)
    except struct.error:
        return _batch_header_field(m, batch)
    codec = batch[17] & 0x07
    value = batch[value_at + 4 : value_at + 4 + max(0, value_len)]
    if codec and value_len > 0 and m.depth < 2:
        try:
            inner = decompress(codec, value, magic=magic, max_bytes=MAX_INFLATE)
        except (DecodeError, EncodeError, ValueError):
            return _batch_header_field(m, batch)
        m.depth += 1
        try:
            inner = m.mutate_records(inner)
        finally:
            m.depth -= 1
        value = compress(codec, inner, magic=magic)
        buf = bytearray(batch[:value_at]) + I32.pack(len(value)) + value
    else:
        buf = bytearray(batch)
        at = m.rng.choice((key_at, value_at))
        I32.pack_into(buf, at, m.rng.choice((-1, -2, INT32_MAX, len(buf), 0)))
    fix = m.rng.random() < CRC_FIX_CHANCE
    return _fix_legacy(buf, fix)


#: Mutations of one batch (any magic; those meant for v2 hand legacy batches to legacy ones).
BATCH_MUTATIONS: Final[dict[str, Callable[[Mutator, bytes], bytes]]] = {
    "batch_header_field": _batch_header_field,
    "batch_crc_wrong": _batch_crc_wrong,
    "batch_rebuild": _batch_rebuild,
    "batch_record_wire": _batch_record_wire,
    "batch_records_reorder": _batch_records_reorder,
    "batch_compressed_frame": _batch_compressed_frame,
    "batch_legacy_inner": _legacy_inner,
}


def _set_drop(m: Mutator, batches: list[bytes]) -> None:
    if len(batches) > 1:
        del batches[m.rng.randrange(len(batches))]
    else:
        batches.append(batches[0][: m.rng.randrange(len(batches[0]))])  # a partial batch at the end


def _set_duplicate(m: Mutator, batches: list[bytes]) -> None:
    at = m.rng.randrange(len(batches))
    batches.insert(at, batches[at])


def _set_append_new(m: Mutator, batches: list[bytes]) -> None:
    batches.append(build_any_batch(m, random_records(m)))


#: Mutations of the sequence of batches.
SET_MUTATIONS: Final[dict[str, Callable[[Mutator, list[bytes]], None]]] = {
    "set_drop_or_partial": _set_drop,
    "set_duplicate": _set_duplicate,
    "set_append_new": _set_append_new,
}

#: Every kind :meth:`Mutator.mutate_records` can apply.
RECORDS_MUTATIONS: Final = (*BATCH_MUTATIONS, *SET_MUTATIONS, "records_fresh")


def random_records(m: Mutator) -> list[NewRecord]:
    rng = m.rng
    return [
        NewRecord(
            rng.randbytes(rng.randint(0, 16)) if rng.random() < 0.7 else None,
            rng.randbytes(rng.choice((0, 1, 10, 100, 1000))) if rng.random() < 0.9 else None,
            [("h", rng.randbytes(rng.randint(0, 4)))] if rng.random() < 0.3 else [],
            1_700_000_000_000 + i,
        )
        for i in range(rng.randint(1, 4))
    ]
