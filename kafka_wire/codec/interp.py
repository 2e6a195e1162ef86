"""A slow, descriptor-driven codec: the generated code's oracle and its error reporter.

It reads the :class:`~kafka_wire.codec.runtime.FieldSpec` tables of the generated classes and
encodes or decodes field by field, keeping the field path and byte offset, so its errors say
exactly where input went wrong. The generated fast path hands every failure to it; the
differential tests check that both produce identical bytes and equal objects.
"""

from __future__ import annotations

import struct
from typing import Any
from uuid import UUID

from kafka_wire.codec.runtime import (
    INT_RANGES,
    MAX_STRING_BYTES,
    FieldSpec,
    TaggedFields,
    put_records,
    write_tagged,
    write_uvarint,
)
from kafka_wire.codec.structs import Struct
from kafka_wire.errors import (
    DecodeError,
    EncodeError,
    FieldNotInVersionError,
    InvalidValueError,
    Path,
    TruncatedError,
    UnsupportedVersionError,
    ValueOutOfRangeError,
)

_FIXED: dict[str, tuple[struct.Struct, int]] = {
    "bool": (struct.Struct(">?"), 1),
    "int8": (struct.Struct(">b"), 1),
    "int16": (struct.Struct(">h"), 2),
    "int32": (struct.Struct(">i"), 4),
    "int64": (struct.Struct(">q"), 8),
    "uint16": (struct.Struct(">H"), 2),
    "uint32": (struct.Struct(">I"), 4),
    "float64": (struct.Struct(">d"), 8),
}


class _Reader:
    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf = buf
        self.pos = pos

    def take(self, n: int, path: Path, what: str) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise TruncatedError(
                f"{what} needs {n} bytes, {len(self.buf) - self.pos} remain", offset=self.pos, path=path
            )
        data = self.buf[self.pos : end]
        self.pos = end
        return data

    def fixed(self, kind: str, path: Path) -> Any:
        s, n = _FIXED[kind]
        return s.unpack(self.take(n, path, kind))[0]

    def uvarint(self, path: Path) -> int:
        value = 0
        for i in range(5):
            start = self.pos
            b = self.take(1, path, "unsigned varint")[0]
            if i == 4:
                if b & 0x80:
                    raise InvalidValueError("unsigned varint longer than 5 bytes", offset=start, path=path)
                return value | ((b & 0x0F) << 28)
            value |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                return value
        raise AssertionError("unreachable")  # pragma: no cover

    def length(self, kind: str, flexible: bool, path: Path) -> int:
        if flexible:
            return self.uvarint(path) - 1
        return int(self.fixed("int16" if kind == "string" else "int32", path))


def decode(cls: type[Struct], buf: bytes, pos: int, version: int, path: Path = ()) -> tuple[Any, int]:
    """Decode ``cls`` at ``version``; raise a :class:`DecodeError` that names the field path."""
    try:
        reader = _Reader(buf, pos)
        return _decode_struct(cls, reader, version, path), reader.pos
    except DecodeError as exc:
        api_key = getattr(cls, "API_KEY", None)
        raise exc.located(api_key=api_key, version=version, message=cls.__name__) from None


def _decode_struct(cls: type[Struct], r: _Reader, v: int, path: Path) -> Struct:
    if v not in cls.STRUCT_VERSIONS:
        raise InvalidValueError(f"{cls.__name__} has no version {v}", offset=r.pos, path=path)
    obj = cls.__new__(cls)  # native (compiled) classes refuse object.__new__
    flexible = v in cls.FLEXIBLE_VERSIONS
    for f in cls.FIELDS:
        setattr(obj, f.name, f.default())
    for f in cls.FIELDS:
        if v in f.versions and v not in f.tagged:
            setattr(
                obj, f.name, _decode_value(f, r, v, f.flexible(v, cls.FLEXIBLE_VERSIONS), (*path, f.name))
            )
    unknown: list[tuple[int, bytes]] = []
    if flexible:
        by_tag = {f.tag: f for f in cls.FIELDS if f.tag is not None}
        count = r.uvarint((*path, "<tagged fields>"))
        previous = -1
        for _ in range(count):
            tag = r.uvarint((*path, "<tag>"))
            if tag <= previous:  # tags ascend: a duplicate or out-of-order tag would not encode again
                raise InvalidValueError(
                    f"tag {tag} after tag {previous}: tags must ascend", offset=r.pos, path=path
                )
            previous = tag
            size = r.uvarint((*path, "<tag size>"))
            known = by_tag.get(tag)
            if known is None:
                unknown.append((tag, r.take(size, (*path, f"<tag {tag}>"), "tagged field")))
            elif v not in known.tagged:
                raise InvalidValueError(f"tag {tag} is not valid in version {v}", offset=r.pos, path=path)
            else:
                setattr(obj, known.name, _decode_value(known, r, v, True, (*path, known.name)))
    obj.unknown_tagged_fields = tuple(unknown)
    return obj


