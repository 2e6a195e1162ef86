"""An in-memory store that applies the engine's storage effects: the storage of the unit tests and
of the simulator (whose power-loss fault is :meth:`MemoryStorage.crash`)."""

from __future__ import annotations

import errno
from collections.abc import Iterable

from kafka_wire.broker.effects import Append, Delete, Fsync, MakeDir, Rename, StorageEffect, Truncate, WriteAt

#: The messages of the errors this storage raises (the C library's texts, without asking the
#: operating system: the core does no I/O).
_MESSAGES = {
    errno.EROFS: "Read-only file system",
    errno.ENOSPC: "No space left on device",
    errno.EIO: "Input/output error",
    errno.EDQUOT: "Disk quota exceeded",
    errno.EMFILE: "Too many open files",
}


def _strerror(code: int) -> str:
    return _MESSAGES.get(code) or errno.errorcode.get(code, f"error {code}")


class MemoryStorage:
    """Files in memory. ``crash()`` drops what was not fsynced, as a power cut would; renames,
    deletes and truncations (metadata) are durable at once.

    Faults, as a real file system shows them (``OSError`` from ``apply_one``): ``capacity_bytes``
    makes it a small disk (a write that does not fit writes what fits, then fails with ENOSPC),
    ``read_only`` refuses every change (EROFS), ``fail_writes_with`` refuses every change with
    that errno (EMFILE, EIO, ...) until it is set back to None.
    """

    def __init__(self, *, capacity_bytes: int | None = None) -> None:
        self.files: dict[str, bytearray] = {}
        self.dirs: set[str] = {""}
        self._durable: dict[str, bytes] = {}
        self.capacity_bytes = capacity_bytes
        self.read_only = False
        self.fail_writes_with: int | None = None

    # StorageReader
    def list_dir(self, path: str) -> list[str]:
        prefix = f"{path}/" if path else ""
        names = {
            p[len(prefix) :].split("/", 1)[0]
            for p in (*self.files, *self.dirs)
            if p.startswith(prefix) and p != path
        }
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
                self.apply_one(effect)

    def used_bytes(self) -> int:
        return sum(len(data) for data in self.files.values())

    def _check_writable(self) -> None:
        if self.read_only:
            raise OSError(errno.EROFS, _strerror(errno.EROFS))
        if self.fail_writes_with is not None:
            raise OSError(self.fail_writes_with, _strerror(self.fail_writes_with))

    def _fit(self, path: str, position: int, data: bytes) -> bytes:
        """What of ``data`` written at ``position`` fits on the disk (ENOSPC after writing it)."""
        if self.capacity_bytes is None:
            return data
        current = self.files.get(path, b"")
        growth = max(0, position + len(data) - len(current))
        free = self.capacity_bytes - self.used_bytes()
        if growth <= free:
            return data
        return data[: max(0, len(data) - (growth - max(free, 0)))]

    def apply_one(self, effect: StorageEffect) -> None:
        self._check_writable()
        if isinstance(effect, Append | WriteAt):
            position = (
                len(self.files.get(effect.path, b"")) if isinstance(effect, Append) else effect.position
            )
            fitting = self._fit(effect.path, position, effect.data)
            if len(fitting) < len(effect.data):
                self._apply(WriteAt(effect.path, position, fitting))
                raise OSError(errno.ENOSPC, _strerror(errno.ENOSPC))
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
                # A file's size is metadata, durable at once as a rename or a delete is here (a
                # journaling file system commits it in order with any later fsync): a crash does
                # not bring back bytes cut from a file, though it loses what was written since.
                durable = self._durable.get(path)
                if durable is not None and len(durable) > size:
                    self._durable[path] = durable[:size]
            case Fsync(path):
                if path in self.files:
                    self._durable[path] = bytes(self.files[path])
            case Rename(source, target):
                if source in self.files:
                    self.files[target] = self.files.pop(source)
                    if source in self._durable:
                        self._durable[target] = self._durable.pop(source)
                else:
                    for name in [
                        p for p in (*self.files, *self.dirs) if p == source or p.startswith(source + "/")
                    ]:
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
