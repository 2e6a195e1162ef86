"""The simulator's checker: Kafka's invariants after every event, Jepsen's anomalies at the end.

:class:`Checker` is what the world calls (``violations.CheckerLike``): :meth:`Checker.after_event`
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
from kafka_wire.sim.checker.groups import GroupChecker
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
    raft_of,
    read_log,
    snap_raft,
    snap_replica,
)
from kafka_wire.sim.checker.steps import StepChecker, image_partitions
from kafka_wire.sim.checker.violations import CheckerLike, Violation

if TYPE_CHECKING:
    from kafka_wire.broker.broker import Broker
    from kafka_wire.broker.cluster_view import PartitionState
    from kafka_wire.broker.controller.image import MetadataImage
    from kafka_wire.broker.raft.replica import KRaftReplica
    from kafka_wire.sim.contracts import WorldView

__all__ = ["Checker", "CheckerLike", "EndReport", "Violation", "check_end"]


class Checker:
    """Per-step and end checks over a :class:`~kafka_wire.sim.contracts.WorldView`."""

    def __init__(self) -> None:
        self.steps = StepChecker()
        self.groups = GroupChecker()
        self.expected: Counter[str] = Counter()
        self._rafts: dict[int, KRaftReplica] = {}
        self._brokers: dict[int, Broker] = {}
        self._image_objects: dict[int, MetadataImage] = {}
        self._prints: dict[tuple[int, TopicPartition], Fingerprint] = {}
        self._configured = False

    def after_event(self, world: WorldView) -> list[Violation]:
        steps = self.steps
        if not self._configured:
            steps.unclean_allowed = world.unclean_elections()
            self._configured = True
        now = world.now_ms
        snaps: list[ReplicaSnap] = []
        rafts = []
        restarted: list[int] = []
        out: list[Violation] = []
        for host in world.nodes():
            node_id = host.node_id
            if host.storage_losses:
                steps.note_losses(node_id, len(host.storage_losses))
            broker = host.broker
            if broker is None:
                continue
            if self._brokers.get(node_id) is not broker:
                if node_id in self._brokers:
                    steps.restarted(node_id)
                self._brokers[node_id] = broker
            snaps += changed_snaps(node_id, broker, self._prints)
            node = host.node
            raft = raft_of(node)
            if raft is not None:
                if self._rafts.get(node_id) is not raft:
                    if node_id in self._rafts:
                        restarted.append(node_id)
                    self._rafts[node_id] = raft
                snap = snap_raft(node_id, node)
                if snap is not None:
                    rafts.append(snap)
            image = image_of(node)
            if image is not None:
                if self._image_objects.get(node_id) is not image:
                    if node_id in self._image_objects:
                        steps.forget_image(node_id)
                    self._image_objects[node_id] = image
                out += steps.check_image(
                    now,
                    node_id,
                    image.offset,
                    _Lazy(image.partition, world.topics()),
                    partial(is_fenced, image),
                )
        out += steps.check_replicas(now, snaps)
        out += steps.check_raft(now, rafts, restarted)
        out += self.groups.check(world.history)
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
