"""The base classes of every generated message class, in both flavours (one source).

This source runs as Python and is compiled by mypyc (``make compile``); :mod:`kafka_wire.codec.structs`
chooses which once (:func:`kafka_wire.flavour.load`). Compiled, the classes allow interpreted
subclasses, so the generated pure classes (``kafka_wire.messages``) and the compiled ones
(``kafka_wire._compiled.messages``) derive from the same ``Struct`` / ``Message``:
``isinstance(x, Message)`` holds for both because it is true.

A class carries its functions in class tables: ``_decoders`` / ``_encoders`` (pure functions, which
write into a ``bytearray``) or ``_native_decoders`` / ``_native_encoders`` (compiled functions,
which write into a ``librt.strings.BytesWriter``). ``encode`` / ``decode`` / ``decode_from`` run
the class's function; when it fails they hand over to :mod:`kafka_wire.codec.runtime`, where the
pure function (if any) decides and the interpreter (:mod:`kafka_wire.codec.interp`) reports the
precise typed error. Compiled encoders write into a ``BytesWriter`` taken from a small pool: a
reused writer keeps its capacity, so a large message is written without growing a fresh buffer.
"""

from __future__ import annotations

import gc
from typing import Any, ClassVar, Final

from librt.strings import BytesWriter
from mypy_extensions import mypyc_attr

from kafka_wire.codec.runtime import (
    DECODE_FAILURES,
    ENCODE_FAILURES,
    GC_PAUSE_MIN_BYTES,
    Output,
    decode_message,
    decode_message_from,
    encode_message,
    encode_message_into,
    struct_eq,
    struct_repr,
    value_names,
)

#: Idle writers for reuse; one is taken per encode (so nested or concurrent encodes get their own).
_POOL: Final[list[BytesWriter]] = []
_POOL_SIZE: Final = 4
#: A writer that held more than this goes back to the allocator instead of the pool.
_POOL_KEEP_BYTES: Final = 4 << 20


@mypyc_attr(allow_interpreted_subclasses=True)
class Struct:
    """Base of every generated message and nested struct class."""

    __slots__ = ("unknown_tagged_fields",)

    unknown_tagged_fields: Any
    #: The fields in wire order (``runtime.FieldSpec``), for the interpreter and the strategies.
    FIELDS: ClassVar[tuple[Any, ...]] = ()
    #: The message's flexible versions (``VersionSet``; they apply to every nested struct).
    FLEXIBLE_VERSIONS: ClassVar[Any]
    #: The versions in which this struct exists (``VersionSet``).
    STRUCT_VERSIONS: ClassVar[Any]
    #: The pure functions by version (generated classes of ``kafka_wire.messages``).
    _decoders: ClassVar[dict[int, Any]] = {}
    _encoders: ClassVar[dict[int, Any]] = {}
    #: The compiled functions by version (classes of ``kafka_wire._compiled.messages``).
    _native_decoders: ClassVar[dict[int, Any]] = {}
    _native_encoders: ClassVar[dict[int, Any]] = {}

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return struct_eq(self, other)

    def __repr__(self) -> str:
        return struct_repr(self)

    def __reduce__(self) -> tuple[Any, ...]:
        cls: Any = type(self)
        return (_restore, (cls, tuple([getattr(self, n) for n in value_names(cls)])))

    # The common case runs here, in one frame (small messages are dominated by call overhead);
    # large inputs and failures take the runtime's functions.

    def encode(self, version: int) -> bytes:
        """The body bytes of this message at ``version``."""
        cls: Any = type(self)
        native = cls._native_encoders.get(version)
        if native is not None:
            data = _encode_native(native, self)
            return data if data is not None else encode_message(self, version)
        encoder = cls._encoders.get(version)
        if encoder is not None:
            out = Output()
            try:
                encoder(self, out)
                return bytes(out) if out.payloads is None else out.joined()
            except ENCODE_FAILURES:
                pass
        return encode_message(self, version)

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append the bytes of this message at ``version`` to ``out``."""
        cls: Any = type(self)
        native = cls._native_encoders.get(version)
        data = _encode_native(native, self) if native is not None else None
        if data is None:
            encode_message_into(self, out, version)
        else:
            out += data

    @classmethod
    def decode(cls, buf: bytes | bytearray | memoryview, version: int, *, strict: bool = False) -> Any:
        """Decode one message from ``buf``; ``strict`` rejects bytes left over after it."""
        c: Any = cls
        native = c._native_decoders.get(version)
        if native is not None:
            data: bytes = buf if type(buf) is bytes else bytes(buf)
            done = _decode_native(native, data, 0)
            if done is not None and (not strict or done[1] == len(data)):
                return done[0]
            return decode_message(cls, data, version, strict)
        if type(buf) is bytes and len(buf) < GC_PAUSE_MIN_BYTES:
            decoder = c._decoders.get(version)
            if decoder is not None:
                try:
                    msg, end = decoder(buf, 0)
                    if not strict or end == len(buf):
                        return msg
                except DECODE_FAILURES:
                    pass
        return decode_message(cls, buf, version, strict)

    @classmethod
    def decode_from(cls, buf: bytes, pos: int, version: int) -> tuple[Any, int]:
        """Decode from ``buf`` at ``pos``; return the message and the position after it."""
        c: Any = cls
        native = c._native_decoders.get(version)
        if native is not None:
            done = _decode_native(native, buf, pos)
            if done is not None:
                return done
        elif len(buf) - pos < GC_PAUSE_MIN_BYTES:
            decoder = c._decoders.get(version)
            if decoder is not None:
                try:
                    result: tuple[Any, int] = decoder(buf, pos)
                    return result
                except DECODE_FAILURES:
                    pass
        return decode_message_from(cls, buf, pos, version)


@mypyc_attr(allow_interpreted_subclasses=True)
class Message(Struct):
    """Base of top-level message classes (requests, responses, headers, data)."""

    __slots__ = ()

    API_KEY: ClassVar[int | None]
    KIND: ClassVar[str]
    #: Valid versions, ascending.
    VERSIONS: ClassVar[tuple[int, ...]]


# Values compare by content and are mutable: unhashable (set here rather than in the class body,
# where mypyc would take ``__hash__`` for an attribute).
setattr(Struct, "__hash__", None)  # noqa: B010


def _restore(cls: Any, values: tuple[Any, ...]) -> Any:
    """Unpickle: a ``cls`` with ``values`` in the order of ``runtime.value_names``."""
    obj = cls.__new__(cls)
    for name, value in zip(value_names(cls), values, strict=True):
        setattr(obj, name, value)
    return obj


def _encode_native(encoder: Any, msg: Any) -> bytes | None:
    """The compiled encoder's bytes, or None when it failed (the runtime then decides)."""
    w = _POOL.pop() if _POOL else BytesWriter()
    data: bytes | None = None
    try:
        encoder(msg, w)
        data = w.getvalue()
    except ENCODE_FAILURES:
        pass
    if len(w) <= _POOL_KEEP_BYTES and len(_POOL) < _POOL_SIZE:
        w.truncate(0)
        _POOL.append(w)
    return data


def _decode_native(decoder: Any, buf: bytes, pos: int) -> tuple[Any, int] | None:
    """The compiled decoder's result, or None when it failed. Large inputs are decoded with the
    cyclic GC paused, as ``runtime.decode_message_from`` does."""
    paused = len(buf) - pos >= GC_PAUSE_MIN_BYTES and gc.isenabled()
    if paused:
        gc.disable()
    try:
        result: tuple[Any, int] = decoder(buf, pos)
        return result
    except DECODE_FAILURES:
        return None
    finally:
        if paused:
            gc.enable()
