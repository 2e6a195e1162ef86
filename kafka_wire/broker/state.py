"""The broker's state shared by the API handlers: topics, partitions and logs.

Methods that change what is stored take the call's :class:`~kafka_wire.broker.effects.EffectSink`
and emit their storage effects to it; logs queue theirs inside (appends coalesce there) and
:meth:`BrokerState.collect_effects` moves those of the logs touched in the call to the sink.
``Broker`` hands the sink's effects to its driver at the end of each call, in order.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kafka_wire.broker.cluster_view import ClusterView
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.effects import Delete, EffectSink, MakeDir
from kafka_wire.broker.fetch_sessions import FetchSessionCache
from kafka_wire.broker.internal_topics import TopicCreation, internal_topic_specs
from kafka_wire.broker.log.config import ConfigError, LogConfig
from kafka_wire.broker.log.log import PartitionLog
from kafka_wire.broker.metadata import (
    OFFSETS_TOPIC,
    ClusterMetadata,
    TopicInfo,
    partition_metadata_effects,
    random_uuid,
    topic_name_problem,
)
from kafka_wire.broker.partition.replica import PartitionReplica
from kafka_wire.broker.producer_ids import ProducerIdBlocks
from kafka_wire.broker.storage import StorageReader
from kafka_wire.broker.work import DEFAULT_MAX_WORK_BYTES_PER_CALL, WorkBudget
from kafka_wire.codec.structs import Message
from kafka_wire.logformat.names import partition_dir
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.events import Request
from kafka_wire.protocol.server import Splice


class Waiting(Protocol):
    """A request held until it can be answered (Fetch waiting for data; a request running in
    slices, ``kafka_wire.broker.work.Job``, whose deadline is the time of its last slice)."""

    deadline_ms: int

    def poll(self, now_ms: int) -> Message | Spliced | None:
        """The response once it is ready (always at or after the deadline), else None."""
        ...


@dataclass(frozen=True, slots=True)
class Spliced:
    """A response whose encoded frame has spans to replace by file regions (zero-copy fetch)."""

    body: Message
    splices: tuple[Splice, ...]


@dataclass(frozen=True, slots=True)
class Context:
    """What a handler knows about the request it answers."""

    state: BrokerState
    #: Where the handler's storage effects go.
    effects: EffectSink
    conn_id: int
    request: Request
    now_ms: int
    principal: str = ""
    client_host: str = ""
    #: The listener the request came in on (empty: the broker's only listener).
    listener: str = ""

    @property
    def api_version(self) -> int:
        return self.request.api_version


@dataclass(frozen=True, slots=True)
class TopicError:
    error_code: int
    message: str


@dataclass
class BrokerState:
    config: BrokerConfig
    storage: StorageReader
    rng: random.Random
    metadata: ClusterMetadata
    defaults: LogConfig
    fetch_sessions: FetchSessionCache
    partitions: dict[tuple[str, int], PartitionReplica] = field(default_factory=dict)
    #: Topics deleted since the broker last told the group coordinator.
    deleted_topics: list[str] = field(default_factory=list)
    #: Logs touched since the last collection, in first-touch order.
    touched: dict[tuple[str, int], None] = field(default_factory=dict)
    #: What the current engine call may still do (see ``kafka_wire.broker.work``).
    budget: WorkBudget = field(default_factory=lambda: WorkBudget(DEFAULT_MAX_WORK_BYTES_PER_CALL))
    #: Topics gone from the metadata whose partition directories are still being deleted: their
    #: names cannot be created again until then.
    deleting: set[str] = field(default_factory=set)
    #: ``directory.id`` of the data directory's ``meta.properties`` (None: an older file without it).
    directory_id: uuid.UUID | None = None
    #: Producer id blocks from the controller (``kafka_wire.broker.producer_ids``); None on a
    #: single node, which counts its ids in the metadata file.
    producer_ids: ProducerIdBlocks | None = None
    #: Topics asked of the controller (a cluster only: auto-created and internal topics).
    topic_creation: TopicCreation = field(default_factory=TopicCreation)
    #: The replicated cluster as this node sees it (``kafka_wire.broker.cluster_view``); None: a
    #: single node, which answers as the whole cluster.
    cluster: ClusterView | None = None

    def begin_call(self) -> None:
        """A new engine call: a full work budget."""
        self.budget.left = self.config.max_work_bytes_per_call

    # -- topic configuration --------------------------------------------------------------------

    def log_config(self, topic: TopicInfo) -> LogConfig:
        return LogConfig.from_properties(topic.configs, base=self.defaults)

    def check_configs(self, configs: Mapping[str, str]) -> TopicError | None:
        try:
            LogConfig.from_properties(configs, base=self.defaults)
        except ConfigError as exc:
            return TopicError(ErrorCode.INVALID_CONFIG, str(exc))
        return None

    # -- topics ---------------------------------------------------------------------------------

    def check_new_topic(self, name: str, partitions: int, replication_factor: int) -> TopicError | None:
        problem = topic_name_problem(name)
        if problem is not None:
            return TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if name in self.metadata.topics:
            return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if name in self.deleting:  # Kafka's answer while a deletion is in progress (ZooKeeper mode)
            return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion.")
        if partitions < 1:
            return TopicError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if replication_factor < 1:
            return TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
            )
        if replication_factor > 1:
            return TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): The target replication factor "
                f"of {replication_factor} cannot be reached because only 1 broker(s) are registered.",
            )
        return None

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str],
        now_ms: int,
        effects: EffectSink,
    ) -> TopicInfo:
        """Register a topic and open all its partitions at once (auto-creation, internal topics)."""
        topic = self.register_topic(name, partitions, configs)
        config = self.log_config(topic)
        for index in range(partitions):
            self.open_partition(topic, index, now_ms, effects, config)
        self.persist_metadata(effects)
        return topic

    def register_topic(self, name: str, partitions: int, configs: Mapping[str, str]) -> TopicInfo:
        """Add a topic to the metadata; its partitions are opened by :meth:`open_partition`
        (until then Metadata reports them LEADER_NOT_AVAILABLE)."""
        topic = TopicInfo(
            name=name, topic_id=random_uuid(self.rng), partitions=partitions, configs=dict(configs)
        )
        self.metadata.topics[name] = topic
        return topic

    def persist_metadata(self, effects: EffectSink) -> None:
        effects.extend(self.metadata.persist())

    def remove_topic(self, topic: TopicInfo) -> list[tuple[int, PartitionReplica | None]]:
        """Take a topic out of the metadata and its partitions out of service; returns them for
        :meth:`delete_partition`. The name stays in :attr:`deleting` until the caller is done."""
        removed = []
        for index in range(topic.partitions):
            removed.append((index, self.partitions.pop((topic.name, index), None)))
            self.touched.pop((topic.name, index), None)
        del self.metadata.topics[topic.name]
        self.deleting.add(topic.name)
        self.deleted_topics.append(topic.name)
        return removed

    def delete_partition(
        self, name: str, index: int, replica: PartitionReplica | None, effects: EffectSink
    ) -> None:
        """Effects that delete one removed partition's directory (after its pending writes)."""
        if replica is not None:
            effects.extend(replica.log.take_effects())
        effects.emit(Delete(partition_dir(name, index)))

    def update_topic_configs(self, topic: TopicInfo, configs: Mapping[str, str], effects: EffectSink) -> None:
        topic.configs = dict(configs)
        config = self.log_config(topic)
        for index in range(topic.partitions):
            replica = self.partitions.get((topic.name, index))
            if replica is not None:
                replica.log.update_config(config)
        self.persist_metadata(effects)

    def open_existing(self, now_ms: int, effects: EffectSink) -> None:
        """Open (and recover) the log of every partition the metadata names."""
        for topic in self.metadata.topics.values():
            config = self.log_config(topic)
            for index in range(topic.partitions):
                self.open_partition(topic, index, now_ms, effects, config)

    def open_partition(
        self, topic: TopicInfo, index: int, now_ms: int, effects: EffectSink, config: LogConfig | None = None
    ) -> PartitionReplica:
        """Open (creating its directory if need be) one partition of ``topic``, with the topic's
        ``config`` when the caller has it at hand."""
        directory = partition_dir(topic.name, index)
        if self.storage.size(f"{directory}/partition.metadata") is None:
            effects.emit(MakeDir(directory))
            effects.extend(partition_metadata_effects(topic, index))
        log = PartitionLog.open(
            directory, config or self.log_config(topic), self.storage, now_ms, progress=effects.progress
        )
        replica = PartitionReplica(
            topic=topic.name, partition=index, topic_id=topic.topic_id, log=log, node_id=self.config.node_id
        )
        replica.open()
        self.partitions[topic.name, index] = replica
        self.touch(replica)
        return replica

    def touch(self, replica: PartitionReplica) -> None:
        self.touched[replica.topic, replica.partition] = None

    def collect_effects(self, effects: EffectSink) -> None:
        """Move the storage effects the logs touched since the last call queued to ``effects``."""
        for key in self.touched:
            replica = self.partitions.get(key)
            if replica is not None:
                effects.extend(replica.log.take_effects())
        self.touched.clear()

    # -- lookups --------------------------------------------------------------------------------

    def topic_named(self, name: str) -> TopicInfo | None:
        return self.metadata.topics.get(name)

    def topic_with_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self.metadata.topic_by_id(topic_id)

    def replica(self, topic: str, partition: int) -> PartitionReplica | None:
        return self.partitions.get((topic, partition))

    def internal_topic(self, name: str, now_ms: int, effects: EffectSink) -> TopicInfo | None:
        """An internal topic, created the broker's way when it is missing (None: this broker does
        not make that one, see :func:`~kafka_wire.broker.internal_topics.internal_topic_specs`).
        In a cluster a missing one is asked of the controller, and None returned until it exists."""
        topic = self.metadata.topics.get(name)
        if topic is None and self.cluster is not None:
            self.topic_creation.request(self.cluster, self.config, name, now_ms)
            return None
        if topic is None:
            spec = internal_topic_specs(self.config).get(name)
            if spec is None:
                return None
            topic = self.create_topic(name, spec.partitions, spec.configs, now_ms, effects)
        return topic

    def offsets_topic(self, now_ms: int, effects: EffectSink) -> TopicInfo:
        """``__consumer_offsets``, created with ``offsets.topic.*`` when it is missing."""
        topic = self.internal_topic(OFFSETS_TOPIC, now_ms, effects)
        assert topic is not None, "the broker always knows how to make __consumer_offsets"
        return topic
