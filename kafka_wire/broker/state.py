"""The broker's state shared by the API handlers: topics, partitions and logs.

Methods that change what is stored take the call's :class:`~kafka_wire.broker.effects.EffectSink`
and emit their storage effects to it; logs queue theirs inside (appends coalesce there) and
:meth:`BrokerState.collect_effects` moves those of the logs touched in the call to the sink.
``Broker`` hands the sink's effects to its driver at the end of each call, in order.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Final, Protocol

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.clean_shutdown import CleanShutdown
from kafka_wire.broker.cluster_view import ClusterView
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.effects import Delete, EffectSink, MakeDir
from kafka_wire.broker.fetch_sessions import FetchSessionCache
from kafka_wire.broker.internal_topics import TopicCreation
from kafka_wire.broker.log.config import LogConfig
from kafka_wire.broker.log.loader import RecoveryStart
from kafka_wire.broker.log.log import PartitionLog
from kafka_wire.broker.metadata import (
    ClusterMetadata,
    TopicInfo,
    partition_metadata_effects,
)
from kafka_wire.broker.producer_ids import ProducerIdBlocks
from kafka_wire.broker.quotas.manager import QuotaManager
from kafka_wire.broker.storage import StorageReader
from kafka_wire.broker.txn.verifier import TxnVerifier
from kafka_wire.broker.work import DEFAULT_MAX_WORK_BYTES_PER_CALL, WorkBudget
from kafka_wire.codec.structs import Message
from kafka_wire.logformat.names import partition_dir
from kafka_wire.protocol.events import Request
from kafka_wire.protocol.server import Splice
from kafka_wire.quick_dataclass import dataclass

#: Config resource types (``ConfigRecord.resource_type``) the broker follows.
TOPIC_RESOURCE: Final = 2
GROUP_RESOURCE: Final = 32

if TYPE_CHECKING:  # replicas load with the first partition opened (open_partition)
    from kafka_wire.broker.partition.replica import PartitionReplica
    from kafka_wire.broker.security.authorizer import Authorizer
    from kafka_wire.broker.share.manager import ShareManager


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
    #: A request of this node's own parts to itself (the coordinators' loopback): the broker's
    #: own, which ACLs do not restrict (Kafka's inter-broker principal is a super user).
    internal: bool = False
    #: The connection authenticated with a delegation token (Kafka's ``KafkaPrincipal``
    #: ``tokenAuthenticated``): it may not ask for tokens.
    token_authenticated: bool = False

    @property
    def api_version(self) -> int:
        return self.request.api_version


@dataclass(slots=True)
class _LogConfigMemo:
    """Topic configurations parsed on ``base`` (see ``BrokerState.log_config``)."""

    base: LogConfig | None = None
    parsed: dict[tuple[tuple[str, str], ...], LogConfig] = field(default_factory=dict)


@dataclass
class BrokerState:
    config: BrokerConfig
    storage: StorageReader
    rng: random.Random
    metadata: ClusterMetadata
    defaults: LogConfig
    fetch_sessions: FetchSessionCache
    #: The cluster as this node sees it (``kafka_wire.broker.cluster_view``): a replicated one, or
    #: the one-voter cluster of a single node.
    cluster: ClusterView
    partitions: dict[tuple[str, int], PartitionReplica] = field(default_factory=dict)
    #: Topics deleted since the broker last told the group coordinator.
    deleted_topics: list[str] = field(default_factory=list)
    #: Transactions whose marker a ``__consumer_offsets`` partition took since the broker last
    #: told the group coordinator: (partition, producer id, commit).
    txn_offsets_ended: list[tuple[int, int, bool]] = field(default_factory=list)
    #: Logs touched since the last collection, in first-touch order.
    touched: dict[tuple[str, int], None] = field(default_factory=dict)
    #: What the current engine call may still do (see ``kafka_wire.broker.work``).
    budget: WorkBudget = field(default_factory=lambda: WorkBudget(DEFAULT_MAX_WORK_BYTES_PER_CALL))
    #: Whether work done in slices (jobs, the partitions the replica manager opens) may take a
    #: step now: not while the writes of earlier slices are in flight
    #: (``kafka_wire.broker.storage_pipeline.JOB_BATCHES_IN_FLIGHT``).
    may_slice: Callable[[], bool] = lambda: True
    #: ``directory.id`` of the data directory's ``meta.properties`` (None: an older file without it).
    directory_id: uuid.UUID | None = None
    #: What the data directory's clean-shutdown marker said at start, and the partitions opened
    #: since (``kafka_wire.broker.clean_shutdown``).
    clean_shutdown: CleanShutdown = field(default_factory=CleanShutdown)
    #: Producer id blocks from the controller (``kafka_wire.broker.producer_ids``); None on a
    #: node without the broker role.
    producer_ids: ProducerIdBlocks | None = None
    #: Checks of transactional batches with their coordinator (``kafka_wire.broker.txn.verifier``),
    #: set once the broker starts.
    txn_verifier: TxnVerifier | None = None
    #: Topics asked of the controller (auto-created and internal topics).
    topic_creation: TopicCreation = field(default_factory=TopicCreation)
    #: The records a new metadata log starts with: an old single node's topics, imported
    #: (``kafka_wire.broker.legacy_import``).
    bootstrap_records: list[Message] = field(default_factory=list)
    #: The simulator's BUGGIFY points and planted bugs (``buggify.OFF`` outside it), handed to
    #: every part built from this state.
    hooks: Hooks = OFF
    #: The ACL authorizer (``kafka_wire.broker.security``) when ``authorizer.class.name`` names
    #: one; None: every request is allowed.
    authorizer: Authorizer | None = None
    #: Client quotas and the rates measured against them (``kafka_wire.broker.quotas``).
    quotas: QuotaManager = field(default_factory=QuotaManager)
    #: KIP-932 share sessions and share-partitions (``kafka_wire.broker.share``), set once the
    #: broker starts.
    share: ShareManager | None = None
    #: Group config overrides from the metadata (config resource type 32: KIP-848 / KIP-932
    #: settings such as ``share.auto.offset.reset``), by group id.
    group_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Parsed topic configurations by their overrides (``log_config``).
    _log_configs: _LogConfigMemo = field(
        default_factory=_LogConfigMemo, init=False, repr=False, compare=False
    )

    def begin_call(self) -> None:
        """A new engine call: a full work budget."""
        self.budget.left = self.config.max_work_bytes_per_call

    # -- topic configuration --------------------------------------------------------------------

    def log_config(self, topic: TopicInfo) -> LogConfig:
        """The topic's parsed configuration: its overrides on the broker's defaults. Parsed once
        per distinct set of overrides (the coordinators ask for it on every write they append
        and every outcome they check), until the defaults change."""
        key = tuple(topic.configs.items())
        memo = self._log_configs
        if memo.base is not self.defaults:
            memo.base = self.defaults
            memo.parsed.clear()
        config = memo.parsed.get(key)
        if config is None:
            config = memo.parsed[key] = LogConfig.from_properties(topic.configs, base=self.defaults)
        return config

    # -- topics ---------------------------------------------------------------------------------

    def delete_partition(
        self, name: str, index: int, replica: PartitionReplica | None, effects: EffectSink
    ) -> None:
        """Effects that delete one removed partition's directory (after its pending writes)."""
        if replica is not None:
            effects.extend(replica.log.take_effects())
        effects.emit(Delete(partition_dir(name, index)))

    def configs_changed(self, resource_type: int, name: str, configs: Mapping[str, str]) -> None:
        """A config resource's overrides changed in the metadata: a topic's logs, a group's
        settings (``group_configs``) follow."""
        if resource_type == TOPIC_RESOURCE and (topic := self.topic_named(name)) is not None:
            self.update_topic_configs(topic, configs)
        elif resource_type == GROUP_RESOURCE:
            if configs:
                self.group_configs[name] = dict(configs)
            else:
                self.group_configs.pop(name, None)

    def update_topic_configs(self, topic: TopicInfo, configs: Mapping[str, str]) -> None:
        """A topic's overrides changed: its open logs run with the new config."""
        topic.configs = dict(configs)
        config = self.log_config(topic)
        for index in range(topic.partitions):
            replica = self.partitions.get((topic.name, index))
            if replica is not None:
                replica.log.update_config(config)

    def open_partition(
        self,
        topic: TopicInfo,
        index: int,
        now_ms: int,
        effects: EffectSink,
        config: LogConfig | None = None,
        *,
        start: RecoveryStart | None = None,
    ) -> PartitionReplica:
        """Open (creating its directory if need be) one partition of ``topic``, with the topic's
        ``config`` when the caller has it at hand, recovering its log as ``start`` says."""
        directory = partition_dir(topic.name, index)
        if self.storage.size(f"{directory}/partition.metadata") is None:
            effects.emit(MakeDir(directory))
            effects.extend(partition_metadata_effects(topic, index))
        log = PartitionLog.open(
            directory,
            config or self.log_config(topic),
            self.storage,
            now_ms,
            progress=effects.progress,
            start=start,
        )
        from kafka_wire.broker.partition.replica import PartitionReplica

        replica = PartitionReplica(
            topic=topic.name,
            partition=index,
            topic_id=topic.topic_id,
            log=log,
            node_id=self.config.node_id,
            hooks=self.hooks,
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

    def leader_epoch_of(self, topic_id: uuid.UUID, partition: int) -> int | None:
        """The leader epoch of a partition this node leads (None: it does not lead it)."""
        topic = self.metadata.topic_by_id(topic_id)
        replica = None if topic is None else self.partitions.get((topic.name, partition))
        return replica.leader_epoch if replica is not None and replica.is_leader else None
