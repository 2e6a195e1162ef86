"""ListOffsets.

Behaviour: Kafka 4's special timestamps, each from the request version that defines it
(UNSUPPORTED_VERSION before it, and for any other negative timestamp): -1 (v0+) the high
watermark (the last stable offset for read_committed), -2 (v0+) the log start offset, -3 (v7+,
KIP-734) the first record carrying the largest timestamp, -4 (v8+, KIP-405) the local log start,
which is the log start offset without tiered storage, -5 (v9+, KIP-1005, the last tiered offset)
and -6 (v11+, KIP-1023, the earliest offset pending upload) offset -1 as nothing is tiered. Any
other timestamp finds the first record at or after it. A found offset at or above the high
watermark (the last stable offset for read_committed) is answered with offset -1 and timestamp -1,
as Kafka does. A ``current_leader_epoch`` other than ours is fenced. In a cluster only the leader
answers (NOT_LEADER_OR_FOLLOWER elsewhere, also on a node without a replica of the partition),
except to the debugging replica id -2.
A partition named more than once in one request is answered once, INVALID_REQUEST.
Authorization (with an authorizer): DESCRIBE on each topic, else TOPIC_AUTHORIZATION_FAILED.
Version notes: v0 answers in ``old_style_offsets``; ``leader_epoch`` from v4.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from kafka_wire.broker.apis.cluster_facts import missing_replica_error
from kafka_wire.broker.partition.replica import READ_COMMITTED, PartitionReplica
from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import denied_topics
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ErrorCode,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsResponsePartitionResponse,
    ListOffsetsResponseTopicResponse,
)

#: Kafka's ``ListOffsetsRequest.DEBUGGING_REPLICA_ID``: the one asker a follower answers too.
DEBUGGING: Final = -2
LATEST: Final = -1
EARLIEST: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL: Final = -4
LATEST_TIERED: Final = -5
EARLIEST_PENDING_UPLOAD: Final = -6
#: The first request version that may carry each special timestamp (Kafka's
#: ``ReplicaManager.timestampMinSupportedVersion``, with v0 for the two v0 already knew).
SPECIAL_TIMESTAMP_MIN_VERSION: Final[dict[int, int]] = {
    LATEST: 0,
    EARLIEST: 0,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL: 8,
    LATEST_TIERED: 9,
    EARLIEST_PENDING_UPLOAD: 11,
}


def epoch_error(current: int, ours: int) -> int:
    """Kafka's leader-epoch fencing of a request that names the epoch it expects."""
    if current == -1 or current == ours:
        return ErrorCode.NONE
    return ErrorCode.FENCED_LEADER_EPOCH if current < ours else ErrorCode.UNKNOWN_LEADER_EPOCH


def handle(ctx: Context, request: ListOffsetsRequest) -> ListOffsetsResponse:
    state = ctx.state
    asked = Counter((entry.name, p.partition_index) for entry in request.topics for p in entry.partitions)
    twice = {key for key, count in asked.items() if count > 1}
    answered: set[tuple[str, int]] = set()
    denied = denied_topics(ctx, AclOperation.DESCRIBE, (entry.name for entry in request.topics))
    topics = []
    for entry in request.topics:
        partitions = []
        for wanted in entry.partitions:
            key = (entry.name, wanted.partition_index)
            result = ListOffsetsResponsePartitionResponse(partition_index=wanted.partition_index)
            replica = state.replica(entry.name, wanted.partition_index)
            if entry.name in denied:
                result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif key in twice:  # answered once, as Kafka's map of partitions answers it
                if key in answered:
                    continue
                answered.add(key)
                result.error_code = ErrorCode.INVALID_REQUEST
            elif not timestamp_supported(wanted.timestamp, ctx.api_version):  # Kafka checks this first
                result.error_code = ErrorCode.UNSUPPORTED_VERSION
            elif replica is None:
                result.error_code = missing_replica_error(state, entry.name, wanted.partition_index)
            elif error := epoch_error(wanted.current_leader_epoch, replica.leader_epoch):
                result.error_code = error
            elif not replica.is_leader and request.replica_id != DEBUGGING:
                result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                offset, timestamp = _lookup(replica, wanted.timestamp, request.isolation_level)
                result.offset, result.timestamp = offset, timestamp
                result.leader_epoch = replica.leader_epoch if offset >= 0 else -1
                if ctx.api_version == 0:
                    result.old_style_offsets = [offset] if offset >= 0 else []
            partitions.append(result)
        topics.append(ListOffsetsResponseTopicResponse(name=entry.name, partitions=partitions))
    return ListOffsetsResponse(topics=topics)


def timestamp_supported(timestamp: int, version: int) -> bool:
    """Whether ``version`` of ListOffsets may ask for ``timestamp`` (every timestamp >= 0 may)."""
    if timestamp >= 0:
        return True
    first = SPECIAL_TIMESTAMP_MIN_VERSION.get(timestamp)
    return first is not None and version >= first


def _lookup(replica: PartitionReplica, timestamp: int, isolation_level: int) -> tuple[int, int]:
    fetchable = replica.last_stable_offset if isolation_level == READ_COMMITTED else replica.high_watermark
    if timestamp == LATEST:
        return fetchable, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return replica.log_start_offset, -1
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = replica.log.max_timestamp()
        if found is None or found[1] >= fetchable:
            return -1, -1
        max_ts, offset = found
        return offset, max_ts
    hit = replica.log.offset_for_timestamp(timestamp)
    if hit is None or hit[0] >= fetchable:
        return -1, -1
    return hit
