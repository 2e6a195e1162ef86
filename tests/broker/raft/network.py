"""A tiny in-memory network of KRaft replicas on virtual time, for the raft tests.

Every request and answer goes through the real codec (encoded at a fixed version and decoded),
arrives after a seeded 1-5 ms latency, and can be dropped by a partition; a dead node's requests
fail at once. Each node keeps its files in a :class:`MemoryStorage` (``kill`` drops what was not
fsynced) and the values its replica committed, in order (a loaded snapshot replaces them).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kafka_wire.broker.cluster_view import Outbound
from kafka_wire.broker.effects import EffectSink
from kafka_wire.broker.raft import CommittedBatch, KRaftReplica, QuorumRole, RaftConfig, SnapshotLoad, Voter
from kafka_wire.broker.state import Waiting
from kafka_wire.codec.structs import Message
from kafka_wire.testing.memory_storage import MemoryStorage

#: The version each request goes out at (what Kafka 3.9's KRaft client sends, or newer).
VERSIONS: dict[int, int] = {1: 17, 52: 2, 53: 1, 54: 1, 55: 2, 59: 1}
CLUSTER_ID = "test-cluster-id-0000000"


def roundtrip(body: Message, version: int) -> Message:
    """``body`` as the peer decodes it."""
    decoded: Message = type(body).decode(body.encode(version), version)
    return decoded


@dataclass
class Node:
    node_id: int
    config: RaftConfig
    storage: MemoryStorage = field(default_factory=MemoryStorage)
    sink: EffectSink = field(default_factory=EffectSink)
    replica: KRaftReplica | None = None
    applied: list[bytes] = field(default_factory=list)
    snapshots_loaded: int = 0

    @property
    def alive(self) -> bool:
        return self.replica is not None

    @property
    def r(self) -> KRaftReplica:
        assert self.replica is not None, f"node {self.node_id} is down"
        return self.replica


@dataclass(order=True)
class _Event:
    at_ms: int
    seq: int
    action: Callable[[], None] = field(compare=False)


class Network:
    def __init__(
        self,
        voters: int,
        observers: int = 0,
        *,
        seed: int = 0,
        cluster_id: str | None = CLUSTER_ID,
        config: Callable[[int, tuple[Voter, ...]], RaftConfig] | None = None,
    ) -> None:
        self.now_ms = 0
        self.rng = random.Random(seed)
        self.seed = seed
        voter_list = tuple(Voter(i, "127.0.0.1", 19000 + i) for i in range(1, voters + 1))
        self.nodes: dict[int, Node] = {}
        for node_id in range(1, voters + observers + 1):
            cfg = (
                config(node_id, voter_list)
                if config is not None
                else RaftConfig(node_id=node_id, voters=voter_list, cluster_id=cluster_id)
            )
            self.nodes[node_id] = Node(node_id, cfg)
        self._events: list[_Event] = []
        self._seq = 0
        self._waiting: list[tuple[Waiting, Node, KRaftReplica, Outbound, int]] = []
        #: Pairs of node ids that cannot reach each other.
        self.cut: set[frozenset[int]] = set()
        #: The chance that a request, or its answer, is lost (its sender learns at its timeout).
        self.drop_rate = 0.0
        #: Every (epoch, leader) seen: at most one leader per epoch.
        self.leaders: dict[int, int] = {}
        self.sent: list[tuple[int, int, Message]] = []
        self.leader_hw: dict[tuple[int, int], int] = {}

    # -- nodes --------------------------------------------------------------------------------------
    def start(self, node_id: int | None = None) -> None:
        for node in self.nodes.values() if node_id is None else [self.nodes[node_id]]:
            assert node.replica is None
            node.replica = KRaftReplica(
                node.config, node.storage, node.sink, random.Random(self.rng.random())
            )
            node.applied = []
            self._call(node, lambda r: r.start(self.now_ms))

    def kill(self, node_id: int, *, lose_unsynced: bool = True) -> None:
        node = self.nodes[node_id]
        node.replica = None
        node.sink.take()
        if lose_unsynced:
            node.storage.crash()
        self._waiting = [w for w in self._waiting if w[1] is not node]

    def restart(self, node_id: int) -> None:
        self.kill(node_id)
        self.start(node_id)

    def _call(self, node: Node, fn: Callable[[KRaftReplica], object]) -> object:
        replica = node.r
        result = fn(replica)
        node.storage.apply(node.sink.take())
        self._collect(node)
        return result

    def settle(self, node: Node) -> None:
        """Apply a node's storage effects and take what it committed (after calling it directly)."""
        node.storage.apply(node.sink.take())
        self._collect(node)

    def _collect(self, node: Node) -> None:
        replica = node.r
        for item in replica.take_committed():
            if isinstance(item, SnapshotLoad):
                node.applied = list(item.records)
                node.snapshots_loaded += 1
            else:
                assert isinstance(item, CommittedBatch)
                node.applied.extend(item.records)
        self._check(node)

    def _check(self, node: Node) -> None:
        replica = node.r
        if replica.role is QuorumRole.LEADER:
            seen = self.leaders.setdefault(replica.epoch, node.node_id)
            assert seen == node.node_id, f"two leaders in epoch {replica.epoch}: {seen} and {node.node_id}"
            key = (node.node_id, replica.epoch)
            assert replica.high_watermark >= self.leader_hw.get(key, 0), "a leader's high watermark went back"
            self.leader_hw[key] = replica.high_watermark
        assert replica.high_watermark <= replica.log_end_offset
        # everything applied anywhere agrees: each node's applied values are a prefix of the longest
        longest = max((n.applied for n in self.nodes.values()), key=len)
        for other in self.nodes.values():
            assert other.applied == longest[: len(other.applied)], (
                f"node {other.node_id} applied values diverge (seed {self.seed})"
            )

    # -- the network --------------------------------------------------------------------------------
    def partition(self, *groups: Iterable[int]) -> None:
        """Cut every link between nodes of different groups (nodes in no group are cut from all)."""
        sets = [set(g) for g in groups]
        self.cut = set()
        ids = list(self.nodes)
        for a in ids:
            for b in ids:
                if a < b and not any(a in s and b in s for s in sets):
                    self.cut.add(frozenset((a, b)))

    def heal(self) -> None:
        self.cut = set()

    def _schedule(self, at_ms: int, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._events, _Event(at_ms, self._seq, action))

    def _latency(self) -> int:
        return self.rng.randint(1, 5)

    def _send(self, source: Node, replica: KRaftReplica, out: Outbound) -> None:
        api_key = type(out.body).API_KEY
        assert api_key is not None
        version = VERSIONS[api_key]
        self.sent.append((source.node_id, out.destination, out.body))
        request = roundtrip(out.body, version)
        target = self.nodes.get(out.destination)
        if target is None or not target.alive:
            self._schedule(self.now_ms + 1, lambda: self._reply(source, replica, out, None))
            return
        if frozenset((source.node_id, out.destination)) in self.cut or self.rng.random() < self.drop_rate:
            self._schedule(self.now_ms + out.timeout_ms, lambda: self._reply(source, replica, out, None))
            return

        def deliver() -> None:
            if not target.alive or frozenset((source.node_id, target.node_id)) in self.cut:
                self._schedule(self.now_ms + out.timeout_ms, lambda: self._reply(source, replica, out, None))
                return
            answer = self._call(target, lambda r: r.handle(api_key, version, request, self.now_ms))
            if isinstance(answer, Message):
                self._answer(target, source, replica, out, answer, version)
            else:
                assert hasattr(answer, "poll")
                self._waiting.append((answer, target, replica, out, version))  # type: ignore[arg-type]  # a Waiting

        self._schedule(self.now_ms + self._latency(), deliver)

    def _answer(
        self, target: Node, source: Node, replica: KRaftReplica, out: Outbound, answer: Message, version: int
    ) -> None:
        body = roundtrip(answer, version)
        if frozenset((source.node_id, target.node_id)) in self.cut or self.rng.random() < self.drop_rate:
            self._schedule(self.now_ms + out.timeout_ms, lambda: self._reply(source, replica, out, None))
            return
        self._schedule(self.now_ms + self._latency(), lambda: self._reply(source, replica, out, body))

    def _reply(self, source: Node, replica: KRaftReplica, out: Outbound, body: Message | None) -> None:
        if source.replica is not replica:
            return  # the node restarted since: the answer is for a replica that is gone
        self._call(source, lambda r: out.on_reply(body, self.now_ms))

    # -- running ------------------------------------------------------------------------------------
    def _pump(self) -> None:
        """Send what the replicas want sent and answer waiting fetches that are ready."""
        progress = True
        while progress:
            progress = False
            for node in self.nodes.values():
                if node.alive:
                    replica = node.r
                    outs = replica.poll_outbound(self.now_ms)
                    node.storage.apply(node.sink.take())
                    for out in outs:
                        self._send(node, replica, out)
            still: list[tuple[Waiting, Node, KRaftReplica, Outbound, int]] = []
            for waiting, target, source_replica, out, version in self._waiting:
                answer = waiting.poll(self.now_ms) if target.alive else None
                if isinstance(answer, Message):
                    source = self.nodes[source_replica.node_id]
                    self._answer(target, source, source_replica, out, answer, version)
                    progress = True
                elif target.alive:
                    still.append((waiting, target, source_replica, out, version))
            self._waiting = still

    def _next_time(self) -> int | None:
        times: list[int] = []
        if self._events:
            times.append(self._events[0].at_ms)
        for node in self.nodes.values():
            if node.alive:
                deadline = node.r.next_deadline_ms()
                if deadline is not None:
                    times.append(deadline)
        times.extend(w[0].deadline_ms for w in self._waiting)
        return min(times) if times else None

    def run(self, duration_ms: int) -> None:
        """Run the cluster for ``duration_ms`` of virtual time."""
        end = self.now_ms + duration_ms
        while True:
            self._pump()
            at = self._next_time()
            if at is None or at > end:
                self.now_ms = end
                return
            self.now_ms = max(self.now_ms, at)
            while self._events and self._events[0].at_ms <= self.now_ms:
                heapq.heappop(self._events).action()
            for node in self.nodes.values():
                if node.alive:
                    deadline = node.r.next_deadline_ms()
                    if deadline is not None and deadline <= self.now_ms:
                        self._call(node, lambda r: r.tick(self.now_ms))

    def run_until(self, condition: Callable[[], bool], limit_ms: int = 30_000) -> None:
        end = self.now_ms + limit_ms
        while not condition():
            assert self.now_ms < end, f"condition not reached within {limit_ms} ms (seed {self.seed})"
            self.run(10)

    # -- questions ----------------------------------------------------------------------------------
    def leader(self) -> Node | None:
        """The live leader of the highest epoch, if any."""
        best: Node | None = None
        for node in self.nodes.values():
            if node.alive and node.r.is_leader and (best is None or node.r.epoch > best.r.epoch):
                best = node
        return best

    def wait_for_leader(self, limit_ms: int = 30_000) -> Node:
        self.run_until(lambda: self.leader() is not None and self.leader_settled(), limit_ms)
        leader = self.leader()
        assert leader is not None
        return leader

    def leader_settled(self) -> bool:
        leader = self.leader()
        return leader is not None and leader.r.leader_ready

    def append(self, values: list[bytes]) -> int:
        leader = self.leader()
        assert leader is not None
        offset = self._call(leader, lambda r: r.append(values, self.now_ms))
        assert isinstance(offset, int)
        return offset
