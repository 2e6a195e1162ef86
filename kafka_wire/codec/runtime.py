"""Hand-written runtime of the generated codecs: base classes, field descriptors, varints.

Generated modules in ``kafka_wire.messages`` import from here. The straight-line per-version
functions they define do the work; this module only dispatches, keeps the descriptors the
interpreter (:mod:`kafka_wire.codec.interp`) and the Hypothesis strategies read, and turns any
low-level failure into a precise :class:`~kafka_wire.errors.DecodeError` / ``EncodeError`` by
re-running the interpreter, which tracks field paths.

Large decodes run with the cyclic garbage collector paused (:data:`GC_PAUSE_MIN_BYTES`): a decoded
message graph holds no reference cycles, yet each of its thousands of new lists and structs counts
towards the collector's thresholds and is walked, promoted and walked again while the decode runs.
``decode_from`` (which ``decode`` and the framing in :mod:`kafka_wire.protocol` call) pauses the
collector only when it was enabled, and re-enables it in a ``finally`` block, so an exception never
leaves it off and nested or concurrent decodes never turn it on for a caller that had it off. The
collector's switch is process-wide: a thread that disables it while another thread runs a large
decode has it re-enabled when that decode ends. Objects allocated meanwhile are collected normally
once the collector runs again (the allocation count is kept).
"""

from __future__ import annotations

import gc
import struct
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID, SafeUUID

from kafka_wire.codec.versions import VersionSet
from kafka_wire.errors import (
    DecodeError,
    EncodeError,
    InvalidValueError,
    TruncatedError,
)
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire._compiled.base import Struct

#: The all-zero UUID, Kafka's ``Uuid.ZERO_UUID`` and the default of every uuid field.
ZERO_UUID: Final = UUID(int=0)
#: Its 16 bytes: generated decoders return the shared :data:`ZERO_UUID` for them.
ZERO_UUID_BYTES: Final = bytes(16)

#: Decodes of at least this many bytes pause the cyclic GC (see the module docstring). Below it a
#: decode creates too few objects to reach the collector's first threshold (700 allocations).
GC_PAUSE_MIN_BYTES: Final = 4096

#: Longest string Kafka reads or writes (its length must fit an int16, in flexible versions too).
MAX_STRING_BYTES: Final = 0x7FFF


class _Fresh:
    """Marks a parameter left at its default when that default is a new list or struct."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<fresh default>"


#: Value ranges of the integer wire types.
INT_RANGES: Final[dict[str, tuple[int, int]]] = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, 0xFFFF),
    "uint32": (0, 0xFFFFFFFF),
}

#: Arrays of fixed-width numbers up to this length use a precompiled ``struct.Struct``.
SMALL_ARRAY: Final = 64
_ARRAY_CHARS = "?bhiqHId"


class _Structs(dict[int, struct.Struct]):
    """``struct.Struct(prefix + f"{n}{code}")`` for ``n`` in ``range(SMALL_ARRAY)``, each made on first
    use (making all 1,024 of both tables took several ms of every start) and indexed as a tuple of
    them would be (a negative ``n`` counts from the end, one out of range raises ``IndexError``)."""

    __slots__ = ("_format",)

    def __init__(self, prefix: str, code: str) -> None:
        super().__init__()
        self._format = prefix + "{}" + code

    def __missing__(self, n: int) -> struct.Struct:
        if not -SMALL_ARRAY <= n < SMALL_ARRAY:
            raise IndexError(f"{n} is not below {SMALL_ARRAY}")
        made = self[n] = struct.Struct(self._format.format(n % SMALL_ARRAY))
        return made


#: ``ARRAY_STRUCTS[c][n]`` reads or writes ``n`` values of struct code ``c``.
ARRAY_STRUCTS: Final = {c: _Structs(">", c) for c in _ARRAY_CHARS}
#: ``COUNTED_ARRAY_STRUCTS[c][n]`` writes an int32 count and then ``n`` values of code ``c``.
COUNTED_ARRAY_STRUCTS: Final = {c: _Structs(">i", c) for c in _ARRAY_CHARS}

#: Default of array and struct parameters: the constructor builds a new empty list or struct.
FRESH: Final[Any] = _Fresh()

TaggedFields = tuple[tuple[int, bytes], ...]

#: What bad input makes the generated decoders raise: their own typed errors, ``struct.error`` and
#: ``IndexError`` where the input ends too soon, ``UnicodeDecodeError`` for a string that is not
#: UTF-8. Any of them sends the work to the interpreter, which raises the precise
#: :class:`~kafka_wire.errors.DecodeError`; any other exception is a bug and propagates as itself.
DECODE_FAILURES: Final = (DecodeError, struct.error, IndexError, UnicodeDecodeError)
#: What bad field values make the generated encoders raise (values are the caller's, of any type):
#: the interpreter then raises the precise :class:`~kafka_wire.errors.EncodeError`.
ENCODE_FAILURES: Final = (EncodeError, struct.error, TypeError, AttributeError, ValueError, OverflowError)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a generated class, as the interpreter and the strategies need it."""

    name: str  # Python attribute name
    wire_name: str  # Kafka's name
    kind: str  # primitive name, "struct" or "array"
    element: str | None  # array element kind
    struct: type[Struct] | None  # the struct class, for struct fields and arrays of structs
    versions: VersionSet
    nullable: VersionSet
    tag: int | None
    tagged: VersionSet
    flexible_override: VersionSet | None
    default: Callable[[], Any]  # a fresh default value
    ignorable: bool
    entity_type: str | None = None

    def struct_class(self) -> type[Struct]:
        if self.struct is None:
            raise TypeError(f"{self.name} is not a struct field")
        return self.struct

    def flexible(self, version: int, message_flexible: VersionSet) -> bool:
        override = self.flexible_override
        return version in (message_flexible if override is None else override)


