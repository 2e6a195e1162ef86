"""What the client's calls share about a cluster, without I/O: the versions it speaks, the errors
a metadata refresh may cure, bootstrap addresses and the metadata it keeps.

The connections, the clock and the retry waits are :class:`kafka_wire.adapters.cluster.Cluster`'s.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.client.types import TopicPartition
from kafka_wire.messages import ErrorCode, MetadataResponse
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


@dataclass(frozen=True, slots=True)
class Leadership:
    """A partition's leader as a Metadata response named it."""

    topic_id: uuid.UUID
    leader: int
    epoch: int


@dataclass
class ClusterMetadata:
    """What the last Metadata response said (each partition's leader as :func:`metadata_from`
    keeps it)."""

    brokers: dict[int, Address] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)
    leadership: dict[TopicPartition, Leadership] = field(default_factory=dict)

    def leader(self, tp: TopicPartition) -> int:
        """The node leading ``tp`` (-1: none known)."""
        known = self.leadership.get(tp)
        return -1 if known is None else known.leader

    def epoch(self, tp: TopicPartition) -> int:
        """The leader epoch of ``tp``'s leader (-1: none known, or the broker named none)."""
        known = self.leadership.get(tp)
        return -1 if known is None else known.epoch


def metadata_from(response: MetadataResponse, newest: dict[TopicPartition, Leadership]) -> ClusterMetadata:
    """What ``response`` says, keeping for each partition the leader of the newest epoch seen
    (``newest``, updated here, by :func:`newer_leadership`). A broker behind on the metadata log
    may still name an earlier leader; Kafka's clients keep the newer one, or a read goes to a
    node that no longer leads and finds its log too short. A new topic id (the topic deleted and
    created again) starts afresh."""
    meta = ClusterMetadata(brokers={b.node_id: (b.host, b.port) for b in response.brokers})
    for topic in response.topics:
        if topic.error_code != ErrorCode.NONE or topic.name is None:
            continue
        meta.partitions[topic.name] = len(topic.partitions)
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            meta.leadership[tp] = newest[tp] = newer_leadership(
                newest.get(tp), Leadership(topic.topic_id, p.leader_id, p.leader_epoch)
            )
    return meta


def newer_leadership(known: Leadership | None, seen: Leadership) -> Leadership:
    """The leadership a client keeps of the one it knew and the one an answer names: the answer's,
    unless it names an earlier epoch of the same topic (KIP-320: the answer came from a broker
    behind on the metadata log)."""
    if known is not None and known.topic_id == seen.topic_id and known.epoch > seen.epoch:
        return known
    return seen


class NoLeader(Exception):
    """No leader is known for a partition yet (callers wait with :meth:`kafka_wire.adapters.cluster.Cluster.retry_wait`)."""
