"""CreateTopics, DeleteTopics and CreatePartitions, for
:class:`~kafka_wire.broker.controller.controller.QuorumController`.

Each handler takes the controller, the request version, the request and ``now_ms``, and returns
the answer or a held answer (``Waiting``) that comes once its records are committed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from kafka_wire.broker.controller.image import (
    ConfigResourceType,
)
from kafka_wire.broker.controller.placement import assign_replicas
from kafka_wire.broker.controller.settings import (
    MAX_PARTITIONS_PER_BATCH,
)
from kafka_wire.broker.error_answers import failure_answer
from kafka_wire.broker.internal_topics import CLUSTER_METADATA_TOPIC
from kafka_wire.broker.log.config import ConfigError, LogConfig
from kafka_wire.broker.metadata import random_uuid, topic_name_problem
from kafka_wire.broker.state import Waiting
from kafka_wire.broker.topic_config_view import describe_topic_configs
from kafka_wire.broker.topic_synonyms import DEFAULT_CONFIG, STATIC_BROKER_CONFIG, set_by_broker
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    ConfigRecord,
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    CreatePartitionsResponseTopicResult,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicConfigs,
    CreateTopicsResponseCreatableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
    ErrorCode,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

if TYPE_CHECKING:
    from kafka_wire.broker.controller.controller import QuorumController

T = TypeVar("T")


def create_topics(
    c: QuorumController, version: int, req: CreateTopicsRequest, now_ms: int
) -> Message | Waiting:
    duplicates = _duplicates(t.name for t in req.topics)
    topics = [t for t in req.topics if t.name not in duplicates]
    results: list[CreateTopicsResponseCreatableTopicResult] = []
    records: list[Message] = []
    if _requested_partitions(c, topics) > MAX_PARTITIONS_PER_BATCH:
        results = [
            CreateTopicsResponseCreatableTopicResult(
                name=t.name,
                error_code=ErrorCode.POLICY_VIOLATION,
                error_message="Excessively large number of partitions per request.",
            )
            for t in topics
        ]
    else:
        for entry in topics:
            result = CreateTopicsResponseCreatableTopicResult(
                name=entry.name, error_message=None, num_partitions=-1, replication_factor=-1
            )
            results.append(result)
            topic_records = _new_topic(c, entry, result, version)
            if topic_records is not None and not req.validate_only:
                records += topic_records
    results += [
        CreateTopicsResponseCreatableTopicResult(
            name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name."
        )
        for name in duplicates
    ]
    response = CreateTopicsResponse(topics=results)

    def fail(code: int) -> Message:
        return failure_answer(ApiKey.CREATE_TOPICS, req, code)

    return c.answer_when_committed(records, lambda: response, fail, now_ms, req.timeout_ms)


def _duplicates(names: Iterable[T]) -> list[T]:
    """The names (or ids) given more than once, in the order of their first mention (Kafka's
    controller answers each once with INVALID_REQUEST and handles the rest of the request)."""
    seen: dict[T, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
    return [name for name, count in seen.items() if count > 1]


def _requested_partitions(c: QuorumController, topics: Sequence[CreateTopicsRequestCreatableTopic]) -> int:
    """The partitions a CreateTopics asks for in all (Kafka's ``validateTotalNumberOfPartitions``:
    -1 counts the default, a manual assignment its partitions, a non-positive count nothing)."""
    total = 0
    for t in topics:
        if t.assignments:
            total += len(t.assignments)
        elif t.num_partitions == -1:
            total += c.config.num_partitions
        elif t.num_partitions > 0:
            total += t.num_partitions
    return total


def _new_topic(
    c: QuorumController,
    entry: CreateTopicsRequestCreatableTopic,
    result: CreateTopicsResponseCreatableTopicResult,
    version: int,
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
    collision = _colliding(c, name)
    if collision is not None:
        return refuse(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic '{collision}'."
        )
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
    unset = [cfg.name for cfg in entry.configs if cfg.value is None]
    if unset:
        return refuse(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {unset[0]}")
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
    if version >= 5:
        result.configs = _listed_configs(c, configs)
    return records


def _listed_configs(
    c: QuorumController, overrides: dict[str, str]
) -> list[CreateTopicsResponseCreatableTopicConfigs]:
    """The configs a new topic runs with, as CreateTopics v5+ lists them (by this node's
    properties, as Kafka's controller lists them by its own)."""
    settings = c.config
    static = settings.topic_default_properties
    return [
        CreateTopicsResponseCreatableTopicConfigs(
            name=entry.name,
            value=entry.value,
            read_only=entry.read_only,
            config_source=STATIC_BROKER_CONFIG
            if entry.config_source == DEFAULT_CONFIG and set_by_broker(entry.name, static)
            else entry.config_source,
            is_sensitive=entry.is_sensitive,
        )
        for entry in describe_topic_configs(
            overrides,
            None,
            defaults=LogConfig.from_properties(settings.topic_defaults),
            static=static,
            synonyms=False,
            documentation=False,
        )
    ]


def _colliding(c: QuorumController, name: str) -> str | None:
    """An existing topic whose name equals ``name`` once '.' and '_' are taken as one character
    (their metric names would collide; Kafka refuses such a topic)."""
    if "." not in name and "_" not in name:
        return None
    folded = name.replace(".", "_")
    return next((t for t in c.image.topics if t.replace(".", "_") == folded), None)


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
    by_name = [n for n, i in wanted if n is not None and i == ZERO_UUID]
    by_id = [i for n, i in wanted if not (n is not None and i == ZERO_UUID)]
    twice_named, twice_id = _duplicates(by_name), _duplicates(by_id)  # in request order
    results: list[DeleteTopicsResponseDeletableTopicResult] = [
        *(
            _deleted(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            for name in twice_named
        ),
        *(_deleted(None, i, ErrorCode.INVALID_REQUEST, "Duplicate topic id.") for i in twice_id),
    ]
    records: list[Message] = []
    removed: set[uuid.UUID] = set()
    for name, topic_id in wanted:
        if name is not None and topic_id == ZERO_UUID:
            if name in twice_named:
                continue
            topic = c.image.topics.get(name)
            if topic is None:
                results.append(_deleted(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
        else:
            if topic_id in twice_id:
                continue
            found = c.image.topic_name(topic_id)
            if found is None:
                results.append(_deleted(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID))
                continue
            topic = c.image.topics[found]
        results.append(_deleted(topic.name, topic.topic_id, ErrorCode.NONE))
        if topic.topic_id not in removed:
            removed.add(topic.topic_id)
            records.append(RemoveTopicRecord(topic_id=topic.topic_id))

    def fail(code: int) -> Message:
        return failure_answer(ApiKey.DELETE_TOPICS, req, code)

    return c.answer_when_committed(
        records, lambda: DeleteTopicsResponse(responses=results), fail, now_ms, req.timeout_ms
    )


def _deleted(
    name: str | None, topic_id: uuid.UUID, code: ErrorCode, message: str | None = None
) -> DeleteTopicsResponseDeletableTopicResult:
    """One topic's DeleteTopics result; an error without a message of its own gets its code's
    description (Kafka's ``ApiError`` of the code)."""
    if message is None and code != ErrorCode.NONE:
        message = code.description
    return DeleteTopicsResponseDeletableTopicResult(
        name=name, topic_id=topic_id, error_code=code, error_message=message
    )


def create_partitions(
    c: QuorumController, version: int, req: CreatePartitionsRequest, now_ms: int
) -> Message | Waiting:
    duplicates = _duplicates(t.name for t in req.topics)
    topics = [t for t in req.topics if t.name not in duplicates]
    results: list[CreatePartitionsResponseTopicResult] = [
        CreatePartitionsResponseTopicResult(
            name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name."
        )
        for name in duplicates
    ]
    records: list[Message] = []
    if _added_partitions(c, topics) > MAX_PARTITIONS_PER_BATCH:
        results += [
            CreatePartitionsResponseTopicResult(
                name=t.name,
                error_code=ErrorCode.POLICY_VIOLATION,
                error_message="Excessively large number of additional partitions per request.",
            )
            for t in topics
        ]
        topics = []
    for entry in topics:
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


def _added_partitions(c: QuorumController, topics: Sequence[CreatePartitionsRequestTopic]) -> int:
    """The partitions a CreatePartitions adds in all to existing topics (Kafka's
    ``validateTotalNumberOfPartitions``)."""
    total = 0
    for t in topics:
        topic = c.image.topics.get(t.name)
        if topic is not None and t.count > len(topic.partitions):
            total += t.count - len(topic.partitions)
    return total
