"""FindCoordinator.

Behaviour: the coordinator of a group is the leader of its ``__consumer_offsets`` partition (``abs(hash(group id)) % partitions``, Kafka's
``partitionFor``), answered with that broker's endpoint on the listener the request came on (the
inter-broker listener when the request names none); COORDINATOR_NOT_AVAILABLE while the partition
has no leader, the leader has no such endpoint, or the topic does not exist yet (the broker then
asks the controller to create it, and clients retry). Transaction coordinators (key type 1) are not
available yet (COORDINATOR_NOT_AVAILABLE).
Version notes: v0-v3 ask for one key, and their answer's ``error_message`` (v1+) says why or,
on success, "NONE" (as Kafka's); v4+ ask for a batch in ``coordinator_keys``, answered with
empty messages (as Kafka's).
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.cluster_view import ClusterView
from kafka_wire.broker.group import partition_for_group
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)

_GROUP = 0
#: The message of Kafka's ``Errors.NONE`` (its name), which v1-v3 answers carry on success.
NO_ERROR_MESSAGE: Final = "NONE"


def handle(ctx: Context, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    cluster = ctx.state.cluster
    keys = request.coordinator_keys if ctx.api_version >= 4 else [request.key]
    coordinators = []
    for key in keys:
        if request.key_type != _GROUP:
            entry = _unavailable(key, "this broker has no transaction coordinator")
        else:
            entry = _group_coordinator(ctx, cluster, key)
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


def _group_coordinator(ctx: Context, cluster: ClusterView, key: str) -> FindCoordinatorResponseCoordinator:
    """The leader of the group's ``__consumer_offsets`` partition, on the request's listener."""
    partitions = cluster.partitions_of(OFFSETS_TOPIC)
    if not partitions:
        ctx.state.topic_creation.request(cluster, ctx.state.config, OFFSETS_TOPIC, ctx.now_ms)
        return _unavailable(key, f"{OFFSETS_TOPIC} is being created")
    index = partition_for_group(key, len(partitions))
    registration = cluster.partition(OFFSETS_TOPIC, index)
    if registration is None or registration.leader < 0:
        return _unavailable(key, f"{OFFSETS_TOPIC}-{index} has no leader")
    leader = cluster.broker(registration.leader)
    listener = ctx.listener or cluster.inter_broker_listener
    endpoint = None if leader is None else leader.endpoint(listener)
    if endpoint is None:
        return _unavailable(key, f"broker {registration.leader} has no {listener} endpoint")
    return FindCoordinatorResponseCoordinator(
        key=key, node_id=registration.leader, host=endpoint.host, port=endpoint.port
    )


def _unavailable(key: str, why: str) -> FindCoordinatorResponseCoordinator:
    return FindCoordinatorResponseCoordinator(
        key=key,
        node_id=-1,
        host="",
        port=-1,
        error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
        error_message=why,
    )
