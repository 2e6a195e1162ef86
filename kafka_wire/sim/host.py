"""One simulated node: its configuration, its in-memory storage, its clock offset, and the
running engine (``Broker`` with its cluster ``Node``) or None while it is down.

The host does for the engine what ``kafka_wire.adapters.broker_server.BrokerServer`` does on real
sockets: it applies storage effects with :func:`~kafka_wire.broker.driving.settle`, carries
``Send`` parts over the virtual network, dials ``OpenConnection``, closes ``CloseConnection``,
holds the bytes of a connection between ``PauseReading`` and ``ResumeReading``, and goes down on
``StopBroker``. Its tick runs at ``next_deadline_ms()``.

Node time is world time plus :attr:`NodeHost.offset_ms` (clock skew; offsets only grow, so a
node's clock never goes back). Crash kinds: ``kill`` (the process dies: written bytes survive,
as in the page cache), ``power-loss`` (``MemoryStorage.crash()``: what was not fsynced is lost),
``disk-fault`` (power loss, and the last fsynced write of one log segment lost or corrupted).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.broker import Broker
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.config import BrokerConfig, standalone
from kafka_wire.broker.driving import settle
from kafka_wire.broker.effects import (
    CloseConnection,
    Effect,
    Fsync,
    OpenConnection,
    PauseReading,
    ResumeReading,
    Send,
    StopBroker,
    StorageEffect,
)
from kafka_wire.broker.node import Node
from kafka_wire.broker.server_properties import load_server_properties
from kafka_wire.testing.memory_storage import MemoryStorage

if TYPE_CHECKING:
    from kafka_wire.sim.network import Connection, Network
    from kafka_wire.sim.scheduler import Event, Scheduler

BROKER_PORT: Final = 9092
CONTROLLER_PORT: Final = 9093
#: The cluster id every simulated node is formatted with.
CLUSTER_ID: Final = "c2ltdWxhdGVkLWNsdXN0ZXI"
#: Timeouts short enough that faults matter within seconds of virtual time.
FAST_SETTINGS: Final[Mapping[str, str]] = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "controller.quorum.request.timeout.ms": "1000",
    "replica.lag.time.max.ms": "3000",
    "kafka.wire.controlled.shutdown.timeout.ms": "5000",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    #: Kafka's 50 make every follower fetch and every held fetch's poll 50 partitions longer.
    "offsets.topic.num.partitions": "3",
    #: Kafka leaves flushing to the OS (no fsync until a roll); fsyncing every few batches makes
    #: a power loss lose less than everything, and gives a disk fault fsynced writes to damage.
    "log.flush.interval.messages": "8",
}
CRASH_KINDS: Final = ("kill", "power-loss", "disk-fault")
#: A disk fault spares the KRaft metadata log: a voter that forgets fsynced entries it
#: acknowledged can break Raft itself, which Kafka does not claim to survive.
METADATA_LOG: Final = "__cluster_metadata-"


def host_of(node_id: int) -> str:
    return f"node{node_id}"


def node_properties(node_id: int, nodes: int, extra: Mapping[str, str] = FAST_SETTINGS) -> dict[str, str]:
    """The ``server.properties`` of simulated node ``node_id`` (1-based) of ``nodes``. A cluster
    of one node runs what ``kafka-wire serve`` runs without cluster properties: a node that is
    its own one-voter cluster, with no controller listener; it fsyncs every write before
    acknowledging it (``log.flush.interval.messages=1``), the only way one replica keeps what
    it acknowledged through a power loss (Kafka's default leaves that to other replicas)."""
    host = host_of(node_id)
    if nodes == 1:
        return {
            "node.id": str(node_id),
            "cluster.id": CLUSTER_ID,
            "listeners": f"PLAINTEXT://{host}:{BROKER_PORT}",
            "log.dirs": f"/sim/{host}",
            **extra,
            "log.flush.interval.messages": "1",
        }
    voters = ",".join(f"{n}@{host_of(n)}:{CONTROLLER_PORT}" for n in range(1, nodes + 1))
    listeners = f"PLAINTEXT://{host}:{BROKER_PORT},CONTROLLER://{host}:{CONTROLLER_PORT}"
    factor = str(min(3, nodes))
    return {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "cluster.id": CLUSTER_ID,
        "controller.quorum.voters": voters,
        "listeners": listeners,
        "advertised.listeners": listeners,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": f"/sim/{host}",
        "default.replication.factor": factor,
        "offsets.topic.replication.factor": factor,
        "min.insync.replicas": str(min(2, nodes)),
        **extra,
    }


def node_config(node_id: int, nodes: int, extra: Mapping[str, str] = FAST_SETTINGS) -> BrokerConfig:
    loaded = load_server_properties(node_properties(node_id, nodes, extra))
    return standalone(replace(loaded.config, zero_copy_fetch=False))


#: A record batch's header: base offset (8 bytes), length (4), partition leader epoch (4), magic,
#: CRC (4); the CRC covers the bytes after it.
_BATCH_LENGTH_AT = 8
_BATCH_EPOCH_AT = 12
_BATCH_MAGIC_AT = 16
_BATCH_HEADER = 12


def crc_covered(data: bytes | bytearray, start: int) -> list[int]:
    """The positions from ``start`` (a batch boundary) a bit flip of which Kafka detects: every
    byte of each whole batch but its base offset and partition leader epoch, which no checksum
    covers (Kafka leaves the epoch out of the CRC so that a leader can set it without
    recomputing it; a flip there is taken as the truth on recovery and replication)."""
    spots: list[int] = []
    pos = start
    while pos + _BATCH_HEADER <= len(data):
        length = int.from_bytes(data[pos + _BATCH_LENGTH_AT : pos + _BATCH_HEADER], "big")
        end = pos + _BATCH_HEADER + length
        if length <= _BATCH_MAGIC_AT - _BATCH_HEADER or end > len(data):
            break
        spots += range(pos + _BATCH_LENGTH_AT, pos + _BATCH_EPOCH_AT)
        spots += range(pos + _BATCH_MAGIC_AT, end)
        pos = end
    return spots


class NodeHost:
    """Simulated node ``node_id``; a :class:`~kafka_wire.sim.network.Peer` of the network."""

    def __init__(
        self,
        node_id: int,
        config: BrokerConfig,
        scheduler: Scheduler,
        network: Network,
        engine_rng: Callable[[int, int], random.Random],
        hooks: Hooks = OFF,
    ) -> None:
        self.node_id = node_id
        #: The BUGGIFY points and planted bugs the engine is built with at each start.
        self.hooks = hooks
        self.location = f"n{node_id}"
        self.config = config
        self.storage = MemoryStorage()
        self.scheduler = scheduler
        self.network = network
        self._engine_rng = engine_rng
        self.offset_ms = 0
        self.broker: Broker | None = None
        self.node: Node | None = None
        self.incarnation = 0
        #: World times at which this node lost storage it had written.
        self.storage_losses: list[int] = []
        #: Why the engine stopped on its own (StopBroker), when it did.
        self.failure: str | None = None
        #: Calls into the engine so far (each ends with ``_reschedule``, which counts it): the
        #: checker reads a node again only when this moved.
        self.calls = 0
        #: Per file: the durable size before its last fsync, for a disk fault.
        self._durable_before: dict[str, int] = {}
        self._conns: dict[int, tuple[Connection, int]] = {}
        self._paused: set[int] = set()
        #: Bytes (None: the close) that arrived while their connection was paused.
        self._inbox: dict[int, list[bytes | None]] = {}
        self._next_conn = 0
        self._tick: Event | None = None
        self._tick_at: int | None = None
        network.hosts[host_of(node_id)] = self

    @property
    def up(self) -> bool:
        return self.broker is not None

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms + self.offset_ms

    # -- life ---------------------------------------------------------------------------------------
    def start(self) -> None:
        self.incarnation += 1
        self.failure = None
        rng = self._engine_rng(self.node_id, self.incarnation)
        self.node = Node(self.config, rng=rng)
        self.broker = Broker(self.config, self.storage, rng=rng, cluster=self.node, hooks=self.hooks)
        self._apply(self.broker.start(self.now_ms))
        self._reschedule()

    def crash(self, kind: str, rng: random.Random | None = None) -> str:
        """Stop at once (no controlled shutdown); ``kind`` is one of :data:`CRASH_KINDS`.
        Returns what was lost, for the trace."""
        self._down(machine_lost=kind in ("power-loss", "disk-fault"))
        lost = ""
        if kind == "disk-fault":
            lost = self._damage(rng or random.Random(0))
        if kind in ("power-loss", "disk-fault"):
            self.storage.crash()
            self.storage_losses.append(self.scheduler.now_ms)
        return lost

    def _down(self, *, machine_lost: bool = False) -> None:
        self.broker = None
        self.node = None
        self._conns.clear()
        self._paused.clear()
        self._inbox.clear()
        if self._tick is not None:
            self._tick.cancel()
        self._tick = None
        self._tick_at = None
        self.network.crash(self.location, machine_lost=machine_lost)

    def _damage(self, rng: random.Random) -> str:
        """Lose or corrupt the last fsynced write of one partition log segment (its durable copy)."""
        durable = self.storage._durable  # the in-memory disk's durable image
        candidates = sorted(
            p
            for p, before in self._durable_before.items()
            if p in durable
            and len(durable[p]) > before
            and p.endswith(".log")
            and not p.startswith(METADATA_LOG)
        )
        if not candidates:
            return "nothing"
        path = rng.choice(candidates)
        before = self._durable_before[path]
        data = bytearray(durable[path])
        if rng.random() < 0.5:
            durable[path] = bytes(data[:before])
            return f"lost {path}[{before}:{len(data)}]"
        spots = crc_covered(data, before)
        if not spots:
            durable[path] = bytes(data[:before])
            return f"lost {path}[{before}:{len(data)}]"
        at = rng.choice(spots)
        data[at] ^= 1 << rng.randrange(8)
        durable[path] = bytes(data)
        return f"corrupt {path}@{at}"

    def jump_clock(self, delta_ms: int) -> None:
        self.offset_ms += delta_ms
        self._reschedule()

    # -- effects --------------------------------------------------------------------------------------
    def _store(self, effect: StorageEffect) -> None:
        if type(effect) is Fsync:
            durable = self.storage._durable.get(effect.path)
            self._durable_before[effect.path] = 0 if durable is None else len(durable)
        self.storage.apply_one(effect)

    def _apply(self, effects: list[Effect]) -> None:
        broker = self.broker
        if broker is None or not effects:
            return
        for effect in settle(broker, effects, self._store, self.now_ms):
            kind = type(effect)
            if kind is Send:
                assert isinstance(effect, Send)
                entry = self._conns.get(effect.conn_id)
                if entry is not None:
                    parts = effect.parts
                    if len(parts) == 1 and type(parts[0]) is bytes:
                        data = parts[0]
                    else:
                        data = b"".join(
                            p if isinstance(p, bytes) else self.storage.read(p.path, p.position, p.size)
                            for p in parts
                        )
                    self.network.send(entry[0], entry[1], data)
            elif kind is OpenConnection:
                assert isinstance(effect, OpenConnection)
                conn = self.network.dial(self, effect.conn_id, effect.host, effect.port)
                self._conns[effect.conn_id] = (conn, 0)
            elif kind is CloseConnection:
                assert isinstance(effect, CloseConnection)
                entry = self._conns.pop(effect.conn_id, None)
                self._paused.discard(effect.conn_id)
                self._inbox.pop(effect.conn_id, None)
                if entry is not None:
                    self.network.close(*entry)
            elif kind is PauseReading:
                assert isinstance(effect, PauseReading)
                self._paused.add(effect.conn_id)
            elif kind is ResumeReading:
                assert isinstance(effect, ResumeReading)
                self._paused.discard(effect.conn_id)
                waiting = self._inbox.pop(effect.conn_id, None)
                if waiting:
                    self._replay_later(effect.conn_id, waiting)
            elif kind is StopBroker:
                assert isinstance(effect, StopBroker)
                self.failure = effect.reason
                self._down()
                return

    def _replay_later(self, conn_id: int, waiting: list[bytes | None]) -> None:
        """Deliver what arrived while the connection was paused, as its own event."""
        self.scheduler.after(0, f"resume n{self.node_id} {conn_id}", lambda: self._replay(conn_id, waiting))

    def _replay(self, conn_id: int, waiting: list[bytes | None]) -> None:
        for item in waiting:
            if conn_id not in self._conns:
                return
            if conn_id in self._paused:
                self._inbox.setdefault(conn_id, []).append(item)
                continue
            if item is None:
                self.net_closed(conn_id)
            else:
                self.net_data(conn_id, item)

    def _reschedule(self) -> None:
        self.calls += 1
        broker = self.broker
        deadline = None if broker is None else broker.next_deadline_ms()
        if deadline is not None:
            deadline -= self.offset_ms
        if deadline == self._tick_at:
            return
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        self._tick_at = deadline
        if deadline is not None:
            self._tick = self.scheduler.at(deadline, f"tick n{self.node_id}", self._on_tick)

    def _on_tick(self) -> None:
        self._tick = None
        self._tick_at = None
        broker = self.broker
        if broker is not None:
            self._apply(broker.tick(self.now_ms))
        self._reschedule()

    # -- Peer ---------------------------------------------------------------------------------------
    def net_accept(self, port: int, conn: Connection) -> int | None:
        broker = self.broker
        if broker is None:
            return None
        listener = "PLAINTEXT" if port == BROKER_PORT else "CONTROLLER" if port == CONTROLLER_PORT else None
        if listener is None:
            return None
        self._next_conn += 1
        conn_id = self._next_conn
        self._conns[conn_id] = (conn, 1)
        self._apply(broker.connection_opened(conn_id, self.now_ms, host=conn.locs[0], listener=listener))
        self._reschedule()
        return conn_id

    def net_connected(self, local_id: int) -> None:
        if self.broker is not None and local_id in self._conns:
            self._apply(self.broker.connection_established(local_id, self.now_ms))
            self._reschedule()

    def net_data(self, local_id: int, data: bytes) -> None:
        broker = self.broker
        if broker is None or local_id not in self._conns:
            return
        if local_id in self._paused:
            self._inbox.setdefault(local_id, []).append(data)
            return
        self._apply(broker.receive_data(local_id, data, self.now_ms))
        self._reschedule()

    def net_closed(self, local_id: int) -> None:
        broker = self.broker
        if broker is None or local_id not in self._conns:
            return
        if local_id in self._paused:
            self._inbox.setdefault(local_id, []).append(None)
            return
        del self._conns[local_id]
        self._apply(broker.connection_closed(local_id, self.now_ms))
        self._reschedule()
