"""The interfaces the simulator's parts share: the world the checker reads, and the clients the
world drives. Everything here is driven by the simulator's one event loop, with virtual time.

Addresses: node ``n`` (1-based) listens on host ``node<n>``, port 9092 (PLAINTEXT) and 9093
(CONTROLLER). A client dials an address; the network connects it to that node's listener, or
fails the dial (``ClientIO.closed``) when the node is down or partitioned from the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import random

    from kafka_wire.broker.broker import Broker
    from kafka_wire.broker.node import Node
    from kafka_wire.sim.history import History
    from kafka_wire.testing.memory_storage import MemoryStorage


class ClientIO(Protocol):
    """What the world offers a client: connections to nodes, and timers."""

    def connect(self, client: SimClient, host: str, port: int) -> int:
        """Dial ``host:port``; returns a connection id. Later ``client.connected(conn)`` or
        ``client.closed(conn)`` (refused, unreachable) is called."""
        ...

    def send(self, conn: int, data: bytes) -> None:
        """Bytes to the node, delivered in order after the network's delay (or never, when the
        connection breaks first: then ``client.closed(conn)``)."""
        ...

    def close(self, conn: int) -> None:
        """Close a connection (no ``closed`` call follows for it)."""
        ...


class SimClient(Protocol):
    """A simulated Kafka client on the project's Sans-IO ``ClientConnection``; it records what it
    does in the shared :class:`~kafka_wire.sim.history.History`."""

    name: str

    def start(self, io: ClientIO, now_ms: int) -> None: ...

    def connected(self, conn: int, now_ms: int) -> None: ...

    def received(self, conn: int, data: bytes, now_ms: int) -> None: ...

    def closed(self, conn: int, now_ms: int) -> None: ...

    def tick(self, now_ms: int) -> None:
        """Called at (or after) ``next_deadline_ms()``."""
        ...

    def next_deadline_ms(self) -> int | None: ...

    def quiesce(self, now_ms: int) -> None:
        """The liveness phase began: stop producing; consumers keep polling to the end."""
        ...

    def idle(self) -> bool:
        """Nothing in flight (every send invoked has completed, no commit pending)."""
        ...


class NodeLike(Protocol):
    """One simulated node as the checker sees it."""

    node_id: int
    storage: MemoryStorage
    #: The running engine, or None while the node is down.
    broker: Broker | None
    node: Node | None
    #: Times this node lost storage it had written (power loss, a corrupted or lost write): the
    #: checker exempts its own truncations at those times.
    storage_losses: list[int]
    #: Counts the calls into the running engine: while it and ``broker`` stay the same, the
    #: engine's state has not changed (the checker skips reading it again).
    calls: int


class WorldView(Protocol):
    """What the checker reads after every event."""

    @property
    def now_ms(self) -> int: ...

    rng: random.Random
    history: History

    def nodes(self) -> Sequence[NodeLike]: ...

    def topics(self) -> Sequence[tuple[str, int]]:
        """The workload's topics and their partition counts."""
        ...

    def unclean_elections(self) -> bool:
        """Whether unclean leader election is enabled for the workload's topics."""
        ...


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken invariant: Jepsen's anomaly name where there is one (``lost-write``,
    ``duplicate``, ``poll-skip``, ...), else the invariant's (``hw-monotonic``, ``liveness``)."""

    anomaly: str
    time_ms: int
    detail: str

    def line(self) -> str:
        return f"{self.time_ms} VIOLATION {self.anomaly}: {self.detail}"


class Checker(Protocol):
    """Reads the world after every event and at the end; the first violation stops the run."""

    def after_event(self, world: WorldView) -> list[Violation]: ...

    def at_end(self, world: WorldView) -> list[Violation]: ...
