"""Wire-level mutations: an encoding written as tokens, and one token made to lie.

:func:`tokenize` walks a message like the interpreter's encoder but emits tokens (a length or
count, a fixed-width value, the bytes of a string, bytes or records, a nullable struct's marker, a
tagged-field section) whose bytes join to the encoding; each mutation in
:data:`ENCODING_MUTATIONS` replaces one token (a length off by one, negative, huge or exactly what
remains, a compact length overlong, invalid UTF-8, a tag duplicated or out of order...).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from kafka_wire.codec import interp
from kafka_wire.codec.runtime import MAX_STRING_BYTES, FieldSpec
from kafka_wire.codec.structs import Struct
from kafka_wire.testing.mutations.primitives import (
    BAD_UTF8,
    FIXED,
    I16,
    I32,
    INT32_MAX,
    UVARINT_MAX,
    overlong,
    read_uvarint,
    uvarint,
)

if TYPE_CHECKING:
    from kafka_wire.testing.mutator import Mutator


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
        return uvarint(n + 1) if n >= -1 else uvarint(UVARINT_MAX)
    if what == "string":
        return I16.pack(max(-(1 << 15), min(n, (1 << 15) - 1)))
    return I32.pack(max(-(1 << 31), min(n, INT32_MAX)))


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
        out.append(Token("tags", tag_section(len(entries), entries), (entries, tuple(known_tags))))


def tag_section(count: int, entries: Sequence[tuple[int, bytes]]) -> bytes:
    parts = [uvarint(count)]
    for tag, data in entries:
        parts += (uvarint(tag), uvarint(len(data)), data)
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
    if kind in FIXED:
        out.append(Token("fixed", FIXED[kind].pack(value), kind))
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
            elif element in FIXED:
                out.append(Token("fixed", FIXED[element].pack(item), element))
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
        t.data = m.rng.choice((b"\x00", uvarint(UVARINT_MAX)))  # null, or -2 read as a huge count
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
        t.data = uvarint(m.rng.choice((UVARINT_MAX, INT32_MAX, MAX_STRING_BYTES + 2, 1 << 28)))
    else:
        _set_length(t, m.rng.choice((MAX_STRING_BYTES, INT32_MAX, 1 << 20, 0x10000)))
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
        count, end = read_uvarint(t.data, 0, 5)
        t.data = overlong(count, m.rng.randint(1, 5)) + t.data[end:]
    else:
        value, _ = read_uvarint(t.data, 0, 5)
        t.data = overlong(value, m.rng.randint(1, 5))
    return True


def _text_invalid_utf8(m: Mutator, toks: list[Token]) -> bool:
    i = _pick(m, toks, "text")
    if i is None:
        return False
    data = bytearray(toks[i].data)
    bad = m.rng.choice(BAD_UTF8)
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
    toks[i].data = tag_section(len(entries) if count is None else count, entries)
    return True


def _fresh_tag(m: Mutator, known: tuple[int, ...]) -> int:
    if known and m.rng.random() < 0.3:
        return m.rng.choice(known)  # a known tag with bytes that are not its value
    return m.rng.choice((max(known, default=-1) + 1 + m.rng.randrange(40), 0x7FFF, UVARINT_MAX, 1 << 31))


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
    parts = [uvarint(len(entries))]
    for j, (tag, data) in enumerate(entries):
        size = len(data)
        if j == at:
            size = max(0, size + m.rng.choice((-1, 1, 1 << 20, UVARINT_MAX - size)))
        parts += (uvarint(tag), uvarint(size), data)
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