#: Records payloads of at least this many bytes are kept aside by :class:`Output`.
BIG_PAYLOAD: Final = 64 << 10


class Output(bytearray):
    """The pure encoders' buffer in ``Struct.encode``: large records payloads are not copied in.

    :func:`put_records` notes where each one goes and :meth:`joined` makes the result with one
    allocation. Copying a 1 MiB payload into the buffer and then the buffer into ``bytes`` made two
    fresh 1 MiB blocks per call, which the allocator returned to the system and faulted in again
    every time (a millisecond on this machine, against 30 us for one copy).
    """

    #: (position in the buffer, payload) of each payload kept aside, or None
    payloads: list[tuple[int, Any]] | None = None
    #: Records payloads of at least this many bytes are kept aside (1: all of them, with their
    #: positions, for zero-copy fetch: ``protocol.framing.encode_response_spliced``).
    keep_from: int = BIG_PAYLOAD

    def joined(self) -> bytes:
        assert self.payloads is not None
        view = memoryview(self)
        chunks: list[Any] = []
        start = 0
        for at, payload in self.payloads:
            chunks += (view[start:at], payload)
            start = at
        chunks.append(view[start:])
        try:
            return b"".join(chunks)
        finally:
            chunks.clear()
            view.release()


def put_records(out: bytearray, data: Any) -> None:
    """Append a records payload (generated encoders), or keep a large one aside in an :class:`Output`."""
    if type(out) is Output and len(data) >= out.keep_from:
        if out.payloads is None:
            out.payloads = []
        out.payloads.append((len(out), data))
    else:
        out += data


def value_names(cls: Any) -> tuple[str, ...]:
    """The attributes that make a struct's value: its fields and ``unknown_tagged_fields``."""
    return (*(f.name for f in cls.FIELDS), "unknown_tagged_fields")


def struct_eq(a: Any, b: Any) -> bool:
    """Two structs of the same class are equal when their values are (``Struct.__eq__``)."""
    return all(getattr(a, f) == getattr(b, f) for f in value_names(type(a)))


def struct_repr(x: Any) -> str:
    parts = [f"{f.name}={getattr(x, f.name)!r}" for f in x.FIELDS]
    if x.unknown_tagged_fields:
        parts.append(f"unknown_tagged_fields={x.unknown_tagged_fields!r}")
    return f"{type(x).__name__}({', '.join(parts)})"


# The module functions below are the slow path of ``Struct.encode`` / ``decode`` (kafka_wire._compiled.base):
# the class's pure function, then the interpreter, which reports the precise error (and, for a
# compiled class whose compiled function failed, decides directly).


def encode_message(msg: Any, version: int) -> bytes:
    """``msg.encode(version)`` by the pure encoder (the interpreter reports its failures)."""
    out = bytearray()
    encode_message_into(msg, out, version)
    return bytes(out)


