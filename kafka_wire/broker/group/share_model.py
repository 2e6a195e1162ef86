"""The model of a KIP-932 share group (Kafka's ``ShareGroup`` and ``ShareGroupMember``): its
members, epochs and assignments, and its states, which move only through
:data:`SHARE_GROUP_TRANSITIONS`."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Final

#: A member's partitions: topic id -> sorted partition indexes.
SharePartitions = dict[uuid.UUID, tuple[int, ...]]


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
