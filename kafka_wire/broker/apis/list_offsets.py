"""ListOffsets.

Behaviour: timestamp -2 is the log start offset, -1 the high watermark (the last stable offset
for read_committed), -3 the record with the largest timestamp, -4 (earliest local) the log start,
-5 (latest tiered) -1 as nothing is tiered; any other timestamp finds the first record at or after
it (offset -1 when there is none). A ``current_leader_epoch`` other than ours is fenced.
Version notes: v0 answers in ``old_style_offsets``; ``leader_epoch`` from v4.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.partition.replica import READ_COMMITTED, PartitionReplica
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ErrorCode,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsResponsePartitionResponse,
    ListOffsetsResponseTopicResponse,
)

LATEST: Final = -1
EARLIEST: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL: Final = -4
LATEST_TIERED: Final = -5


def epoch_error(current: int, ours: int) -> int:
    """Kafka's leader-epoch fencing of a request that names the epoch it expects."""
    if current == -1 or current == ours:
        return ErrorCode.NONE
    return ErrorCode.FENCED_LEADER_EPOCH if current < ours else ErrorCode.UNKNOWN_LEADER_EPOCH


def handle(ctx: Context, request: ListOffsetsRequest) -> ListOffsetsResponse:
    state = ctx.state
    topics = []
    for entry in request.topics:
        partitions = []
        for wanted in entry.partitions:
            result = ListOffsetsResponsePartitionResponse(partition_index=wanted.partition_index)
            replica = state.replica(entry.name, wanted.partition_index)
            if replica is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif error := epoch_error(wanted.current_leader_epoch, replica.leader_epoch):
                result.error_code = error
            else:
                result.leader_epoch = replica.leader_epoch
                offset, timestamp = _lookup(replica, wanted.timestamp, request.isolation_level)
                result.offset, result.timestamp = offset, timestamp
                if ctx.api_version == 0:
                    result.old_style_offsets = [offset] if offset >= 0 else []
            partitions.append(result)
        topics.append(ListOffsetsResponseTopicResponse(name=entry.name, partitions=partitions))
    return ListOffsetsResponse(topics=topics)


def _lookup(replica: PartitionReplica, timestamp: int, isolation_level: int) -> tuple[int, int]:
    if timestamp == LATEST:
        return (replica.last_stable_offset if isolation_level == READ_COMMITTED else replica.high_watermark), -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return replica.log_start_offset, -1
    if timestamp == LATEST_TIERED:
        return -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = replica.log.max_timestamp()
        if found is None:
            return -1, -1
        max_ts, offset = found
        return offset, max_ts
    hit = replica.log.offset_for_timestamp(timestamp)
    if hit is None or hit[0] >= replica.high_watermark:
        return -1, -1
    return hit
