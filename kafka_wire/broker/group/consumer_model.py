"""A KIP-848 consumer group's in-memory model (Kafka's ``ConsumerGroup`` and
``ConsumerGroupMember``) and the pure functions over it.

A consumer group lives in the coordinator's ``Group`` entry of its id (``Group.consumer``), so
that committed offsets stay where every group keeps them. Its state is derived, as in Kafka:
Empty without members, Assigning while the group epoch is ahead of the target assignment's,
Reconciling while a member is not yet at the target assignment's epoch, else Stable.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field, replace
from enum import Enum, IntEnum
from typing import Final

from kafka_wire.broker.group.consumer_records import (
    CURRENT_MEMBER_KEY,
    GROUP_KEY,
    MEMBER_KEY,
    TARGET_MEMBER_KEY,
    TARGET_METADATA_KEY,
    ConsumerKey,
    CurrentMemberValue,
    MemberMetadataValue,
    Partitions,
)
from kafka_wire.messages import ErrorCode

#: ListGroups v5 ``group_type`` of a KIP-848 consumer group.
CONSUMER_GROUP_TYPE: Final = "consumer"
#: The member epoch of a request that leaves the group, and of a static member leaving for a while.
LEAVE_EPOCH: Final = -1
STATIC_LEAVE_EPOCH: Final = -2


class ConsumerGroupState(Enum):
    """Kafka's names, as ListGroups and ConsumerGroupDescribe show them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(IntEnum):
    """A member's reconciliation state; the values are Kafka's (stored as int8)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)

    def copy(self) -> ConsumerMember:
        return replace(self, assigned=dict(self.assigned), pending_revocation=dict(self.pending_revocation))

    def metadata_value(self) -> MemberMetadataValue:
        return MemberMetadataValue(
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.rebalance_timeout_ms,
            self.server_assignor,
        )

    def current_value(self) -> CurrentMemberValue:
        return CurrentMemberValue(
            self.member_epoch,
            self.previous_member_epoch,
            int(self.state),
            self.assigned,
            self.pending_revocation,
        )

    def subscription(self) -> tuple[tuple[str, ...], str | None]:
        return self.subscribed_topic_names, self.subscribed_topic_regex


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    #: instance id -> member id
    static_members: dict[str, str] = field(default_factory=dict)
    #: member id -> target partitions
    target: dict[str, Partitions] = field(default_factory=dict)
    #: The hash of the subscribed topics' metadata at the last epoch bump (stored with the group
    #: epoch, as Kafka 4.1+ does): a different hash (a topic created, deleted or grown) bumps it.
    metadata_hash: int = 0
    #: The topics the members subscribe to, as last computed: name -> (id, partition count).
    #: Not stored: recomputed by every heartbeat.
    subscribed: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict, compare=False)

    def subscribes_to(self, topic: str) -> bool:
        if self.subscribed:
            return topic in self.subscribed
        return any(topic in m.subscribed_topic_names for m in self.members.values())

    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch or member.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def owner_epochs(self) -> dict[tuple[uuid.UUID, int], int]:
        """Every partition owned by a member (assigned or pending revocation) and the owner's
        epoch: Kafka's partition epochs. A partition not here is free (epoch -1)."""
        epochs: dict[tuple[uuid.UUID, int], int] = {}
        for member in self.members.values():
            for owned in (member.assigned, member.pending_revocation):
                for topic_id, partitions in owned.items():
                    for p in partitions:
                        epochs[topic_id, p] = member.member_epoch
        return epochs

    def double_owned(self) -> list[tuple[uuid.UUID, int, str, str]]:
        """Partitions two members own at once (assigned or pending revocation): always empty."""
        owners: dict[tuple[uuid.UUID, int], str] = {}
        out = []
        for member in self.members.values():
            for owned in (member.assigned, member.pending_revocation):
                for topic_id, partitions in owned.items():
                    for p in partitions:
                        first = owners.setdefault((topic_id, p), member.member_id)
                        if first != member.member_id:
                            out.append((topic_id, p, first, member.member_id))
        return out

    def put_member(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        if member is not None and member.instance_id is not None:
            if self.static_members.get(member.instance_id) == member_id:
                del self.static_members[member.instance_id]
        return member

    def preferred_assignor(self, default: str) -> str:
        """The assignor most members ask for (ties: the name first in sort order), else ``default``."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor is not None:
                counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
        if not counts:
            return default
        return min(counts, key=lambda name: (-counts[name], name))

    def commit_error(self, member_id: str, member_epoch: int, api_version: int | None) -> ErrorCode | None:
        """Why an OffsetCommit (``api_version``) or OffsetFetch (None) naming ``member_id`` at
        ``member_epoch`` is refused (Kafka's ``validateOffsetCommit`` / ``validateOffsetFetch``)."""
        if member_epoch < 0 and (not self.members if api_version is not None else not member_id):
            return None
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if api_version is not None and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION  # KIP-848 members commit with v9+
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    def copy(self) -> ConsumerGroup:
        return replace(
            self,
            members={m: member.copy() for m, member in self.members.items()},
            static_members=dict(self.static_members),
            target=dict(self.target),
            subscribed=dict(self.subscribed),
        )


# -- records -------------------------------------------------------------------------------------


def tombstone_keys(group: ConsumerGroup) -> list[ConsumerKey]:
    """The keys of every record of a group, in the order Kafka deletes them: each member's
    (current assignment, target assignment, metadata), the target assignment metadata, then the
    group epoch."""
    keys = [
        ConsumerKey(version, group.group_id, member_id)
        for member_id in group.members
        for version in (CURRENT_MEMBER_KEY, TARGET_MEMBER_KEY, MEMBER_KEY)
    ]
    return [*keys, ConsumerKey(TARGET_METADATA_KEY, group.group_id), ConsumerKey(GROUP_KEY, group.group_id)]


def union(a: Partitions, b: Partitions) -> Partitions:
    out = dict(a)
    for topic_id, partitions in b.items():
        out[topic_id] = tuple(sorted({*out.get(topic_id, ()), *partitions}))
    return out


def minus(a: Partitions, b: Partitions) -> Partitions:
    out: Partitions = {}
    for topic_id, partitions in a.items():
        left = tuple(p for p in partitions if p not in set(b.get(topic_id, ())))
        if left:
            out[topic_id] = left
    return out


def intersect(a: Partitions, b: Partitions) -> Partitions:
    out: Partitions = {}
    for topic_id, partitions in a.items():
        kept = tuple(p for p in partitions if p in set(b.get(topic_id, ())))
        if kept:
            out[topic_id] = kept
    return out


def as_partitions(pairs: list[tuple[uuid.UUID, list[int]]] | None) -> Partitions | None:
    if pairs is None:
        return None
    out: dict[uuid.UUID, set[int]] = {}
    for topic_id, partitions in pairs:
        out.setdefault(topic_id, set()).update(partitions)
    return {topic_id: tuple(sorted(ps)) for topic_id, ps in out.items() if ps}


def metadata_hash(subscribed: dict[str, tuple[uuid.UUID, int]]) -> int:
    """A signed 64-bit hash of the subscribed topics' names, ids and partition counts."""
    digest = hashlib.blake2b(digest_size=8)
    for name in sorted(subscribed):
        topic_id, count = subscribed[name]
        digest.update(f"{name}\0{topic_id}\0{count}\0".encode())
    return int.from_bytes(digest.digest(), "big", signed=True)


def is_subset(owned: Partitions | None, assigned: Partitions) -> bool:
    """Every partition the member says it owns is assigned to it (Kafka's ``isSubset``)."""
    if owned is None:
        return False
    return not minus(owned, assigned)