def _decode_value(f: FieldSpec, r: _Reader, v: int, flexible: bool, path: Path) -> Any:
    kind = f.kind
    if kind in _FIXED:
        return r.fixed(kind, path)
    if kind == "uuid":
        return UUID(bytes=r.take(16, path, "uuid"))
    if kind == "struct":
        if v in f.nullable:
            marker = r.fixed("int8", path)
            if marker < 0:
                return None
        return _decode_struct(f.struct_class(), r, v, path)
    start = r.pos
    n = r.length(kind, flexible, path)
    if n < 0:
        if v in f.nullable:
            return None
        raise InvalidValueError(f"non-nullable field {f.wire_name} was null", offset=start, path=path)
    if kind == "string":
        return _string(r, n, path)
    if kind == "bytes":
        return r.take(n, path, "bytes")
    if kind == "records":
        return memoryview(r.take(n, path, "records"))
    if kind == "array":
        if n > len(r.buf) - r.pos:
            raise InvalidValueError(
                f"array of {n} elements but only {len(r.buf) - r.pos} bytes remain", offset=start, path=path
            )
        items = []
        for i in range(n):
            items.append(_decode_element(f, r, v, flexible, (*path, i)))
        return items
    raise AssertionError(kind)  # pragma: no cover


def _string(r: _Reader, n: int, path: Path) -> str:
    start = r.pos
    if n > MAX_STRING_BYTES:
        raise InvalidValueError(
            f"string of {n} bytes is longer than {MAX_STRING_BYTES}", offset=start, path=path
        )
    raw = r.take(n, path, "string")
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        raise InvalidValueError(f"bad UTF-8: {exc.reason}", offset=start + exc.start, path=path) from None


def _decode_element(f: FieldSpec, r: _Reader, v: int, flexible: bool, path: Path) -> Any:
    kind = f.element
    assert kind is not None
    if kind in _FIXED:
        return r.fixed(kind, path)
    if kind == "uuid":
        return UUID(bytes=r.take(16, path, "uuid"))
    if kind == "struct":
        return _decode_struct(f.struct_class(), r, v, path)
    start = r.pos
    n = r.length(kind, flexible, path)
    if n < 0:
        raise InvalidValueError("null array element", offset=start, path=path)
    return _string(r, n, path) if kind == "string" else r.take(n, path, "bytes")


# ------------------------------------------------------------------------------------- encode


def encode(obj: Struct, version: int, out: bytearray) -> None:
    """Encode ``obj`` at ``version`` into ``out``; errors name the field path."""
    cls = type(obj)
    if version not in cls.STRUCT_VERSIONS:
        raise UnsupportedVersionError(
            f"valid versions are {cls.STRUCT_VERSIONS.format()}", message=cls.__name__, version=version
        )
    try:
        _encode_struct(obj, version, out, ())
    except EncodeError as exc:
        exc.message = exc.message or cls.__name__
        exc.version = version
        exc.args = (exc._render(),)
        raise


def is_default(f: FieldSpec, value: Any) -> bool:
    """Kafka's "this field holds its default" test (used for absent and tagged fields)."""
    default = f.default()
    if default is None:
        return value is None
    if f.kind in ("array", "bytes", "records"):
        return value is not None and len(value) == 0
    return bool(value == default)


def _encode_struct(obj: Struct, v: int, out: bytearray, path: Path) -> None:
    cls = type(obj)
    flexible = v in cls.FLEXIBLE_VERSIONS
    for f in cls.FIELDS:
        if v not in f.versions and not f.ignorable and not is_default(f, getattr(obj, f.name)):
            raise FieldNotInVersionError(
                f"non-default {f.wire_name} cannot be written at version {v}", path=(*path, f.name)
            )
    for f in cls.FIELDS:
        if v in f.versions and v not in f.tagged:
            _encode_value(
                f, getattr(obj, f.name), v, f.flexible(v, cls.FLEXIBLE_VERSIONS), out, (*path, f.name)
            )
    unknown: TaggedFields = obj.unknown_tagged_fields
    if not flexible:
        if unknown:
            raise EncodeError(f"tagged fields cannot be written in version {v}", path=path)
        return
    known: list[tuple[int, bytes | bytearray]] = []
    tags = sorted((f for f in cls.FIELDS if v in f.versions and v in f.tagged), key=lambda f: f.tag or 0)
    for f in tags:
        value = getattr(obj, f.name)
        if not is_default(f, value):
            data = bytearray()
            _encode_value(f, value, v, True, data, (*path, f.name))
            assert f.tag is not None
            known.append((f.tag, data))
    try:
        write_tagged(out, known, unknown, frozenset(f.tag for f in tags if f.tag is not None))
    except EncodeError as exc:
        exc.path = path
        raise


