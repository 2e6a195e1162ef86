"""The model of a KIP-932 share group (Kafka's ``ShareGroup`` and ``ShareGroupMember``): its
members, epochs and assignments, the share-partitions whose state it initialized, is initializing
or deleting (Kafka's ``ShareGroupStatePartitionMetadataInfo``), and its states, which move only
through :data:`SHARE_GROUP_TRANSITIONS`."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Final

#: A member's partitions: topic id -> sorted partition indexes.
SharePartitions = dict[uuid.UUID, tuple[int, ...]]
#: Share-partitions of the group's state metadata: topic id -> (topic name, partition indexes).
StateTopics = dict[uuid.UUID, tuple[str, frozenset[int]]]


class ShareGroupState(enum.Enum):
    """Kafka's names (``ShareGroup.ShareGroupState``)."""

    EMPTY = "Empty"
    STABLE = "Stable"


class ShareGroupInput(enum.Enum):
    MEMBER_JOINED = "member joined"
    MEMBER_LEFT = "member left"
    LAST_MEMBER_LEFT = "last member left"


_S, _I = ShareGroupState, ShareGroupInput

#: ``(state, input) -> state``.
SHARE_GROUP_TRANSITIONS: Final[dict[tuple[ShareGroupState, ShareGroupInput], ShareGroupState]] = {
    (_S.EMPTY, _I.MEMBER_JOINED): _S.STABLE,
    (_S.STABLE, _I.MEMBER_JOINED): _S.STABLE,
    (_S.STABLE, _I.MEMBER_LEFT): _S.STABLE,
    (_S.STABLE, _I.LAST_MEMBER_LEFT): _S.EMPTY,
}


@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    #: The epoch before the last change: a heartbeat at it is accepted (its answer was lost).
    previous_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: tuple[str, ...] = ()
    assigned: SharePartitions = field(default_factory=dict)


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    state: ShareGroupState = ShareGroupState.EMPTY
    group_epoch: int = 0
    assignment_epoch: int = 0
    #: The hash of the subscribed topics' metadata the group epoch was computed with.
    topics_hash: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    targets: dict[str, SharePartitions] = field(default_factory=dict)
    #: The share-partitions whose state the share coordinators are initializing for the group,
    #: have initialized, and the topics whose state they are deleting (key 15).
    initializing: StateTopics = field(default_factory=dict)
    initialized: StateTopics = field(default_factory=dict)
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)
    #: When each initializing topic was last asked for (not stored: a replayed one is retried at
    #: the next heartbeat).
    initializing_since_ms: dict[uuid.UUID, int] = field(default_factory=dict)

    def state_metadata(self) -> tuple[StateTopics, StateTopics, dict[uuid.UUID, str]]:
        """What key 15 stores."""
        return self.initializing, self.initialized, self.deleting


def merge_topics(into: StateTopics, more: StateTopics) -> StateTopics:
    """``into`` with ``more``'s partitions added (and its names)."""
    out = dict(into)
    for topic_id, (name, partitions) in more.items():
        old = out.get(topic_id)
        out[topic_id] = (name, partitions if old is None else old[1] | partitions)
    return out


def remove_topics(into: StateTopics, gone: dict[uuid.UUID, frozenset[int]]) -> StateTopics:
    """``into`` without ``gone``'s partitions (a topic left with none is dropped)."""
    out = dict(into)
    for topic_id, partitions in gone.items():
        old = out.get(topic_id)
        if old is None:
            continue
        left = old[1] - partitions
        if left:
            out[topic_id] = (old[0], left)
        else:
            del out[topic_id]
    return out


def to_initialize(
    group: ShareGroup, topics: dict[str, tuple[uuid.UUID, int]], now_ms: int, retry_ms: int
) -> StateTopics:
    """The subscribed ``topics``' (name -> id, partition count) share-partitions whose state is
    neither initialized nor being initialized for less than ``retry_ms`` (Kafka's
    ``subscribedTopicsChangeMap``)."""
    wanted: StateTopics = {}
    for name, (topic_id, count) in sorted(topics.items()):
        known = group.initialized.get(topic_id, ("", frozenset[int]()))[1]
        pending = group.initializing.get(topic_id)
        if pending is not None and now_ms - group.initializing_since_ms.get(topic_id, 0) < retry_ms:
            known = known | pending[1]
        missing = frozenset(range(count)) - known
        if missing:
            wanted[topic_id] = (name, missing)
    return wanted


def add_initializing(group: ShareGroup, wanted: StateTopics, now_ms: int) -> None:
    """``wanted`` marked initializing (and no longer deleting), asked for at ``now_ms``."""
    group.initializing = merge_topics(group.initializing, wanted)
    group.initializing_since_ms = {**group.initializing_since_ms, **dict.fromkeys(wanted, now_ms)}
    group.deleting = {t: n for t, n in group.deleting.items() if t not in wanted}
