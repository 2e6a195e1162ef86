"""The record view every batch yields, whatever its magic.

``Record`` (defined with the per-record loops, see :mod:`kafka_wire.records.loops`) is generic
over the buffer type of its key, value and header values: ``bytes`` by default, ``memoryview``
when the reader runs with ``zero_copy=True``. Records compare equal when all five fields are
equal, and unpack as ``offset, timestamp, key, value, headers``. :class:`NewRecord` is a record
to build.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, TypeVar

from kafka_wire.records.loops import EMPTY_HEADERS, Record, record_fields

B = TypeVar("B", bytes, memoryview)
"""Buffer type of keys, values and header values: ``bytes`` or (zero-copy) ``memoryview``."""

BufferLike = bytes | bytearray | memoryview
"""What the readers accept (``bytes`` is fastest; others are read through a memoryview)."""

Header = tuple[str, B | None]


class NewRecord(NamedTuple):
    """A record to build: the same fields a tuple ``(key, value, headers, timestamp)`` gives.

    ``timestamp=None`` takes the builder's ``default_timestamp``.
    """

    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


__all__ = ["EMPTY_HEADERS", "B", "BufferLike", "Header", "NewRecord", "Record", "record_fields"]
