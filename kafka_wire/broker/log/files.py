"""Files as the log sees them: what storage holds plus the appends its driver has not applied yet.

The log never writes; it queues storage effects. A :class:`PendingFile` keeps in memory the bytes
appended to it that storage may not hold yet (``pending``) and reads ``[0, stored_size)`` through
the :class:`StorageReader` and the rest from ``pending``. The bytes of an :meth:`EffectQueue.take`
count as stored once the driver reported the batch holding them applied
(:class:`~kafka_wire.broker.effects.WriteProgress`): only then are they dropped from memory, so a
driver may apply them while the engine goes on. A queue without a progress (a log driven alone,
whose driver applies each take before calling it again) counts them as stored at the take.

Appends to the same file are gathered into one :class:`Append` and placed in the effect list only
at a *barrier*: any other effect (Fsync, Rename, Truncate, Delete …) or the take itself. Effects
on one file keep their order; appends to different files may be reordered among themselves, which
no reader can observe.
"""

from __future__ import annotations

from collections import deque

from kafka_wire.broker.effects import (
    Append,
    Delete,
    Fsync,
    MakeDir,
    Rename,
    StorageEffect,
    Truncate,
    WriteAt,
    WriteProgress,
)
from kafka_wire.broker.storage import StorageReader


class EffectQueue:
    """The ordered storage effects of one log since the last :meth:`take`."""

    __slots__ = ("_effects", "_open", "progress")

    def __init__(self, progress: WriteProgress | None = None) -> None:
        self._effects: list[StorageEffect] = []
        self._open: dict[int, PendingFile] = {}
        #: The engine's batches (None: what is taken counts as stored at once).
        self.progress = progress

    def emit(self, effect: StorageEffect) -> None:
        """Queue ``effect`` after every append queued before it."""
        self.flush_appends()
        self._effects.append(effect)

    def flush_appends(self) -> None:
        for file in self._open.values():
            file.flush_into(self._effects)

    def register(self, file: PendingFile) -> None:
        self._open.setdefault(id(file), file)

    def forget(self, file: PendingFile) -> None:
        self._open.pop(id(file), None)

    def take(self) -> list[StorageEffect]:
        """Hand out the effects, in the batch of the engine call in progress."""
        self.flush_appends()
        for file in self._open.values():
            file.taken()
        self._open.clear()
        effects, self._effects = self._effects, []
        return effects

    def __len__(self) -> int:
        return len(self._effects)

    # -- small helpers ----------------------------------------------------------------------------
    def make_dir(self, path: str) -> None:
        self.emit(MakeDir(path))

    def delete(self, path: str) -> None:
        self.emit(Delete(path))

    def write_small_file(self, path: str, data: bytes) -> None:
        """Replace a small file atomically (see :func:`replace_atomically`)."""
        for effect in replace_atomically(path, data):
            self.emit(effect)


def replace_atomically(path: str, data: bytes) -> list[StorageEffect]:
    """Effects that replace a small file atomically: write a temporary, fsync it, rename it over
    ``path`` (the driver makes the rename durable)."""
    tmp = f"{path}.tmp"
    return [WriteAt(tmp, 0, data), Truncate(tmp, len(data)), Fsync(tmp), Rename(tmp, path)]


class PendingFile:
    """One file of a segment: stored bytes plus the tail storage may not hold yet (see the module
    docstring).

    ``stored_size`` bytes are in storage under ``stored_path`` (the name as of the last take);
    ``pending`` follows them: its first ``_emitted`` bytes went into ``Append`` effects, and
    ``_marks`` says, per batch in flight, how long the file is once that batch is applied.
    """

    __slots__ = ("_emitted", "_marks", "_queue", "path", "pending", "stored_path", "stored_size")

    def __init__(self, queue: EffectQueue, path: str, stored_size: int) -> None:
        self._queue = queue
        self.path = path
        self.stored_path = path
        self.stored_size = stored_size
        self.pending = bytearray()
        self._emitted = 0
        self._marks: deque[tuple[int, int]] = deque()

    @classmethod
    def create(cls, queue: EffectQueue, path: str) -> PendingFile:
        """A new empty file (an empty Append creates it)."""
        queue.emit(Append(path, b""))
        return cls(queue, path, 0)

    @property
    def size(self) -> int:
        return self.stored_size + len(self.pending)

    def append(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        self.pending += data
        self._queue.register(self)

    def read(self, storage: StorageReader, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position`` (fewer at the end, or if storage holds fewer)."""
        end = min(position + size, self.size)
        if position >= end:
            return b""
        stored = self.stored_size
        if end <= stored:
            return storage.read(self.stored_path, position, end - position)
        if position >= stored:
            return bytes(self.pending[position - stored : end - stored])
        head = storage.read(self.stored_path, position, stored - position)
        if len(head) != stored - position:
            return head  # storage lost bytes: a short read, which callers treat as corruption
        return head + bytes(self.pending[: end - stored])

    def split(self, position: int, size: int) -> tuple[tuple[int, int] | None, bytes]:
        """``[position, position+size)`` as a stored range ``(position, size)`` and pending bytes."""
        end = position + size
        stored = self.stored_size
        region = (position, min(end, stored) - position) if position < stored else None
        tail = bytes(self.pending[max(position, stored) - stored : end - stored]) if end > stored else b""
        return region, tail

    def truncate(self, size: int) -> None:
        if size >= self.size:
            return
        self._queue.emit(Truncate(self.path, size))
        if size >= self.stored_size:
            del self.pending[size - self.stored_size :]
            self._emitted = min(self._emitted, len(self.pending))
        else:
            self.stored_size = size
            self.pending.clear()
            self._emitted = 0
        # Once a batch in flight is applied the file holds no more than this: storage keeps the
        # cut bytes until the Truncate itself is applied, but nothing reads past ``size``.
        self._marks = deque((batch, min(end, size)) for batch, end in self._marks)

    def fsync(self) -> None:
        self._queue.emit(Fsync(self.path))

    def rename(self, target: str) -> None:
        self._queue.emit(Rename(self.path, target))
        self.path = target
        self._queue.register(self)  # so the take moves ``stored_path`` too

    def delete(self) -> None:
        self._queue.emit(Delete(self.path))
        self._queue.forget(self)
        self.pending.clear()
        self._emitted = 0
        self.stored_size = 0
        self._marks.clear()

    # -- EffectQueue protocol ---------------------------------------------------------------------
    def flush_into(self, effects: list[StorageEffect]) -> None:
        if self._emitted < len(self.pending):
            effects.append(Append(self.path, bytes(self.pending[self._emitted :])))
            self._emitted = len(self.pending)

    def taken(self) -> None:
        """The queue's effects were taken: what was emitted is in flight, in the forming batch."""
        self.stored_path = self.path
        end = self.stored_size + self._emitted
        if self._emitted == 0 or (self._marks and self._marks[-1][1] >= end):
            return
        progress = self._queue.progress
        if progress is None:
            self._settle_at(end)
            return
        batch = progress.forming
        self._marks.append((batch, end))
        progress.when_applied(batch, self._settle)

    def _settle(self, batch: int) -> None:
        """``batch`` was applied: its bytes are stored, and leave memory."""
        marks = self._marks
        while marks and marks[0][0] <= batch:
            self._settle_at(marks.popleft()[1])

    def _settle_at(self, end: int) -> None:
        stored = end - self.stored_size
        if stored > 0:
            del self.pending[:stored]
            self._emitted -= stored
            self.stored_size = end
