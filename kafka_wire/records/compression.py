"""Compression codecs by Kafka codec id, with a cap on decompressed size.

Every ``decompress`` call is bounded by ``max_bytes`` (a :class:`LimitExceededError` past it)
and turns codec library errors into :class:`InvalidValueError`. Offsets in these errors are 0;
the batch reader re-locates them to the batch.

The snappy, lz4 and zstd libraries load on the first batch that uses them (together they take tens
of milliseconds to import, which a broker start or a program without compression need not pay).
"""

from __future__ import annotations

from kafka_wire.errors import EncodeError, InvalidValueError
from kafka_wire.records.codec_gzip import gzip_compress, gzip_decompress
from kafka_wire.records.constants import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    COMPRESSION_IDS,
    COMPRESSION_NAMES,
)
from kafka_wire.records.record import BufferLike


def codec_id(name: str) -> int:
    """The codec id of a compression name (``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd``)."""
    try:
        return COMPRESSION_IDS[name]
    except KeyError:
        raise EncodeError(
            f"unknown compression {name!r} (expected one of {', '.join(COMPRESSION_IDS)})"
        ) from None


def compress(codec: int, data: BufferLike, *, magic: int, level: int | None = None) -> bytes:
    """Compress ``data`` the way Kafka's Java client does for a batch of ``magic``."""
    if codec == CODEC_GZIP:
        return gzip_compress(data, level)
    if codec == CODEC_SNAPPY:
        from kafka_wire.records.codec_snappy import snappy_compress

        return snappy_compress(data)
    if codec == CODEC_LZ4:
        from kafka_wire.records.codec_lz4 import lz4_compress

        return lz4_compress(data, magic=magic, level=level)
    if codec == CODEC_ZSTD:
        if magic < 2:
            raise EncodeError("zstd needs magic v2")
        from kafka_wire.records.codec_zstd import zstd_compress

        return zstd_compress(data, level)
    if codec == CODEC_NONE:
        return bytes(data)
    raise EncodeError(f"unknown compression codec id {codec}")


def decompress(codec: int, data: BufferLike, *, magic: int, max_bytes: int) -> bytes:
    """Decompress a batch's compressed records (v2) or a legacy wrapper's value (v0/v1)."""
    if codec == CODEC_GZIP:
        return gzip_decompress(data, max_bytes)
    if codec == CODEC_SNAPPY:
        from kafka_wire.records.codec_snappy import snappy_decompress

        return snappy_decompress(data, max_bytes)
    if codec == CODEC_LZ4:
        from kafka_wire.records.codec_lz4 import lz4_decompress

        return lz4_decompress(data, magic=magic, max_bytes=max_bytes)
    if codec == CODEC_ZSTD:
        if magic < 2:
            raise InvalidValueError(f"zstd compression in a magic v{magic} message (zstd needs v2)")
        from kafka_wire.records.codec_zstd import zstd_decompress

        return zstd_decompress(data, max_bytes)
    raise InvalidValueError(f"unknown compression {COMPRESSION_NAMES[codec & 7]} (codec id {codec})")
