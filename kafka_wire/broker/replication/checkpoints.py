"""The data directory's offset checkpoints, as Kafka writes them (formats in
:mod:`kafka_wire.logformat.checkpoints`): ``replication-offset-checkpoint`` (each partition's
high watermark), ``recovery-point-offset-checkpoint`` (how far each log is fsynced: its segments
are flushed at roll and as the flush settings ask) and ``log-start-offset-checkpoint``. Written every
``replica.high.watermark.checkpoint.interval.ms`` through storage effects (atomic replace), read
at start so a restarted replica resumes from its high watermark.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.log.files import replace_atomically
from kafka_wire.broker.storage import StorageReader
from kafka_wire.logformat.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    format_partition_checkpoint,
    parse_partition_checkpoint,
)
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.partition.replica import PartitionReplica

DEFAULT_CHECKPOINT_INTERVAL_MS: Final = 5000
MAX_CHECKPOINT_BYTES: Final = 64 << 20


def read_checkpoint(storage: StorageReader, path: str) -> dict[tuple[str, int], int]:
    """A checkpoint's entries (empty when missing, too large or malformed, as Kafka starts over)."""
    size = storage.size(path)
    if size is None or size > MAX_CHECKPOINT_BYTES:
        return {}
    try:
        return parse_partition_checkpoint(storage.read(path, 0, size).decode("utf-8", "replace"))
    except CheckpointError:
        return {}


@dataclass(slots=True)
class OffsetCheckpoints:
    high_watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    recovery_points: dict[tuple[str, int], int] = field(default_factory=dict)
    log_starts: dict[tuple[str, int], int] = field(default_factory=dict)

    @classmethod
    def load(cls, storage: StorageReader) -> OffsetCheckpoints:
        return cls(
            read_checkpoint(storage, REPLICATION_OFFSET_CHECKPOINT),
            read_checkpoint(storage, RECOVERY_POINT_CHECKPOINT),
            read_checkpoint(storage, LOG_START_OFFSET_CHECKPOINT),
        )


def write_checkpoints(replicas: Iterable[PartitionReplica], effects: EffectSink) -> None:
    """Effects that replace the three checkpoint files with the replicas' current offsets."""
    hws: dict[tuple[str, int], int] = {}
    recovery: dict[tuple[str, int], int] = {}
    starts: dict[tuple[str, int], int] = {}
    for replica in replicas:
        key = (replica.topic, replica.partition)
        hws[key] = replica.high_watermark
        recovery[key] = replica.log.recovery_point
        starts[key] = replica.log_start_offset
    for name, entries in (
        (REPLICATION_OFFSET_CHECKPOINT, hws),
        (RECOVERY_POINT_CHECKPOINT, recovery),
        (LOG_START_OFFSET_CHECKPOINT, starts),
    ):
        effects.extend(replace_atomically(name, format_partition_checkpoint(entries).encode("utf-8")))
