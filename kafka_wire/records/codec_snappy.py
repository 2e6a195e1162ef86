"""snappy as Kafka writes it: xerial ``SnappyOutputStream`` framing; raw blocks are read too.

The xerial stream is a 16-byte header (``\\x82SNAPPY\\0``, int32 version 1, int32 minimum
compatible version 1), then ``int32 length`` + raw snappy block pairs, each block holding at
most 32 KiB of input. A reader also accepts a single raw snappy block (no header) and a header
repeated in the middle (concatenated streams).
"""

from __future__ import annotations

import struct
from typing import Final

import snappy  # type: ignore[import-untyped]  # python-snappy ships no type information

from kafka_wire.errors import InvalidValueError, LimitExceededError
from kafka_wire.records.record import BufferLike

XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
XERIAL_HEADER: Final = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE: Final = 32 * 1024
_I32: Final = struct.Struct(">i")


def _raw_compress(data: BufferLike) -> bytes:
    out: bytes = snappy.compress(data)
    return out


def _declared_length(block: memoryview) -> int:
    """The uncompressed length a raw snappy block declares in its varint preamble."""
    value = 0
    for i in range(min(5, len(block))):
        b = block[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return value
    raise InvalidValueError("snappy block has no valid length preamble")


def _raw_decompress(block: memoryview, budget: int) -> bytes:
    declared = _declared_length(block)
    if declared > budget:
        raise LimitExceededError(f"snappy block declares {declared} bytes, over the decompression cap")
    try:
        out: bytes = snappy.uncompress(block)
    except Exception as e:  # python-snappy / cramjam raise their own error types
        raise InvalidValueError(f"snappy block is invalid: {type(e).__name__}") from None
    return out


def snappy_compress(data: BufferLike) -> bytes:
    """xerial-framed snappy, as Kafka's Java client writes it."""
    view = memoryview(data).cast("B")
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = _raw_compress(view[start : start + XERIAL_BLOCK_SIZE])
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def snappy_compress_raw(data: BufferLike) -> bytes:
    """One raw snappy block (what some non-Java clients write)."""
    return _raw_compress(data)


def snappy_decompress(data: BufferLike, max_bytes: int) -> bytes:
    """Decompress xerial-framed or raw snappy, producing at most ``max_bytes``."""
    view = memoryview(data).cast("B")
    n = len(view)
    if bytes(view[:8]) != XERIAL_MAGIC:
        return _raw_decompress(view, max_bytes)
    parts: list[bytes] = []
    total = 0
    pos = 0
    while pos < n:
        if bytes(view[pos : pos + 8]) == XERIAL_MAGIC:
            if n - pos < 16:
                raise InvalidValueError("xerial snappy header is truncated")
            pos += 16
            continue
        if n - pos < 4:
            raise InvalidValueError("xerial snappy block length is truncated")
        (length,) = _I32.unpack_from(view, pos)
        pos += 4
        if length < 0 or length > n - pos:
            raise InvalidValueError(f"xerial snappy block length {length} exceeds the {n - pos} bytes left")
        chunk = _raw_decompress(view[pos : pos + length], max_bytes - total)
        total += len(chunk)
        parts.append(chunk)
        pos += length
    return parts[0] if len(parts) == 1 else b"".join(parts)
