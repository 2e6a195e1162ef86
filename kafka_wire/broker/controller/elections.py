"""Partition changes and leader elections by the rules of Kafka's ``PartitionChangeBuilder``.

:func:`build_partition_change` takes a partition's registration and the change wanted (a target
ISR, replica set or recovery state, an election kind) and returns the ``PartitionChangeRecord``
that makes it, or None when nothing would change. In order, as Kafka:

1. A reassignment whose target replicas are all in the target ISR completes (removing replicas
   leave the ISR and the replica set; adding and removing lists are cleared).
2. With ELR (KIP-966) on, an ISR below ``min.insync.replicas`` keeps the replicas that left it as
   eligible leader replicas (ELR); an ISR at or above it clears the ELR.
3. Leader choice: a valid leader is in the target ISR (or, when that is empty, in the ELR) and
   acceptable (registered, unfenced, not shutting down). ``ONLINE`` keeps the current leader if
   valid, else the first valid replica in replica order; ``PREFERRED`` tries the first replica
   first; ``UNCLEAN`` falls back to any acceptable replica, and then the ISR becomes [leader] and
   the partition RECOVERING (data may be lost). No valid replica: the partition has no leader
   (offline). A leader elected from the ELR becomes the whole ISR.
4. A reassignment that drops a current replica bumps the leader epoch even when the leader stays.
5. The record carries only what changed; applying it bumps the partition epoch, and the leader
   epoch when it names a leader (``image.merge_partition_change``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.cluster_view import LeaderRecoveryState, PartitionState
from kafka_wire.broker.controller.topics_image import NO_LEADER, NO_LEADER_CHANGE, NO_RECOVERY_CHANGE
from kafka_wire.quick_dataclass import dataclass

if TYPE_CHECKING:
    from kafka_wire.messages import (
        PartitionChangeRecord,
    )


class Election(enum.Enum):
    """Kafka's ``PartitionChangeBuilder.Election``."""

    #: Elect the first replica if it is valid, else keep the partition online.
    PREFERRED = "preferred"
    #: Keep the partition online: the current leader if valid, else the first valid replica.
    ONLINE = "online"
    #: As ONLINE, then any acceptable replica when no in-sync one is left (may lose data).
    UNCLEAN = "unclean"


@dataclass(frozen=True, slots=True)
class ElectionResult:
    node: int
    unclean: bool


