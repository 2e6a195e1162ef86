"""CreateTopics, DeleteTopics, CreatePartitions and IncrementalAlterConfigs, for
:class:`~kafka_wire.broker.controller.controller.QuorumController`.

Each handler takes the controller, the request version, the request and ``now_ms``, and returns
the answer or a held answer (``Waiting``) that comes once its records are committed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafka_wire.broker.controller.image import (
    ConfigResourceType,
)
from kafka_wire.broker.controller.placement import assign_replicas
from kafka_wire.broker.controller.settings import (
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
)
from kafka_wire.broker.error_answers import failure_answer
from kafka_wire.broker.internal_topics import CLUSTER_METADATA_TOPIC
from kafka_wire.broker.log.config import ConfigError, LogConfig
from kafka_wire.broker.metadata import random_uuid, topic_name_problem
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    ConfigRecord,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
    ErrorCode,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseAlterConfigsResourceResponse,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

if TYPE_CHECKING:
    from kafka_wire.broker.controller.controller import QuorumController


def create_topics(
    c: QuorumController, version: int, req: CreateTopicsRequest, now_ms: int
) -> Message | Waiting:
    counts: dict[str, int] = {}
    for t in req.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    results: list[CreateTopicsResponseCreatableTopicResult] = []
    records: list[Message] = []
    for entry in req.topics:
        # A success's message is null, as Kafka's controller sets it (the default is "").
        result = CreateTopicsResponseCreatableTopicResult(
            name=entry.name, num_partitions=-1, replication_factor=-1, error_message=None
        )
        results.append(result)
        if counts[entry.name] > 1:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = f"Found multiple entries for topic {entry.name}"
            continue
        topic_records = _new_topic(c, entry, result)
        if topic_records is not None and not req.validate_only:
            records += topic_records
    response = CreateTopicsResponse(topics=results)

    def fail(code: int) -> Message:
        return failure_answer(ApiKey.CREATE_TOPICS, req, code)

    return c.answer_when_committed(records, lambda: response, fail, now_ms, req.timeout_ms)


def _new_topic(
    c: QuorumController,
    entry: CreateTopicsRequestCreatableTopic,
    result: CreateTopicsResponseCreatableTopicResult,
) -> list[Message] | None:
    def refuse(code: int, message: str) -> list[Message] | None:
        result.error_code, result.error_message = code, message
        return None

    name = entry.name
    if name == CLUSTER_METADATA_TOPIC:  # internal topics are made by brokers through this API
        return refuse(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
    problem = topic_name_problem(name)
    if problem is not None:
        return refuse(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    if name in c.image.topics:
        return refuse(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    active = [b.node_id for b in c.image.brokers() if not b.fenced and not b.in_controlled_shutdown]
    if entry.assignments:
        if entry.num_partitions != -1 or entry.replication_factor != -1:
            return refuse(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions or replicationFactor was not set to -1.",
            )
        indexes = sorted(a.partition_index for a in entry.assignments)
        if indexes != list(range(len(indexes))):
            return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions must be numbered 0 .. n-1.")
        by_index = {a.partition_index: list(a.broker_ids) for a in entry.assignments}
        assignment = [by_index[i] for i in indexes]
        problem = assignment_problem(c, assignment)
        if problem is not None:
            return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
    else:
        partitions = c.config.num_partitions if entry.num_partitions == -1 else entry.num_partitions
        replication = (
            c.config.default_replication_factor
            if entry.replication_factor == -1
            else entry.replication_factor
        )
        if partitions < 1:
            return refuse(
                ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            )
        if replication < 1:
            return refuse(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if replication > len(active):
            return refuse(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication} time(s): The target replication factor of "
                f"{replication} cannot be reached because only {len(active)} broker(s) are registered.",
            )
        assignment = assign_replicas(active, partitions, replication, c.rng)
    configs = {cfg.name: cfg.value for cfg in entry.configs if cfg.value is not None}
    try:
        LogConfig.from_properties(configs)
    except ConfigError as exc:
        return refuse(ErrorCode.INVALID_CONFIG, str(exc))
    topic_id = random_uuid(c.rng)
    records: list[Message] = [TopicRecord(name=name, topic_id=topic_id)]
    records += [
        ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name=name, name=k, value=v)
        for k, v in sorted(configs.items())
    ]
    for index, replicas in enumerate(assignment):
        isr = [r for r in replicas if c.acceptable(r)]
        if not isr:
            return refuse(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {len(replicas)} time(s): All brokers are currently fenced.",
            )
        records.append(
            PartitionRecord(
                partition_id=index, topic_id=topic_id, replicas=replicas, isr=isr, leader=isr[0],
                leader_epoch=0, partition_epoch=0,
            )
        )  # fmt: skip
    result.topic_id = topic_id
    result.num_partitions, result.replication_factor = len(assignment), len(assignment[0])
    return records


def assignment_problem(c: QuorumController, assignment: Sequence[Sequence[int]]) -> str | None:
    sizes = {len(replicas) for replicas in assignment}
    if len(sizes) != 1 or 0 in sizes:
        return "All partitions must have the same, non-zero number of replicas."
    for replicas in assignment:
        if len(set(replicas)) != len(replicas):
            return f"Duplicate broker ids in the replica assignment {list(replicas)}."
        for b in replicas:
            if c.image.broker(b) is None:
                return (
                    f"The manual partition assignment includes broker {b}, but no such broker is registered."
                )
    return None


def delete_topics(
    c: QuorumController, version: int, req: DeleteTopicsRequest, now_ms: int
) -> Message | Waiting:
    wanted: list[tuple[str | None, uuid.UUID]] = (
        [(t.name, t.topic_id) for t in req.topics]
        if version >= 6
        else [(n, ZERO_UUID) for n in req.topic_names]
    )
    results: list[DeleteTopicsResponseDeletableTopicResult] = []
    records: list[Message] = []
    removed: set[uuid.UUID] = set()
    for name, topic_id in wanted:
        result = DeleteTopicsResponseDeletableTopicResult(name=name, topic_id=topic_id)
        results.append(result)
        if name is not None and topic_id == ZERO_UUID:
            topic = c.image.topics.get(name)
            if topic is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
        else:
            found = c.image.topic_name(topic_id)
            if found is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_ID
                continue
            topic = c.image.topics[found]
            result.name = found
        result.topic_id = topic.topic_id
        if topic.topic_id not in removed:
            removed.add(topic.topic_id)
            records.append(RemoveTopicRecord(topic_id=topic.topic_id))

    def fail(code: int) -> Message:
        return failure_answer(ApiKey.DELETE_TOPICS, req, code)

    return c.answer_when_committed(
        records, lambda: DeleteTopicsResponse(responses=results), fail, now_ms, req.timeout_ms
    )


def create_partitions(
    c: QuorumController, version: int, req: CreatePartitionsRequest, now_ms: int
) -> Message | Waiting:
    results: list[CreatePartitionsResponseTopicResult] = []
    records: list[Message] = []
    for entry in req.topics:
        result = CreatePartitionsResponseTopicResult(name=entry.name)
        results.append(result)
        topic = c.image.topics.get(entry.name)
        if topic is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        current = len(topic.partitions)
        if entry.count <= current:
            result.error_code = ErrorCode.INVALID_PARTITIONS
            result.error_message = (
                f"Topic currently has {current} partitions, which is higher than the requested {entry.count}."
                if entry.count < current
                else f"Topic already has {current} partition(s)."
            )
            continue
        replication = len(topic.partitions[0].replicas) if topic.partitions else 1
        active = [b.node_id for b in c.image.brokers() if not b.fenced and not b.in_controlled_shutdown]
        if entry.assignments:
            assignment = [list(a.broker_ids) for a in entry.assignments]
            problem = (
                f"Attempted to add {entry.count - current} additional partition(s), but only "
                f"{len(assignment)} assignment(s) were specified."
                if len(assignment) != entry.count - current
                else assignment_problem(c, assignment)
            )
            if problem is not None:
                result.error_code, result.error_message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
                continue
        elif replication > len(active):
            result.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
            result.error_message = (
                f"Unable to replicate the partition {replication} time(s): The target replication factor of "
                f"{replication} cannot be reached because only {len(active)} broker(s) are registered."
            )
            continue
        else:
            assignment = assign_replicas(
                active, entry.count - current, replication, c.rng, first_partition=current
            )
        new: list[Message] = []
        for offset, replicas in enumerate(assignment):
            isr = [r for r in replicas if c.acceptable(r)]
            if not isr:
                result.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
                result.error_message = (
                    "All brokers specified in the partition assignment are currently fenced."
                )
                break
            new.append(
                PartitionRecord(
                    partition_id=current + offset, topic_id=topic.topic_id, replicas=replicas, isr=isr,
                    leader=isr[0], leader_epoch=0, partition_epoch=0,
                )
            )  # fmt: skip
        else:
            if not req.validate_only:
                records += new

    def fail(code: int) -> Message:
        return failure_answer(ApiKey.CREATE_PARTITIONS, req, code)

    return c.answer_when_committed(
        records, lambda: CreatePartitionsResponse(results=results), fail, now_ms, req.timeout_ms
    )


def incremental_alter_configs(
    c: QuorumController, version: int, req: IncrementalAlterConfigsRequest, now_ms: int
) -> Message | Waiting:
    results: list[IncrementalAlterConfigsResponseAlterConfigsResourceResponse] = []
    records: list[Message] = []
    for resource in req.resources:
        result = IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
            resource_type=resource.resource_type, resource_name=resource.resource_name
        )
        results.append(result)
        key = (resource.resource_type, resource.resource_name)
        if resource.resource_type == ConfigResourceType.TOPIC:
            if resource.resource_name not in c.image.topics:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                result.error_message = f"Topic {resource.resource_name} does not exist."
                continue
        elif resource.resource_type == ConfigResourceType.BROKER:
            if resource.resource_name and not resource.resource_name.isdigit():
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = f"Invalid broker name {resource.resource_name}"
                continue
        else:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = f"Unsupported resource type {resource.resource_type}"
            continue
        old = dict(c.image.configs.get(key, {}))
        new = dict(old)
        problem = None
        for op in resource.configs:
            if op.config_operation == OP_SET:
                if op.value is None:
                    problem = f"Null value not supported for {op.name}"
                    break
                new[op.name] = op.value
            elif op.config_operation == OP_DELETE:
                new.pop(op.name, None)
            elif op.config_operation in (OP_APPEND, OP_SUBTRACT):
                items = [v for v in new.get(op.name, "").split(",") if v]
                given = [v for v in (op.value or "").split(",") if v]
                if op.config_operation == OP_APPEND:
                    items += [v for v in given if v not in items]
                else:
                    items = [v for v in items if v not in given]
                new[op.name] = ",".join(items)
            else:
                problem = f"Unknown operation {op.config_operation}"
                break
        if problem is None and resource.resource_type == ConfigResourceType.TOPIC:
            try:
                LogConfig.from_properties(new)
            except ConfigError as exc:
                problem = str(exc)
        if problem is not None:
            result.error_code, result.error_message = ErrorCode.INVALID_CONFIG, problem
            continue
        if req.validate_only:
            continue
        for name in sorted(set(old) | set(new)):
            if old.get(name) != new.get(name):
                records.append(
                    ConfigRecord(
                        resource_type=resource.resource_type,
                        resource_name=resource.resource_name,
                        name=name,
                        value=new.get(name),
                    )
                )

    def fail(code: int) -> Message:
        return failure_answer(ApiKey.INCREMENTAL_ALTER_CONFIGS, req, code)

    return c.answer_when_committed(
        records, lambda: IncrementalAlterConfigsResponse(responses=results), fail, now_ms
    )
