"""The clean-shutdown marker of the data directory (``.kafka_cleanshutdown``, as Kafka's
``LogManager`` keeps it): which logs a start must recover.

At start (``Broker.start``, beside the data directory's other files) the marker is read and
deleted at once (before anything is written, so a crash from then on is an unclean stop again);
the broker state holds what it said, which the replica manager opens partitions by and the
node's registrations send (KIP-966). Partitions open as the metadata log names them, not all at
start: while the marker was there, the *first* open of each partition skips recovery; every other
open recovers what lies at or above the partition's recovery point (see
:class:`~kafka_wire.broker.log.loader.RecoveryStart`). At a clean stop, after every open log was
flushed and closed and the checkpoints written, the marker is written again, unless a partition
directory on disk is neither open now nor known clean (one not opened since an unclean start):
the marker would spare it the recovery it still needs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from kafka_wire.broker.effects import Delete, StorageEffect
from kafka_wire.broker.internal_topics import CLUSTER_METADATA_TOPIC
from kafka_wire.broker.log.files import replace_atomically
from kafka_wire.broker.log.loader import RecoveryStart
from kafka_wire.broker.storage import StorageReader
from kafka_wire.logformat.clean_shutdown import (
    CLEAN_SHUTDOWN_FILE,
    MAX_CLEAN_SHUTDOWN_BYTES,
    NO_BROKER_EPOCH,
    format_clean_shutdown,
    parse_clean_shutdown,
)
from kafka_wire.logformat.names import parse_partition_dir

Key = tuple[str, int]


class CleanShutdown:
    """What the marker said at start, and the partitions opened since."""

    def __init__(self, *, found: bool = False, broker_epoch: int = NO_BROKER_EPOCH) -> None:
        #: The marker was there at start: the last stop was clean.
        self.found = found
        #: The broker epoch it held (KIP-966), :data:`NO_BROKER_EPOCH` when none.
        self.broker_epoch = broker_epoch
        self._opened: set[Key] = set()

    @classmethod
    def load(cls, storage: StorageReader) -> CleanShutdown:
        size = storage.size(CLEAN_SHUTDOWN_FILE)
        if size is None:
            return cls()
        data = storage.read(CLEAN_SHUTDOWN_FILE, 0, min(size, MAX_CLEAN_SHUTDOWN_BYTES + 1))
        return cls(found=True, broker_epoch=parse_clean_shutdown(data))

    def start_effects(self) -> list[StorageEffect]:
        """The marker's deletion, first thing at start."""
        return [Delete(CLEAN_SHUTDOWN_FILE)] if self.found else []

    def opening(self, key: Key, recovery_points: Mapping[Key, int]) -> RecoveryStart:
        """How partition ``key``'s log is recovered as it opens now (``recovery_points``: the
        checkpoint read at start, true of the directories as they were then)."""
        first = key not in self._opened
        self._opened.add(key)
        return RecoveryStart(
            clean_shutdown=self.found and first, recovery_point=recovery_points.get(key, 0) if first else 0
        )

    def stop_effects(
        self, storage: StorageReader, open_now: Collection[Key], broker_epoch: int
    ) -> list[StorageEffect]:
        """The marker's writing at a clean stop (after the logs' last writes), when it is true of
        every partition directory on disk."""
        for name in storage.list_dir(""):
            key = parse_partition_dir(name)
            if key is None or storage.size(name) is not None:
                continue  # not a partition directory: a file, or another name
            if key[0] == CLUSTER_METADATA_TOPIC or key in open_now:
                continue  # the metadata log recovers its own; an open log was just closed
            if not self.found or key in self._opened:
                return []
        return replace_atomically(CLEAN_SHUTDOWN_FILE, format_clean_shutdown(broker_epoch))