class _Builder:
    def __init__(
        self,
        partition: PartitionState,
        acceptable: Callable[[int], bool],
        election: Election,
        min_isr: int,
        elr_enabled: bool,
        unclean_shutdown_replicas: Collection[int],
        hooks: Hooks,
    ) -> None:
        self.partition = partition
        self.hooks = hooks
        self.acceptable = acceptable
        self.election = election
        self.min_isr = min_isr
        self.elr_enabled = elr_enabled
        self.unclean_shutdown = unclean_shutdown_replicas
        self.isr = list(partition.isr)
        self.replicas = list(partition.replicas)
        self.adding = list(partition.adding_replicas)
        self.removing = list(partition.removing_replicas)
        self.elr = list(partition.elr)
        self.last_known_elr = list(partition.last_known_elr)
        self.recovery = partition.leader_recovery_state

    def valid_leader(self, replica: int) -> bool:
        in_isr = replica in self.isr or (not self.isr and replica in self.elr)
        return in_isr and self.acceptable(replica)

    def elect(self) -> ElectionResult:
        current = self.partition.leader
        if self.election is Election.PREFERRED:
            if self.replicas and self.valid_leader(self.replicas[0]):
                return ElectionResult(self.replicas[0], False)
            if self.valid_leader(current):
                return ElectionResult(current, False)
            candidates = self.replicas[1:]
        else:
            if self.valid_leader(current):
                return ElectionResult(current, False)
            candidates = self.replicas
        for replica in candidates:
            if self.valid_leader(replica):
                return ElectionResult(replica, False)
        if self.election is Election.UNCLEAN or (
            self.election is Election.ONLINE and self.hooks.planted("unclean-election")
        ):  # the second: a planted bug, unclean with the flag off
            for replica in self.replicas:
                if self.acceptable(replica):
                    return ElectionResult(replica, True)
        return ElectionResult(NO_LEADER, False)

    def complete_reassignment(self) -> None:
        if not self.adding and not self.removing:
            return
        isr, replicas = self.isr, self.replicas
        if self.removing:
            isr = [r for r in self.isr if r not in self.removing]
            replicas = [r for r in self.replicas if r not in self.removing]
            if not isr or not replicas:
                return
        if not all(r in isr for r in replicas):
            return
        self.isr, self.replicas, self.adding, self.removing = isr, replicas, [], []

    def populate_elr(self) -> None:
        if not self.elr_enabled:
            return
        if len(self.isr) >= self.min_isr:
            self.elr, self.last_known_elr = [], []
            return
        in_isr = set(self.isr)
        candidates = set(self.elr) | set(self.partition.isr)
        self.elr = sorted(r for r in candidates if r not in in_isr and r not in self.unclean_shutdown)
        candidates |= set(self.last_known_elr)
        self.last_known_elr = sorted(r for r in candidates if r not in in_isr and r not in self.elr)

    def build(self) -> PartitionChangeRecord | None:
        p = self.partition
        record = messages.PartitionChangeRecord(
            topic_id=p.topic_id,
            partition_id=p.partition,
            isr=None,
            leader=NO_LEADER_CHANGE,
            replicas=None,
            removing_replicas=None,
            adding_replicas=None,
            leader_recovery_state=NO_RECOVERY_CHANGE,
            eligible_leader_replicas=None,
            last_known_elr=None,
        )
        self.complete_reassignment()
        self.populate_elr()
        result = self.elect()
        if result.node != p.leader:
            if result.node in self.elr:
                self.isr = [result.node]
                self.elr = [r for r in self.elr if r != result.node]
            record.leader = result.node
            if result.unclean:
                record.isr = [result.node]
                if p.leader_recovery_state is not LeaderRecoveryState.RECOVERING:
                    record.leader_recovery_state = int(LeaderRecoveryState.RECOVERING)
        if record.leader == NO_LEADER_CHANGE and not all(r in self.replicas for r in p.replicas):
            record.leader = p.leader  # a replica leaves: the leader epoch moves on
        if record.isr is not None or not self.elr_enabled:
            self.elr, self.last_known_elr = [], []
        if tuple(self.elr) != p.elr:
            record.eligible_leader_replicas = self.elr
        if tuple(self.last_known_elr) != p.last_known_elr:
            record.last_known_elr = self.last_known_elr
        if record.isr is None and (self.isr or self.elr_enabled) and tuple(self.isr) != p.isr:
            record.isr = self.isr
        if self.replicas and tuple(self.replicas) != p.replicas:
            record.replicas = self.replicas
        if tuple(self.removing) != p.removing_replicas:
            record.removing_replicas = self.removing
        if tuple(self.adding) != p.adding_replicas:
            record.adding_replicas = self.adding
        if self.recovery is not p.leader_recovery_state:
            record.leader_recovery_state = int(self.recovery)
        return None if is_no_op(record) else record


def is_no_op(record: PartitionChangeRecord) -> bool:
    """Whether ``record`` changes nothing (Kafka's ``changeRecordIsNoOp``)."""
    return (
        record.isr is None
        and record.eligible_leader_replicas is None
        and record.last_known_elr is None
        and record.leader == NO_LEADER_CHANGE
        and record.replicas is None
        and record.removing_replicas is None
        and record.adding_replicas is None
        and record.leader_recovery_state == NO_RECOVERY_CHANGE
    )


def build_partition_change(
    partition: PartitionState,
    acceptable: Callable[[int], bool],
    *,
    election: Election = Election.ONLINE,
    min_isr: int = 1,
    target_isr: Sequence[int] | None = None,
    target_replicas: Sequence[int] | None = None,
    target_adding: Sequence[int] | None = None,
    target_removing: Sequence[int] | None = None,
    target_leader_recovery_state: LeaderRecoveryState | None = None,
    elr_enabled: bool = True,
    unclean_shutdown_replicas: Collection[int] = (),
    hooks: Hooks = OFF,
) -> PartitionChangeRecord | None:
    """The record that moves ``partition`` to the targets (each None: as it is) and elects its
    leader by ``election``, or None when nothing changes. ``acceptable(broker)`` says whether a
    broker may lead (registered, unfenced, not in controlled shutdown); ``hooks`` are the
    simulator's planted bugs."""
    builder = _Builder(
        partition, acceptable, election, min_isr, elr_enabled, unclean_shutdown_replicas, hooks
    )
    if target_isr is not None:
        builder.isr = list(target_isr)
    if target_replicas is not None:
        builder.replicas = list(target_replicas)
    if target_adding is not None:
        builder.adding = list(target_adding)
    if target_removing is not None:
        builder.removing = list(target_removing)
    if target_leader_recovery_state is not None:
        builder.recovery = target_leader_recovery_state
    return builder.build()


def preferred_leader_is_leader(partition: PartitionState) -> bool:
    """Whether the partition is led by its first replica (no preferred election needed)."""
    return bool(partition.replicas) and partition.leader == partition.replicas[0]
