"""What the broker's parts know of the cluster around them, and how they talk to other nodes.

A single-node broker has no view (``BrokerState.cluster`` is None) and answers as the whole
cluster. In a replicated cluster the node (``kafka_wire.broker.node``) keeps a view built from
the metadata log: the brokers and their endpoints, every partition's registration and the active
controller. Parts that need another node (a follower fetching from its leader, a leader asking
the controller to change its ISR, a broker forwarding an admin request) hand an :class:`Outbound`
to :meth:`ClusterView.send`; the reply, or None when the request failed (timed out, connection
lost, node unknown), is given to ``on_reply`` in a later engine call.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from kafka_wire.codec.structs import Message
from kafka_wire.quick_dataclass import dataclass


class LeaderRecoveryState(enum.IntEnum):
    """``PartitionRecord.LeaderRecoveryState``: RECOVERING after an unclean election."""

    RECOVERED = 0
    RECOVERING = 1


@dataclass(frozen=True, slots=True)
class Endpoint:
    listener: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A registered broker as the metadata log describes it."""

    node_id: int
    epoch: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False

    def endpoint(self, listener: str) -> Endpoint | None:
        for endpoint in self.endpoints:
            if endpoint.listener == listener:
                return endpoint
        return None


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's registration (Kafka's ``PartitionRegistration``)."""

    topic: str
    partition: int
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


#: Called with the reply body (None: the request failed) and the time of the call delivering it.
ReplyHandler = Callable[[Message | None, int], None]


@dataclass(frozen=True, slots=True)
class Outbound:
    """A request for another node (or this one: a combined node talks to its own controller the
    same way), sent on ``listener`` (a controller listener name, or the inter-broker listener)."""

    destination: int
    listener: str
    body: Message
    on_reply: ReplyHandler
    timeout_ms: int = 30_000
    #: The version to send it at (a forwarded request keeps its client's, as Kafka's Envelope
    #: does); None: the highest both nodes support.
    version: int | None = None


class ClusterView(Protocol):
    """The cluster as this node's metadata image shows it."""

    @property
    def node_id(self) -> int: ...

    @property
    def controller_id(self) -> int:
        """The active controller's node id, or -1 while none is known."""
        ...

    @property
    def inter_broker_listener(self) -> str: ...

    @property
    def controller_listener(self) -> str: ...

    def brokers(self) -> Sequence[BrokerInfo]:
        """Every registered broker, fenced ones included, by node id."""
        ...

    def broker(self, node_id: int) -> BrokerInfo | None: ...

    def partition(self, topic: str, partition: int) -> PartitionState | None: ...

    def partitions_of(self, topic: str) -> Sequence[PartitionState]: ...

    def send(self, outbound: Outbound) -> None:
        """Queue a request to another node; its reply comes to ``outbound.on_reply``."""
        ...

    def finalized_features(self) -> tuple[int, Mapping[str, int]]:
        """The finalized feature levels and their epoch (the metadata offset; -1 while none)."""
        ...
