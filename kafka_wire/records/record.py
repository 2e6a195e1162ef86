"""The record view every batch yields, whatever its magic.

``Record`` is a slotted class (cheap to create in the decode loop, fast attribute access). It is
generic over the buffer type of its key, value and header values: ``bytes`` by default,
``memoryview`` when the reader runs with ``zero_copy=True``. Records compare equal when all five
fields are equal, and unpack as ``offset, timestamp, key, value, headers``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final, Generic, NamedTuple, TypeVar

from kafka_wire.errors import EncodeError
from kafka_wire.flavour import compiled_module

BufferLike = bytes | bytearray | memoryview
"""What the readers accept (``bytes`` is fastest; others are read through a memoryview)."""

B = TypeVar("B", bytes, memoryview)
"""Buffer type of keys, values and header values: ``bytes`` or (zero-copy) ``memoryview``."""

Header = tuple[str, B | None]


class Record(Generic[B]):
    """One record. ``headers`` is a tuple of ``(key, value)`` pairs; legacy records have none.

    Decoders create records without calling ``__init__`` (``object.__new__`` plus slot stores);
    the constructor is for callers.
    """

    __slots__ = ("headers", "key", "offset", "timestamp", "value")
    __match_args__ = ("offset", "timestamp", "key", "value", "headers")

    offset: int
    timestamp: int
    key: B | None
    value: B | None
    headers: Sequence[tuple[str, B | None]]

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: B | None,
        value: B | None,
        headers: Sequence[tuple[str, B | None]] = (),
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers

    def astuple(self) -> tuple[int, int, B | None, B | None, tuple[tuple[str, B | None], ...]]:
        """``(offset, timestamp, key, value, headers)`` with headers as a tuple."""
        return (self.offset, self.timestamp, self.key, self.value, tuple(self.headers))

    def __iter__(self) -> Iterator[object]:
        return iter((self.offset, self.timestamp, self.key, self.value, self.headers))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return self.astuple() == other.astuple()

    __hash__ = None  # type: ignore[assignment]  # mutable slots: records are not hashable

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={self.headers!r})"
        )


PyRecord = Record
"""The pure-Python record class (``Record`` is the compiled one when it is in use)."""
_NATIVE_RECORD = compiled_module("kafka_wire.records._record_native")
NATIVE_RECORD: bool = _NATIVE_RECORD is not None
"""Whether ``Record`` is the compiled class of ``_record_native`` (lazy views; no ``object.__new__``)."""
if _NATIVE_RECORD is not None:
    Record = _NATIVE_RECORD.Record  # type: ignore[misc]  # the compiled twin: same public surface


class NewRecord(NamedTuple):
    """A record to build: the same fields a tuple ``(key, value, headers, timestamp)`` gives.

    ``timestamp=None`` takes the builder's ``default_timestamp``.
    """

    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


EMPTY_HEADERS: tuple[()] = ()

GC_PAUSE_MIN_RECORDS: Final = 256
"""Both flavours' list decoders pause the cyclic GC for batches of at least this many records."""


def record_fields(r: object) -> tuple[Any, Any, Any, Any]:
    """``(key, value, headers, timestamp)`` of a record given as a tuple or an object."""
    if type(r) is tuple:
        n = len(r)
        if n == 4:
            return r
        if n == 2:
            return r[0], r[1], (), None
        if n == 3:
            return r[0], r[1], r[2], None
        raise EncodeError(f"a record tuple has 2-4 items (key, value, headers, timestamp), not {n}")
    try:
        key = r.key  # type: ignore[attr-defined]  # duck-typed record objects
        value = r.value  # type: ignore[attr-defined]  # duck-typed record objects
    except AttributeError:
        raise EncodeError(f"a record must be a tuple or have key and value, not {type(r).__name__}") from None
    return key, value, getattr(r, "headers", ()) or (), getattr(r, "timestamp", None)