def pure_functions(cls: Any) -> tuple[dict[int, Any], dict[int, Any]]:
    """``cls``'s pure decoders and encoders by version: its own, or, for a compiled class, those of
    its public module (``_PURE_FUNCTIONS``, which the generated module keeps when it takes the
    compiled classes; the functions use that module's names, which are then the compiled classes)."""
    if cls._encoders or not cls._native_encoders:
        return cls._decoders, cls._encoders
    found = _PURE_OF_COMPILED.get(cls)
    if found is None:
        tables = getattr(sys.modules.get(cls.__module__), "_PURE_FUNCTIONS", {})
        found = _PURE_OF_COMPILED[cls] = tables.get(cls.__name__, ({}, {}))
    return found


#: Compiled class -> its pure functions (:func:`pure_functions`), found once.
_PURE_OF_COMPILED: Final[dict[Any, tuple[dict[int, Any], dict[int, Any]]]] = {}


def encode_message_into(msg: Any, out: bytearray, version: int) -> None:
    """``msg.encode_into(out, version)`` by the pure encoder (:func:`pure_functions`; the
    interpreter reports its failures, or encodes for a class without one)."""
    encoder = pure_functions(type(msg))[1].get(version)
    mark = len(out)
    if encoder is None:
        from kafka_wire.codec import interp

        kept = len(out.payloads or ()) if type(out) is Output else 0
        try:
            interp.encode(msg, version, out)  # UnsupportedVersionError for a version the class lacks
        except BaseException:
            del out[mark:]
            if type(out) is Output and out.payloads:
                del out.payloads[kept:]
            raise
        return
    try:
        encoder(msg, out)
    except ENCODE_FAILURES as exc:
        del out[mark:]
        from kafka_wire.codec import interp

        interp.encode(msg, version, bytearray())  # raises the precise EncodeError
        raise EncodeError(f"cannot encode: {exc!r}", message=type(msg).__name__, version=version) from exc


def decode_message(cls: Any, buf: bytes | bytearray | memoryview, version: int, strict: bool) -> Any:
    """``cls.decode(buf, version, strict=strict)`` by the pure decoder."""
    data = buf if type(buf) is bytes else bytes(buf)
    msg, end = decode_message_from(cls, data, 0, version)
    if strict and end != len(data):
        raise InvalidValueError(
            f"{len(data) - end} bytes left after the message",
            offset=end,
            version=version,
            message=cls.__name__,
        )
    return msg


def decode_message_from(cls: Any, buf: bytes, pos: int, version: int) -> tuple[Any, int]:
    """``cls.decode_from(buf, pos, version)`` by the pure decoder (the interpreter reports its failures)."""
    # Only a caller that had the collector on gets it back on (see the module docstring).
    if len(buf) - pos >= GC_PAUSE_MIN_BYTES and _gc_isenabled():
        _gc_disable()
        try:
            return _decode_pure(cls, buf, pos, version)
        finally:
            _gc_enable()
    return _decode_pure(cls, buf, pos, version)


def _decode_pure(cls: Any, buf: bytes, pos: int, version: int) -> tuple[Any, int]:
    decoder = pure_functions(cls)[0].get(version)
    if decoder is None:
        if version not in cls.STRUCT_VERSIONS:
            raise InvalidValueError(
                f"no such version (valid: {cls.STRUCT_VERSIONS.format()})",
                offset=pos,
                version=version,
                message=cls.__name__,
            )
        from kafka_wire.codec import interp  # a class without pure functions

        result: tuple[Any, int] = interp.decode(cls, buf, pos, version)
        return result
    try:
        result = decoder(buf, pos)
        return result
    except DECODE_FAILURES as exc:
        from kafka_wire.codec import interp

        interp.decode(cls, buf, pos, version)  # raises the precise DecodeError
        raise DecodeError(f"undecodable: {exc!r}", offset=pos, version=version, message=cls.__name__) from exc


_gc_isenabled = gc.isenabled
_gc_disable = gc.disable
_gc_enable = gc.enable

_new_object = object.__new__
_set_slot = object.__setattr__
_SAFE_UNKNOWN: Final = SafeUUID.unknown


def _uuid_from_bytes_fast(raw: bytes) -> UUID:
    u: UUID = _new_object(UUID)
    _set_slot(u, "int", int.from_bytes(raw, "big"))
    _set_slot(u, "is_safe", _SAFE_UNKNOWN)
    return u


