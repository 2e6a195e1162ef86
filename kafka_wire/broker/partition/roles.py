"""A replica's role as a state machine: leader, follower or offline, with its leader epoch.

A single-node broker leads every partition here at epoch 0. In a cluster the controller's
decisions (metadata deltas, see ``kafka_wire.broker.replication.manager``) move a replica
between roles, each leadership with a newer epoch, and a leader records the offset its epoch
starts at in the epoch cache (``epoch_cache.py``), used to answer OffsetForLeaderEpoch and to
truncate followers.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.broker.partition.epoch_cache import EpochCache
from kafka_wire.errors import LocalProtocolError
from kafka_wire.protocol.machine import step


class ReplicaRole(enum.Enum):
    LEADER = "LEADER"
    FOLLOWER = "FOLLOWER"
    OFFLINE = "OFFLINE"


class RoleInput(enum.Enum):
    BECOME_LEADER = "become leader"
    BECOME_FOLLOWER = "become follower"
    GO_OFFLINE = "go offline"


_R = ReplicaRole
_I = RoleInput

#: Every legal move; anything else raises LocalProtocolError.
REPLICA_TRANSITIONS: Final[Mapping[tuple[ReplicaRole, RoleInput], ReplicaRole]] = {
    (_R.LEADER, _I.BECOME_LEADER): _R.LEADER,
    (_R.LEADER, _I.BECOME_FOLLOWER): _R.FOLLOWER,
    (_R.LEADER, _I.GO_OFFLINE): _R.OFFLINE,
    (_R.FOLLOWER, _I.BECOME_LEADER): _R.LEADER,
    (_R.FOLLOWER, _I.BECOME_FOLLOWER): _R.FOLLOWER,
    (_R.FOLLOWER, _I.GO_OFFLINE): _R.OFFLINE,
    (_R.OFFLINE, _I.BECOME_LEADER): _R.LEADER,
    (_R.OFFLINE, _I.BECOME_FOLLOWER): _R.FOLLOWER,
}


@dataclass(slots=True)
class Leadership:
    """Role, leader epoch, current leader and the epoch cache of one replica."""

    node_id: int
    role: ReplicaRole = ReplicaRole.LEADER
    epoch: int = 0
    leader_id: int = -1
    #: (epoch, start offset) pairs, epochs and offsets increasing; the single-node broker leads
    #: at epoch 0 from offset 0 and keeps it in memory, a cluster member persists it.
    cache: EpochCache = field(default_factory=lambda: EpochCache([(0, 0)]))

    def __post_init__(self) -> None:
        if self.leader_id == -1 and self.role is ReplicaRole.LEADER:
            self.leader_id = self.node_id

    @property
    def epoch_starts(self) -> list[tuple[int, int]]:
        return self.cache.entries

    def _move(self, move: RoleInput) -> None:
        self.role = step(REPLICA_TRANSITIONS, self.role, move, machine=f"replica on node {self.node_id}")

    def become_leader(self, epoch: int, log_end_offset: int) -> None:
        """Lead from ``epoch``; the epoch starts at this replica's log end offset."""
        if epoch < self.epoch or (epoch == self.epoch and self.role is ReplicaRole.LEADER):
            raise LocalProtocolError(f"leader epoch {epoch} does not follow {self.epoch}")
        if self.cache.latest_epoch > epoch:
            raise LocalProtocolError(
                f"leader epoch {epoch} is older than the cached {self.cache.latest_epoch}"
            )
        self._move(RoleInput.BECOME_LEADER)
        self.epoch, self.leader_id = epoch, self.node_id
        self.cache.assign(epoch, log_end_offset)

    def become_follower(self, epoch: int, leader_id: int) -> None:
        if epoch < self.epoch:
            raise LocalProtocolError(f"leader epoch {epoch} is older than {self.epoch}")
        self._move(RoleInput.BECOME_FOLLOWER)
        self.epoch, self.leader_id = epoch, leader_id

    def go_offline(self) -> None:
        self._move(RoleInput.GO_OFFLINE)
        self.leader_id = -1

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch (see :meth:`EpochCache.end_offset_for`)."""
        return self.cache.end_offset_for(epoch, log_end_offset)
