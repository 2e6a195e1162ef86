"""Bases of the compiled flavour's message classes (compiled by mypyc with them).

A mypyc native class can only derive from native classes, so the classes that
``kafka_wire.messages_native`` defines derive from these instead of
:class:`kafka_wire.codec.runtime.Struct` / ``Message``; ``isinstance(x, runtime.Struct)`` holds
for both (``runtime.StructType``).

``encode`` / ``decode`` / ``decode_from`` run the compiled function here, in compiled code; when
it fails (or there is none), the runtime's functions take over without it: the pure function
decides, and the interpreter reports, exactly as in the pure flavour. Encoders write into a
``BytesWriter`` taken from a small pool: a reused writer keeps its capacity, so a large message
is written without growing (and copying) a fresh buffer again and again.
"""

from __future__ import annotations

import gc
from typing import Any, ClassVar, Final

from librt.strings import BytesWriter

from kafka_wire.codec.runtime import (
    DECODE_FAILURES,
    ENCODE_FAILURES,
    GC_PAUSE_MIN_BYTES,
    NATIVE,
    decode_message,
    decode_message_from,
    encode_message,
    encode_message_into,
    struct_eq,
    struct_repr,
)

#: Idle writers for reuse; one is taken per encode (so nested or concurrent encodes get their own).
_POOL: Final[list[BytesWriter]] = []
_POOL_SIZE: Final = 4
#: A writer that held more than this goes back to the allocator instead of the pool.
_POOL_KEEP_BYTES: Final = 4 << 20


class Struct:
    """Native twin of ``runtime.Struct``."""

    FIELDS: ClassVar[tuple[Any, ...]] = ()
    _native_decoders: ClassVar[dict[int, Any]] = {}
    _native_encoders: ClassVar[dict[int, Any]] = {}

    unknown_tagged_fields: Any

    def __eq__(self, other: object) -> bool:
        return struct_eq(self, other)

    def __repr__(self) -> str:
        return struct_repr(self)

    def encode(self, version: int) -> bytes:
        """The body bytes of this message at ``version``."""
        data = _encode_native(self, version)
        return data if data is not None else encode_message(self, version)

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append the bytes of this message at ``version`` to ``out``."""
        data = _encode_native(self, version)
        if data is None:
            encode_message_into(self, out, version)
        else:
            out += data

    @classmethod
    def decode(cls, buf: bytes | bytearray | memoryview, version: int, *, strict: bool = False) -> Any:
        """Decode one message from ``buf``; ``strict`` rejects bytes left over after it."""
        if type(buf) is bytes:
            data: bytes = buf
            done = _decode_native(cls, data, 0, version)
            if done is not None and (not strict or done[1] == len(data)):
                return done[0]
        return decode_message(cls, buf, version, strict)

    @classmethod
    def decode_from(cls, buf: bytes, pos: int, version: int) -> tuple[Any, int]:
        """Decode from ``buf`` at ``pos``; return the message and the position after it."""
        done = _decode_native(cls, buf, pos, version)
        return done if done is not None else decode_message_from(cls, buf, pos, version)


class Message(Struct):
    """Native twin of ``runtime.Message``."""


# Values compare by content and are mutable: unhashable, as the pure classes (set here rather
# than in the class body, where mypyc would take ``__hash__`` for an attribute to pickle).
setattr(Struct, "__hash__", None)  # noqa: B010


def _encode_native(msg: Struct, version: int) -> bytes | None:
    """The compiled encoder's bytes, or None (no compiled encoder, or it failed)."""
    if not NATIVE.enabled:
        return None
    encoder = type(msg)._native_encoders.get(version)
    if encoder is None:
        return None
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


def _decode_native(cls: Any, buf: bytes, pos: int, version: int) -> tuple[Any, int] | None:
    """The compiled decoder's result, or None (no compiled decoder, or it failed). Large inputs
    are decoded with the cyclic GC paused, as ``runtime.decode_message_from`` does."""
    if not NATIVE.enabled:
        return None
    decoder = cls._native_decoders.get(version)
    if decoder is None:
        return None
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