def _encode_value(f: FieldSpec, value: Any, v: int, flexible: bool, out: bytearray, path: Path) -> None:
    kind = f.kind
    if kind == "struct":
        if v in f.nullable:
            if value is None:
                out.append(0xFF)
                return
            out.append(1)
        elif value is None:
            raise ValueOutOfRangeError(f"non-nullable field {f.wire_name} is None", path=path)
        if not isinstance(value, f.struct_class()):
            raise ValueOutOfRangeError(
                f"expected {f.struct_class().__name__}, got {type(value).__name__}", path=path
            )
        _encode_struct(value, v, out, path)
        return
    if kind in _FIXED or kind == "uuid":
        _encode_fixed(kind, value, out, path)
        return
    if value is None:
        if v not in f.nullable:
            raise ValueOutOfRangeError(f"non-nullable field {f.wire_name} is None", path=path)
        if flexible:
            out.append(0)
        else:
            out += b"\xff\xff" if kind == "string" else b"\xff\xff\xff\xff"
        return
    if kind == "array":
        if not isinstance(value, list):
            raise ValueOutOfRangeError(f"expected a list, got {type(value).__name__}", path=path)
        _write_length("array", len(value), flexible, out)
        for i, item in enumerate(value):
            _encode_element(f, item, v, flexible, out, (*path, i))
        return
    _encode_blob(kind, value, flexible, out, path)


def _encode_element(f: FieldSpec, item: Any, v: int, flexible: bool, out: bytearray, path: Path) -> None:
    kind = f.element
    assert kind is not None
    if kind == "struct":
        if not isinstance(item, f.struct_class()):
            raise ValueOutOfRangeError(
                f"expected {f.struct_class().__name__}, got {type(item).__name__}", path=path
            )
        _encode_struct(item, v, out, path)
    elif kind in _FIXED or kind == "uuid":
        _encode_fixed(kind, item, out, path)
    elif item is None:
        raise ValueOutOfRangeError("array elements cannot be None", path=path)
    else:
        _encode_blob(kind, item, flexible, out, path)


def _encode_fixed(kind: str, value: Any, out: bytearray, path: Path) -> None:
    if kind == "uuid":
        if not isinstance(value, UUID):
            raise ValueOutOfRangeError(f"expected a UUID, got {type(value).__name__}", path=path)
        out += value.bytes
        return
    if kind in INT_RANGES:
        if not isinstance(value, int):
            raise ValueOutOfRangeError(f"expected an int, got {type(value).__name__}", path=path)
        lo, hi = INT_RANGES[kind]
        if not lo <= value <= hi:
            raise ValueOutOfRangeError(f"{value} is outside {kind} ({lo}..{hi})", path=path)
    elif kind == "float64" and not isinstance(value, (int, float)):
        raise ValueOutOfRangeError(f"expected a float, got {type(value).__name__}", path=path)
    out += _FIXED[kind][0].pack(value)


def _encode_blob(kind: str, value: Any, flexible: bool, out: bytearray, path: Path) -> None:
    if kind == "string":
        if not isinstance(value, str):
            raise ValueOutOfRangeError(f"expected a str, got {type(value).__name__}", path=path)
        try:
            data: bytes | bytearray | memoryview = value.encode()
        except UnicodeEncodeError as exc:
            raise ValueOutOfRangeError(f"not encodable as UTF-8: {exc.reason}", path=path) from None
        if len(data) > MAX_STRING_BYTES:
            raise ValueOutOfRangeError(
                f"string of {len(data)} bytes is longer than {MAX_STRING_BYTES}", path=path
            )
    else:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise ValueOutOfRangeError(f"expected bytes, got {type(value).__name__}", path=path)
        data = value
    _write_length(kind, len(data), flexible, out)
    if kind == "records":
        put_records(out, data)  # an ``Output`` keeps large (or, for splicing, all) payloads aside
    else:
        out += data


def _write_length(kind: str, n: int, flexible: bool, out: bytearray) -> None:
    if flexible:
        write_uvarint(out, n + 1)
    elif kind == "string":
        out += struct.pack(">h", n)
    else:
        out += struct.pack(">i", n)
