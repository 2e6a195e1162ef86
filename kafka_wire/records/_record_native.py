"""``Record`` as a mypyc native class: the compiled flavour's record.

Hand-written. :mod:`kafka_wire.records.record` uses this class as ``Record`` when the module was
compiled (``KAFKA_WIRE_COMPILE=1``) and ``KAFKA_WIRE_PURE`` is unset; otherwise its own slotted
class, which has the same public surface: the constructor, the five fields (readable and
assignable), ``astuple``, unpacking, equality, ``repr``, ``__match_args__``, no hashing.

Why a native class: creating an interpreted object from compiled code costs a generic
``object.__new__`` call and five generic attribute stores; a native class is allocated and filled
by direct C, and the compiled decoders call its constructor. ``offset`` and ``timestamp`` are
``int`` attributes, which mypyc keeps unboxed when they fit 62 bits (an int object is made when
they are read). Two differences from the pure class, both from mypyc: ``offset`` and
``timestamp`` must be ``int`` (a ``TypeError`` otherwise), and interpreted classes cannot
subclass it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar, Generic, TypeVar

B = TypeVar("B", bytes, memoryview)


class Record(Generic[B]):
    """One record. ``headers`` is a tuple of ``(key, value)`` pairs; legacy records have none."""

    __match_args__: ClassVar[tuple[str, str, str, str, str]] = ("offset", "timestamp", "key", "value", "headers")

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

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={self.headers!r})"
        )
