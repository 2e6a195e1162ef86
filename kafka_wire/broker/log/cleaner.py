"""Log compaction (placeholder while the cleaner is written)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_wire.broker.log.log import PartitionLog


def clean_log(log: PartitionLog, now_ms: int, high_watermark: int) -> None:
    return None


def cleaner_deadline(log: PartitionLog, now_ms: int) -> int | None:
    return None
