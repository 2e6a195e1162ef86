"""``TopicRequests``: layer 2 of the replication part
(:class:`~kafka_wire.broker.controller.replication_control.ReplicationControl`): CreateTopics,
DeleteTopics and CreatePartitions, with their checks and limits, replica placement
(:func:`~kafka_wire.broker.controller.placement.assign_replicas` over the active brokers) and the
records each writes (TopicRecord, a ConfigRecord per config, a PartitionRecord per partition;
RemoveTopicRecord).

The limit on what one request may write is Kafka's ``MAX_RECORDS_PER_USER_OP``
(``ControllerConfig.max_records_per_user_op``, 10,000), counted before anything is placed, so that
a request over it costs no more than reading it:

* CreateTopics: the whole request fails, every topic getting POLICY_VIOLATION with
  :data:`EXCESSIVE_BATCH_MESSAGE`, when the topics that pass their checks need more records (one
  per topic, per config and per partition); validate-only requests too;
* CreatePartitions: more topics than the limit fail the request whole the same way; else the
  topic whose new partitions no longer fit, and every later topic adding partitions, get
  UNKNOWN_SERVER_ERROR without a message, and none of their partitions is made;
* DeleteTopics: the topics past the limit get UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final, TypeVar

from kafka_wire import messages
from kafka_wire.broker.controller.configs_image import ConfigResourceType
from kafka_wire.broker.controller.partition_changes import PartitionChanges
from kafka_wire.broker.controller.placement import assign_replicas
from kafka_wire.broker.controller.result import ControllerResult, Decision
from kafka_wire.broker.controller.settings import MAX_PARTITIONS_PER_BATCH
from kafka_wire.broker.error_answers import ERROR_ANSWERS, failure_answer
from kafka_wire.broker.internal_topics import CLUSTER_METADATA_TOPIC, is_internal
from kafka_wire.broker.metadata import random_uuid, topic_name_problem
from kafka_wire.broker.topic_configs import describe_topic_configs
from kafka_wire.broker.topic_synonyms import DEFAULT_CONFIG, STATIC_BROKER_CONFIG, set_by_broker
from kafka_wire.broker.work import Steps, chunks
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ApiKey, ErrorCode
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.messages import (
        CreatePartitionsRequest,
        CreatePartitionsRequestTopic,
        CreatePartitionsResponseTopicResult,
        CreateTopicsRequest,
        CreateTopicsRequestCreatableTopic,
        CreateTopicsResponseCreatableTopicResult,
        DeleteTopicsRequest,
        DeleteTopicsResponseDeletableTopicResult,
    )

EXCESSIVE_BATCH_MESSAGE: Final = "Unable to perform excessively large batch operation."

T = TypeVar("T")


@dataclass(slots=True)
class _NewTopic:
    """A topic that passed the checks made before placement."""

    entry: CreateTopicsRequestCreatableTopic
    result: CreateTopicsResponseCreatableTopicResult
    partitions: int
    replication: int
    configs: dict[str, str]
    #: The manual assignment, partition by partition (None: placed by the controller).
    assignment: list[list[int]] | None

    @property
    def record_count(self) -> int:
        return 1 + len(self.configs) + self.partitions


class TopicRequests(PartitionChanges):
    """Creating and deleting topics, adding partitions."""

    # -- CreateTopics ----------------------------------------------------------------------------

    def create_topics(self, version: int, req: CreateTopicsRequest, now_ms: int) -> Decision:
        duplicates = _duplicates(t.name for t in req.topics)
        topics = [t for t in req.topics if t.name not in duplicates]
        results: list[CreateTopicsResponseCreatableTopicResult] = []
        checked: list[_NewTopic] = []
        if self._requested_partitions(topics) > MAX_PARTITIONS_PER_BATCH:
            results = [
                messages.CreateTopicsResponseCreatableTopicResult(
                    name=t.name,
                    error_code=ErrorCode.POLICY_VIOLATION,
                    error_message="Excessively large number of partitions per request.",
                )
                for t in topics
            ]
        else:
            for entry in topics:
                # A success's message is null, as Kafka's controller sets it (the default is "").
                result = messages.CreateTopicsResponseCreatableTopicResult(
                    name=entry.name, error_message=None, num_partitions=-1, replication_factor=-1
                )
                results.append(result)
                new = self._check_new_topic(entry, result)
                if new is not None:
                    checked.append(new)
        results += [
            messages.CreateTopicsResponseCreatableTopicResult(
                name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name."
            )
            for name in duplicates
        ]
        if sum(new.record_count for new in checked) > self.config.max_records_per_user_op:
            return ERROR_ANSWERS[ApiKey.CREATE_TOPICS](
                req, ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE
            )
        records: list[Message] = []

        def place() -> Steps[None]:
            for new in checked:
                topic_records = yield from self._place(new, version)
                if topic_records is not None and not req.validate_only:
                    records.extend(topic_records)

        response = messages.CreateTopicsResponse(topics=results)
        return ControllerResult(
            records,
            lambda: response,
            lambda code: failure_answer(ApiKey.CREATE_TOPICS, req, code),
            req.timeout_ms,
            steps=place(),
        )

    def _requested_partitions(self, topics: Sequence[CreateTopicsRequestCreatableTopic]) -> int:
        """The partitions a CreateTopics asks for in all (Kafka's ``validateTotalNumberOfPartitions``:
        -1 counts the default, a manual assignment its partitions, a non-positive count nothing)."""
        total = 0
        for t in topics:
            if t.assignments:
                total += len(t.assignments)
            elif t.num_partitions == -1:
                total += self.config.num_partitions
            elif t.num_partitions > 0:
                total += t.num_partitions
        return total

    def _check_new_topic(
        self, entry: CreateTopicsRequestCreatableTopic, result: CreateTopicsResponseCreatableTopicResult
    ) -> _NewTopic | None:
        """Kafka's checks before placement, in its order (``ReplicationControlManager.createTopic``)."""

        def refuse(code: int, message: str) -> _NewTopic | None:
            result.error_code, result.error_message = code, message
            return None

        name = entry.name
        if name == CLUSTER_METADATA_TOPIC:
            return refuse(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        problem = topic_name_problem(name)
        if problem is not None:
            return refuse(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if name in self.image.topics:
            return refuse(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        collision = self._colliding(name)
        if collision is not None:
            return refuse(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic '{name}' collides with existing topic '{collision}'.",
            )
        unset = [cfg.name for cfg in entry.configs if cfg.value is None]
        if unset:
            return refuse(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {unset[0]}")
        configs = {cfg.name: cfg.value for cfg in entry.configs if cfg.value is not None}
        problem = self.configuration.topic_config_problem(configs)
        if problem is not None:
            return refuse(ErrorCode.INVALID_CONFIG, problem)
        assignment = None
        if entry.assignments:
            if entry.replication_factor != -1:
                return refuse(
                    ErrorCode.INVALID_REQUEST,
                    "A manual partition assignment was specified, but replication factor was not set to -1.",
                )
            if entry.num_partitions != -1:
                return refuse(
                    ErrorCode.INVALID_REQUEST,
                    "A manual partition assignment was specified, but numPartitions was not set to -1.",
                )
            by_index = {a.partition_index: list(a.broker_ids) for a in entry.assignments}
            if len(by_index) != len(entry.assignments):
                return refuse(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Found multiple manual partition assignments."
                )
            if sorted(by_index) != list(range(len(by_index))):
                return refuse(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "partitions should be a consecutive 0-based integer sequence",
                )
            assignment = [by_index[i] for i in range(len(by_index))]
            problem = self.assignment_problem(assignment)
            if problem is not None:
                return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
            partitions, replication = len(assignment), len(assignment[0])
        elif entry.replication_factor < -1 or entry.replication_factor == 0:
            return refuse(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        elif entry.num_partitions < -1 or entry.num_partitions == 0:
            return refuse(
                ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            )
        else:
            partitions = self.config.num_partitions if entry.num_partitions == -1 else entry.num_partitions
            replication = (
                self.config.default_replication_factor
                if entry.replication_factor == -1
                else entry.replication_factor
            )
        return _NewTopic(entry, result, partitions, replication, configs, assignment)

    def _colliding(self, name: str) -> str | None:
        """An existing topic whose name equals ``name`` once '.' and '_' are taken as one character
        (their metric names would collide; Kafka refuses such a topic)."""
        if "." not in name and "_" not in name:
            return None
        folded = name.replace(".", "_")
        return next((t for t in self.image.topics if t.replace(".", "_") == folded), None)

    def _place(self, new: _NewTopic, version: int) -> Steps[list[Message] | None]:
        """The new topic's records, its replicas placed, in steps of partitions; None (the
        result says why) when it cannot be placed."""
        result = new.result
        assignment = new.assignment
        if assignment is None:
            active = self.cluster.active_brokers()
            if new.replication > len(active):
                result.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
                result.error_message = (
                    f"Unable to replicate the partition {new.replication} time(s): The target replication "
                    f"factor of {new.replication} cannot be reached because only {len(active)} broker(s) "
                    "are registered."
                )
                return None
            assignment = assign_replicas(active, new.partitions, new.replication, self.rng)
        topic_id = random_uuid(self.rng)
        name = new.entry.name
        records: list[Message] = [messages.TopicRecord(name=name, topic_id=topic_id)]
        records += [
            messages.ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name=name, name=k, value=v)
            for k, v in sorted(new.configs.items())
        ]
        index = 0
        for chunk in chunks(assignment):
            for replicas in chunk:
                isr = [r for r in replicas if self.cluster.acceptable(r)]
                if not isr:
                    result.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
                    result.error_message = (
                        f"Unable to replicate the partition {len(replicas)} time(s): All brokers are "
                        "currently fenced or in controlled shutdown."
                    )
                    return None
                records.append(
                    messages.PartitionRecord(
                        partition_id=index, topic_id=topic_id, replicas=replicas, isr=isr, leader=isr[0],
                        leader_epoch=0, partition_epoch=0,
                    )
                )  # fmt: skip
                index += 1
            yield len(chunk)
        result.topic_id = topic_id
        result.num_partitions, result.replication_factor = len(assignment), len(assignment[0])
        if version >= 5:
            static = self.config.static_topic_properties
            # A config a broker property sets is STATIC_BROKER_CONFIG here, as Kafka's controller
            # lists it, even where DescribeConfigs says DEFAULT_CONFIG (see ``set_by_broker``).
            result.configs = [
                messages.CreateTopicsResponseCreatableTopicConfigs(
                    name=c.name,
                    value=c.value,
                    read_only=c.read_only,
                    config_source=STATIC_BROKER_CONFIG
                    if c.config_source == DEFAULT_CONFIG and set_by_broker(c.name, static)
                    else c.config_source,
                    is_sensitive=c.is_sensitive,
                )
                for c in describe_topic_configs(
                    self.config.topic_defaults,
                    static,
                    new.configs,
                    None,
                    synonyms=False,
                    documentation=False,
                )
            ]
        return records

    # -- DeleteTopics ----------------------------------------------------------------------------

    def delete_topics(self, version: int, req: DeleteTopicsRequest, now_ms: int) -> Decision:
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
                _deleted(n, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
                for n in twice_named
            ),
            *(_deleted(None, i, ErrorCode.INVALID_REQUEST, "Duplicate topic id.") for i in twice_id),
        ]
        records: list[Message] = []
        removed: set[uuid.UUID] = set()
        for name, topic_id in wanted:
            if name is not None and topic_id == ZERO_UUID:
                if name in twice_named:
                    continue
                found: str | None = name
            else:
                if topic_id in twice_id:
                    continue
                found = self.image.topic_name(topic_id)
            if not self.config.delete_topic_enable:  # Kafka: INVALID_REQUEST before v3
                code = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
                results.append(_deleted(name, topic_id, code))
                continue
            topic = self.image.topics.get(found) if found is not None else None
            if topic is None:
                code = ErrorCode.UNKNOWN_TOPIC_ID if found is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                results.append(_deleted(name, topic_id, code))
            elif is_internal(topic.name):  # kafka_wire's: Kafka's controller would delete it
                results.append(
                    _deleted(
                        topic.name,
                        topic.topic_id,
                        ErrorCode.INVALID_TOPIC_EXCEPTION,
                        f"Cannot delete internal topic {topic.name}",
                    )
                )
            elif topic.topic_id in removed:
                continue
            elif len(records) >= self.config.max_records_per_user_op:
                results.append(_deleted(topic.name, topic.topic_id, ErrorCode.UNKNOWN_SERVER_ERROR))
            else:
                results.append(_deleted(topic.name, topic.topic_id, ErrorCode.NONE))
                removed.add(topic.topic_id)
                records.append(messages.RemoveTopicRecord(topic_id=topic.topic_id))
        return ControllerResult(
            records,
            lambda: messages.DeleteTopicsResponse(responses=results),
            lambda code: failure_answer(ApiKey.DELETE_TOPICS, req, code),
            req.timeout_ms,
        )

    # -- CreatePartitions ------------------------------------------------------------------------

    def create_partitions(self, version: int, req: CreatePartitionsRequest, now_ms: int) -> Decision:
        limit = self.config.max_records_per_user_op
        if len(req.topics) > limit:
            return ERROR_ANSWERS[ApiKey.CREATE_PARTITIONS](
                req, ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE
            )
        duplicates = _duplicates(t.name for t in req.topics)
        topics = [t for t in req.topics if t.name not in duplicates]
        results: list[CreatePartitionsResponseTopicResult] = [
            messages.CreatePartitionsResponseTopicResult(
                name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name."
            )
            for name in duplicates
        ]
        if self._added_partitions(topics) > MAX_PARTITIONS_PER_BATCH:
            results += [
                messages.CreatePartitionsResponseTopicResult(
                    name=t.name,
                    error_code=ErrorCode.POLICY_VIOLATION,
                    error_message="Excessively large number of additional partitions per request.",
                )
                for t in topics
            ]
            topics = []
        records: list[Message] = []
        counted = 0
        overflowed = False
        for entry in topics:
            result = messages.CreatePartitionsResponseTopicResult(name=entry.name)
            results.append(result)
            topic = self.image.topics.get(entry.name)
            current = 0 if topic is None else len(topic.partitions)
            if topic is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif is_internal(topic.name):  # kafka_wire's: groups are placed by the partition count
                result.error_code = ErrorCode.INVALID_REQUEST
                result.error_message = (
                    f"The number of partitions of internal topic {topic.name} cannot be changed."
                )
            elif entry.count == current:
                result.error_code = ErrorCode.INVALID_PARTITIONS
                result.error_message = f"Topic already has {current} partition(s)."
            elif entry.count < current:
                result.error_code = ErrorCode.INVALID_PARTITIONS
                result.error_message = (
                    f"The topic {topic.name} currently has {current} partition(s); {entry.count} would not "
                    "be an increase."
                )
            elif entry.assignments and len(entry.assignments) != entry.count - current:
                result.error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT
                result.error_message = (
                    f"Attempted to add {entry.count - current} additional partition(s), but only "
                    f"{len(entry.assignments)} assignment(s) were specified."
                )
            elif overflowed or counted + entry.count - current > limit:
                overflowed = True  # Kafka's record list is full from here on
                result.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
            else:
                counted += entry.count - current
                new = self._new_partitions(entry, current, topic.topic_id, result)
                if new is not None and not req.validate_only:
                    records += new
        return ControllerResult(
            records,
            lambda: messages.CreatePartitionsResponse(results=results),
            lambda code: failure_answer(ApiKey.CREATE_PARTITIONS, req, code),
            req.timeout_ms,
        )

    def _added_partitions(self, topics: Sequence[CreatePartitionsRequestTopic]) -> int:
        """The partitions a CreatePartitions adds in all to existing topics (Kafka's
        ``validateTotalNumberOfPartitions``)."""
        total = 0
        for t in topics:
            topic = self.image.topics.get(t.name)
            if topic is not None and t.count > len(topic.partitions):
                total += t.count - len(topic.partitions)
        return total

    def _new_partitions(
        self,
        entry: CreatePartitionsRequestTopic,
        current: int,
        topic_id: uuid.UUID,
        result: CreatePartitionsResponseTopicResult,
    ) -> list[Message] | None:
        """The PartitionRecords of a topic's new partitions; None (the result says why) when they
        cannot be placed."""
        count = entry.count
        first = self.image.partition(entry.name, 0)
        replication = len(first.replicas) if first is not None else 1
        if entry.assignments:
            assignment = [list(a.broker_ids) for a in entry.assignments]
            problem = self.assignment_problem(assignment)
            if problem is not None:
                result.error_code, result.error_message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
                return None
        else:
            active = self.cluster.active_brokers()
            if replication > len(active):
                result.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
                result.error_message = (
                    f"Unable to replicate the partition {replication} time(s): The target replication factor "
                    f"of {replication} cannot be reached because only {len(active)} broker(s) are registered."
                )
                return None
            assignment = assign_replicas(
                active, count - current, replication, self.rng, first_partition=current
            )
        new: list[Message] = []
        for offset, replicas in enumerate(assignment):
            isr = [r for r in replicas if self.cluster.acceptable(r)]
            if not isr:
                result.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
                result.error_message = (
                    "All brokers specified in the partition assignment are currently fenced."
                )
                return None
            new.append(
                messages.PartitionRecord(
                    partition_id=current + offset, topic_id=topic_id, replicas=replicas, isr=isr,
                    leader=isr[0], leader_epoch=0, partition_epoch=0,
                )
            )  # fmt: skip
        return new


def _duplicates(names: Iterable[T]) -> list[T]:
    """The names (or ids) given more than once, in the order of their first mention (Kafka's
    controller answers each once with INVALID_REQUEST and handles the rest of the request)."""
    seen: dict[T, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
    return [name for name, count in seen.items() if count > 1]


def _deleted(
    name: str | None, topic_id: uuid.UUID, code: ErrorCode, message: str | None = None
) -> DeleteTopicsResponseDeletableTopicResult:
    """One topic's DeleteTopics result; an error without a message of its own gets its code's
    description (Kafka's ``ApiError`` of the code)."""
    if message is None and code != ErrorCode.NONE:
        message = code.description
    return messages.DeleteTopicsResponseDeletableTopicResult(
        name=name, topic_id=topic_id, error_code=code, error_message=message
    )
