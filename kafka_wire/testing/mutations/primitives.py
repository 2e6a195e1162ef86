"""What the mutations share: packers, varints in their canonical and overlong forms, readers of
zigzag varints, interesting values and byte sequences that are not UTF-8."""

from __future__ import annotations

import struct
from typing import Final

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
U32 = struct.Struct(">I")
I64 = struct.Struct(">q")
FIXED: Final[dict[str, struct.Struct]] = {
    "bool": struct.Struct(">?"),
    "int8": I8,
    "int16": I16,
    "int32": I32,
    "int64": I64,
    "uint16": struct.Struct(">H"),
    "uint32": U32,
    "float64": struct.Struct(">d"),
}
INT32_MAX: Final = (1 << 31) - 1
UVARINT_MAX: Final = 0xFFFFFFFF
INTERESTING_8: Final = (0, 1, 0x7F, 0x80, 0xFF)
INTERESTING_16: Final = (0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x00FF, 0x0100)
INTERESTING_32: Final = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x0000FFFF, 0x00010000, 0x7FFFFFFE)
BAD_UTF8: Final = (b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\x80")


def uvarint(value: int) -> bytes:
    """``value`` (taken modulo 2**64) as an unsigned varint."""
    out = bytearray()
    value &= 0xFFFFFFFFFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def overlong(value: int, extra: int) -> bytes:
    """``value`` as a varint padded with ``extra`` continuation bytes (``1`` -> ``81 80 00``)."""
    raw = bytearray(uvarint(value))
    raw[-1] |= 0x80
    raw += b"\x80" * (extra - 1) + b"\x00"
    return bytes(raw)


def zigzag(value: int) -> bytes:
    """``value`` as a zigzag varint (Kafka's varint and varlong)."""
    return uvarint((value << 1) ^ (value >> 63))


def read_uvarint(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(max_bytes):
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos + i + 1
        shift += 7
    raise ValueError("varint too long")


def read_zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    raw, end = read_uvarint(buf, pos, 10)
    return (raw >> 1) ^ -(raw & 1), end
