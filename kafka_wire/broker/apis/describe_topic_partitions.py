"""DescribeTopicPartitions (KIP-966: what the Java admin client's ``describeTopics`` uses).

Behaviour: an empty topic list describes every topic; named topics are described once each. Both
start at the cursor's topic (names before it are left out) and go in name order; the cursor's
topic starts at the cursor's partition, the others at 0. At most ``response_partition_limit``
partitions are answered (capped to ``max.request.partition.size.limit``, Kafka's 2000, and at
least 1): when a topic does not fit, its first partitions are answered and ``next_cursor`` names
the first one left out; when the limit is reached at the end of a topic, ``next_cursor`` names
the next topic at partition 0. A named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (or
INVALID_TOPIC_EXCEPTION for an illegal name) and counts no partitions. A cursor whose topic is not
among the named ones, or with a negative partition, is INVALID_REQUEST for every named topic.

Partitions carry Kafka's fields with no error code of their own: leader (-1 when its broker is
not reachable on the client's listener), leader epoch, replicas, ISR, eligible leader replicas,
last known ELR and offline replicas (see ``cluster_facts``); a partition not in the metadata image
yet is left out, as Kafka leaves it out. Topic authorized
operations are always filled (every operation: there are no ACLs), as Kafka always computes them.
Authorization (with an authorizer): DESCRIBE on each topic: a topic named is TOPIC_AUTHORIZATION_FAILED, one listed is left out; the authorized operations are the authorizer's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kafka_wire.broker.apis.cluster_facts import client_listener, offline_replicas, reachable
from kafka_wire.broker.internal_topics import is_internal
from kafka_wire.broker.metadata import TopicInfo, topic_name_problem
from kafka_wire.broker.security.acls import AclOperation, ResourceType
from kafka_wire.broker.security.checks import authorized_operations, topic_allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponseCursor,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
    ErrorCode,
)

#: ``max.request.partition.size.limit`` (Kafka's default): partitions one response may describe.
DEFAULT_MAX_REQUEST_PARTITION_SIZE_LIMIT: Final = 2000


def handle(ctx: Context, request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    cursor = request.cursor
    after = cursor.topic_name if cursor is not None else ""
    describe_all = not request.topics
    if describe_all:
        names = sorted(n for n in ctx.state.metadata.topics if n >= after)
    else:
        names = sorted({t.name for t in request.topics if t.name >= after})
        if cursor is not None and cursor.topic_name not in names:
            return _refused(request)  # the cursor topic must be among the named ones
    if cursor is not None and cursor.partition_index < 0:
        return _refused(request)
    limit = max(min(DEFAULT_MAX_REQUEST_PARTITION_SIZE_LIMIT, request.response_partition_limit), 1)
    response = DescribeTopicPartitionsResponse()
    # Those it may not describe: left out of a listing, refused after the others when named.
    refused = [
        DescribeTopicPartitionsResponseTopic(
            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=n, is_internal=is_internal(n)
        )
        for n in names
        if not describe_all and not topic_allowed(ctx, AclOperation.DESCRIBE, n)
    ]
    names = [n for n in names if topic_allowed(ctx, AclOperation.DESCRIBE, n)]
    remaining = limit
    for name in names:
        if remaining == 0:  # the limit fell at the end of the previous topic
            response.next_cursor = DescribeTopicPartitionsResponseCursor(topic_name=name, partition_index=0)
            break
        topic = ctx.state.topic_named(name)
        if topic is None:
            if not describe_all:
                response.topics.append(_unknown(name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        end = min(topic.partitions, start + remaining)
        response.topics.append(
            DescribeTopicPartitionsResponseTopic(
                name=name,
                topic_id=topic.topic_id,
                is_internal=is_internal(name),
                partitions=list(_partitions(ctx, topic, range(start, end))),
                topic_authorized_operations=authorized_operations(ctx, ResourceType.TOPIC, name),
            )
        )
        if end < topic.partitions:
            response.next_cursor = DescribeTopicPartitionsResponseCursor(topic_name=name, partition_index=end)
            break
        remaining -= max(end - start, 0)
    response.topics += refused
    return response


def _unknown(name: str) -> DescribeTopicPartitionsResponseTopic:
    error = (
        ErrorCode.INVALID_TOPIC_EXCEPTION
        if topic_name_problem(name)
        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    return DescribeTopicPartitionsResponseTopic(error_code=error, name=name, is_internal=is_internal(name))


def _refused(request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    # Kafka's getErrorResponse: every named topic with the error, nothing else.
    return DescribeTopicPartitionsResponse(
        topics=[
            DescribeTopicPartitionsResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name=t.name)
            for t in request.topics
        ]
    )


def _partitions(
    ctx: Context, topic: TopicInfo, indexes: Iterable[int]
) -> Iterable[DescribeTopicPartitionsResponsePartition]:
    view = ctx.state.cluster
    listener = client_listener(ctx, view)
    for index in indexes:
        registration = view.partition(topic.name, index)
        if registration is None:  # not in the image (Kafka leaves such a partition out)
            continue
        leader = registration.leader if reachable(view, registration.leader, listener) else -1
        yield DescribeTopicPartitionsResponsePartition(
            partition_index=index,
            leader_id=leader,
            leader_epoch=registration.leader_epoch,
            replica_nodes=list(registration.replicas),
            isr_nodes=list(registration.isr),
            eligible_leader_replicas=list(registration.elr),
            last_known_elr=list(registration.last_known_elr),
            offline_replicas=offline_replicas(view, registration.replicas, listener),
        )