def _uuid_from_bytes_slow(raw: bytes) -> UUID:
    return UUID(bytes=raw)


def _fast_uuid_works() -> bool:
    raw = bytes(range(1, 17))
    try:
        fast, slow = _uuid_from_bytes_fast(raw), UUID(bytes=raw)
    except (AttributeError, TypeError):  # pragma: no cover - a CPython that stores UUIDs differently
        return False
    return (
        fast == slow and hash(fast) == hash(slow) and fast.is_safe is slow.is_safe and str(fast) == str(slow)
    )


_make_uuid: Final = _uuid_from_bytes_fast if _fast_uuid_works() else _uuid_from_bytes_slow

#: UUIDs decoded lately, by their 16 bytes: a stream of Produce or Fetch messages names the same
#: few topic ids again and again, and a UUID is immutable, so decoders share one object per id.
#: Cleared when it reaches :data:`UUID_CACHE_SIZE` entries (memory stays bounded).
UUID_CACHE: Final[dict[bytes, UUID]] = {}
UUID_CACHE_SIZE: Final = 1024


def uuid_from_bytes(raw: bytes) -> UUID:
    """``UUID(bytes=raw)`` for 16 bytes, from :data:`UUID_CACHE` or made about three times faster
    than by ``UUID()``: the two slots that ``UUID.__init__`` sets (``int`` and ``is_safe``) are set
    without that method's argument checks (the constructor itself on a Python whose UUID fails the
    check at import)."""
    u = UUID_CACHE.get(raw)
    if u is None:
        if len(UUID_CACHE) >= UUID_CACHE_SIZE:
            UUID_CACHE.clear()
        u = UUID_CACHE[raw] = _make_uuid(raw)
    return u


def class_data(
    cls: Any,
    fields: tuple[FieldSpec, ...],
    flexible: str,
    versions: str,
    decoders: dict[int, Any],
    encoders: dict[int, Any],
    *,
    compiled: bool = False,
    module: str | None = None,
    api_key: int | None = None,
    kind: str | None = None,
    valid: tuple[int, ...] = (),
) -> None:
    """Give a generated class its class data (both flavours' modules call this once per class).

    ``compiled``: the functions are the compiled flavour's (``BytesWriter`` encoders). ``module``:
    the public module of a compiled class (``kafka_wire.messages.<api>``), so that its ``repr``
    of the class, pickles and docs name the public path rather than the private package. ``kind``
    is set for top-level messages only (with ``api_key`` and the ``valid`` versions).
    """
    cls.FIELDS = fields
    cls.FLEXIBLE_VERSIONS = VersionSet.parse(flexible)
    cls.STRUCT_VERSIONS = VersionSet.parse(versions)
    if compiled:
        cls._native_decoders = decoders
        cls._native_encoders = encoders
    else:
        cls._decoders = decoders
        cls._encoders = encoders
    if module is not None:
        cls.__module__ = module
    if kind is not None:
        cls.API_KEY = api_key
        cls.KIND = kind
        cls.VERSIONS = valid


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (32 bits), as Kafka's ``readUnsignedVarint``."""
    value = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        if shift == 28:
            if b & 0x80:
                raise InvalidValueError("unsigned varint longer than 5 bytes", offset=pos - 1)
            return value | ((b & 0x0F) << 28), pos
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def write_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` (0 <= value < 2**32) as an unsigned varint."""
    if not 0 <= value <= 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def truncated(what: str) -> TruncatedError:
    return TruncatedError(f"input ends inside {what}")


def invalid(what: str) -> InvalidValueError:
    return InvalidValueError(what)


def write_tagged(out: bytearray, known: list[tuple[int, bytes | bytearray]], unknown: TaggedFields,
                 known_tags: frozenset[int]) -> None:  # fmt: skip
    """Write a tagged-field block: known values and retained unknown ones, ascending by tag."""
    if unknown:
        seen: set[int] = set()
        for tag, _ in unknown:
            if tag in known_tags or tag in seen:
                raise EncodeError(f"tag {tag} is used twice or collides with a known tag")
            seen.add(tag)
        entries = sorted([*known, *unknown], key=lambda e: e[0])
    else:
        entries = known
    write_uvarint(out, len(entries))
    for tag, data in entries:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data
