"""The controller's settings (``ControllerConfig``, by Kafka's property names) and the constants
it shares with its API modules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Final

from kafka_wire.broker.config import DEFAULT_MAX_RECORDS_PER_USER_OP, BrokerConfig, BrokerConfigError
from kafka_wire.broker.controller.group_configs import GroupConfigBounds
from kafka_wire.broker.log.config import LogConfig
from kafka_wire.quick_dataclass import dataclass

#: The ``metadata.version`` feature and the level this controller finalizes: 3.9-IV0.
METADATA_VERSION_FEATURE: Final = "metadata.version"
METADATA_VERSION_LEVEL: Final = 21
#: The ``transaction.version`` feature (KIP-890): 2 bumps the producer epoch at every transaction end.
TRANSACTION_VERSION_FEATURE: Final = "transaction.version"
#: ``ProducerIdManager``'s block size (``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``).
PRODUCER_ID_BLOCK_SIZE: Final = 1000
#: Most partitions one CreateTopics may create, or one CreatePartitions add, in all (Kafka's
#: ``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``): past it the request is POLICY_VIOLATION.
MAX_PARTITIONS_PER_BATCH: Final = 10_000
#: Most preferred elections one rebalance run proposes (Kafka's ``maxElectionsPerImbalance``).
MAX_ELECTIONS_PER_IMBALANCE: Final = 1000
#: How long a held controller answer waits for its records to commit when the request names no
#: timeout (Kafka's ``request.timeout.ms`` default).
DEFAULT_COMMIT_TIMEOUT_MS: Final = 30_000

#: IncrementalAlterConfigs operations (``AlterConfigOp.OpType``).
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
#: ElectLeaders ``ElectionType``.
ELECTION_PREFERRED, ELECTION_UNCLEAN = 0, 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerConfig:
    """The controller's settings, by Kafka's property names."""

    node_id: int
    cluster_id: str
    #: ``broker.session.timeout.ms``.
    session_timeout_ms: int = 9_000
    #: ``num.partitions``.
    num_partitions: int = 1
    #: ``default.replication.factor``.
    default_replication_factor: int = 1
    #: ``min.insync.replicas`` (cluster default; a topic config overrides it).
    min_insync_replicas: int = 1
    #: ``unclean.leader.election.enable`` (cluster default; a topic config overrides it).
    unclean_leader_election_enable: bool = False
    #: ``auto.leader.rebalance.enable``.
    auto_leader_rebalance_enable: bool = True
    #: ``leader.imbalance.check.interval.seconds`` (300), in ms.
    leader_imbalance_check_interval_ms: int = 300_000
    #: ``metadata.log.max.record.bytes.between.snapshots`` (20 MiB).
    snapshot_max_bytes: int = 20 * 1024 * 1024
    #: ``eligible.leader.replicas.enable``: track eligible leader replicas (KIP-966). Kafka 3.9's
    #: default is off: the last member of an ISR stays in it when its broker goes down, and leads
    #: again when it comes back.
    elr_enabled: bool = False
    #: ``delete.topic.enable``.
    delete_topic_enable: bool = True
    #: Kafka's ``MAX_RECORDS_PER_USER_OP`` (``kafka.wire.max.records.per.user.op``): the most
    #: metadata records one admin request may write.
    max_records_per_user_op: int = DEFAULT_MAX_RECORDS_PER_USER_OP
    #: The broker properties that set topic defaults, as given (``log.retention.hours`` …), and
    #: the defaults they make: a new topic's effective configs (CreateTopics v5+) are described
    #: with them, and its overrides are checked on them.
    static_topic_properties: Mapping[str, str] = field(default_factory=dict)
    topic_defaults: LogConfig = field(default_factory=LogConfig)
    #: The ``transaction.version`` level a new cluster finalizes
    #: (``kafka.wire.bootstrap.transaction.version``; 0 finalizes none).
    bootstrap_transaction_version: int = 2
    #: ``delegation.token.secret.key`` (empty: tokens disabled), ``delegation.token.max.lifetime.ms``,
    #: ``delegation.token.expiry.time.ms`` and ``delegation.token.expiry.check.interval.ms``.
    delegation_token_secret_key: str = field(default="", repr=False)
    delegation_token_max_lifetime_ms: int = 7 * 24 * 3_600_000
    delegation_token_expiry_time_ms: int = 24 * 3_600_000
    delegation_token_expiry_check_interval_ms: int = 3_600_000
    #: The ``group.*`` settings group configs are checked against (IncrementalAlterConfigs and
    #: AlterConfigs on group resources).
    group_config_bounds: GroupConfigBounds = field(default_factory=GroupConfigBounds)

    def __post_init__(self) -> None:
        for name in ("session_timeout_ms", "leader_imbalance_check_interval_ms", "snapshot_max_bytes"):
            if getattr(self, name) <= 0:
                raise BrokerConfigError(_PROPERTY_OF[name], "must be positive")
        for name in ("num_partitions", "default_replication_factor", "min_insync_replicas"):
            if getattr(self, name) < 1:
                raise BrokerConfigError(_PROPERTY_OF[name], "must be at least 1")

    @classmethod
    def of(cls, config: BrokerConfig, cluster_id: str) -> ControllerConfig:
        """The settings of a node's broker configuration (read from Kafka's properties by
        :mod:`kafka_wire.broker.server_properties`)."""
        return cls(
            node_id=config.node_id,
            cluster_id=cluster_id,
            session_timeout_ms=config.broker_session_timeout_ms,
            num_partitions=config.num_partitions,
            default_replication_factor=config.default_replication_factor,
            min_insync_replicas=config.min_insync_replicas,
            unclean_leader_election_enable=config.unclean_leader_election_enable,
            auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
            leader_imbalance_check_interval_ms=config.leader_imbalance_check_interval_ms,
            snapshot_max_bytes=config.metadata_snapshot_bytes,
            delete_topic_enable=config.delete_topic_enable,
            max_records_per_user_op=config.max_records_per_user_op,
            static_topic_properties=dict(config.topic_default_properties),
            topic_defaults=LogConfig.from_properties(config.topic_defaults),
            bootstrap_transaction_version=config.bootstrap_transaction_version,
            delegation_token_secret_key=config.delegation_token_secret_key,
            delegation_token_max_lifetime_ms=config.delegation_token_max_lifetime_ms,
            delegation_token_expiry_time_ms=config.delegation_token_expiry_time_ms,
            delegation_token_expiry_check_interval_ms=config.delegation_token_expiry_check_interval_ms,
            group_config_bounds=GroupConfigBounds.of(config),
        )


#: Each setting's Kafka property.
_PROPERTY_OF: Final = {
    "session_timeout_ms": "broker.session.timeout.ms",
    "num_partitions": "num.partitions",
    "default_replication_factor": "default.replication.factor",
    "min_insync_replicas": "min.insync.replicas",
    "unclean_leader_election_enable": "unclean.leader.election.enable",
    "auto_leader_rebalance_enable": "auto.leader.rebalance.enable",
    "leader_imbalance_check_interval_ms": "leader.imbalance.check.interval.seconds",
    "snapshot_max_bytes": "metadata.log.max.record.bytes.between.snapshots",
}
