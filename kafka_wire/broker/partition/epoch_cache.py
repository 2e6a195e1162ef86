"""The leader epoch cache of one partition (Kafka's ``LeaderEpochFileCache``).

Entries are ``(leader epoch, start offset)`` pairs, both increasing: the first offset written
under each epoch. A leader adds its new epoch at its log end offset when it takes over; a
follower adds the epochs of the batches it copies. The cache answers OffsetForLeaderEpoch and
the leader's DivergingEpoch check (:meth:`EpochCache.end_offset_for`), and is cut from the end
when the log is truncated and from the start when the log start offset moves. When it has a
``path`` every change is written there as Kafka's ``leader-epoch-checkpoint`` (format in
:mod:`kafka_wire.logformat.checkpoints`), through the log's effect queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.broker.log.files import EffectQueue
from kafka_wire.broker.storage import StorageReader
from kafka_wire.logformat.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    CheckpointError,
    format_epoch_checkpoint,
    parse_epoch_checkpoint,
)

UNDEFINED_EPOCH: Final = -1
UNDEFINED_OFFSET: Final = -1
#: A checkpoint larger than this is not read (it would hold millions of epochs).
MAX_CHECKPOINT_BYTES: Final = 1 << 20


@dataclass(slots=True)
class EpochCache:
    entries: list[tuple[int, int]] = field(default_factory=list)
    #: Where the cache is persisted (None: kept in memory only, as the single-node broker does).
    path: str | None = None
    queue: EffectQueue | None = None

    @classmethod
    def load(cls, storage: StorageReader, directory: str, queue: EffectQueue) -> EpochCache:
        """The cache stored in ``directory`` (empty when the file is missing or unreadable)."""
        path = f"{directory}/{LEADER_EPOCH_CHECKPOINT}"
        size = storage.size(path)
        entries: list[tuple[int, int]] = []
        if size is not None and size <= MAX_CHECKPOINT_BYTES:
            try:
                entries = parse_epoch_checkpoint(storage.read(path, 0, size).decode("ascii", "replace"))
            except CheckpointError:
                entries = []
        cache = cls(path=path, queue=queue)
        for epoch, offset in entries:  # keep only an increasing sequence, as Kafka's assign does
            cache._assign(epoch, offset)
        return cache

    # -- reading ----------------------------------------------------------------------------------
    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    @property
    def earliest(self) -> tuple[int, int] | None:
        return self.entries[0] if self.entries else None

    def epoch_at(self, offset: int) -> int:
        """The epoch the record at ``offset`` was written in (-1 before the first entry)."""
        found = UNDEFINED_EPOCH
        for epoch, start in self.entries:
            if start > offset:
                break
            found = epoch
        return found

    def start_offset_of(self, epoch: int) -> int:
        for cached, start in self.entries:
            if cached == epoch:
                return start
        return UNDEFINED_OFFSET

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)`` for OffsetForLeaderEpoch: the largest cached epoch <= ``epoch``
        and the start of the next higher one (the log end offset for the latest epoch); below the
        first entry, ``(epoch, first start)``; above the latest or for -1, ``(-1, -1)``."""
        if epoch == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self.latest_epoch:
            return epoch, log_end_offset
        floor: tuple[int, int] | None = None
        for entry in self.entries:
            if entry[0] > epoch:
                return (epoch if floor is None else floor[0]), entry[1]
            floor = entry
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET

    # -- changing ---------------------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (ignored unless it moves the cache on)."""
        if self._assign(epoch, start_offset):
            self._persist()

    def assign_all(self, pairs: Iterable[tuple[int, int]]) -> None:
        changed = False
        for epoch, start in pairs:
            changed = self._assign(epoch, start) or changed
        if changed:
            self._persist()

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            return False
        if self.entries:
            last_epoch, last_start = self.entries[-1]
            if epoch == last_epoch or (epoch < last_epoch and start_offset >= last_start):
                return False
        # A new entry replaces those it conflicts with (an epoch not lower, or a start not lower).
        self.entries = [(e, s) for e, s in self.entries if e < epoch and s < start_offset]
        self.entries.append((epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to ``end_offset``: drop the epochs starting at or after it."""
        kept = [(e, s) for e, s in self.entries if s < end_offset]
        if len(kept) != len(self.entries):
            self.entries = kept
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start moved to ``start_offset``: drop the epochs wholly below it, and start the
        one holding it there."""
        below = [i for i, (_, s) in enumerate(self.entries) if s <= start_offset]
        if not below or (len(below) == 1 and self.entries[0][1] == start_offset):
            return
        last = below[-1]
        epoch = self.entries[last][0]
        self.entries = [(epoch, start_offset), *self.entries[last + 1 :]]
        self._persist()

    def clear(self) -> None:
        if self.entries:
            self.entries = []
            self._persist()

    def _persist(self) -> None:
        if self.path is not None and self.queue is not None:
            self.queue.write_small_file(self.path, format_epoch_checkpoint(self.entries).encode("ascii"))
