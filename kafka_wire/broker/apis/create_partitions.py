"""CreatePartitions.

Behaviour: internal topics keep their partition count (INVALID_REQUEST: groups are placed by
it); the new count must exceed the current one (INVALID_PARTITIONS otherwise); explicit
assignments must place each new partition on this broker alone; ``validate_only`` checks only.
"""

from __future__ import annotations

from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
    ErrorCode,
)


def handle(ctx: Context, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    state = ctx.state
    results = []
    for entry in request.topics:
        result = CreatePartitionsResponseTopicResult(name=entry.name)
        topic = state.topic_named(entry.name)
        if topic is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif topic.internal or is_internal(topic.name):
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = f"The number of partitions of internal topic {topic.name} cannot be changed."
        elif entry.count <= topic.partitions:
            result.error_code = ErrorCode.INVALID_PARTITIONS
            result.error_message = (
                f"Topic currently has {topic.partitions} partitions, which is higher than or equal to the "
                f"requested {entry.count}."
            )
        elif entry.assignments and (
            len(entry.assignments) != entry.count - topic.partitions
            or any(a.broker_ids != [state.config.node_id] for a in entry.assignments)
        ):
            result.error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT
            result.error_message = f"Each new partition must be assigned to broker {state.config.node_id} alone."
        elif not request.validate_only:
            state.add_partitions(topic, entry.count, ctx.now_ms)
        results.append(result)
    return CreatePartitionsResponse(results=results)
