"""Structure-aware mutation of Kafka frames, message bodies and record batches, for fuzzing.

A :class:`Mutator` decodes its input with the codec, changes one thing and encodes again, so most
of its outputs reach deep into a parser instead of failing at the first length check:

- **value level** (:meth:`Mutator.mutate_message`): an integer to a boundary or a neighbour, a
  nullable field to null, a string or bytes empty or longer, an array element dropped, duplicated
  or inserted, a struct replaced, an unknown tagged field added; the result still encodes;
- **wire level** (:meth:`Mutator.mutate_encoding`): the encoding itself. The message is walked like
  the interpreter's encoder, but into a list of tokens (a length or count, a fixed-width value, a
  string's bytes, a tagged-field section, a records payload...), one token is replaced (a length
  off by one, negative or huge, a compact length in an overlong varint form, invalid UTF-8, a
  duplicate, unknown or out-of-order tag, a tag size that lies) and the tokens are joined;
- **records** (:meth:`Mutator.mutate_records`): record batches of any magic and codec are opened,
  rebuilt under another magic or codec, or changed inside (header fields, record varints, the
  compressed frame) and closed again with the CRC recomputed (most of the time), so the change
  reaches the parser past the checksum;
- **frames** (:meth:`Mutator.mutate_request_frame`, :meth:`Mutator.mutate_response_frame`): the
  header (api version swapped, header version v1 and v2 confused, client id null, huge or not
  UTF-8, correlation id) and the frame (size prefix off, truncated, trailing bytes), or the body;
- **bytes** (:meth:`Mutator.mutate_bytes`): bit flips, interesting values, insertions, erasures,
  copies; the fallback for input that does not decode.

Each mutation kind is one small function in a table (``*_MUTATIONS``), chosen by the ``rng``; the
names of the kinds applied by the last call are in :attr:`Mutator.applied`. Everything is pure
given the ``rng`` (same seed, same bytes) and no output is longer than ``max_size``.

For Hypothesis: :func:`mutated_requests`, :func:`mutated_responses`,
:func:`mutated_record_batches`. For atheris: :func:`libfuzzer_mutator`. See docs/guide/fuzzing.md.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal
from uuid import UUID

import crc32c as _crc32c

from kafka_wire.codec import interp
from kafka_wire.codec.runtime import INT_RANGES, MAX_STRING_BYTES, FieldSpec, value_names
from kafka_wire.codec.structs import Message, Struct, new_instance
from kafka_wire.errors import DecodeError, EncodeError
from kafka_wire.messages import REQUESTS, RESPONSES, RequestHeader, ResponseHeader, catalog
from kafka_wire.protocol.framing import (
    decode_request_frame,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from kafka_wire.records import NewRecord, build_batch, read_batches
from kafka_wire.records.compression import compress, decompress
from kafka_wire.testing.generate import random_batch, random_message, random_request

if TYPE_CHECKING:  # Hypothesis is needed by the strategies only (the ``testing`` extra)
    from hypothesis import strategies as st

__all__ = [
    "BYTES_MUTATIONS",
    "ENCODING_MUTATIONS",
    "RECORDS_MUTATIONS",
    "REQUEST_FRAME_MUTATIONS",
    "RESPONSE_FRAME_MUTATIONS",
    "VALUE_MUTATIONS",
    "Mutator",
    "libfuzzer_mutator",
    "mutated_record_batches",
    "mutated_requests",
    "mutated_responses",
]

#: Default bound on every output (bytes).
DEFAULT_MAX_SIZE: Final = 1 << 16
#: Chance that a mutation inside a record batch recomputes the CRC (else it is left wrong).
CRC_FIX_CHANCE: Final = 0.85
#: Decompressed payloads the mutator opens are capped at this many bytes.
MAX_INFLATE: Final = 1 << 20

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_FIXED: Final[dict[str, struct.Struct]] = {
    "bool": struct.Struct(">?"),
    "int8": _I8,
    "int16": _I16,
    "int32": _I32,
    "int64": _I64,
    "uint16": struct.Struct(">H"),
    "uint32": _U32,
    "float64": struct.Struct(">d"),
}
_WIDTH: Final[dict[str, int]] = {**{k: s.size for k, s in _FIXED.items()}, "uuid": 16}
_INT32_MAX: Final = (1 << 31) - 1
_UVARINT_MAX: Final = 0xFFFFFFFF
_INTERESTING_8: Final = (0, 1, 0x7F, 0x80, 0xFF)
_INTERESTING_16: Final = (0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x00FF, 0x0100)
_INTERESTING_32: Final = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x0000FFFF, 0x00010000, 0x7FFFFFFE)
_BAD_UTF8: Final = (b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\x80")


def _uvarint(value: int) -> bytes:
    out = bytearray()
    value &= 0xFFFFFFFFFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _overlong(value: int, extra: int) -> bytes:
    """``value`` as a varint padded with ``extra`` continuation bytes (``1`` -> ``81 80 00``)."""
    raw = bytearray(_uvarint(value))
    raw[-1] |= 0x80
    raw += b"\x80" * (extra - 1) + b"\x00"
    return bytes(raw)


def _zigzag(value: int) -> bytes:
    return _uvarint((value << 1) ^ (value >> 63))


def _read_uvarint(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(max_bytes):
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos + i + 1
        shift += 7
    raise ValueError("varint too long")


def _read_zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    raw, end = _read_uvarint(buf, pos, 10)
    return (raw >> 1) ^ -(raw & 1), end


# ----------------------------------------------------------------------------- wire tokens


class Token:
    """One piece of an encoding: ``kind`` says what it is, ``data`` its bytes, ``info`` the rest
    (for a length: ``(what, flexible, n)``; for a tag section: its entries and the known tags)."""

    __slots__ = ("data", "info", "kind")

    def __init__(self, kind: str, data: bytes, info: Any = None) -> None:
        self.kind = kind
        self.data = data
        self.info = info

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.data.hex()})"


def _length_bytes(what: str, flexible: bool, n: int) -> bytes:
    if flexible:
        return _uvarint(n + 1) if n >= -1 else _uvarint(_UVARINT_MAX)
    if what == "string":
        return _I16.pack(max(-(1 << 15), min(n, (1 << 15) - 1)))
    return _I32.pack(max(-(1 << 31), min(n, _INT32_MAX)))


def tokenize(msg: Struct, version: int) -> list[Token]:
    """``msg`` at ``version`` as wire tokens: ``b"".join(t.data for t in tokens) == msg.encode(version)``."""
    out: list[Token] = []
    _tokens_struct(msg, version, out)
    return out


def _tokens_struct(obj: Struct, v: int, out: list[Token]) -> None:
    cls = type(obj)
    flexible_set = cls.FLEXIBLE_VERSIONS
    for f in cls.FIELDS:
        if v in f.versions and v not in f.tagged:
            _tokens_value(f, getattr(obj, f.name), v, f.flexible(v, flexible_set), out)
    if v in flexible_set:
        entries: list[tuple[int, bytes]] = []
        known_tags: list[int] = []
        for f in cls.FIELDS:
            if f.tag is None or v not in f.versions or v not in f.tagged:
                continue
            known_tags.append(f.tag)
            value = getattr(obj, f.name)
            if not interp.is_default(f, value):
                data = bytearray()
                interp._encode_value(f, value, v, True, data, ())
                entries.append((f.tag, bytes(data)))
        entries.extend(obj.unknown_tagged_fields)
        entries.sort(key=lambda e: e[0])
        out.append(Token("tags", _tag_section(len(entries), entries), (entries, tuple(known_tags))))


def _tag_section(count: int, entries: Sequence[tuple[int, bytes]]) -> bytes:
    parts = [_uvarint(count)]
    for tag, data in entries:
        parts += (_uvarint(tag), _uvarint(len(data)), data)
    return b"".join(parts)


def _tokens_value(f: FieldSpec, value: Any, v: int, flexible: bool, out: list[Token]) -> None:
    kind = f.kind
    if kind == "struct":
        if v in f.nullable:
            out.append(Token("marker", b"\xff" if value is None else b"\x01"))
            if value is None:
                return
        _tokens_struct(value, v, out)
        return
    if kind in _FIXED:
        out.append(Token("fixed", _FIXED[kind].pack(value), kind))
        return
    if kind == "uuid":
        out.append(Token("fixed", value.bytes, kind))
        return
    if value is None:
        out.append(Token("length", _length_bytes(kind, flexible, -1), (kind, flexible, -1)))
        return
    if kind == "array":
        out.append(Token("length", _length_bytes(kind, flexible, len(value)), (kind, flexible, len(value))))
        element = f.element
        assert element is not None
        for item in value:
            if element == "struct":
                _tokens_struct(item, v, out)
            elif element in _FIXED:
                out.append(Token("fixed", _FIXED[element].pack(item), element))
            elif element == "uuid":
                out.append(Token("fixed", item.bytes, element))
            else:
                _tokens_blob(element, item, flexible, out)
        return
    _tokens_blob(kind, value, flexible, out)


def _tokens_blob(kind: str, value: Any, flexible: bool, out: list[Token]) -> None:
    data = value.encode() if kind == "string" else bytes(value)
    out.append(Token("length", _length_bytes(kind, flexible, len(data)), (kind, flexible, len(data))))
    out.append(Token({"string": "text", "bytes": "blob", "records": "records"}[kind], data))


# ------------------------------------------------------------------ wire-level mutations


def _pick(m: Mutator, toks: list[Token], kind: str) -> int | None:
    where = [i for i, t in enumerate(toks) if t.kind == kind]
    return where[m.rng.randrange(len(where))] if where else None


def _set_length(t: Token, n: int) -> None:
    what, flexible, _ = t.info
    t.data = _length_bytes(what, flexible, n)


def _length_off_by_one(m: Mutator, toks: list[Token]) -> bool:
    i = _pick(m, toks, "length")
    if i is None:
        return False
    _set_length(toks[i], toks[i].info[2] + m.rng.choice((-1, 1)))
    return True


def _length_negative(m: Mutator, toks: list[Token]) -> bool:
    i = _pick(m, toks, "length")
    if i is None:
        return False
    t = toks[i]
    what, flexible, _ = t.info
    if flexible:
        t.data = m.rng.choice((b"\x00", _uvarint(_UVARINT_MAX)))  # null, or -2 read as a huge count
    else:
        _set_length(t, m.rng.choice((-1, -2, -(1 << 15) if what == "string" else -(1 << 31))))
    return True


def _length_huge(m: Mutator, toks: list[Token]) -> bool:
    i = _pick(m, toks, "length")
    if i is None:
        return False
    t = toks[i]
    flexible = t.info[1]
    if flexible:
        t.data = _uvarint(m.rng.choice((_UVARINT_MAX, _INT32_MAX, MAX_STRING_BYTES + 2, 1 << 28)))
    else:
        _set_length(t, m.rng.choice((MAX_STRING_BYTES, _INT32_MAX, 1 << 20, 0x10000)))
    return True


def _length_remaining(m: Mutator, toks: list[Token]) -> bool:
    """A length exactly what remains after it, plus one."""
    i = _pick(m, toks, "length")
    if i is None:
        return False
    rest = sum(len(t.data) for t in toks[i + 1 :])
    _set_length(toks[i], rest + m.rng.choice((0, 1)))
    return True


def _varint_overlong(m: Mutator, toks: list[Token]) -> bool:
    """A compact length or tag count in a longer form: 2..5 bytes is accepted, 6 is not."""
    where = [i for i, t in enumerate(toks) if (t.kind == "length" and t.info[1]) or t.kind == "tags"]
    if not where:
        return False
    t = toks[where[m.rng.randrange(len(where))]]
    if t.kind == "tags":
        count, end = _read_uvarint(t.data, 0, 5)
        t.data = _overlong(count, m.rng.randint(1, 5)) + t.data[end:]
    else:
        value, _ = _read_uvarint(t.data, 0, 5)
        t.data = _overlong(value, m.rng.randint(1, 5))
    return True


def _text_invalid_utf8(m: Mutator, toks: list[Token]) -> bool:
    i = _pick(m, toks, "text")
    if i is None:
        return False
    data = bytearray(toks[i].data)
    bad = m.rng.choice(_BAD_UTF8)
    at = m.rng.randint(0, len(data))
    data[at : at + m.rng.randint(0, 1)] = bad
    toks[i].data = bytes(data)
    if i > 0 and toks[i - 1].kind == "length":
        _set_length(toks[i - 1], len(data))
    return True


def _blob_resize(m: Mutator, toks: list[Token]) -> bool:
    """Bytes or a string longer or shorter than the length before them says."""
    where = [i for i, t in enumerate(toks) if t.kind in ("text", "blob")]
    if not where:
        return False
    t = toks[where[m.rng.randrange(len(where))]]
    if t.data and m.rng.random() < 0.5:
        t.data = t.data[: m.rng.randrange(len(t.data))]
    else:
        t.data += m.rng.randbytes(m.rng.randint(1, 8))
    return True


def _tags_edit(m: Mutator, toks: list[Token], edit: Callable[[Mutator, list[tuple[int, bytes]], tuple[int, ...]], int | None]) -> bool:  # fmt: skip
    i = _pick(m, toks, "tags")
    if i is None:
        return False
    entries, known = toks[i].info
    entries = list(entries)
    count = edit(m, entries, known)
    toks[i].data = _tag_section(len(entries) if count is None else count, entries)
    return True


def _fresh_tag(m: Mutator, known: tuple[int, ...]) -> int:
    if known and m.rng.random() < 0.3:
        return m.rng.choice(known)  # a known tag with bytes that are not its value
    return m.rng.choice((max(known, default=-1) + 1 + m.rng.randrange(40), 0x7FFF, _UVARINT_MAX, 1 << 31))


def _tag_unknown(m: Mutator, entries: list[tuple[int, bytes]], known: tuple[int, ...]) -> int | None:
    entries.append((_fresh_tag(m, known), m.rng.randbytes(m.rng.randint(0, 16))))
    entries.sort(key=lambda e: e[0])
    return None


def _tag_duplicate(m: Mutator, entries: list[tuple[int, bytes]], known: tuple[int, ...]) -> int | None:
    if not entries:
        entries.append((_fresh_tag(m, known), m.rng.randbytes(m.rng.randint(0, 4))))
    at = m.rng.randrange(len(entries))
    entries.insert(at, entries[at])
    return None


def _tag_out_of_order(m: Mutator, entries: list[tuple[int, bytes]], known: tuple[int, ...]) -> int | None:
    while len(entries) < 2:
        entries.append((_fresh_tag(m, known), m.rng.randbytes(m.rng.randint(0, 4))))
        entries.sort(key=lambda e: e[0])
    entries.reverse()
    return None


def _tag_count_wrong(m: Mutator, entries: list[tuple[int, bytes]], known: tuple[int, ...]) -> int | None:
    return max(0, len(entries) + m.rng.choice((-1, 1, 2, 1 << 20)))


def _tags_size_wrong(m: Mutator, toks: list[Token]) -> bool:
    """One entry's size says one more, one less or far more bytes than follow."""
    i = _pick(m, toks, "tags")
    if i is None:
        return False
    entries, known = toks[i].info
    if not entries:
        entries = [(_fresh_tag(m, known), m.rng.randbytes(m.rng.randint(1, 8)))]
    at = m.rng.randrange(len(entries))
    parts = [_uvarint(len(entries))]
    for j, (tag, data) in enumerate(entries):
        size = len(data)
        if j == at:
            size = max(0, size + m.rng.choice((-1, 1, 1 << 20, _UVARINT_MAX - size)))
        parts += (_uvarint(tag), _uvarint(size), data)
    toks[i].data = b"".join(parts)
    return True


