"""DescribeLogDirs.

Behaviour: one result, this broker's data directory (``log_dir``, its absolute path), listing the
partitions it holds a replica of: all of them for a null topic list, else those named (names
and partitions it has no replica of are left out, as in Kafka), by topic name then partition.
Each gives its size on disk (the sum of its segments), the offset lag Kafka reports (the high
watermark minus the log end offset, never below 0) and ``is_future_key`` false (no replica moves
between directories). A topic with no partition to report is left out. ``total_bytes`` and
``usable_bytes`` (v4+) are -1, Kafka's "unknown": the engine does not look at the file system.
Version notes: top-level ``error_code`` from v3, ``total_bytes`` / ``usable_bytes`` from v4.
Authorization (with an authorizer): DESCRIBE on the cluster, else nothing (CLUSTER_AUTHORIZATION_FAILED from v3).
"""

from __future__ import annotations

from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import cluster_allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResponsePartition,
    DescribeLogDirsResponseResult,
    DescribeLogDirsResponseTopic,
    ErrorCode,
)

#: Kafka's ``UNKNOWN_VOLUME_BYTES``.
UNKNOWN_VOLUME_BYTES = -1


def handle(ctx: Context, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    state = ctx.state
    if not cluster_allowed(ctx, AclOperation.DESCRIBE):  # nothing, as Kafka answers
        return DescribeLogDirsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED if ctx.api_version >= 3 else 0
        )
    wanted = (
        None
        if request.topics is None
        else {(t.topic, index) for t in request.topics for index in t.partitions}
    )
    topics: dict[str, list[DescribeLogDirsResponsePartition]] = {}
    for (name, index), replica in sorted(state.partitions.items()):
        if wanted is not None and (name, index) not in wanted:
            continue
        topics.setdefault(name, []).append(
            DescribeLogDirsResponsePartition(
                partition_index=index,
                partition_size=replica.log.size_bytes,
                offset_lag=max(replica.high_watermark - replica.log_end_offset, 0),
                is_future_key=False,
            )
        )
    return DescribeLogDirsResponse(
        results=[
            DescribeLogDirsResponseResult(
                log_dir=state.config.log_dir,
                topics=[
                    DescribeLogDirsResponseTopic(name=name, partitions=partitions)
                    for name, partitions in topics.items()
                ],
                total_bytes=UNKNOWN_VOLUME_BYTES,
                usable_bytes=UNKNOWN_VOLUME_BYTES,
            )
        ]
    )
