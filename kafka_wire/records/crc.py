"""Checksums of record data: CRC-32C for RecordBatch v2, CRC-32 (IEEE) for legacy messages."""

from __future__ import annotations

import zlib

import crc32c as _crc32c

from kafka_wire.records.record import BufferLike


def crc32c(data: BufferLike) -> int:
    """CRC-32C (Castagnoli) as Kafka's ``Crc32C``; ``data`` may be any contiguous buffer."""
    return _crc32c.crc32c(data)


def crc32c_update(data: BufferLike, crc: int = 0) -> int:
    """CRC-32C of ``data`` continuing from the CRC-32C ``crc`` of the bytes before it."""
    return _crc32c.crc32c(data, crc)


def crc32(data: BufferLike) -> int:
    """CRC-32 (IEEE, ``java.util.zip.CRC32``) of a legacy message body."""
    return zlib.crc32(data)
