"""The simulated world: the scheduler, the network, the nodes, the clients and the fault plan,
all driven by generators derived from one seed (one per concern, so that removing a fault from
a replayed schedule perturbs nothing else)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.lifecycle import LifecycleState
from kafka_wire.sim.history import History
from kafka_wire.sim.host import NodeHost, node_config
from kafka_wire.sim.network import Connection, Network
from kafka_wire.sim.scheduler import Event, Scheduler

if TYPE_CHECKING:
    from kafka_wire.sim.contracts import SimClient
    from kafka_wire.sim.faults import Fault

#: Virtual time at the start of a run (a plausible wall clock: record timestamps look real).
START_MS: Final = 1_700_000_000_000


def derived_rng(seed: int, concern: str, *more: int) -> random.Random:
    """The generator of one concern of run ``seed`` (string seeds hash with SHA-512: the same in
    every process, whatever ``PYTHONHASHSEED``)."""
    return random.Random(":".join([str(seed), concern, *map(str, more)]))


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldConfig:
    seed: int
    nodes: int = 3
    topics: Sequence[tuple[str, int]] = ()
    #: The replication factor the workload creates its topics with.
    rf: int = 3
    unclean: bool = False
    trace: bool = False
    latency_ms: tuple[int, int] = (1, 5)
    #: Each node's clock starts up to this far ahead of world time.
    max_initial_skew_ms: int = 2000
    settings: dict[str, str] = field(default_factory=dict)


class World:
    """Everything of one run; implements :class:`~kafka_wire.sim.contracts.WorldView`."""

    def __init__(self, config: WorldConfig, hooks: Hooks = OFF) -> None:
        """``hooks``: the BUGGIFY points and planted bugs every node's engine is built with."""
        self.config = config
        self.seed = config.seed
        self.scheduler = Scheduler(START_MS, trace=config.trace)
        self.scheduler_start_ms = START_MS
        self.network = Network(
            self.scheduler, derived_rng(config.seed, "network"), latency_ms=config.latency_ms
        )
        #: For the checker and the clients (its own generator).
        self.rng = derived_rng(config.seed, "checker")
        self.history = History()
        self._topics = list(config.topics)
        #: The replication factor of the workload's topics (for the admin client).
        self.replication_factor = config.rf
        from kafka_wire.sim.host import FAST_SETTINGS

        settings = {**FAST_SETTINGS, **config.settings}
        if config.unclean:
            settings["unclean.leader.election.enable"] = "true"
        self.hosts = [
            NodeHost(
                n,
                node_config(n, config.nodes, settings),
                self.scheduler,
                self.network,
                lambda node_id, incarnation: derived_rng(config.seed, "engine", node_id, incarnation),
                hooks,
            )
            for n in range(1, config.nodes + 1)
        ]
        clock = derived_rng(config.seed, "clock")
        for host in self.hosts:  # skew from the start: each node's clock a little ahead
            host.offset_ms = int(clock.random() * config.max_initial_skew_ms)
        self.clients: list[ClientAdapter] = []
        #: The faults applied so far (the fault plan's record).
        self.faults: list[Fault] = []

    # -- WorldView ----------------------------------------------------------------------------------
    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms

    def nodes(self) -> Sequence[NodeHost]:
        return self.hosts

    def topics(self) -> Sequence[tuple[str, int]]:
        return self._topics

    def unclean_elections(self) -> bool:
        return self.config.unclean

    # -- driving ------------------------------------------------------------------------------------
    def start(self) -> None:
        for host in self.hosts:
            host.start()

    def add_client(self, client: SimClient) -> ClientAdapter:
        adapter = ClientAdapter(self, client)
        self.clients.append(adapter)
        client.start(adapter, self.now_ms)
        adapter.reschedule()
        return adapter

    def run_until(self, done: Callable[[], bool], deadline_ms: int) -> bool:
        """Run events until ``done()`` (checked after each) or virtual ``deadline_ms``."""
        scheduler = self.scheduler
        while not done():
            due = scheduler.next_time_ms()
            if due is None or due > deadline_ms:
                scheduler.now_ms = max(scheduler.now_ms, deadline_ms)
                return done()
            scheduler.run_one()
        return True

    def run_for(self, duration_ms: int) -> None:
        end = self.now_ms + duration_ms
        self.run_until(lambda: False, end)

    def cluster_ready(self) -> bool:
        """Every node up, registered and unfenced, and a quorum leader known to all."""
        leaders = set()
        for host in self.hosts:
            node = host.node
            if node is None or node.lifecycle is None or node.lifecycle.state is not LifecycleState.RUNNING:
                return False
            leader = node.view.controller_id
            if leader < 0:
                return False
            leaders.add(leader)
        return len(leaders) == 1


class ClientAdapter:
    """A simulated client's window on the world: its connections and its timer
    (:class:`~kafka_wire.sim.contracts.ClientIO`, and a network peer)."""

    def __init__(self, world: World, client: SimClient) -> None:
        self.world = world
        self.client = client
        self.location = client.name
        self._conns: dict[int, Connection] = {}
        self._timer_at: int | None = None
        self._timer: Event | None = None

    # ClientIO
    def connect(self, client: SimClient, host: str, port: int) -> int:
        conn = self.world.network.dial(self, 0, host, port)
        conn.local[0] = conn.id
        self._conns[conn.id] = conn
        return conn.id

    def send(self, conn: int, data: bytes) -> None:
        c = self._conns.get(conn)
        if c is not None:
            self.world.network.send(c, 0, data)

    def close(self, conn: int) -> None:
        c = self._conns.pop(conn, None)
        if c is not None:
            self.world.network.close(c, 0)

    # Peer
    def net_accept(self, port: int, conn: Connection) -> int | None:
        return None

    def net_connected(self, local_id: int) -> None:
        if local_id in self._conns:
            self.client.connected(local_id, self.world.now_ms)
            self.reschedule()

    def net_data(self, local_id: int, data: bytes) -> None:
        if local_id in self._conns:
            self.client.received(local_id, data, self.world.now_ms)
            self.reschedule()

    def net_closed(self, local_id: int) -> None:
        if self._conns.pop(local_id, None) is not None:
            self.client.closed(local_id, self.world.now_ms)
            self.reschedule()

    def reschedule(self) -> None:
        deadline = self.client.next_deadline_ms()
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None:
            self._timer = self.world.scheduler.at(deadline, f"tick {self.location}", self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self.client.tick(self.world.now_ms)
        self.reschedule()
