"""Reading stored files: the engine's side of its storage.

The engine writes only through effects; it reads through a :class:`StorageReader` its driver
passes in (the file store in ``kafka_wire.adapters``, or
:class:`~kafka_wire.testing.memory_storage.MemoryStorage` in tests and the simulator). Reads
see every effect of earlier calls: a driver that applies effects while the engine goes on (the
asyncio one) makes a read wait for the effects in flight on its path, except appends, whose bytes
the engine keeps until its :class:`~kafka_wire.broker.effects.WriteProgress` says they were
applied.
"""

from __future__ import annotations

from typing import Protocol


class StorageReader(Protocol):
    def list_dir(self, path: str) -> list[str]:
        """Names in directory ``path`` ("" is the data directory), sorted; [] when it is missing."""
        ...

    def size(self, path: str) -> int | None:
        """A file's size, or None when there is no such file."""
        ...

    def read(self, path: str, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position`` (fewer at the end of the file)."""
        ...