def _marker_bad(m: Mutator, toks: list[Token]) -> bool:
    i = _pick(m, toks, "marker")
    if i is None:
        return False
    toks[i].data = bytes([m.rng.choice((0, 2, 0x7F, 0x80, 0xFF, 1))])
    return True


def _fixed_interesting(m: Mutator, toks: list[Token]) -> bool:
    """A fixed-width value replaced by a boundary pattern (a bool of 2, an int of 0x80..., a NaN)."""
    i = _pick(m, toks, "fixed")
    if i is None:
        return False
    width = len(toks[i].data)
    pattern = m.rng.choice((b"\x00", b"\xff", b"\x7f", b"\x80", b"\x02"))
    toks[i].data = pattern + (b"\xff" if pattern in (b"\x7f", b"\xff") else b"\x00") * (width - 1)
    return True


def _records_inner(m: Mutator, toks: list[Token]) -> bool:
    i = _pick(m, toks, "records")
    if i is None:
        return False
    data = m.mutate_records(toks[i].data)
    toks[i].data = data
    if i > 0 and toks[i - 1].kind == "length":
        _set_length(toks[i - 1], len(data))
    return True


def _token_drop(m: Mutator, toks: list[Token]) -> bool:
    if not toks:
        return False
    del toks[m.rng.randrange(len(toks))]
    return True


