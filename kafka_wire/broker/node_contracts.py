"""What a :class:`~kafka_wire.broker.node.Node` is made of, as it uses its parts: the interfaces
of the raft replica, the metadata image, the quorum controller and the replica manager
(protocols: the parts are built by other modules), the :class:`NodeParts` holding them and the
:class:`PartsContext` a :data:`PartsFactory` builds them from; and :func:`merged`, which folds
consecutive metadata deltas into one.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kafka_wire.broker.cluster_settings import ClusterSettings
from kafka_wire.broker.cluster_view import BrokerInfo, ClusterView, Outbound, PartitionState
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.controller.quotas_image import ClientQuotasImage
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.state import BrokerState, Waiting
from kafka_wire.broker.work import Steps
from kafka_wire.codec.structs import Message
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.broker.controller.scram_image import ScramImage
    from kafka_wire.broker.controller.tokens_image import DelegationTokenImage


@runtime_checkable
class CommittedBatchLike(Protocol):
    """A committed batch of metadata records (``raft.CommittedBatch``)."""

    @property
    def last_offset(self) -> int: ...

    @property
    def records(self) -> tuple[bytes, ...]: ...


class SnapshotIdLike(Protocol):
    @property
    def end_offset(self) -> int: ...


@runtime_checkable
class SnapshotLoadLike(Protocol):
    """A snapshot replacing the state built so far (``raft.SnapshotLoad``)."""

    @property
    def snapshot_id(self) -> SnapshotIdLike: ...

    @property
    def records(self) -> tuple[bytes, ...]: ...


class RaftPart(Protocol):
    """The node's replica of ``__cluster_metadata`` (``raft.KRaftReplica``)."""

    @property
    def leader_id(self) -> int: ...

    @property
    def epoch(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def leader_ready(self) -> bool:
        """Leader, with everything before its epoch committed."""
        ...

    @property
    def caught_up(self) -> bool:
        """Has what the quorum had committed when the leader last answered (a leader: always)."""
        ...

    def start(self, now_ms: int) -> None: ...

    def take_committed(self) -> Sequence[object]: ...

    def handle(self, api_key: int, api_version: int, body: Message, now_ms: int) -> Message | Waiting: ...

    def poll_outbound(self, now_ms: int) -> list[Outbound]: ...

    def next_deadline_ms(self) -> int | None: ...

    def tick(self, now_ms: int) -> None: ...


class DeltaLike(Protocol):
    """What one applied batch changed (``controller.image.MetadataDelta``)."""

    @property
    def partitions(self) -> tuple[PartitionState, ...]: ...

    @property
    def removed_topics(self) -> tuple[tuple[str, uuid.UUID], ...]: ...

    @property
    def configs(self) -> Sequence[tuple[int, str]]: ...


class ImagePart(Protocol):
    """The metadata image (``controller.image.MetadataImage``)."""

    @property
    def offset(self) -> int: ...

    @property
    def features(self) -> Mapping[str, int]:
        """Finalized feature levels, by name."""
        ...

    def brokers(self) -> Sequence[BrokerInfo]: ...

    def broker(self, node_id: int) -> BrokerInfo | None: ...

    def partition(self, topic: str, partition: int) -> PartitionState | None: ...

    def partitions_of(self, topic: str) -> Sequence[PartitionState]: ...

    def topic_configs(self, topic: str) -> dict[str, str]: ...

    @property
    def client_quotas(self) -> ClientQuotasImage:
        """The client quotas (the same object for the image's life)."""
        ...

    @property
    def scram(self) -> ScramImage:
        """The users' SCRAM credentials."""
        ...

    @property
    def tokens(self) -> DelegationTokenImage:
        """The delegation tokens."""
        ...

    def configs_of(self, resource_type: int, name: str) -> dict[str, str]:
        """The overrides of any config resource (a group's: type 32)."""
        ...

    def apply_steps(self, offset: int, records: Sequence[Message]) -> Steps[DeltaLike]:
        """Apply a committed batch in steps (``MetadataImage.apply_steps``)."""
        ...

    def load_snapshot(self, offset: int, records: Sequence[Message]) -> DeltaLike: ...


class ControllerPart(Protocol):
    """The quorum controller (``controller.QuorumController``): active while the raft replica
    leads with everything before its epoch committed. Its committed image is the node's image."""

    def handle(self, api_key: int, api_version: int, body: Message, now_ms: int) -> Message | Waiting: ...

    def replay_steps(self, offset: int, records: Sequence[bytes], now_ms: int) -> Steps[DeltaLike]:
        """Records the quorum committed (the controller's own proposals included), in order,
        applied in steps."""
        ...

    def load_snapshot(self, offset: int, records: Sequence[bytes]) -> DeltaLike: ...

    def next_deadline_ms(self) -> int | None: ...

    def tick(self, now_ms: int) -> None:
        """Periodic work; also how it learns that the raft leadership changed."""
        ...

    def local_broker(self, incarnation_id: uuid.UUID) -> None:
        """The incarnation of the broker in this node's own process: a registration of its
        node id under another incarnation is from an earlier process, gone."""
        ...


class ReplicationPart(Protocol):
    """The broker's replicas (``replication.ReplicaManager``)."""

    def apply(
        self, states: Sequence[PartitionState], removed: Sequence[tuple[str, int]], now_ms: int
    ) -> None: ...

    def take_applied(self) -> list[PartitionState]:
        """The registrations applied since the last call (new partitions are opened in slices)."""
        ...

    def next_deadline_ms(self) -> int | None: ...

    def tick(self, now_ms: int) -> None: ...

    def close(self, broker_epoch: int) -> None:
        """A clean stop: every log closed, then the clean-shutdown marker."""
        ...


@dataclass(slots=True)
class NodeParts:
    raft: RaftPart
    image: ImagePart
    #: On a node with the controller role.
    controller: ControllerPart | None = None
    #: On a node with the broker role.
    replication: ReplicationPart | None = None


@dataclass(frozen=True, slots=True)
class PartsContext:
    """What a :data:`PartsFactory` builds the parts from."""

    config: BrokerConfig
    settings: ClusterSettings
    state: BrokerState
    effects: EffectSink
    view: ClusterView
    rng: random.Random
    now_ms: int
    logger: logging.Logger


PartsFactory = Callable[[PartsContext], NodeParts]


@dataclass(frozen=True, slots=True)
class MergedDelta:
    """Consecutive deltas as one: the last state of each partition, every removal."""

    partitions: tuple[PartitionState, ...]
    removed_topics: tuple[tuple[str, uuid.UUID], ...]
    configs: tuple[tuple[int, str], ...]


def merged(deltas: Sequence[DeltaLike]) -> DeltaLike:
    if len(deltas) == 1:
        return deltas[0]
    partitions: dict[tuple[str, int], PartitionState] = {}
    removed: list[tuple[str, uuid.UUID]] = []
    configs: list[tuple[int, str]] = []
    for delta in deltas:
        for name, topic_id in delta.removed_topics:
            partitions = {k: v for k, v in partitions.items() if (v.topic, v.topic_id) != (name, topic_id)}
            removed.append((name, topic_id))
        for state in delta.partitions:
            partitions.pop((state.topic, state.partition), None)  # keep the order of the last change
            partitions[state.topic, state.partition] = state
        configs += [c for c in delta.configs if c not in configs]
    return MergedDelta(tuple(partitions.values()), tuple(removed), tuple(configs))
