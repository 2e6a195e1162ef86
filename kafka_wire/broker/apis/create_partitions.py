"""CreatePartitions.

Behaviour: internal topics keep their partition count (INVALID_REQUEST: groups are placed by
it); the new count must exceed the current one (INVALID_PARTITIONS otherwise); explicit
assignments must place each new partition on this broker alone; ``validate_only`` checks only.
New partitions count against ``max_records_per_user_op`` (Kafka's 10,000 metadata records per
request): the topic whose partitions no longer fit, and every later topic adding partitions, get
UNKNOWN_SERVER_ERROR, as Kafka answers (without creating any part of them); a request naming more
topics than the cap fails whole with POLICY_VIOLATION (see ``record_limit``). The new counts are
written to the metadata at once; the partitions are opened in slices of the work budget (see
``open_partitions``), and the answer comes when the last one is open.
In a cluster the request goes to the active controller, and its answer is relayed
(``forward``).
"""

from __future__ import annotations

from kafka_wire.broker.apis.forward import Forwarded, forward
from kafka_wire.broker.apis.open_partitions import OpenPartitionsJob
from kafka_wire.broker.apis.record_limit import EXCESSIVE_BATCH_MESSAGE
from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.metadata import TopicInfo
from kafka_wire.broker.state import Context
from kafka_wire.broker.work import Job
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
    ErrorCode,
)


def handle(
    ctx: Context, request: CreatePartitionsRequest
) -> CreatePartitionsResponse | Job[CreatePartitionsResponse] | Message | Forwarded:
    if ctx.state.cluster is not None:  # the controller owns the metadata
        return forward(ctx, ctx.state.cluster, request)
    state = ctx.state
    limit = state.config.max_records_per_user_op
    if len(request.topics) > limit:
        return CreatePartitionsResponse(
            results=[
                CreatePartitionsResponseTopicResult(
                    name=entry.name,
                    error_code=ErrorCode.POLICY_VIOLATION,
                    error_message=EXCESSIVE_BATCH_MESSAGE,
                )
                for entry in request.topics
            ]
        )
    results = []
    grown: list[tuple[TopicInfo, int, int]] = []
    records = 0
    overflowed = False
    for entry in request.topics:
        result = CreatePartitionsResponseTopicResult(name=entry.name)
        topic = state.topic_named(entry.name)
        if topic is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif is_internal(topic.name):
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = (
                f"The number of partitions of internal topic {topic.name} cannot be changed."
            )
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
            result.error_message = (
                f"Each new partition must be assigned to broker {state.config.node_id} alone."
            )
        elif overflowed or records + entry.count - topic.partitions > limit:
            overflowed = True  # Kafka's record list is full from here on
            result.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
        else:
            records += entry.count - topic.partitions
            if not request.validate_only:
                grown.append((topic, topic.partitions, entry.count))
                topic.partitions = entry.count
        results.append(result)
    response = CreatePartitionsResponse(results=results)
    if not grown:
        return response
    state.persist_metadata(ctx.effects)
    return OpenPartitionsJob(state, ctx.effects, grown, lambda: response, ctx.now_ms).start(ctx.now_ms)
