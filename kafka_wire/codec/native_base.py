"""Bases of the compiled flavour's message classes (compiled by mypyc with them).

A mypyc native class can only derive from native classes, so the classes that
``kafka_wire.messages_native`` defines derive from these instead of
:class:`kafka_wire.codec.runtime.Struct` / ``Message``. The behaviour is the runtime's own
functions; ``isinstance(x, runtime.Struct)`` holds for both (``runtime.StructType``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kafka_wire.codec.runtime import (
    decode_message,
    decode_message_from,
    encode_message,
    encode_message_into,
    struct_eq,
    struct_repr,
)


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
        return encode_message(self, version)

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append the bytes of this message at ``version`` to ``out``."""
        encode_message_into(self, out, version)

    @classmethod
    def decode(cls, buf: bytes | bytearray | memoryview, version: int, *, strict: bool = False) -> Any:
        """Decode one message from ``buf``; ``strict`` rejects bytes left over after it."""
        return decode_message(cls, buf, version, strict)

    @classmethod
    def decode_from(cls, buf: bytes, pos: int, version: int) -> tuple[Any, int]:
        """Decode from ``buf`` at ``pos``; return the message and the position after it."""
        return decode_message_from(cls, buf, pos, version)


class Message(Struct):
    """Native twin of ``runtime.Message``."""


# Values compare by content and are mutable: unhashable, as the pure classes (set here rather
# than in the class body, where mypyc would take ``__hash__`` for an attribute to pickle).
setattr(Struct, "__hash__", None)  # noqa: B010
