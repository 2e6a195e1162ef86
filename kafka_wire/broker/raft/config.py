"""The metadata log's name and settings, and :class:`RaftConfig` (one replica's settings)."""

from __future__ import annotations

import uuid
from typing import Final

from kafka_wire.broker.cluster_settings import Voter
from kafka_wire.broker.log.config import LONG_MAX, LogConfig
from kafka_wire.quick_dataclass import dataclass

METADATA_TOPIC: Final = "__cluster_metadata"
METADATA_TOPIC_ID: Final = uuid.UUID("00000000-0000-0000-0000-000000000001")
METADATA_PARTITION: Final = 0
METADATA_DIRECTORY: Final = f"{METADATA_TOPIC}-{METADATA_PARTITION}"

#: The largest batch the metadata log takes (Kafka's KRaft batches are at most 8 MiB).
DEFAULT_MAX_BATCH_BYTES: Final = 8 * 1024 * 1024

METADATA_LOG_CONFIG: Final = LogConfig(
    flush_messages=1,
    retention_ms=-1,
    retention_bytes=-1,
    max_message_bytes=DEFAULT_MAX_BATCH_BYTES + 1024,
    message_timestamp_after_max_ms=LONG_MAX,
    segment_bytes=8 * 1024 * 1024,
)
"""The metadata log: every append fsynced, nothing deleted but below a snapshot."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RaftConfig:
    """One replica's settings (Kafka's ``controller.quorum.*`` names in the comments)."""

    node_id: int
    #: ``controller.quorum.voters``.
    voters: tuple[Voter, ...]
    #: ``cluster.id``; requests naming another cluster get INCONSISTENT_CLUSTER_ID. None: not checked.
    cluster_id: str | None = None
    #: The controller listener requests go out on (``controller.listener.names``, first).
    listener: str = "CONTROLLER"
    #: Node ids an observer asks for the leader (``controller.quorum.bootstrap.servers``); () = the voters.
    bootstrap_ids: tuple[int, ...] = ()
    #: ``controller.quorum.election.timeout.ms``; each wait adds a random jitter up to as much again.
    election_timeout_ms: int = 1000
    #: ``controller.quorum.election.backoff.max.ms``.
    election_backoff_max_ms: int = 1000
    #: ``controller.quorum.fetch.timeout.ms``.
    fetch_timeout_ms: int = 2000
    #: ``controller.quorum.request.timeout.ms``.
    request_timeout_ms: int = 2000
    #: ``controller.quorum.retry.backoff.ms``.
    retry_backoff_ms: int = 20
    #: How long a follower's Fetch may wait at the leader for data (Kafka's KRaft uses 500).
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = DEFAULT_MAX_BATCH_BYTES
    directory: str = METADATA_DIRECTORY
    log_config: LogConfig = METADATA_LOG_CONFIG

    def __post_init__(self) -> None:
        if not self.voters:
            raise ValueError("a KRaft quorum needs at least one voter")
        for name in ("election_timeout_ms", "fetch_timeout_ms", "request_timeout_ms", "fetch_max_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(sorted(v.node_id for v in self.voters))
