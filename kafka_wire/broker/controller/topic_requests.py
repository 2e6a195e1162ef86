"""``TopicRequests``: layer 2 of the replication part
(:class:`~kafka_wire.broker.controller.replication_control.ReplicationControl`): CreateTopics,
DeleteTopics and CreatePartitions, with their checks, replica placement
(:func:`~kafka_wire.broker.controller.placement.assign_replicas` over the active brokers) and the
records each writes (TopicRecord, a ConfigRecord per config, a PartitionRecord per partition;
RemoveTopicRecord).
"""

from __future__ import annotations

import uuid

from kafka_wire.broker.controller.configs_image import ConfigResourceType
from kafka_wire.broker.controller.partition_changes import PartitionChanges
from kafka_wire.broker.controller.placement import assign_replicas
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.internal_topics import CLUSTER_METADATA_TOPIC
from kafka_wire.broker.metadata import random_uuid, topic_name_problem
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
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
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)


class TopicRequests(PartitionChanges):
    """Creating and deleting topics, adding partitions."""

    # -- CreateTopics ----------------------------------------------------------------------------

    def create_topics(self, version: int, req: CreateTopicsRequest, now_ms: int) -> Decision:
        counts: dict[str, int] = {}
        for t in req.topics:
            counts[t.name] = counts.get(t.name, 0) + 1
        results: list[CreateTopicsResponseCreatableTopicResult] = []
        records: list[Message] = []
        for entry in req.topics:
            result = CreateTopicsResponseCreatableTopicResult(
                name=entry.name, num_partitions=-1, replication_factor=-1
            )
            results.append(result)
            if counts[entry.name] > 1:
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = f"Found multiple entries for topic {entry.name}"
                continue
            topic_records = self._new_topic(entry, result)
            if topic_records is not None and not req.validate_only:
                records += topic_records
        response = CreateTopicsResponse(topics=results)

        def fail(code: int) -> Message:
            return CreateTopicsResponse(
                topics=[
                    CreateTopicsResponseCreatableTopicResult(name=t.name, error_code=code) for t in req.topics
                ]
            )

        return ControllerResult(records, lambda: response, fail, req.timeout_ms)

    def _new_topic(
        self, entry: CreateTopicsRequestCreatableTopic, result: CreateTopicsResponseCreatableTopicResult
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
        if name in self.image.topics:
            return refuse(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        active = self.cluster.active_brokers()
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
            problem = self.assignment_problem(assignment)
            if problem is not None:
                return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
        else:
            partitions = self.config.num_partitions if entry.num_partitions == -1 else entry.num_partitions
            replication = (
                self.config.default_replication_factor
                if entry.replication_factor == -1
                else entry.replication_factor
            )
            if partitions < 1:
                return refuse(
                    ErrorCode.INVALID_PARTITIONS,
                    "Number of partitions was set to an invalid non-positive value.",
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
            assignment = assign_replicas(active, partitions, replication, self.rng)
        configs = {cfg.name: cfg.value for cfg in entry.configs if cfg.value is not None}
        problem = self.configuration.topic_config_problem(configs)
        if problem is not None:
            return refuse(ErrorCode.INVALID_CONFIG, problem)
        topic_id = random_uuid(self.rng)
        records: list[Message] = [TopicRecord(name=name, topic_id=topic_id)]
        records += [
            ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name=name, name=k, value=v)
            for k, v in sorted(configs.items())
        ]
        for index, replicas in enumerate(assignment):
            isr = [r for r in replicas if self.cluster.acceptable(r)]
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

    # -- DeleteTopics ----------------------------------------------------------------------------

    def delete_topics(self, version: int, req: DeleteTopicsRequest, now_ms: int) -> Decision:
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
                topic = self.image.topics.get(name)
                if topic is None:
                    result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
            else:
                found = self.image.topic_name(topic_id)
                if found is None:
                    result.error_code = ErrorCode.UNKNOWN_TOPIC_ID
                    continue
                topic = self.image.topics[found]
                result.name = found
            result.topic_id = topic.topic_id
            if topic.topic_id not in removed:
                removed.add(topic.topic_id)
                records.append(RemoveTopicRecord(topic_id=topic.topic_id))

        def fail(code: int) -> Message:
            return DeleteTopicsResponse(
                responses=[
                    DeleteTopicsResponseDeletableTopicResult(name=n, topic_id=i, error_code=code)
                    for n, i in wanted
                ]
            )

        return ControllerResult(
            records, lambda: DeleteTopicsResponse(responses=results), fail, req.timeout_ms
        )

    # -- CreatePartitions ------------------------------------------------------------------------

    def create_partitions(self, version: int, req: CreatePartitionsRequest, now_ms: int) -> Decision:
        results: list[CreatePartitionsResponseTopicResult] = []
        records: list[Message] = []
        for entry in req.topics:
            result = CreatePartitionsResponseTopicResult(name=entry.name)
            results.append(result)
            topic = self.image.topics.get(entry.name)
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
            active = self.cluster.active_brokers()
            if entry.assignments:
                assignment = [list(a.broker_ids) for a in entry.assignments]
                problem = (
                    f"Attempted to add {entry.count - current} additional partition(s), but only "
                    f"{len(assignment)} assignment(s) were specified."
                    if len(assignment) != entry.count - current
                    else self.assignment_problem(assignment)
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
                    active, entry.count - current, replication, self.rng, first_partition=current
                )
            new: list[Message] = []
            for offset, replicas in enumerate(assignment):
                isr = [r for r in replicas if self.cluster.acceptable(r)]
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
            return CreatePartitionsResponse(
                results=[
                    CreatePartitionsResponseTopicResult(name=t.name, error_code=code) for t in req.topics
                ]
            )

        return ControllerResult(
            records, lambda: CreatePartitionsResponse(results=results), fail, req.timeout_ms
        )
