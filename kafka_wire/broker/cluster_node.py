"""``ClusterNode``: what a :class:`~kafka_wire.broker.broker.Broker` hands on to the node of the
cluster it belongs to (``kafka_wire.broker.node.Node``, the one-voter cluster of a single node
included): requests on a controller listener, outbound connections, ticks, controlled shutdown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kafka_wire.broker.cluster_view import ClusterView
from kafka_wire.broker.effects import Effect, EffectSink
from kafka_wire.broker.local_link import LocalLink
from kafka_wire.broker.state import BrokerState, Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.protocol.events import Request


class ClusterNode(Protocol):
    """What a :class:`Broker` hands on to its node (``kafka_wire.broker.node.Node``)."""

    @property
    def view(self) -> ClusterView:
        """The cluster as the node sees it (``BrokerState.cluster``)."""
        ...

    def start(self, state: BrokerState, effects: EffectSink, now_ms: int) -> None:
        """The broker's state is loaded: build the node's parts; storage effects go to ``effects``
        (now and in every later call)."""
        ...

    def api_versions(self, listener: str) -> Mapping[int, tuple[int, int]] | None:
        """What a connection on ``listener`` may send (None: the broker's own APIs)."""
        ...

    def serves(self, listener: str) -> bool:
        """Whether requests on ``listener`` go to :meth:`handle` (a controller listener)."""
        ...

    def handle(self, request: Request, now_ms: int, user: str = "", host: str = "") -> Message | Waiting:
        """Answer a request of a controller listener's connection (its authenticated ``user`` and
        its ``host``, for the authorizer)."""
        ...

    def pump(self, now_ms: int) -> bool:
        """Serve what the broker's handlers asked of the node's own controller in this call;
        whether there was anything."""
        ...

    def owns(self, conn_id: int) -> bool:
        """Whether ``conn_id`` is one of the node's outbound connections."""
        ...

    def connection_established(self, conn_id: int, now_ms: int) -> None: ...

    def receive_data(self, conn_id: int, data: bytes, now_ms: int) -> None: ...

    def connection_closed(self, conn_id: int, now_ms: int) -> None: ...

    def tick(self, now_ms: int) -> None: ...

    def next_deadline_ms(self) -> int | None: ...

    def take_network_effects(self) -> list[Effect]:
        """``OpenConnection`` / ``Send`` / ``CloseConnection`` of the node's links since the last take."""
        ...

    def take_coordinator_changes(self) -> list[tuple[str, int, bool]]:
        """``__consumer_offsets`` and ``__transaction_state`` partitions this node started (True)
        or stopped (False) leading since the last take: the group and transaction coordinators
        serve the groups and transactional ids of the partitions they lead."""
        ...

    def set_loopback(self, link: LocalLink) -> None:
        """Requests the broker's parts send to this node itself (not to its controller) go to
        ``link``, served in-process."""
        ...

    def begin_shutdown(self, now_ms: int) -> None:
        """Ask the controller to move leadership away (controlled shutdown)."""
        ...

    @property
    def may_stop(self) -> bool:
        """Controlled shutdown is done (or given up): ``shutdown`` may follow."""
        ...

    def shutdown(self, *, clean: bool = False) -> None:
        """Close every link; nothing more is sent. A ``clean`` stop also flushes and closes every
        log, then writes the clean-shutdown marker."""
        ...
