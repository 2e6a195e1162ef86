"""OffsetForLeaderEpoch (v0 to latest).

Behaviour: for each partition, the largest leader epoch this leader's epoch cache holds that is
not above the requested ``leader_epoch``, and where it ends (the start of the next epoch, or
the log end offset for the latest); below the first cached epoch, the requested epoch and the
first epoch's start; above the latest, -1 and -1 (Kafka's ``LeaderEpochFileCache.endOffsetFor``).
Only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere), for clients and followers alike; a
``current_leader_epoch`` older than the leader's is FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH; an unknown partition UNKNOWN_TOPIC_OR_PARTITION (NOT_LEADER_OR_FOLLOWER
for one of the cluster that this node holds no replica of, as Kafka).
Version notes: ``current_leader_epoch`` from v2, ``replica_id`` from v3.
Authorization (with an authorizer): CLUSTER_ACTION on the cluster, else DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED per partition).
"""

from __future__ import annotations

from kafka_wire.broker.apis.cluster_facts import missing_replica_error
from kafka_wire.broker.apis.list_offsets import epoch_error
from kafka_wire.broker.security.acls import AclOperation
from kafka_wire.broker.security.checks import cluster_allowed, denied_topics
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ErrorCode,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponseEpochEndOffset,
    OffsetForLeaderEpochResponseOffsetForLeaderTopicResult,
)


def handle(ctx: Context, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    state = ctx.state
    denied = (
        set()
        if ctx.state.authorizer is None or cluster_allowed(ctx, AclOperation.CLUSTER_ACTION)
        else denied_topics(ctx, AclOperation.DESCRIBE, (entry.topic for entry in request.topics))
    )
    topics = []
    for entry in request.topics:
        partitions = []
        for wanted in entry.partitions:
            result = OffsetForLeaderEpochResponseEpochEndOffset(partition=wanted.partition)
            replica = state.replica(entry.topic, wanted.partition)
            if entry.topic in denied:  # CLUSTER_ACTION (followers) or DESCRIBE on the topic
                result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif replica is None:
                result.error_code = missing_replica_error(state, entry.topic, wanted.partition)
            elif error := epoch_error(wanted.current_leader_epoch, replica.leader_epoch):
                result.error_code = error
            elif not replica.is_leader:
                result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                result.leader_epoch, result.end_offset = replica.leadership.end_offset_for(
                    wanted.leader_epoch, replica.log_end_offset
                )
            partitions.append(result)
        topics.append(
            OffsetForLeaderEpochResponseOffsetForLeaderTopicResult(topic=entry.topic, partitions=partitions)
        )
    return OffsetForLeaderEpochResponse(topics=topics)
