"""What the client's calls share about a cluster, without I/O: the versions it speaks, the errors
a metadata refresh may cure, bootstrap addresses and the metadata it keeps.

The connections, the clock and the retry waits are :class:`kafka_wire.adapters.cluster.Cluster`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.client.types import TopicPartition
from kafka_wire.messages import ErrorCode
from kafka_wire.protocol.sasl.base import SaslClientMechanism

# Highest versions this client speaks: the last ones that name topics (later ones use topic ids).
FETCH_VERSION: Final = 12
LIST_OFFSETS_VERSION: Final = 7
METADATA_VERSION: Final = 12
PRODUCE_VERSION: Final = 9

DEFAULT_TIMEOUT_MS: Final = 60_000
"""How long one call may keep retrying without progress (Spark's Kafka source polls for up to 2 minutes)."""
RETRY_BACKOFF_MS: Final = 100
"""Wait before asking for metadata again (Kafka's ``retry.backoff.ms``)."""
LEADERSHIP_ERRORS: Final = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_ENOUGH_REPLICAS,
    }
)
"""Errors that a metadata refresh and a retry may cure."""

Address = tuple[str, int]
SaslFactory = Callable[[], SaslClientMechanism | None]


def parse_bootstrap(servers: str) -> list[Address]:
    """``host1:9092,host2:9093`` -> ``[("host1", 9092), ("host2", 9093)]``."""
    out = []
    for item in servers.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bad bootstrap server {item!r} (expected host:port)")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("kafka.bootstrap.servers is empty")
    return out


@dataclass
class ClusterMetadata:
    """What the last Metadata response said."""

    brokers: dict[int, Address] = field(default_factory=dict)
    leaders: dict[TopicPartition, int] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)


class NoLeader(Exception):
    """No leader is known for a partition yet (callers wait with :meth:`kafka_wire.adapters.cluster.Cluster.retry_wait`)."""
