"""The fault plan of a run: faults drawn lazily from the run's fault generator, applied when the
model allows them, each recorded (index, time, kind, target), and replayable by index.

Every draw takes the same numbers from the generator whatever the world's state, so the n-th
draw is the same fault in every run of a seed: a run replayed with ``script`` (a subset of the
recorded indices) applies exactly those faults at the same times, and nothing else moves. A
fault carries its own end (the restart of a crashed node, the heal of a partition, the end of a
latency spike), drawn with it.

Model rules (Kafka's failure model, so that a lost acknowledged write is always a bug): at most
one node is down at a time; a fault that loses stored bytes (``power-loss``, ``disk-fault``)
strikes only when every node is up and registered, every partition's ISR is full on every node
(no leader proposing a smaller one) and every replica holds the committed records
(:func:`isr_full`) and no partition cuts one node from another, and after it no node crashes
and no partition cuts nodes apart until that holds again (the node that lost bytes counts as
failed until it caught up). A cluster of one node has no other copy: there a disk fault (which
loses fsynced bytes) never strikes, and a power loss only loses what its node had not
acknowledged (it fsyncs every write). A drawn fault the rules forbid now is skipped (and not
recorded).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kafka_wire.broker.lifecycle import LifecycleState

if TYPE_CHECKING:
    from kafka_wire.sim.host import NodeHost
    from kafka_wire.sim.network import Network
    from kafka_wire.sim.scheduler import Event, Scheduler

#: Every kind of fault, in the order the summary lists them.
FAULT_KINDS: Final = (
    "kill",
    "power-loss",
    "disk-fault",
    "partition",
    "partition-one-way",
    "partition-client",
    "heal",
    "reset",
    "latency-spike",
    "clock-jump",
)
#: Relative weights of the kinds drawn.
_WEIGHTS: Final = (3, 2, 1, 3, 2, 2, 1, 3, 2, 2)
_CUMULATIVE: Final = tuple(sum(_WEIGHTS[: i + 1]) for i in range(len(_WEIGHTS)))
DEFAULT_FAULT_INTERVAL_MS: Final = 1500


@dataclass(frozen=True, slots=True)
class Fault:
    """One applied fault: its draw index, when (world ms), what, and on what."""

    index: int
    time_ms: int
    kind: str
    target: str
    detail: str = ""

    def line(self) -> str:
        return f"fault {self.index} {self.kind} {self.target}{' ' + self.detail if self.detail else ''}"


@dataclass(frozen=True, slots=True)
class _Draw:
    """The numbers of one draw (taken in the same order for every kind)."""

    kind: str
    pick: int
    pick2: int
    duration_ms: int
    amount_ms: int
    seed: int


def isr_full(hosts: Sequence[NodeHost]) -> bool:
    """Every node up and serving (its current incarnation registered and unfenced), on every
    node every partition's ISR is its whole replica set, and every replica really holds the
    committed records: each node has opened every partition a registration names it a replica
    of, with a log end at or above the partition's highest high watermark. (A node that
    restarted after a power loss has not opened its partitions yet, or has them behind, while
    the others' registrations still name it in the ISR: the controller has not heard of the
    restart yet. A second storage loss then can strike the only other copies, which Kafka does
    not claim to survive.) A node opens its partitions once registered: while every node waits to
    register again (all restarted, the controller refusing the new incarnations until the old
    sessions pass), no node has a partition open and there would be nothing to compare; the
    controller then fences the old incarnations one by one, the last one fenced stays alone in
    each ISR, and without ELR Kafka elects it whatever its unclean shutdown lost (seed 3201).
    A leader's ISR change in flight (its pending ISR) counts too: the controller may apply a
    shrink after the check, even one the leader sent just before it lost power, and a leader
    that shrank its ISR to itself (its clock jumped past ``replica.lag.time.max.ms``) is then
    the last replica standing, elected on its return with what its power loss left (seed
    6172)."""
    needed: set[tuple[int, str, int]] = set()
    held: dict[tuple[int, str, int], int] = {}
    high: dict[tuple[str, int], int] = {}
    for host in hosts:
        broker = host.broker
        lifecycle = None if host.node is None else host.node.lifecycle
        if (
            broker is None
            or lifecycle is None
            or lifecycle.state is not LifecycleState.RUNNING
            or lifecycle.fenced
        ):
            return False
        node_id = host.node_id
        for (topic, index), replica in broker.state.partitions.items():
            registration = replica.registration
            if registration is None or len(registration.isr) != len(registration.replicas):
                return False
            pending = replica.pending_isr
            if pending is not None and set(pending) != set(registration.replicas):
                return False
            needed.update((r, topic, index) for r in registration.replicas)
            held[node_id, topic, index] = replica.log_end_offset
            high[topic, index] = max(high.get((topic, index), 0), replica.high_watermark)
    for node_id, topic, index in needed:
        leo = held.get((node_id, topic, index))
        if leo is None or leo < high[topic, index]:
            return False
    return True


class FaultPlan:
    def __init__(
        self,
        scheduler: Scheduler,
        network: Network,
        hosts: Sequence[NodeHost],
        clients: Callable[[], Sequence[str]],
        rng: random.Random,
        *,
        interval_ms: int = DEFAULT_FAULT_INTERVAL_MS,
        script: frozenset[int] | None = None,
        kinds: frozenset[str] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.network = network
        self.hosts = hosts
        self._clients = clients
        self.rng = rng
        self.interval_ms = interval_ms
        self.script = script
        self.kinds = kinds
        #: The faults applied, in order.
        self.recorded: list[Fault] = []
        self.counts: Counter[str] = Counter()
        self.draws = 0
        self._next: Event | None = None
        self._pending: list[Event] = []
        #: The heal events of active partitions (a ``heal`` fault cancels them).
        self._heals: list[Event] = []
        #: Blocked directions and how many active partitions block each.
        self._blocks: Counter[tuple[str, str]] = Counter()
        #: A node lost stored bytes and :func:`isr_full` has not been seen to hold since: it still
        #: counts as failed, so no other node may crash yet.
        self._lossy = False
        self.running = False

    # -- the plan ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.running = True
        self._schedule_next()

    def stop(self) -> None:
        """No more faults; partitions heal, spikes end, down nodes restart (the liveness phase)."""
        self.running = False
        if self._next is not None:
            self._next.cancel()
            self._next = None
        for event in self._pending:
            event.cancel()
        self._pending.clear()
        self._blocks.clear()
        self.network.unblock(None)
        self.network.extra_ms.clear()
        for host in self.hosts:
            if not host.up:
                host.start()

    def _schedule_next(self) -> None:
        gap = 1 + int(self.rng.expovariate(1 / self.interval_ms))
        self._next = self.scheduler.after(gap, "faults draw", self._on_draw)

    def _draw(self) -> _Draw:
        rng = self.rng
        point = rng.random() * _CUMULATIVE[-1]
        kind = FAULT_KINDS[next(i for i, c in enumerate(_CUMULATIVE) if point < c)]
        return _Draw(
            kind,
            rng.getrandbits(30),
            rng.getrandbits(30),
            500 + int(rng.random() * 4500),
            20 + int(rng.random() * 480),
            rng.getrandbits(32),
        )

    def _on_draw(self) -> None:
        self._next = None
        self.draws += 1
        index = self.draws
        draw = self._draw()
        if (self.script is None or index in self.script) and (self.kinds is None or draw.kind in self.kinds):
            fault = self._apply(index, draw)
            if fault is not None:
                self.recorded.append(fault)
                self.counts[fault.kind] += 1
                if self.scheduler.trace is not None:
                    self.scheduler.trace.append(f"{self.scheduler.now_ms} {fault.line()}")
        if self.running:
            self._schedule_next()

    def _later(self, delay_ms: int, label: str, action: Callable[[], None]) -> Event:
        now = self.scheduler.now_ms
        self._pending = [e for e in self._pending if not e.cancelled and e.time_ms > now]
        self._heals = [e for e in self._heals if not e.cancelled and e.time_ms > now]
        event = self.scheduler.after(delay_ms, label, action)
        self._pending.append(event)
        return event

    # -- applying ---------------------------------------------------------------------------------
    def _apply(self, index: int, draw: _Draw) -> Fault | None:
        kind = draw.kind
        hosts = self.hosts
        now = self.scheduler.now_ms
        host = hosts[draw.pick % len(hosts)]
        if kind in ("kill", "power-loss", "disk-fault"):
            if any(not h.up for h in hosts) or (kind == "disk-fault" and len(hosts) == 1):
                return None
            if kind != "kill" and self._nodes_cut():
                # Registrations read across a partition (or a spike) are stale: the ISRs may
                # already be shrinking towards the node about to lose its bytes (seeds 2390, 8099).
                return None
            if kind != "kill" or self._lossy:
                # A node that lost stored bytes is failed until it holds the committed records
                # again, though up: Kafka keeps it in every ISR meanwhile (the controller cannot
                # tell what its unclean shutdown lost, ELR aside), so if the other members then
                # crash and are fenced, it is the last one fenced, stays alone in the ISR and is
                # elected with what it has (KIP-966's last replica standing; seed 3201).
                if not isr_full(hosts):
                    return None
                self._lossy = False
            lost = host.crash(kind, random.Random(draw.seed))
            self._lossy = kind != "kill"
            restart_ms = draw.duration_ms
            self._later(restart_ms, f"fault {index} restart {host.location}", lambda: self._restart(host))
            return Fault(
                index, now, kind, host.location, f"restart +{restart_ms}ms" + (f" {lost}" if lost else "")
            )
        if kind in ("partition", "partition-one-way"):
            if len(hosts) < 2:  # no other node to cut it from
                return None
            if not self._lossy_caught_up():
                # The node that lost bytes is still named in the ISRs while it has not caught
                # up, its old incarnation perhaps not fenced yet; a partition now takes the
                # others out (a leader shrinks its ISR, the controller fences a broker it no
                # longer hears) and leaves it the last replica standing, elected with what its
                # unclean shutdown left (no ELR): Kafka's guarantee needs a live in-sync copy,
                # and there is none (seed 2390).
                return None
            others = [h.location for h in hosts if h is not host]
            if kind == "partition":
                pairs = [(host.location, o) for o in others] + [(o, host.location) for o in others]
                target = f"{host.location}|{','.join(others)}"
            else:
                other = others[draw.pick2 % len(others)]
                pairs = [(host.location, other)]
                target = f"{host.location}>{other}"
            self._block(index, pairs, draw.duration_ms)
            return Fault(index, now, kind, target, f"heal +{draw.duration_ms}ms")
        if kind == "partition-client":
            clients = self._clients()
            if not clients:
                return None
            client = clients[draw.pick2 % len(clients)]
            way = draw.seed % 3
            pairs = [(client, host.location), (host.location, client)]
            if way < 2:
                pairs = [pairs[way]]
            arrow = "|" if way == 2 else ">" if way == 0 else "<"
            self._block(index, pairs, draw.duration_ms)
            return Fault(index, now, kind, f"{client}{arrow}{host.location}", f"heal +{draw.duration_ms}ms")
        if kind == "heal":
            if not self._blocks:
                return None
            self._blocks.clear()
            for event in self._heals:
                event.cancel()
            self._heals.clear()
            self.network.unblock(None)
            return Fault(index, now, kind, "all")
        if kind == "reset":
            conns = sorted(self.network.conns)
            if not conns:
                return None
            conn = self.network.conns[conns[draw.pick2 % len(conns)]]
            target = f"{conn.id}:{conn.locs[0]}>{conn.locs[1]}"
            self.network.reset(conn)
            return Fault(index, now, kind, target)
        if kind == "latency-spike":
            if len(hosts) > 1 and not self._lossy_caught_up():
                # A spike cuts a node's heartbeats and fetches as a partition does: not while the
                # node that lost bytes may be left the last replica standing (as partitions).
                return None
            where = host.location
            extra = self.network.extra_ms
            extra[where] = extra.get(where, 0) + draw.amount_ms

            def end() -> None:
                left = extra.get(where, 0) - draw.amount_ms
                if left > 0:
                    extra[where] = left
                else:
                    extra.pop(where, None)

            self._later(draw.duration_ms, f"fault {index} spike-end {where}", end)
            return Fault(index, now, kind, where, f"+{draw.amount_ms}ms for {draw.duration_ms}ms")
        assert kind == "clock-jump"
        jump = draw.amount_ms * 10
        host.jump_clock(jump)
        return Fault(index, now, kind, host.location, f"+{jump}ms")

    def _lossy_caught_up(self) -> bool:
        """No node counts as failed for lost bytes: none lost any since :func:`isr_full` last
        held, or it holds now (which ends the node's failed state)."""
        if self._lossy and not isr_full(self.hosts):
            return False
        self._lossy = False
        return True

    def _nodes_cut(self) -> bool:
        """Whether a partition in force blocks a direction between two nodes, or a latency spike
        slows a node of several. A spike of a few hundred ms each way outlasts the 1 s requests of
        heartbeats and quorum fetches, so it cuts as a partition does: in seed 8099 the active
        controller, slowed by +486 ms, fenced the two live brokers and kept the one whose last
        heartbeats, sent before it lost power, arrived late; the ISRs shrank to that node, which
        was elected on its return with what its power loss left."""
        nodes = {h.location for h in self.hosts}
        if len(nodes) > 1 and any(where in nodes for where in self.network.extra_ms):
            return True
        return any(a in nodes and b in nodes for a, b in self._blocks)

    def _restart(self, host: NodeHost) -> None:
        if not host.up:
            host.start()

    def _block(self, index: int, pairs: list[tuple[str, str]], duration_ms: int) -> None:
        self._blocks.update(pairs)
        self.network.block(pairs)

        def heal() -> None:
            self._blocks.subtract(pairs)
            healed = [p for p in pairs if self._blocks[p] <= 0]
            for p in healed:
                del self._blocks[p]
            self.network.unblock(healed)

        self._heals.append(self._later(duration_ms, f"fault {index} heal", heal))
