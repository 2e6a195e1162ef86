"""DeleteRecords.

Behaviour: moves a partition's log start offset up to the given offset (-1 means the high
watermark); an offset above the high watermark is OFFSET_OUT_OF_RANGE; internal topics get
INVALID_TOPIC_EXCEPTION, as in Kafka. Segments wholly below the
new start are deleted. The answer's low watermark is the new log start offset.
Only the leader moves the start (NOT_LEADER_OR_FOLLOWER elsewhere, also on a node
without a replica of the partition); followers
follow it on their next fetch, and the answer waits (``partition/purgatory.py``) until the low
watermark, the smallest log start offset over the ISR, reaches the new start, or
REQUEST_TIMED_OUT at ``timeout_ms``.
Authorization (with an authorizer): DELETE on each topic (TOPIC_AUTHORIZATION_FAILED per partition).
"""

from __future__ import annotations

from kafka_wire.broker.apis.cluster_facts import missing_replica_error
from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.partition.purgatory import DelayedDeleteRecords, PendingDelete
from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import denied_topics
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsResponsePartitionResult,
    DeleteRecordsResponseTopicResult,
    ErrorCode,
)


def handle(ctx: Context, request: DeleteRecordsRequest) -> DeleteRecordsResponse | DelayedDeleteRecords:
    state = ctx.state
    pending: list[PendingDelete] = []
    denied = denied_topics(ctx, AclOperation.DELETE, (entry.name for entry in request.topics))
    topics = []
    for entry in request.topics:
        results = []
        for wanted in entry.partitions:
            result = DeleteRecordsResponsePartitionResult(
                partition_index=wanted.partition_index, low_watermark=-1
            )
            replica = state.replica(entry.name, wanted.partition_index)
            topic = state.topic_named(entry.name)
            if entry.name in denied:
                result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or (
                replica is None
                and missing_replica_error(state, entry.name, wanted.partition_index)
                != ErrorCode.NOT_LEADER_OR_FOLLOWER
            ):
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif is_internal(topic.name):
                result.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif replica is None or not replica.is_leader:
                result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                result.error_code, result.low_watermark = replica.delete_records_before(wanted.offset)
                state.touch(replica)
                if result.error_code == ErrorCode.NONE:
                    pending.append(PendingDelete(replica, result.low_watermark, result))
            results.append(result)
        topics.append(DeleteRecordsResponseTopicResult(name=entry.name, partitions=results))
    response = DeleteRecordsResponse(topics=topics)
    if not pending:
        return response
    wait = DelayedDeleteRecords(response, pending, ctx.now_ms, request.timeout_ms)
    answer = wait.poll(ctx.now_ms)
    return wait if answer is None else answer
