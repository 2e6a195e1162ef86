"""CreateTopics.

Behaviour: each topic is checked on its own: not an internal topic (``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``) nor ``__cluster_metadata``, which get
INVALID_REQUEST as Kafka answers for ``__cluster_metadata`` (the broker creates its internal
topics itself), a legal name, not existing (nor being deleted), partitions and replication
factor (-1 takes the broker defaults; more than one replica cannot be placed on this one broker),
a manual assignment naming only this node, configs that parse. A name given twice in one request
fails with INVALID_REQUEST for each copy. A request whose topics need more than
``max_records_per_user_op`` metadata records (Kafka's 10,000: one per topic, per config and per
partition) fails whole with POLICY_VIOLATION (see ``record_limit``), before anything is created.
``validate_only`` checks without creating. The topics are registered (and the metadata written)
at once; their partitions are opened in slices of the work budget (see ``open_partitions``), and
the answer comes when the last one is open.
Version notes: v5+ returns the topic id, partition count, replication factor and effective configs.
In a cluster the request goes to the active controller, and its answer is relayed
(``forward``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kafka_wire.broker.apis.configs import describe_topic_configs
from kafka_wire.broker.apis.forward import Forwarded, forward
from kafka_wire.broker.apis.open_partitions import OpenPartitionsJob
from kafka_wire.broker.apis.record_limit import EXCESSIVE_BATCH_MESSAGE, new_topic_records
from kafka_wire.broker.internal_topics import RESERVED_TOPICS
from kafka_wire.broker.state import Context
from kafka_wire.broker.work import Job
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicConfigs,
    CreateTopicsResponseCreatableTopicResult,
    ErrorCode,
)


@dataclass(slots=True)
class _Creatable:
    """A topic that passed its checks: what to create, and the result to fill in."""

    result: CreateTopicsResponseCreatableTopicResult
    partitions: int
    configs: dict[str, str]


def handle(
    ctx: Context, request: CreateTopicsRequest
) -> CreateTopicsResponse | Job[CreateTopicsResponse] | Message | Forwarded:
    if ctx.state.cluster is not None:  # the controller owns the metadata
        return forward(ctx, ctx.state.cluster, request)
    state = ctx.state
    counts = Counter(t.name for t in request.topics)
    results = []
    creatable: list[_Creatable] = []
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
            continue
        result, ok = _check(ctx, entry)
        results.append(result)
        if ok is not None:
            creatable.append(ok)
    records = sum(new_topic_records(c.partitions, len(c.configs)) for c in creatable)
    if records > state.config.max_records_per_user_op:
        return CreateTopicsResponse(
            topics=[
                CreateTopicsResponseCreatableTopicResult(
                    name=entry.name,
                    error_code=ErrorCode.POLICY_VIOLATION,
                    error_message=EXCESSIVE_BATCH_MESSAGE,
                )
                for entry in request.topics
            ]
        )
    response = CreateTopicsResponse(topics=results)
    if request.validate_only or not creatable:
        return response
    ranges = []
    for c in creatable:
        topic = state.register_topic(c.result.name, c.partitions, c.configs)
        c.result.topic_id = topic.topic_id
        ranges.append((topic, 0, c.partitions))
    state.persist_metadata(ctx.effects)
    return OpenPartitionsJob(state, ctx.effects, ranges, lambda: response, ctx.now_ms).start(ctx.now_ms)


def _check(
    ctx: Context, entry: CreateTopicsRequestCreatableTopic
) -> tuple[CreateTopicsResponseCreatableTopicResult, _Creatable | None]:
    state = ctx.state
    # A success's message is null, as Kafka's controller sets it (the default is "").
    result = CreateTopicsResponseCreatableTopicResult(
        name=entry.name, num_partitions=-1, replication_factor=-1, error_message=None
    )
    if entry.name in RESERVED_TOPICS:
        result.error_code = ErrorCode.INVALID_REQUEST
        result.error_message = f"Creation of internal topic {entry.name} is prohibited."
        return result, None
    node = state.config.node_id
    partitions = entry.num_partitions
    replication = entry.replication_factor
    if entry.assignments:
        if partitions != -1 or replication != -1:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = "Both numPartitions or replicationFactor and replicasAssignments were set."
            return result, None
        indexes = sorted(a.partition_index for a in entry.assignments)
        if indexes != list(range(len(indexes))) or any(a.broker_ids != [node] for a in entry.assignments):
            result.error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT
            result.error_message = (
                f"Replica assignments must be consecutive partitions, each on broker {node} only."
            )
            return result, None
        partitions, replication = len(indexes), 1
    if partitions == -1:
        partitions = state.config.num_partitions
    if replication == -1:
        replication = state.config.default_replication_factor
    configs = {c.name: c.value for c in entry.configs if c.value is not None}
    problem = state.check_new_topic(entry.name, partitions, replication) or state.check_configs(configs)
    if problem is not None:
        result.error_code, result.error_message = problem.error_code, problem.message
        return result, None
    result.num_partitions, result.replication_factor = partitions, replication
    if ctx.api_version >= 5:
        result.configs = [
            CreateTopicsResponseCreatableTopicConfigs(
                name=c.name,
                value=c.value,
                read_only=c.read_only,
                config_source=c.config_source,
                is_sensitive=c.is_sensitive,
            )
            for c in describe_topic_configs(state, configs, None, synonyms=False, documentation=False)
        ]
    return result, _Creatable(result, partitions, configs)
