"""AlterPartitionReassignments.

Behaviour: in a cluster the request goes to the active controller, and its answer is relayed
(``forward``). On a single node no reassignment can run, as in a Kafka cluster of one broker: for
each partition, an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION, a cancellation (null
replicas) NO_REASSIGNMENT_IN_PROGRESS, a target that is empty, names a broker other than this one
or names one twice INVALID_REPLICA_ASSIGNMENT, and the target ``[this node]`` succeeds with
nothing to do (it is the current assignment).
Version notes: ``allow_replication_factor_change`` from v1 (KIP-860), echoed in the answer.
"""

from __future__ import annotations

from kafka_wire.broker.apis.forward import Forwarded, forward
from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.broker.state import Context
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponseReassignablePartitionResponse,
    AlterPartitionReassignmentsResponseReassignableTopicResponse,
    ErrorCode,
)


def handle(
    ctx: Context, request: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse | Message | Forwarded:
    if ctx.state.cluster is not None:
        return forward(ctx, ctx.state.cluster, request)
    responses = []
    for entry in request.topics:
        topic = ctx.state.topic_named(entry.name)
        partitions = []
        for target in entry.partitions:
            code, message = _outcome(ctx, entry.name, topic, target.partition_index, target.replicas)
            partitions.append(
                AlterPartitionReassignmentsResponseReassignablePartitionResponse(
                    partition_index=target.partition_index, error_code=code, error_message=message
                )
            )
        responses.append(
            AlterPartitionReassignmentsResponseReassignableTopicResponse(
                name=entry.name, partitions=partitions
            )
        )
    return AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_message=None,
        responses=responses,
    )


def _outcome(
    ctx: Context, name: str, topic: TopicInfo | None, index: int, replicas: list[int] | None
) -> tuple[int, str | None]:
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"There is no topic {name}."
    if not 0 <= index < topic.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"There is no partition {name}-{index}."
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS.description
    node = ctx.state.config.node_id
    if not replicas:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The target replica list is empty."
    for broker in sorted(replicas):
        if broker != node:
            return (
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The target names broker {broker}, which is not registered.",
            )
    if len(replicas) > 1:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The target names broker {node} more than once."
    return ErrorCode.NONE, None
