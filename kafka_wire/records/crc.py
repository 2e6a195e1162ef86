"""Checksums of record data: CRC-32C for RecordBatch v2, CRC-32 (IEEE) for legacy messages.

The ``crc32c`` package's extension module loads on the first CRC-32C, and on its own: the
package's ``__init__`` reads its distribution metadata (``importlib.metadata``, which brings
``email``, ``zipfile`` and more), 30-120 ms of CPU that a broker start (whose one-voter quorum
writes its first batch at once) need not pay. When the extension cannot be loaded apart (another
layout of the package), the package is imported.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from kafka_wire.flavour import extension_alone
from kafka_wire.records.record import BufferLike

_Crc32c = Callable[[BufferLike, int], int]
#: ``crc32c.crc32c`` once loaded.
_impl: _Crc32c | None = None


def _load() -> _Crc32c:
    global _impl
    try:
        alone = extension_alone("crc32c", "_crc32c")
    except ImportError:
        alone = None
    if alone is not None:
        found: _Crc32c = alone.crc32c
    else:  # the package (another layout): the same function
        import crc32c as _crc32c

        found = _crc32c.crc32c
    _impl = found
    return found


def crc32c(data: BufferLike) -> int:
    """CRC-32C (Castagnoli) as Kafka's ``Crc32C``; ``data`` may be any contiguous buffer."""
    return (_impl or _load())(data, 0)


def crc32c_update(data: BufferLike, crc: int = 0) -> int:
    """CRC-32C of ``data`` continuing from the CRC-32C ``crc`` of the bytes before it."""
    return (_impl or _load())(data, crc)


def crc32(data: BufferLike) -> int:
    """CRC-32 (IEEE, ``java.util.zip.CRC32``) of a legacy message body."""
    return zlib.crc32(data)
