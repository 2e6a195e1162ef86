"""The simulator's checker: Kafka's invariants after every event, Jepsen's anomalies at the end.

:class:`Checker` is what the world calls (``contracts.Checker``): :meth:`Checker.after_event`
reads every live node through ``observe.py`` and runs the per-step invariants (``steps.py``) and
the group invariants over the new History ops (``groups.py``); :meth:`Checker.at_end` runs them a
last time, then the end checks over the History and the replica logs (``ends.py``). Anomalies the
failure model allows (acks=0/1 losses, losses after an unclean election) are counted in
:attr:`Checker.expected`, not reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

from kafka_wire.sim.checker.ends import EndReport, check_end
from kafka_wire.sim.checker.groups import GroupChecker, consumer_group_owners
from kafka_wire.sim.checker.observe import (
    Fingerprint,
    LogContents,
    ReplicaSnap,
    TopicPartition,
    changed_snaps,
    image_of,
    is_fenced,
    leader_of,
    partition_replicas,
    producers_unknown,
    raft_of,
    raft_print,
    raft_snap,
    read_log,
    snap_replica,
)
from kafka_wire.sim.checker.shares import ShareChecker
from kafka_wire.sim.checker.steps import StepChecker, image_partitions
from kafka_wire.sim.contracts import Violation

if TYPE_CHECKING:
    from kafka_wire.broker.broker import Broker
    from kafka_wire.broker.cluster_view import PartitionState
    from kafka_wire.broker.controller.image import MetadataImage
    from kafka_wire.broker.node import Node as ClusterNode
    from kafka_wire.broker.raft.replica import KRaftReplica
    from kafka_wire.sim.contracts import WorldView

__all__ = ["Checker", "EndReport", "Violation", "check_end"]


class Checker:
    """Per-step and end checks over a :class:`~kafka_wire.sim.contracts.WorldView`."""

    def __init__(self, *, shares: ShareChecker | None = None) -> None:
        self.steps = StepChecker()
        self.groups = GroupChecker()
        #: The share group invariants (the share workload's), when asked for.
        self.shares = shares
        self.expected: Counter[str] = Counter()
        self._brokers: dict[int, Broker] = {}
        #: Per node: its ``calls`` when last read.
        self._calls: dict[int, int] = {}
        #: Per node: its engine's cluster node, raft replica and image (while the same runs).
        self._parts: dict[int, tuple[ClusterNode | None, KRaftReplica, MetadataImage]] = {}
        self._raft_prints: dict[int, tuple[int, object, int, int, int]] = {}
        self._prints: dict[tuple[int, TopicPartition], Fingerprint] = {}
        self._losses: dict[int, int] = {}
        self._topics: list[tuple[str, int]] | None = None
        #: Per node: the partitions its running engine has opened and the checker has read.
        self._opened: dict[int, set[TopicPartition]] = {}

    def after_event(self, world: WorldView) -> list[Violation]:
        steps = self.steps
        if self._topics is None:
            steps.unclean_allowed = world.unclean_elections()
            if self.shares is not None:
                self.shares.failover_loses_state = len(world.nodes()) > 1 and not self.shares.strict
            self._topics = list(world.topics())
        now = world.now_ms
        snaps: list[ReplicaSnap] = []
        live_rafts: list[tuple[int, KRaftReplica]] = []
        raft_moved = False
        restarted: list[int] = []
        out: list[Violation] = []
        for host in world.nodes():
            node_id = host.node_id
            losses = host.storage_losses
            if losses and len(losses) != self._losses.get(node_id, 0):
                self._losses[node_id] = len(losses)
                steps.note_losses(node_id, len(losses))
            broker = host.broker
            if self.shares is not None:
                self.shares.observe(node_id, now, getattr(host, "offset_ms", 0))
            if broker is None:
                continue
            node = host.node
            if self._brokers.get(node_id) is not broker:
                if node_id in self._brokers:
                    steps.restarted(node_id)
                    if self.shares is not None:
                        self.shares.restarted(node_id, now)
                self._brokers[node_id] = broker
                self._opened[node_id] = set()
            elif self._calls.get(node_id) == host.calls:
                # Not called since the last read: nothing in it changed.
                parts = self._parts.get(node_id)
                if parts is not None and parts[0] is node:
                    live_rafts.append((node_id, parts[1]))
                continue
            self._calls[node_id] = host.calls
            out += consumer_group_owners(now, node_id, broker)
            snaps += changed_snaps(node_id, broker, self._prints)
            out += self._opened_replicas(now, node_id, broker)
            parts = self._parts.get(node_id)
            if parts is None or parts[0] is not node:
                raft, image = raft_of(node), image_of(node)
                if raft is None or image is None:
                    continue  # not started yet
                if parts is not None:  # a new engine: its raft and image start again
                    restarted.append(node_id)
                    steps.forget_image(node_id)
                parts = self._parts[node_id] = (node, raft, image)
            _, raft, image = parts
            live_rafts.append((node_id, raft))
            fingerprint = raft_print(raft)
            if self._raft_prints.get(node_id) != fingerprint:
                self._raft_prints[node_id] = fingerprint
                raft_moved = True
            out += steps.check_image(
                now, node_id, image.offset, _Lazy(image.partition, self._topics), partial(is_fenced, image)
            )
        if snaps:
            if self.shares is not None:
                for snap in snaps:
                    self.shares.led(snap.node_id, snap.tp, snap.leader_epoch if snap.is_leader else -1, now)
            out += steps.check_replicas(now, snaps)
        if raft_moved or restarted:
            out += steps.check_raft(now, [raft_snap(n, r) for n, r in live_rafts], restarted)
        if len(world.history.ops) > self.groups.read:
            out += self.groups.check(world.history)
        if self.shares is not None and len(world.history.ops) > self.shares.read:
            out += self.shares.check(world.history)
        return out

    def _opened_replicas(self, now_ms: int, node_id: int, broker: Broker) -> list[Violation]:
        """§7 #13 where a replica opens (a start, a restart, a new replica): its producer state
        knows the last batch of every idempotent producer in its log."""
        opened = self._opened.setdefault(node_id, set())
        replicas = partition_replicas(broker)
        if len(opened) == len(replicas):
            return []
        out: list[Violation] = []
        for tp, replica in replicas.items():
            if tp not in opened:
                opened.add(tp)
                out += [
                    Violation("producer-state-lost", now_ms, f"node {node_id} {tp[0]}-{tp[1]}: {gap}")
                    for gap in producers_unknown(replica)
                ]
        return out

    def at_end(self, world: WorldView) -> list[Violation]:
        out = self.after_event(world)
        logs: dict[TopicPartition, dict[int, LogContents]] = {}
        snaps: dict[TopicPartition, list[ReplicaSnap]] = {}
        wanted = {(name, index) for name, count in world.topics() for index in range(count)}
        for host in world.nodes():
            for tp, replica in partition_replicas(host.broker).items():
                if tp in wanted:
                    logs.setdefault(tp, {})[host.node_id] = read_log(replica)
                    snaps.setdefault(tp, []).append(snap_replica(host.node_id, replica))
        leaders: dict[TopicPartition, int] = {}
        for tp, found in snaps.items():
            leader = leader_of(found)
            if leader is not None:
                leaders[tp] = leader.node_id
        report = check_end(world.history, logs, leaders, self.steps.unclean, world.now_ms)
        self.expected.update(report.expected)
        if self.shares is not None:
            out += self.shares.at_end(world.history, frozenset(name for name, _ in world.topics()))
            self.expected.update(self.shares.expected)
        return out + report.violations


class _Lazy:
    """The image's partitions of the workload's topics, built only when iterated."""

    __slots__ = ("_get", "_topics")

    def __init__(
        self, get: Callable[[str, int], PartitionState | None], topics: Sequence[tuple[str, int]]
    ) -> None:
        self._get = get
        self._topics = topics

    def __iter__(self) -> Iterator[PartitionState]:
        return iter(image_partitions(self._get, self._topics))
