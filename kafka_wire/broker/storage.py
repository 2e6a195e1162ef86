"""Reading stored files, and an in-memory store that applies storage effects.

The engine writes only through effects; it reads through a :class:`StorageReader` its driver
passes in (the file store in ``kafka_wire.adapters``, or :class:`MemoryStorage` in tests and the
simulator). Reads see every effect applied by earlier calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kafka_wire.broker.effects import Append, Delete, Fsync, MakeDir, Rename, StorageEffect, Truncate, WriteAt


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


class MemoryStorage:
    """Files in memory. ``crash()`` drops what was not fsynced, as a power cut would."""

    def __init__(self) -> None:
        self.files: dict[str, bytearray] = {}
        self.dirs: set[str] = {""}
        self._durable: dict[str, bytes] = {}

    # StorageReader
    def list_dir(self, path: str) -> list[str]:
        prefix = f"{path}/" if path else ""
        names = {p[len(prefix) :].split("/", 1)[0] for p in (*self.files, *self.dirs) if p.startswith(prefix) and p != path}
        return sorted(n for n in names if n)

    def size(self, path: str) -> int | None:
        data = self.files.get(path)
        return None if data is None else len(data)

    def read(self, path: str, position: int, size: int) -> bytes:
        return bytes(self.files.get(path, b"")[position : position + size])

    # effects
    def apply(self, effects: Iterable[object]) -> None:
        for effect in effects:
            if isinstance(effect, StorageEffect):
                self._apply(effect)

    def _apply(self, effect: StorageEffect) -> None:
        match effect:
            case MakeDir(path):
                self.dirs.add(path)
            case Append(path, data):
                self.files.setdefault(path, bytearray()).extend(data)
            case WriteAt(path, position, data):
                buf = self.files.setdefault(path, bytearray())
                if len(buf) < position:
                    buf.extend(bytes(position - len(buf)))
                buf[position : position + len(data)] = data
            case Truncate(path, size):
                del self.files.setdefault(path, bytearray())[size:]
            case Fsync(path):
                if path in self.files:
                    self._durable[path] = bytes(self.files[path])
            case Rename(source, target):
                if source in self.files:
                    self.files[target] = self.files.pop(source)
                    if source in self._durable:
                        self._durable[target] = self._durable.pop(source)
                else:
                    for name in [p for p in (*self.files, *self.dirs) if p == source or p.startswith(source + "/")]:
                        new = target + name[len(source) :]
                        if name in self.files:
                            self.files[new] = self.files.pop(name)
                        if name in self._durable:
                            self._durable[new] = self._durable.pop(name)
                        if name in self.dirs:
                            self.dirs.discard(name)
                            self.dirs.add(new)
            case Delete(path):
                for name in [p for p in self.files if p == path or p.startswith(path + "/")]:
                    del self.files[name]
                    self._durable.pop(name, None)
                self.dirs -= {d for d in self.dirs if d == path or d.startswith(path + "/")}

    def crash(self) -> None:
        """Lose every byte written since the file's last Fsync."""
        self.files = {p: bytearray(self._durable.get(p, b"")) for p in self.files}