def _token_duplicate(m: Mutator, toks: list[Token]) -> bool:
    if not toks:
        return False
    at = m.rng.randrange(len(toks))
    toks.insert(at, Token(toks[at].kind, toks[at].data, toks[at].info))
    return True


def _tags_adder(edit: Callable[[Mutator, list[tuple[int, bytes]], tuple[int, ...]], int | None]) -> Callable[[Mutator, list[Token]], bool]:  # fmt: skip
    return lambda m, toks: _tags_edit(m, toks, edit)


#: Wire-level mutations: each changes one token of an encoding in place; False when none fits.
ENCODING_MUTATIONS: Final[dict[str, Callable[[Mutator, list[Token]], bool]]] = {
    "length_off_by_one": _length_off_by_one,
    "length_negative": _length_negative,
    "length_huge": _length_huge,
    "length_remaining": _length_remaining,
    "varint_overlong": _varint_overlong,
    "text_invalid_utf8": _text_invalid_utf8,
    "blob_resize": _blob_resize,
    "tag_unknown": _tags_adder(_tag_unknown),
    "tag_duplicate": _tags_adder(_tag_duplicate),
    "tag_out_of_order": _tags_adder(_tag_out_of_order),
    "tag_count_wrong": _tags_adder(_tag_count_wrong),
    "tag_size_wrong": _tags_size_wrong,
    "marker_bad": _marker_bad,
    "fixed_interesting": _fixed_interesting,
    "records_inner": _records_inner,
    "token_drop": _token_drop,
    "token_duplicate": _token_duplicate,
}


# ----------------------------------------------------------------- value-level mutations

# A slot is a path from the root to a field: ((attribute, list index or None), ...), and the field.
Slot = tuple[tuple[tuple[str, int | None], ...], FieldSpec | None]


def _slots(obj: Struct, v: int, prefix: tuple[tuple[str, int | None], ...], out: list[Slot]) -> None:
    cls = type(obj)
    for f in cls.FIELDS:
        if v not in f.versions:
            continue
        here = (*prefix, (f.name, None))
        out.append((here, f))
        value = getattr(obj, f.name)
        if f.kind == "struct" and value is not None:
            _slots(value, v, here, out)
        elif f.kind == "array" and f.element == "struct" and value:
            for i, item in enumerate(value):
                _slots(item, v, (*prefix, (f.name, i)), out)
    if v in cls.FLEXIBLE_VERSIONS:
        out.append(((*prefix, ("unknown_tagged_fields", None)), None))


def _clone(obj: Struct) -> Struct:
    cls = type(obj)
    new = new_instance(cls)
    for name in value_names(cls):
        setattr(new, name, getattr(obj, name))
    return new


