"""CreateTopics.

Behaviour: each topic is checked on its own: not an internal topic (``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``) nor ``__cluster_metadata``, which get
INVALID_REQUEST as Kafka answers for ``__cluster_metadata`` (the broker creates its internal
topics itself), a legal name, not existing, partitions and
replication factor (-1 takes the broker defaults; more than one replica cannot be placed on this
one broker), a manual assignment naming only this node, configs that parse. A name given twice
in one request fails with INVALID_REQUEST for each copy. ``validate_only`` checks without creating.
Version notes: v5+ returns the topic id, partition count, replication factor and effective configs.
"""

from __future__ import annotations

from collections import Counter

from kafka_wire.broker.apis.configs import describe_topic_configs
from kafka_wire.broker.internal_topics import RESERVED_TOPICS
from kafka_wire.broker.state import Context
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicConfigs,
    CreateTopicsResponseCreatableTopicResult,
    ErrorCode,
)


def handle(ctx: Context, request: CreateTopicsRequest) -> CreateTopicsResponse:
    counts = Counter(t.name for t in request.topics)
    results = []
    for entry in request.topics:
        if counts[entry.name] > 1:
            results.append(
                CreateTopicsResponseCreatableTopicResult(
                    name=entry.name,
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message=f"Create topics request from client `{ctx.request.header.client_id}` contains "
                    f"multiple entries for the following topics: {entry.name}",
                )
            )
        else:
            results.append(_create(ctx, entry, request.validate_only))
    return CreateTopicsResponse(topics=results)


def _create(
    ctx: Context, entry: CreateTopicsRequestCreatableTopic, validate_only: bool
) -> CreateTopicsResponseCreatableTopicResult:
    state = ctx.state
    result = CreateTopicsResponseCreatableTopicResult(name=entry.name, num_partitions=-1, replication_factor=-1)
    if entry.name in RESERVED_TOPICS:
        result.error_code = ErrorCode.INVALID_REQUEST
        result.error_message = f"Creation of internal topic {entry.name} is prohibited."
        return result
    node = state.config.node_id
    partitions = entry.num_partitions
    replication = entry.replication_factor
    if entry.assignments:
        if partitions != -1 or replication != -1:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = "Both numPartitions or replicationFactor and replicasAssignments were set."
            return result
        indexes = sorted(a.partition_index for a in entry.assignments)
        if indexes != list(range(len(indexes))) or any(a.broker_ids != [node] for a in entry.assignments):
            result.error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT
            result.error_message = f"Replica assignments must be consecutive partitions, each on broker {node} only."
            return result
        partitions, replication = len(indexes), 1
    if partitions == -1:
        partitions = state.config.num_partitions
    if replication == -1:
        replication = state.config.default_replication_factor
    configs = {c.name: c.value for c in entry.configs if c.value is not None}
    problem = state.check_new_topic(entry.name, partitions, replication) or state.check_configs(configs)
    if problem is not None:
        result.error_code, result.error_message = problem.error_code, problem.message
        return result
    result.num_partitions, result.replication_factor = partitions, replication
    if validate_only:
        topic_configs = configs
    else:
        topic = state.create_topic(entry.name, partitions, configs, ctx.now_ms)
        result.topic_id = topic.topic_id
        topic_configs = topic.configs
    if ctx.api_version >= 5:
        result.configs = [
            CreateTopicsResponseCreatableTopicConfigs(
                name=c.name, value=c.value, read_only=c.read_only, config_source=c.config_source, is_sensitive=c.is_sensitive
            )
            for c in describe_topic_configs(state, topic_configs, None, synonyms=False, documentation=False)
        ]
    return result
