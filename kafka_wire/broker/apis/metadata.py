"""Metadata.

Behaviour: a null topic list (or an empty one at v0) lists every topic, internal ones included.
The answer is the metadata image's, as Kafka's broker gives it (see ``cluster_facts``): the
brokers are the unfenced ones with an endpoint on the client's listener; a partition whose leader
is not a registered broker with that endpoint has leader -1 and LEADER_NOT_AVAILABLE
(LISTENER_NOT_FOUND from v6 when the leader is registered without that listener);
``offline_replicas`` names replicas on unregistered or fenced brokers; v0 lists only live
replicas and ISR members, with REPLICA_NOT_AVAILABLE when some are left out. The controller id is
a random live broker (KIP-590). Topics may be named by id (v10+).

A named topic that does not exist is auto-created when both the broker
(``auto.create.topics.enable``) and the request (v4+ ``allow_auto_topic_creation``) allow it, as
Kafka's ``AutoTopicCreationManager`` does: the broker asks the active controller for all of them
in one CreateTopics (``num.partitions``, ``default.replication.factor``; one request at a time per
topic; Kafka's limits per request apply to them together) and answers UNKNOWN_TOPIC_OR_PARTITION
until the topic is in the image, as Kafka's broker does in KRaft mode. An internal topic is asked
for the broker's way (``__consumer_offsets`` with ``offsets.topic.*``); one this broker does not
make, and ``__cluster_metadata``, is UNKNOWN_TOPIC_OR_PARTITION.
Authorization (with an authorizer): listing every topic leaves out those the connection may not
DESCRIBE; a topic named that it may not DESCRIBE, or may not CREATE (on the cluster or the topic)
when it would be auto-created, is TOPIC_AUTHORIZATION_FAILED. The authorized-operations fields
are the authorizer's.
Version notes: ``cluster_id`` from v2, ``topic_id`` from v10, authorized operations v8-v10 (cluster),
``offline_replicas`` from v5.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.apis.cluster_facts import (
    advertised_controller,
    client_listener,
    is_offline,
    live_brokers,
    reachable,
)
from kafka_wire.broker.cluster_view import ClusterView
from kafka_wire.broker.internal_topics import RESERVED_TOPICS, internal_topic_specs, is_internal
from kafka_wire.broker.metadata import TopicInfo, topic_name_problem
from kafka_wire.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from kafka_wire.broker.security.checks import authorized_operations, cluster_allowed, topic_allowed
from kafka_wire.broker.state import Context
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.messages import (
    ErrorCode,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

if TYPE_CHECKING:
    from kafka_wire.messages import MetadataRequestTopic

#: Kafka's "authorized operations not requested" value.
OPERATIONS_NOT_REQUESTED: Final = -(2**31)
#: Every operation on a topic for a broker without ACLs (Kafka's ``AclEntry.supportedOperations``):
#: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS and ALTER_CONFIGS (bits 3-8, 10,
#: 11; not CLUSTER_ACTION, 9).
ALL_TOPIC_OPERATIONS: Final = 0b0000_1101_1111_1000
#: Every operation on the cluster: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
#: ALTER_CONFIGS and IDEMPOTENT_WRITE (bits 5, 7-12).
ALL_CLUSTER_OPERATIONS: Final = 0b0001_1111_1010_0000


def brokers(ctx: Context) -> list[MetadataResponseBroker]:
    return [
        MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in live_brokers(ctx)
    ]


def topic_metadata(ctx: Context, topic: TopicInfo, *, operations: bool = False) -> MetadataResponseTopic:
    reach = _Reach(ctx.state.cluster, client_listener(ctx, ctx.state.cluster))
    partitions = [_registered_partition(ctx, reach, topic.name, index) for index in range(topic.partitions)]
    return MetadataResponseTopic(
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=is_internal(topic.name),
        partitions=partitions,
        topic_authorized_operations=(
            authorized_operations(ctx, ResourceType.TOPIC, topic.name)
            if operations
            else OPERATIONS_NOT_REQUESTED
        ),
    )


class _Reach:
    """What a client on ``listener`` can reach, per broker, looked up once per answer (a topic of
    10,000 partitions names the same few brokers 30,000 times)."""

    def __init__(self, view: ClusterView, listener: str) -> None:
        self.view = view
        self.listener = listener
        self._offline: dict[int, bool] = {}
        self._leaders: dict[int, bool] = {}

    def offline(self, node_id: int) -> bool:
        found = self._offline.get(node_id)
        if found is None:
            found = self._offline[node_id] = is_offline(self.view.broker(node_id), self.listener)
        return found

    def leads(self, node_id: int) -> bool:
        """Whether ``node_id`` is a registered broker with an endpoint on the listener."""
        found = self._leaders.get(node_id)
        if found is None:
            found = self._leaders[node_id] = reachable(self.view, node_id, self.listener) is not None
        return found


def _registered_partition(ctx: Context, reach: _Reach, topic: str, index: int) -> MetadataResponsePartition:
    """One partition as the metadata image registers it (Kafka's ``getPartitionMetadata``)."""
    view = reach.view
    registration = view.partition(topic, index)
    if registration is None:  # not in the image yet: being created
        return MetadataResponsePartition(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE, partition_index=index, leader_id=-1
        )
    replicas, isr = list(registration.replicas), list(registration.isr)
    if ctx.api_version == 0:  # v0 lists only the replicas a client can reach
        replicas = [r for r in replicas if not reach.offline(r)]
        isr = [r for r in isr if not reach.offline(r)]
    leader = registration.leader
    if not reach.leads(leader):
        registered = leader >= 0 and view.broker(leader) is not None
        error = (
            ErrorCode.LISTENER_NOT_FOUND
            if registered and ctx.api_version >= 6
            else ErrorCode.LEADER_NOT_AVAILABLE
        )
        leader = -1
    elif len(replicas) < len(registration.replicas) or len(isr) < len(registration.isr):
        error = ErrorCode.REPLICA_NOT_AVAILABLE
    else:
        error = ErrorCode.NONE
    return MetadataResponsePartition(
        error_code=error,
        partition_index=index,
        leader_id=leader,
        leader_epoch=registration.leader_epoch,
        replica_nodes=replicas,
        isr_nodes=isr,
        offline_replicas=[r for r in registration.replicas if reach.offline(r)],
    )


def handle(ctx: Context, request: MetadataRequest) -> MetadataResponse:
    state = ctx.state
    wanted = request.topics
    if wanted is None or (ctx.api_version == 0 and not wanted):
        return _response(ctx, request, auto_create=False)
    auto_create = state.config.auto_create_topics and (
        ctx.api_version < 4 or request.allow_auto_topic_creation
    )
    denied = _denied(ctx, wanted, auto_create=auto_create)
    if auto_create:
        creatable = [
            e.name
            for e in wanted
            if e.name is not None
            and e.name not in denied
            and state.topic_named(e.name) is None
            and topic_name_problem(e.name) is None
            and e.name not in RESERVED_TOPICS  # internal: asked for below, the broker's way
        ]
        state.topic_creation.create(
            state.cluster,
            creatable,
            state.config.num_partitions,
            state.config.default_replication_factor,
            {},
            ctx.now_ms,
        )
    return _response(ctx, request, auto_create=auto_create, denied=denied)


def _denied(ctx: Context, wanted: list[MetadataRequestTopic], *, auto_create: bool) -> set[str]:
    """The topics named (by name or by a known id) that are answered TOPIC_AUTHORIZATION_FAILED:
    those the connection may not DESCRIBE and, when they would be auto-created, those it may not
    CREATE (on the cluster or the topic), as Kafka's ``KafkaApis`` decides."""
    state = ctx.state
    if state.authorizer is None:
        return set()
    denied: set[str] = set()
    may_create: bool | None = None
    for e in wanted:
        topic = state.topic_with_id(e.topic_id) if e.name is None and e.topic_id != ZERO_UUID else None
        name = e.name if e.name is not None else (topic.name if topic is not None else None)
        if name is None:
            continue
        if not topic_allowed(ctx, AclOperation.DESCRIBE, name):
            denied.add(name)
        elif auto_create and e.name is not None and state.topic_named(name) is None:
            if may_create is None:
                may_create = cluster_allowed(ctx, AclOperation.CREATE)
            if not may_create and not topic_allowed(ctx, AclOperation.CREATE, name):
                denied.add(name)
    return denied


def _response(
    ctx: Context, request: MetadataRequest, *, auto_create: bool, denied: set[str] | None = None
) -> MetadataResponse:
    state = ctx.state
    operations = request.include_topic_authorized_operations
    wanted = request.topics
    if wanted is None or (ctx.api_version == 0 and not wanted):
        listed = sorted(state.metadata.topics.values(), key=lambda t: t.name)
        if state.authorizer is not None:  # a topic it may not describe is left out
            listed = [t for t in listed if topic_allowed(ctx, AclOperation.DESCRIBE, t.name)]
        topics = [topic_metadata(ctx, t, operations=operations) for t in listed]
    else:
        topics = [
            _refused(ctx, e.name, e.topic_id)
            if (e.name if e.name is not None else _id_name(ctx, e.topic_id)) in (denied or ())
            else _one_topic(ctx, e.name, e.topic_id, auto_create=auto_create, operations=operations)
            for e in wanted
        ]
        if operations:  # Kafka sets them on every topic it names in the answer, error or not
            for topic in topics:  # (but one it may not describe)
                if topic.name is not None and topic.error_code != ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                    topic.topic_authorized_operations = authorized_operations(
                        ctx, ResourceType.TOPIC, topic.name
                    )
    return MetadataResponse(
        brokers=brokers(ctx),
        cluster_id=state.metadata.cluster_id,
        controller_id=advertised_controller(ctx),
        topics=topics,
        cluster_authorized_operations=(
            authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
            if request.include_cluster_authorized_operations
            else OPERATIONS_NOT_REQUESTED
        ),
    )


def _id_name(ctx: Context, topic_id: uuid.UUID) -> str | None:
    topic = ctx.state.topic_with_id(topic_id) if topic_id != ZERO_UUID else None
    return None if topic is None else topic.name


def _refused(ctx: Context, name: str | None, topic_id: uuid.UUID) -> MetadataResponseTopic:
    """A topic the connection may not describe (or auto-create): named as it was asked for."""
    return MetadataResponseTopic(
        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        name=name,
        topic_id=topic_id,
        is_internal=name is not None and is_internal(name),
    )


def _one_topic(
    ctx: Context, name: str | None, topic_id: uuid.UUID, *, auto_create: bool, operations: bool
) -> MetadataResponseTopic:
    state = ctx.state
    if name is None:
        topic = state.topic_with_id(topic_id) if topic_id != ZERO_UUID else None
        if topic is None:
            return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id)
        return topic_metadata(ctx, topic, operations=operations)
    topic = state.topic_named(name)
    if topic is not None:
        return topic_metadata(ctx, topic, operations=operations)
    if topic_name_problem(name) is not None:
        return MetadataResponseTopic(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name)
    if not auto_create:
        return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
    if name in RESERVED_TOPICS:
        spec = internal_topic_specs(state.config).get(name)
        if spec is None:
            return MetadataResponseTopic(
                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, is_internal=is_internal(name)
            )
        state.topic_creation.request(state.cluster, state.config, name, ctx.now_ms)
        return MetadataResponseTopic(
            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, is_internal=is_internal(name)
        )
    # Asked of the controller (or already asked): not known until the image has it.
    return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