def _int_value(m: Mutator, kind: str, value: int) -> int:
    lo, hi = INT_RANGES[kind]
    r = m.rng.random()
    if r < 0.4:
        candidates = [x for x in (lo, hi, 0, -1, 1, lo + 1, hi - 1) if lo <= x <= hi]
        return m.rng.choice(candidates)
    if r < 0.8:
        return min(hi, max(lo, value + m.rng.choice((-1, 1, -2, 2))))
    return m.rng.randint(lo, hi)


def _scalar_value(m: Mutator, kind: str, value: Any, version: int, f: FieldSpec) -> Any:
    rng = m.rng
    if kind in INT_RANGES:
        return _int_value(m, kind, value if isinstance(value, int) else 0)
    if kind == "bool":
        return not value
    if kind == "float64":
        return rng.choice((0.0, -0.0, float("inf"), float("-inf"), -1.0, 1e308, 5e-324))
    if kind == "uuid":
        return UUID(int=rng.choice((0, (1 << 128) - 1, rng.getrandbits(128))))
    if kind == "string":
        text = value if isinstance(value, str) else ""
        choice = rng.randrange(4)
        if choice == 0:
            return ""
        if choice == 1:  # longer, up to the int16 limit now and then
            target = rng.choice((64, 255, 256, 1000, MAX_STRING_BYTES // 3))
            return (text or "x") * (target // max(1, len(text)) + 1)
        if choice == 2:
            return text + "".join(rng.choices("\x00é€中😀\u202e\ufeff", k=rng.randint(1, 4)))
        return text[: rng.randint(0, len(text))]
    if kind == "records":
        return m.mutate_records(bytes(value) if value is not None else b"")
    if kind == "bytes":
        data = bytes(value) if value is not None else b""
        choice = rng.randrange(3)
        if choice == 0:
            return b""
        if choice == 1:
            return data + rng.randbytes(rng.choice((1, 16, 255, 1024)))
        return m.mutate_bytes(data) if data else b"\x00"
    raise ValueError(kind)  # pragma: no cover


def _array_value(m: Mutator, f: FieldSpec, value: list[Any] | None, version: int) -> list[Any]:
    rng = m.rng
    items = list(value or ())
    choice = rng.randrange(5)
    if choice == 0 and items:  # drop
        del items[rng.randrange(len(items))]
    elif choice == 1 and items:  # duplicate
        at = rng.randrange(len(items))
        items.insert(at, items[at])
    elif choice == 2 and items:  # many copies
        items = items * rng.choice((8, 64))
    elif choice == 3:
        items = []
    else:  # insert a new one
        items.insert(rng.randint(0, len(items)), _new_element(m, f, version))
    return items


def _new_element(m: Mutator, f: FieldSpec, version: int) -> Any:
    element = f.element
    assert element is not None
    if element == "struct":
        return random_message(f.struct_class(), version, m.rng)
    return _scalar_value(m, element, None if element in ("string", "bytes") else 0, version, f)


def _unknown_tags_value(m: Mutator, obj: Struct) -> tuple[tuple[int, bytes], ...]:
    known = {f.tag for f in type(obj).FIELDS if f.tag is not None}
    current = dict(obj.unknown_tagged_fields)
    tag = max(known, default=-1) + 1 + m.rng.randrange(64)
    if m.rng.random() < 0.2:
        tag = m.rng.choice((0x7FFF, _INT32_MAX, _UVARINT_MAX))
    if tag not in current and tag not in known:
        current[tag] = m.rng.randbytes(m.rng.choice((0, 1, 8, 300)))
    return tuple(sorted(current.items()))


def _new_value(m: Mutator, slot: Slot, parent: Struct, version: int) -> Any:
    path, f = slot
    name = path[-1][0]
    if f is None:
        m.applied.append("value_unknown_tag")
        return _unknown_tags_value(m, parent)
    value = getattr(parent, name)
    if version in f.nullable and value is not None and m.rng.random() < 0.25:
        m.applied.append("value_null")
        return None
    kind = f.kind
    m.applied.append(f"value_{_VALUE_KINDS.get(kind, 'int')}")
    if kind == "struct":
        return random_message(f.struct_class(), version, m.rng)
    if kind == "array":
        return _array_value(m, f, value, version)
    return _scalar_value(m, kind, value, version, f)


_VALUE_KINDS: Final = {
    "struct": "struct",
    "array": "array",
    "string": "string",
    "bytes": "bytes",
    "records": "records",
    "bool": "bool",
    "float64": "float",
    "uuid": "uuid",
}

#: What value-level mutations do (``value_<kind>``: the field of that kind changed).
VALUE_MUTATIONS: Final = (
    "value_int",
    "value_bool",
    "value_float",
    "value_uuid",
    "value_string",
    "value_bytes",
    "value_records",
    "value_array",
    "value_struct",
    "value_null",
    "value_unknown_tag",
)


# ---------------------------------------------------------------------- record batches

_V2_FIELDS: Final = (  # (name, offset, struct) of the v2 batch header
    ("base_offset", 0, _I64),
    ("batch_length", 8, _I32),
    ("partition_leader_epoch", 12, _I32),
    ("magic", 16, _I8),
    ("attributes", 21, _I16),
    ("last_offset_delta", 23, _I32),
    ("base_timestamp", 27, _I64),
    ("max_timestamp", 35, _I64),
    ("producer_id", 43, _I64),
    ("producer_epoch", 51, _I16),
    ("base_sequence", 53, _I32),
    ("records_count", 57, _I32),
)
_V2_HEADER: Final = 61
#: Attribute bits a mutation flips: codec (including the unknown ids 5 to 7), timestamp type,
#: transactional, control, delete horizon, and bits Kafka does not define.
_ATTRIBUTE_BITS: Final = (0x01, 0x02, 0x04, 0x05, 0x06, 0x07, 0x08, 0x10, 0x20, 0x40, 0x80, 0x100, 0x8000)


def _split_batches(data: bytes) -> list[bytes] | None:
    """The batches of a records payload by their size fields, or None when they do not add up."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 17:
            return None
        (size,) = _I32.unpack_from(data, pos + 8)
        end = pos + 12 + size
        if size < 5 or end > len(data):
            return None
        out.append(data[pos:end])
        pos = end
    return out


def _fix_v2(batch: bytearray, fix_crc: bool) -> bytes:
    _I32.pack_into(batch, 8, len(batch) - 12)
    if fix_crc:
        _U32.pack_into(batch, 17, _crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def _fix_legacy(msg: bytearray, fix_crc: bool) -> bytes:
    _I32.pack_into(msg, 8, len(msg) - 12)
    if fix_crc:
        _U32.pack_into(msg, 12, zlib.crc32(bytes(msg[16:])))
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
    fields = [("offset", 0, _I64), ("size", 8, _I32), ("magic", 16, _I8), ("attributes", 17, _I8)]
    if batch[16] == 1 and len(batch) >= 26:
        fields.append(("timestamp", 18, _I64))
    key_at = 18 + (8 if batch[16] == 1 else 0)
    if len(batch) >= key_at + 4:
        fields.append(("key_length", key_at, _I32))
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
        _U32.pack_into(buf, at, crc)
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
    return _build(m, records)


def _build(m: Mutator, records: list[NewRecord]) -> bytes:
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
            length, pos = _read_zigzag(section, pos)
            rec = [Token("varint", section[start:pos], length)]
            end = pos + length
            if length < 0 or end > len(section):
                return None
            rec.append(Token("raw", section[pos : pos + 1]))  # attributes
            pos += 1
            for _ in range(2):  # timestamp delta, offset delta
                s = pos
                value, pos = _read_zigzag(section, pos)
                rec.append(Token("varint", section[s:pos], value))
            for _ in range(2):  # key, value
                pos = _v2_blob(section, pos, rec)
            s = pos
            count, pos = _read_zigzag(section, pos)
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
    n, pos = _read_zigzag(section, pos)
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
        t.data = _zigzag(value + m.rng.choice((-1, 1)))
    elif choice == 1:
        t.data = _zigzag(m.rng.choice((-1, -2, _INT32_MAX, -(1 << 31), (1 << 63) - 1)))
    elif choice == 2:  # overlong: accepted up to 5 (varint) or 10 (varlong) bytes
        t.data = _overlong((value << 1) ^ (value >> 63), m.rng.randint(1, 6))
    elif choice == 3:
        t.data = b"\xff" * m.rng.randint(5, 11)  # never ends within its limit
    else:
        t.data = _zigzag(0)


def _v2_open(batch: bytes) -> tuple[int, bytes] | None:
    """A v2 batch's codec and its decompressed records section."""
    if len(batch) < _V2_HEADER or batch[16] != 2:
        return None
    codec = _I16.unpack_from(batch, 21)[0] & 0x07
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
        _I32.pack_into(buf, 57, count)
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
        rec[0].data = _zigzag(sum(len(x.data) for x in rec[1:]))
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
        attributes = (_I16.unpack_from(buf, 21)[0] & ~0x07) | codec
        _I16.pack_into(buf, 21, attributes)
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
        (key_len,) = _I32.unpack_from(batch, key_at)
        value_at = key_at + 4 + max(0, key_len)
        (value_len,) = _I32.unpack_from(batch, value_at)
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
        buf = bytearray(batch[:value_at]) + _I32.pack(len(value)) + value
    else:
        buf = bytearray(batch)
        at = m.rng.choice((key_at, value_at))
        _I32.pack_into(buf, at, m.rng.choice((-1, -2, _INT32_MAX, len(buf), 0)))
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
    batches.append(_build(m, _random_records(m)))


#: Mutations of the sequence of batches.
SET_MUTATIONS: Final[dict[str, Callable[[Mutator, list[bytes]], None]]] = {
    "set_drop_or_partial": _set_drop,
    "set_duplicate": _set_duplicate,
    "set_append_new": _set_append_new,
}

#: Every kind :meth:`Mutator.mutate_records` can apply.
RECORDS_MUTATIONS: Final = (*BATCH_MUTATIONS, *SET_MUTATIONS, "records_fresh")


def _random_records(m: Mutator) -> list[NewRecord]:
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


# ------------------------------------------------------------------------------ bytes


def _bit_flip(m: Mutator, data: bytearray) -> None:
    if data:
        data[m.rng.randrange(len(data))] ^= 1 << m.rng.randrange(8)


def _byte_interesting(m: Mutator, data: bytearray) -> None:
    if not data:
        data.append(m.rng.choice(_INTERESTING_8))
        return
    width = m.rng.choice((1, 2, 4))
    at = m.rng.randrange(len(data))
    if width == 1:
        data[at] = m.rng.choice(_INTERESTING_8)
    elif width == 2:
        data[at : at + 2] = struct.pack(">H", m.rng.choice(_INTERESTING_16))
    else:
        data[at : at + 4] = _U32.pack(m.rng.choice(_INTERESTING_32))


def _insert(m: Mutator, data: bytearray) -> None:
    at = m.rng.randint(0, len(data))
    data[at:at] = m.rng.randbytes(m.rng.choice((1, 1, 2, 4, 8, 64)))


def _erase(m: Mutator, data: bytearray) -> None:
    if data:
        at = m.rng.randrange(len(data))
        del data[at : at + m.rng.choice((1, 1, 2, 4, 16, len(data)))]


def _copy_chunk(m: Mutator, data: bytearray) -> None:
    """A chunk of the input copied (inserted) elsewhere in it: the self-splice."""
    if data:
        start = m.rng.randrange(len(data))
        chunk = data[start : start + m.rng.randint(1, 32)]
        at = m.rng.randint(0, len(data))
        if m.rng.random() < 0.5:
            data[at:at] = chunk
        else:
            data[at : at + len(chunk)] = chunk


def _truncate(m: Mutator, data: bytearray) -> None:
    if data:
        del data[m.rng.randrange(len(data)) :]


#: The byte-level fallback.
BYTES_MUTATIONS: Final[dict[str, Callable[[Mutator, bytearray], None]]] = {
    "bit_flip": _bit_flip,
    "byte_interesting": _byte_interesting,
    "insert": _insert,
    "erase": _erase,
    "copy_chunk": _copy_chunk,
    "truncate": _truncate,
}


# ------------------------------------------------------------------------------ frames


class _Frame:
    """A frame taken apart: header message and version, body message and version, trailing."""

    __slots__ = ("body", "header", "header_version", "trailing", "version")

    def __init__(self, header: Message, header_version: int, body: Message, version: int, trailing: bytes) -> None:  # fmt: skip
        self.header = header
        self.header_version = header_version
        self.body = body
        self.version = version
        self.trailing = trailing


def _assemble(header: bytes, body: bytes, trailing: bytes) -> bytes:
    return _I32.pack(len(header) + len(body) + len(trailing)) + header + body + trailing


def _body_value(m: Mutator, fr: _Frame) -> bytes:
    body = m.mutate_message(fr.body, fr.version)
    return _assemble(fr.header.encode(fr.header_version), body.encode(fr.version), fr.trailing)


def _body_wire(m: Mutator, fr: _Frame) -> bytes:
    return _assemble(fr.header.encode(fr.header_version), m.mutate_encoding(fr.body, fr.version), fr.trailing)


def _header_wire(m: Mutator, fr: _Frame) -> bytes:
    return _assemble(m.mutate_encoding(fr.header, fr.header_version), fr.body.encode(fr.version), fr.trailing)


def _header_version_confusion(m: Mutator, fr: _Frame) -> bytes:
    """The header written at another header version than the API version calls for."""
    others = [v for v in type(fr.header).VERSIONS if v != fr.header_version]
    hv = m.rng.choice(others)
    header = _clone(fr.header)
    if hv == 0 and isinstance(header, RequestHeader):
        header.client_id = ""
    header.unknown_tagged_fields = ()
    return _assemble(header.encode(hv), fr.body.encode(fr.version), fr.trailing)


def _request_api_version(m: Mutator, fr: _Frame) -> bytes:
    """The header names another version of the API (or one that does not exist)."""
    header = _clone(fr.header)
    assert isinstance(header, RequestHeader)
    versions = REQUESTS[header.request_api_key].VERSIONS
    header.request_api_version = m.rng.choice((*versions, -1, versions[-1] + 1, 0x7FFF))
    return _assemble(header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)


def _request_api_key(m: Mutator, fr: _Frame) -> bytes:
    header = _clone(fr.header)
    assert isinstance(header, RequestHeader)
    keys = list(REQUESTS)
    header.request_api_key = m.rng.choice((*keys, -1, 0x7FFF, max(keys) + 1))
    return _assemble(header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)


def _client_id(m: Mutator, fr: _Frame) -> bytes:
    """The client id null, long, not UTF-8, or with a length far past the frame's end."""
    header = fr.header
    assert isinstance(header, RequestHeader)
    if fr.header_version == 0:
        return _header_wire(m, fr)
    head = (
        _I16.pack(header.request_api_key)
        + _I16.pack(header.request_api_version)
        + _I32.pack(header.correlation_id)
    )
    choice = m.rng.randrange(4)
    if choice == 0:
        client = b"\xff\xff"
    elif choice == 1:
        raw = (header.client_id or "c").encode() * m.rng.choice((100, 1000, 10000))
        client = _I16.pack(min(len(raw), MAX_STRING_BYTES)) + raw[:MAX_STRING_BYTES]
    elif choice == 2:
        raw = b"client" + m.rng.choice(_BAD_UTF8)
        client = _I16.pack(len(raw)) + raw
    else:
        client = _I16.pack(m.rng.choice((MAX_STRING_BYTES, -2, 1000)))
    tags = _tag_section(0, ()) if fr.header_version >= 2 else b""
    return _assemble(head + client + tags, fr.body.encode(fr.version), fr.trailing)


def _correlation_id(m: Mutator, fr: _Frame) -> bytes:
    header: Any = _clone(fr.header)  # a RequestHeader or a ResponseHeader: both have the field
    neighbour = _I32.unpack(_U32.pack((header.correlation_id + 1) & 0xFFFFFFFF))[0]
    header.correlation_id = m.rng.choice((0, -1, _INT32_MAX, -(1 << 31), neighbour))
    return _assemble(header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)


def _frame_size(m: Mutator, fr: _Frame) -> bytes:
    frame = bytearray(_assemble(fr.header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing))
    size = len(frame) - 4
    _I32.pack_into(frame, 0, m.rng.choice((size - 1, size + 1, 0, -1, _INT32_MAX, -(1 << 31), size * 2)))
    return bytes(frame)


def _frame_truncated(m: Mutator, fr: _Frame) -> bytes:
    frame = _assemble(fr.header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)
    cut = frame[: m.rng.randrange(len(frame))]
    if len(cut) >= 4 and m.rng.random() < 0.5:  # the size prefix follows the cut
        return _I32.pack(len(cut) - 4) + cut[4:]
    return cut


def _frame_trailing(m: Mutator, fr: _Frame) -> bytes:
    extra = m.rng.randbytes(m.rng.choice((1, 4, 64)))
    return _assemble(fr.header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing + extra)


def _frame_bytes(m: Mutator, fr: _Frame) -> bytes:
    frame = _assemble(fr.header.encode(fr.header_version), fr.body.encode(fr.version), fr.trailing)
    return _bytes_then_size(m, frame)


def _bytes_then_size(m: Mutator, frame: bytes) -> bytes:
    out = m.mutate_bytes(frame)
    if len(out) >= 4 and m.rng.random() < 0.5:
        out = _I32.pack(len(out) - 4) + out[4:]
    return out


_FrameMutation = Callable[["Mutator", _Frame], bytes]

#: Request frame mutations with their weights (body mutations dominate).
REQUEST_FRAME_MUTATIONS: Final[dict[str, tuple[_FrameMutation, int]]] = {
    "body_value": (_body_value, 8),
    "body_wire": (_body_wire, 8),
    "header_wire": (_header_wire, 1),
    "header_version_confusion": (_header_version_confusion, 1),
    "header_api_version": (_request_api_version, 1),
    "header_api_key": (_request_api_key, 1),
    "header_client_id": (_client_id, 1),
    "header_correlation_id": (_correlation_id, 1),
    "frame_size": (_frame_size, 1),
    "frame_truncated": (_frame_truncated, 1),
    "frame_trailing": (_frame_trailing, 1),
    "frame_bytes": (_frame_bytes, 1),
}
#: Response frame mutations with their weights.
RESPONSE_FRAME_MUTATIONS: Final[dict[str, tuple[_FrameMutation, int]]] = {
    "body_value": (_body_value, 8),
    "body_wire": (_body_wire, 8),
    "header_wire": (_header_wire, 1),
    "header_version_confusion": (_header_version_confusion, 1),
    "header_correlation_id": (_correlation_id, 1),
    "frame_size": (_frame_size, 1),
    "frame_truncated": (_frame_truncated, 1),
    "frame_trailing": (_frame_trailing, 1),
    "frame_bytes": (_frame_bytes, 1),
}


def _weighted(m: Mutator, table: dict[str, tuple[_FrameMutation, int]]) -> tuple[str, _FrameMutation]:
    names = list(table)
    (name,) = m.rng.choices(names, weights=[table[n][1] for n in names])
    return name, table[name][0]


# ------------------------------------------------------------------------------ Mutator


class Mutator:
    """Structure-aware mutations drawn from ``rng``; no output is longer than ``max_size``.

    ``byte_mutator(data, max_size)``, when given, replaces the built-in byte-level fallback for
    input that does not decode (``libfuzzer_mutator`` passes ``atheris.Mutate``). After each call,
    :attr:`applied` names the mutation kinds it applied, outermost first.
    """

    def __init__(
        self,
        rng: random.Random,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        byte_mutator: Callable[[bytes, int], bytes] | None = None,
    ) -> None:
        self.rng = rng
        self.max_size = max_size
        self.byte_mutator = byte_mutator
        self.applied: list[str] = []
        self.depth = 0
        self._busy = 0

    def _begin(self) -> None:
        if self._busy == 0:
            self.applied = []
        self._busy += 1

    def _bound(self, data: bytes) -> bytes:
        return data if len(data) <= self.max_size else data[: self.max_size]

    # -- the public entry points: each resets :attr:`applied` unless called from another one

    def mutate_message(self, msg: Message, version: int) -> Message:
        """A copy of ``msg`` with one field changed (value level); it still encodes at ``version``."""
        self._begin()
        try:
            return self._mutate_message(msg, version)
        finally:
            self._busy -= 1

    def mutate_encoding(self, msg: Message, version: int) -> bytes:
        """The bytes of ``msg`` at ``version`` with one wire-level mutation (the encoding lies)."""
        self._begin()
        try:
            return self._mutate_encoding(msg, version)
        finally:
            self._busy -= 1

    def mutate_request_frame(self, frame: bytes) -> bytes:
        """A size-prefixed request frame in, one mutated frame out."""
        self._begin()
        try:
            return self._mutate_request_frame(frame)
        finally:
            self._busy -= 1

    def mutate_response_frame(self, frame: bytes, api_key: int, api_version: int) -> bytes:
        """A size-prefixed response frame to ``api_key`` at ``api_version`` in, one mutated out."""
        self._begin()
        try:
            return self._mutate_response_frame(frame, api_key, api_version)
        finally:
            self._busy -= 1

    def mutate_records(self, data: bytes) -> bytes:
        """Record batches (any magic and codec) in, mutated batches out. Input that does not split
        into batches is replaced by a fresh batch (then mutated) or mutated as bytes."""
        self._begin()
        try:
            return self._mutate_records(data)
        finally:
            self._busy -= 1

    def mutate_bytes(self, data: bytes) -> bytes:
        """Byte level: one to three of bit flip, interesting value, insert, erase, chunk copy,
        truncate (or the ``byte_mutator`` given)."""
        self._begin()
        try:
            return self._mutate_bytes(data)
        finally:
            self._busy -= 1

    # -- the work

    # -- messages

    def _mutate_message(self, msg: Message, version: int) -> Message:
        """A copy of ``msg`` with one field changed; the copy still encodes at ``version``."""
        for _ in range(4):
            out = self._value_once(msg, version)
            try:
                out.encode(version)
            except EncodeError:
                continue
            return out
        return msg

    def _value_once(self, msg: Message, version: int) -> Message:
        slots: list[Slot] = []
        _slots(msg, version, (), slots)
        root = _clone(msg)
        if not slots:
            return root  # type: ignore[return-value]  # a clone of a Message is one
        slot = slots[self.rng.randrange(len(slots))]
        path = slot[0]
        parent: Any = root
        for name, index in path[:-1]:
            child = getattr(parent, name)
            if index is None:
                child = _clone(child)
                setattr(parent, name, child)
            else:
                items = list(child)
                setattr(parent, name, items)
                items[index] = child = _clone(items[index])
            parent = child
        name, index = path[-1]
        assert index is None
        setattr(parent, name, _new_value(self, slot, parent, version))
        return root  # type: ignore[return-value]  # a clone of a Message is one

    def _mutate_encoding(self, msg: Message, version: int) -> bytes:
        """The bytes of ``msg`` at ``version`` with one wire-level mutation (the encoding lies)."""
        toks = tokenize(msg, version)
        names = list(ENCODING_MUTATIONS)
        for _ in range(8):
            name = names[self.rng.randrange(len(names))]
            if ENCODING_MUTATIONS[name](self, toks):
                self.applied.append(name)
                break
        return self._bound(b"".join(t.data for t in toks))

    # -- frames

    def _mutate_request_frame(self, frame: bytes) -> bytes:
        """A size-prefixed request frame in, one mutated frame out."""
        try:
            decoded = decode_request_frame(frame)
        except DecodeError:
            self.applied.append("undecodable")
            return self._bound(_bytes_then_size(self, bytes(frame)))
        header = decoded.header
        fr = _Frame(
            header,
            request_header_version(header.request_api_key, header.request_api_version),
            decoded.body,
            header.request_api_version,
            bytes(decoded.trailing),
        )
        return self._frame_mutation(REQUEST_FRAME_MUTATIONS, fr, frame)

    def _mutate_response_frame(self, frame: bytes, api_key: int, api_version: int) -> bytes:
        """A size-prefixed response frame to ``api_key`` at ``api_version`` in, one mutated out."""
        try:
            header, body = decode_response(frame, api_key, api_version)
        except DecodeError:
            self.applied.append("undecodable")
            return self._bound(_bytes_then_size(self, bytes(frame)))
        fr = _Frame(header, response_header_version(api_key, api_version), body, api_version, b"")
        return self._frame_mutation(RESPONSE_FRAME_MUTATIONS, fr, frame)

    def _frame_mutation(
        self, table: dict[str, tuple[_FrameMutation, int]], fr: _Frame, frame: bytes
    ) -> bytes:
        name, mutation = _weighted(self, table)
        self.applied.append(name)
        try:
            return self._bound(mutation(self, fr))
        except EncodeError:
            # The codec decodes some frames it cannot encode again (duplicate unknown tags, for
            # one): those are mutated as bytes.
            self.applied.append("not_reencodable")
            return self._bound(_bytes_then_size(self, bytes(frame)))

    # -- records

    def _mutate_records(self, data: bytes) -> bytes:
        """Record batches (any magic and codec) in, mutated batches out. Input that does not
        split into batches is replaced by a fresh batch (then mutated) or mutated as bytes."""
        data = bytes(data)
        batches = _split_batches(data) if data else None
        if not batches:
            if self.rng.random() < 0.5:
                self.applied.append("records_fresh")
                batches = [_build(self, _random_records(self))]
            else:
                return self.mutate_bytes(data)
        if self.rng.random() < 0.2:
            name = self.rng.choice(list(SET_MUTATIONS))
            self.applied.append(name)
            SET_MUTATIONS[name](self, batches)
        else:
            i = self.rng.randrange(len(batches))
            name = self.rng.choice(list(BATCH_MUTATIONS))
            self.applied.append(name)
            try:
                batches[i] = BATCH_MUTATIONS[name](self, batches[i])
            except (DecodeError, EncodeError):  # a codec refused what the mutation built
                batches[i] = self.mutate_bytes(batches[i])
        return self._bound(b"".join(batches))

    # -- bytes

    def _mutate_bytes(self, data: bytes) -> bytes:
        """Byte-level: one to three of bit flip, interesting value, insert, erase, chunk copy, truncate."""
        if self.byte_mutator is not None:
            self.applied.append("byte_mutator")
            return self._bound(self.byte_mutator(bytes(data), self.max_size))
        buf = bytearray(data)
        names = list(BYTES_MUTATIONS)
        for _ in range(self.rng.randint(1, 3)):
            name = names[self.rng.randrange(len(names))]
            self.applied.append(name)
            BYTES_MUTATIONS[name](self, buf)
        return self._bound(bytes(buf))


# ------------------------------------------------------------------------ Hypothesis


def _request_frames(cls: type[Message] | None, version: int | None) -> st.SearchStrategy[bytes]:
    from hypothesis import strategies as st

    from kafka_wire.testing.strategies import messages

    if cls is None:
        pairs = [(api.request, v) for api in catalog() for v in api.versions]
        return st.sampled_from(pairs).flatmap(lambda p: _request_frames(p[0], p[1]))
    if version is None:
        return st.sampled_from(cls.VERSIONS).flatmap(lambda v: _request_frames(cls, v))
    api_key = cls.API_KEY
    assert api_key is not None
    hv = request_header_version(api_key, version)
    headers = messages(RequestHeader, hv).map(lambda h: _named(h, api_key, version))
    return st.tuples(headers, messages(cls, version)).map(lambda hb: encode_request(hb[0], hb[1], version))


def _named(header: RequestHeader, api_key: int, version: int) -> RequestHeader:
    header.request_api_key = api_key
    header.request_api_version = version
    return header


def _mutated(
    frames: st.SearchStrategy[bytes], step: Callable[[Mutator, bytes], bytes]
) -> st.SearchStrategy[bytes]:
    from hypothesis import strategies as st

    def apply(args: tuple[bytes, random.Random, int]) -> bytes:
        frame, rng, n = args
        m = Mutator(rng)
        for _ in range(n):
            frame = step(m, frame)
        return frame

    return st.tuples(frames, st.randoms(use_true_random=False), st.integers(0, 3)).map(apply)


def mutated_requests(
    cls: type[Message] | None = None, version: int | None = None
) -> st.SearchStrategy[bytes]:
    """Size-prefixed request frames: a valid message (``strategies.messages``) of ``cls`` at
    ``version`` (default: any request, any version), then 0..3 mutations drawn by Hypothesis, so
    failures shrink."""
    return _mutated(_request_frames(cls, version), lambda m, f: m.mutate_request_frame(f))


def mutated_responses(cls: type[Message], version: int) -> st.SearchStrategy[bytes]:
    """As :func:`mutated_requests`, for response frames of ``cls`` at ``version``."""
    from hypothesis import strategies as st

    from kafka_wire.testing.strategies import messages

    api_key = cls.API_KEY
    assert api_key is not None
    hv = response_header_version(api_key, version)
    frames = st.tuples(messages(ResponseHeader, hv), messages(cls, version)).map(
        lambda hb: encode_response(hb[0], hb[1], version)
    )
    return _mutated(frames, lambda m, f: m.mutate_response_frame(f, api_key, version))


def mutated_record_batches() -> st.SearchStrategy[bytes]:
    """Records payloads: a valid batch (any magic and codec) then 0..3 mutations by Hypothesis."""
    from hypothesis import strategies as st

    def valid(rng: random.Random) -> bytes:
        return _build(Mutator(rng), _random_records(Mutator(rng)))

    return _mutated(st.randoms(use_true_random=False).map(valid), lambda m, d: m.mutate_records(d))


# ---------------------------------------------------------------------------- atheris

_RESPONSE_PREFIX: Final = struct.Struct(">hh")

KINDS: Final = ("request", "response", "records")


def libfuzzer_mutator(
    kind: str, *, fallback: Callable[[bytes, int], bytes] | Literal["atheris", "builtin"] = "atheris"
) -> Callable[[bytes, int, int], bytes]:
    """An atheris custom mutator ``(data, max_size, seed) -> bytes`` for ``kind`` in
    ``{"request", "response", "records"}``; deterministic for a given ``(data, seed)``.

    ``request``: a size-prefixed request frame. ``response``: an int16 api key and an int16 api
    version, then a size-prefixed response frame to it. ``records``: a records payload. Input that
    does not decode goes to ``fallback``: by default ``atheris.Mutate`` when atheris is importable
    (it may only be called while ``atheris.Fuzz`` runs), ``"builtin"`` for
    :meth:`Mutator.mutate_bytes`, or any ``(data, max_size) -> bytes``. Now and then (and for empty
    input) a fresh valid input is generated instead.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    byte_mutator: Callable[[bytes, int], bytes] | None = None
    if fallback == "atheris":
        try:
            import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]  # optional, unannotated

            byte_mutator = atheris.Mutate
        except ImportError:
            pass
    elif fallback != "builtin":
        byte_mutator = fallback

    def mutate(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        m = Mutator(rng, max_size=max_size, byte_mutator=byte_mutator)
        fresh = not data or rng.random() < 0.02
        if kind == "request":
            if fresh:
                header, body, version = random_request(rng)
                return m._bound(encode_request(header, body, version))
            return m.mutate_request_frame(data)
        if kind == "response":
            if fresh or len(data) < 4:
                return m._bound(_fresh_response(rng))
            api_key, version = _RESPONSE_PREFIX.unpack_from(data)
            cls = RESPONSES.get(api_key)
            if cls is None or version not in cls.VERSIONS:
                return m._bound(data[:4] + m.mutate_bytes(data[4:]))
            return m._bound(data[:4] + m.mutate_response_frame(data[4:], api_key, version))
        if fresh:
            return m._bound(random_batch(rng))
        return m.mutate_records(data)

    return mutate


def _fresh_response(rng: random.Random) -> bytes:
    """``api key, api version`` and a valid response frame (the ``response`` input layout)."""
    apis = catalog()
    api = apis[rng.randrange(len(apis))]
    version = api.versions[rng.randrange(len(api.versions))]
    body = random_message(api.response, version, rng)
    header = random_message(ResponseHeader, response_header_version(api.api_key, version), rng)
    return _RESPONSE_PREFIX.pack(api.api_key, version) + encode_response(header, body, version)
