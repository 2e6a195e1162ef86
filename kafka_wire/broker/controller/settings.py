"""The controller's settings (``ControllerConfig``, by Kafka's property names) and the constants
it shares with its API modules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: The ``metadata.version`` feature and the level this controller finalizes: 3.9-IV0.
METADATA_VERSION_FEATURE: Final = "metadata.version"
METADATA_VERSION_LEVEL: Final = 21
#: ``ProducerIdManager``'s block size (``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``).
PRODUCER_ID_BLOCK_SIZE: Final = 1000
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
    #: Track eligible leader replicas (KIP-966).
    elr_enabled: bool = True

    def __post_init__(self) -> None:
        if self.session_timeout_ms <= 0 or self.leader_imbalance_check_interval_ms <= 0:
            raise ValueError("controller timeouts must be positive")
        if self.default_replication_factor < 1 or self.num_partitions < 1 or self.min_insync_replicas < 1:
            raise ValueError(
                "num.partitions, default.replication.factor and min.insync.replicas must be >= 1"
            )
