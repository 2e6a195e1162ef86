"""Time and size retention of a ``cleanup.policy=delete`` log: which oldest segments go, and when.

Kafka's rules (``UnifiedLog.deleteRetentionMsBreachedSegments`` / ``...SizeBreachedSegments``):
only a prefix of segments goes, only segments wholly below the high watermark, never the empty
active segment; by time, a segment goes once its largest timestamp is older than
``retention.ms``; by size, the oldest segments go while the log stays at least
``retention.bytes`` without them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_wire.broker.log.segment import Segment

if TYPE_CHECKING:
    from kafka_wire.broker.log.log import PartitionLog

_Predicate = Callable[[Segment], bool]


def apply_retention(log: PartitionLog, now_ms: int, hw: int) -> None:
    """Delete what ``retention.ms`` and then ``retention.bytes`` say must go (below ``hw``)."""
    config = log.config
    if config.retention_ms >= 0:
        _drop_prefix(log, now_ms, hw, lambda s: now_ms - s.retention_timestamp() > config.retention_ms)
    if config.retention_bytes >= 0:
        excess = log.size_bytes - config.retention_bytes

        def too_big(segment: Segment) -> bool:
            nonlocal excess
            if excess - segment.size >= 0:
                excess -= segment.size
                return True
            return False

        _drop_prefix(log, now_ms, hw, too_big)


def retention_deadlines(log: PartitionLog, now_ms: int) -> list[int]:
    """When retention has work next: the oldest segment's time limit, or now when over size."""
    config = log.config
    segments = log.segments
    first = segments[0]
    deadlines = []
    if config.retention_ms >= 0 and not first.is_empty:
        deadlines.append(first.retention_timestamp() + config.retention_ms + 1)
    if config.retention_bytes >= 0 and len(segments) > 1:
        if log.size_bytes - config.retention_bytes - first.size >= 0:
            deadlines.append(now_ms)
    return deadlines


def _drop_prefix(log: PartitionLog, now_ms: int, hw: int, predicate: _Predicate) -> None:
    """Delete the longest prefix of segments matching ``predicate`` that lies below ``hw``."""
    count = 0
    segments = log.segments
    for i, segment in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset
        if upper > hw or (segment.is_empty and i == len(segments) - 1) or not predicate(segment):
            break
        count += 1
    if count:
        log.drop_oldest(count, now_ms)
