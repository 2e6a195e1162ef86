"""DeleteTopics.

Behaviour: topics are named (v0-v5 ``topic_names``; v6 ``topics`` by name or id). Unknown names
get UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; with ``delete.topic.enable=false``
every topic gets TOPIC_DELETION_DISABLED; internal topics get INVALID_TOPIC_EXCEPTION (Kafka's
tools refuse it with that exception; its controller would delete them). Deletion removes the
partition directories.
"""

from __future__ import annotations

from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.broker.state import Context
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.messages import (
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
    ErrorCode,
)


def handle(ctx: Context, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    state = ctx.state
    wanted = [(t.name, t.topic_id) for t in request.topics] if ctx.api_version >= 6 else [(n, ZERO_UUID) for n in request.topic_names]
    results = []
    for name, topic_id in wanted:
        result = DeleteTopicsResponseDeletableTopicResult(name=name, topic_id=topic_id)
        topic: TopicInfo | None = state.topic_named(name) if name is not None else state.topic_with_id(topic_id)
        if topic is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name is not None else ErrorCode.UNKNOWN_TOPIC_ID
        elif not state.config.delete_topic_enable:
            result.error_code = ErrorCode.TOPIC_DELETION_DISABLED
        elif topic.internal or is_internal(topic.name):
            result.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
            result.error_message = f"Cannot delete internal topic {topic.name}"
        else:
            result.name, result.topic_id = topic.name, topic.topic_id
            state.delete_topic(topic)
        results.append(result)
    return DeleteTopicsResponse(responses=results)
