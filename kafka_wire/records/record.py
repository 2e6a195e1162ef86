"""The record view every batch yields, whatever its magic.

``Record`` is a named tuple (cheap to create in the decode loop, immutable, attribute access in
C). It is generic over the buffer type of its key, value and header values: ``bytes`` by
default, ``memoryview`` when the reader runs with ``zero_copy=True``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, NamedTuple, TypeVar

BufferLike = bytes | bytearray | memoryview
"""What the readers accept (``bytes`` is fastest; others are read through a memoryview)."""

B = TypeVar("B", bytes, memoryview)
"""Buffer type of keys, values and header values: ``bytes`` or (zero-copy) ``memoryview``."""

Header = tuple[str, B | None]


class Record(NamedTuple, Generic[B]):
    """One record. ``headers`` is a sequence of ``(key, value)``; legacy records have none."""

    offset: int
    timestamp: int
    key: B | None
    value: B | None
    headers: Sequence[tuple[str, B | None]]


class NewRecord(NamedTuple):
    """A record to build: the same fields a tuple ``(key, value, headers, timestamp)`` gives.

    ``timestamp=None`` takes the builder's ``default_timestamp``.
    """

    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


EMPTY_HEADERS: tuple[()] = ()
