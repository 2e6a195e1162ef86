"""The controller's settings (``ControllerConfig``, by Kafka's property names) and the constants
it shares with its API modules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kafka_wire.broker.config import BrokerConfigError

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
    #: ``eligible.leader.replicas.enable``: track eligible leader replicas (KIP-966). Kafka 3.9's
    #: default is off: the last member of an ISR stays in it when its broker goes down, and leads
    #: again when it comes back.
    elr_enabled: bool = False

    def __post_init__(self) -> None:
        for name in ("session_timeout_ms", "leader_imbalance_check_interval_ms", "snapshot_max_bytes"):
            if getattr(self, name) <= 0:
                raise BrokerConfigError(_PROPERTY_OF[name], "must be positive")
        for name in ("num_partitions", "default_replication_factor", "min_insync_replicas"):
            if getattr(self, name) < 1:
                raise BrokerConfigError(_PROPERTY_OF[name], "must be at least 1")

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, str], *, node_id: int, cluster_id: str
    ) -> ControllerConfig:
        """The settings named by Kafka ``properties`` (others are ignored); an invalid value raises
        :class:`BrokerConfigError` naming its property."""
        values: dict[str, Any] = {}
        for name, key in _PROPERTY_OF.items():
            raw = properties.get(key)
            if raw is None:
                continue
            raw = raw.strip()
            if name in _BOOLEANS:
                if raw.lower() not in ("true", "false"):
                    raise BrokerConfigError(key, f"{raw!r} is not a boolean")
                values[name] = raw.lower() == "true"
                continue
            try:
                number = int(raw)
            except ValueError:
                raise BrokerConfigError(key, f"{raw!r} is not an integer") from None
            values[name] = number * 1000 if key == "leader.imbalance.check.interval.seconds" else number
        return cls(node_id=node_id, cluster_id=cluster_id, **values)


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
_BOOLEANS: Final = frozenset({"unclean_leader_election_enable", "auto_leader_rebalance_enable"})
