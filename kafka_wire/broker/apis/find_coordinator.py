"""FindCoordinator.

Behaviour: the coordinator of a group (key type 0) is the leader of its ``__consumer_offsets``
partition, that of a transactional id (key type 1) the leader of its ``__transaction_state``
partition (``abs(hash(key)) % partitions``, Kafka's ``partitionFor``), answered with that broker's
endpoint on the listener the request came on (the inter-broker listener when the request names
none); COORDINATOR_NOT_AVAILABLE while the partition has no leader, the leader has no such
endpoint, or the topic does not exist yet (the broker then asks the controller to create it, and
clients retry). Another key type is INVALID_REQUEST, as in Kafka. With an authorizer, DESCRIBE on
the group (GROUP_AUTHORIZATION_FAILED) or transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
Version notes: v0-v3 ask for one key, and their answer's ``error_message`` (v1+) says why or,
on success, "NONE" (as Kafka's); v4+ ask for a batch in ``coordinator_keys``, answered with
empty messages (as Kafka's).
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.cluster_view import ClusterView
from kafka_wire.broker.group import partition_for_group
from kafka_wire.broker.internal_topics import SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from kafka_wire.broker.security.checks import allowed
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)

#: The internal topic whose partition leaders coordinate each key type (0: groups, 1: transactions,
#: 2: share-partitions' state, keyed "group:topic id:partition").
_TOPICS = {0: OFFSETS_TOPIC, 1: TRANSACTION_STATE_TOPIC, 2: SHARE_GROUP_STATE_TOPIC}
#: What each key type needs (operation, resource type, resource name: None for the key itself) and
#: the error when the connection may not: DESCRIBE on the group or transactional id it names; a
#: share-partition's state coordinator is for brokers only, CLUSTER_ACTION on the cluster (Kafka).
_CHECKS = {
    0: (AclOperation.DESCRIBE, ResourceType.GROUP, None, ErrorCode.GROUP_AUTHORIZATION_FAILED),
    1: (
        AclOperation.DESCRIBE,
        ResourceType.TRANSACTIONAL_ID,
        None,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
    2: (
        AclOperation.CLUSTER_ACTION,
        ResourceType.CLUSTER,
        CLUSTER_NAME,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ),
}
#: The message of Kafka's ``Errors.NONE`` (its name), which v1-v3 answers carry on success.
NO_ERROR_MESSAGE: Final = "NONE"


def handle(ctx: Context, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    cluster = ctx.state.cluster
    keys = request.coordinator_keys if ctx.api_version >= 4 else [request.key]
    coordinators = []
    for key in keys:
        topic = _TOPICS.get(request.key_type)
        if topic is None:
            entry = _error(key, ErrorCode.INVALID_REQUEST, f"Unknown coordinator type: {request.key_type}")
        elif not allowed(ctx, (check := _CHECKS[request.key_type])[0], check[1], check[2] or key):
            entry = _error(key, check[3], check[3].description)
        else:
            entry = _coordinator(ctx, cluster, key, topic)
        coordinators.append(entry)
    if ctx.api_version >= 4:
        for entry in coordinators:
            entry.error_message = ""  # Kafka's v4+ coordinators leave it at its default
        return FindCoordinatorResponse(coordinators=coordinators)
    [only] = coordinators
    return FindCoordinatorResponse(
        error_code=only.error_code,
        # Kafka's v1-v3 answer always has one: its error's, "NONE" for a success.
        error_message=only.error_message if only.error_code else NO_ERROR_MESSAGE,
        node_id=only.node_id,
        host=only.host,
        port=only.port,
    )


def _coordinator(
    ctx: Context, cluster: ClusterView, key: str, topic: str
) -> FindCoordinatorResponseCoordinator:
    """The leader of the key's partition of ``topic``, on the request's listener."""
    partitions = cluster.partitions_of(topic)
    if not partitions:
        ctx.state.topic_creation.request(cluster, ctx.state.config, topic, ctx.now_ms)
        return _unavailable(key, f"{topic} is being created")
    index = partition_for_group(key, len(partitions))
    registration = cluster.partition(topic, index)
    if registration is None or registration.leader < 0:
        return _unavailable(key, f"{topic}-{index} has no leader")
    leader = cluster.broker(registration.leader)
    listener = ctx.listener or cluster.inter_broker_listener
    endpoint = None if leader is None else leader.endpoint(listener)
    if endpoint is None:
        return _unavailable(key, f"broker {registration.leader} has no {listener} endpoint")
    return FindCoordinatorResponseCoordinator(
        key=key, node_id=registration.leader, host=endpoint.host, port=endpoint.port
    )


def _unavailable(key: str, why: str) -> FindCoordinatorResponseCoordinator:
    return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, why)


def _error(key: str, code: int, why: str) -> FindCoordinatorResponseCoordinator:
    return FindCoordinatorResponseCoordinator(
        key=key, node_id=-1, host="", port=-1, error_code=code, error_message=why
    )
