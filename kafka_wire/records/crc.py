"""Checksums of record data: CRC-32C for RecordBatch v2, CRC-32 (IEEE) for legacy messages.

The ``crc32c`` package loads on the first CRC-32C: importing it reads its own distribution
metadata (``importlib.metadata``, which brings ``email``, ``zipfile`` and more), tens of
milliseconds that a broker start with no batch to check need not pay.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from kafka_wire.records.record import BufferLike

_Crc32c = Callable[[BufferLike, int], int]
#: ``crc32c.crc32c`` once loaded.
_impl: _Crc32c | None = None


def _load() -> _Crc32c:
    global _impl
    import crc32c as _crc32c

    _impl = _crc32c.crc32c
    return _impl


def crc32c(data: BufferLike) -> int:
    """CRC-32C (Castagnoli) as Kafka's ``Crc32C``; ``data`` may be any contiguous buffer."""
    return (_impl or _load())(data, 0)


def crc32c_update(data: BufferLike, crc: int = 0) -> int:
    """CRC-32C of ``data`` continuing from the CRC-32C ``crc`` of the bytes before it."""
    return (_impl or _load())(data, crc)


def crc32(data: BufferLike) -> int:
    """CRC-32 (IEEE, ``java.util.zip.CRC32``) of a legacy message body."""
    return zlib.crc32(data)
