"""A classic group's in-memory model and the pure functions over it.

``Group`` and ``Member`` are what the coordinator's modules share; ``GroupSnapshot`` is the
read-only view handed out. The functions at the end build answers and ``__consumer_offsets``
values from a group and never change it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.group.consumer_model import ConsumerGroup
from kafka_wire.broker.group.records import GroupMetadataValue, MemberMetadata, OffsetCommitValue
from kafka_wire.broker.group.states import GroupState
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, LocalProtocolError

if TYPE_CHECKING:
    from kafka_wire.messages import (
        JoinGroupRequest,
        JoinGroupResponse,
        JoinGroupResponseMember,
        OffsetCommitRequestTopic,
        OffsetCommitResponse,
        OffsetCommitResponseTopic,
    )

#: Given a prefix (the group instance id of a static member, else the client id), a new member id.
MemberIdFactory = Callable[[str], str]
#: Topic id -> name (``None`` if unknown), for OffsetCommit/OffsetFetch v10+.
TopicNameOf = Callable[[uuid.UUID], str | None]
#: Topic name -> id (``None`` if unknown).
TopicIdOf = Callable[[str], uuid.UUID | None]
#: Topic name -> its number of partitions (``None`` if unknown), for OffsetCommit's check that
#: each partition exists.
PartitionsOf = Callable[[str], int | None]

#: The protocol type of Kafka's consumer (its subscriptions are parsed for OffsetDelete/expiry).
CONSUMER_PROTOCOL_TYPE: Final = "consumer"
#: ListGroups v5 ``group_type`` of every group here.
CLASSIC_GROUP_TYPE: Final = "classic"
#: DescribeGroups ``authorized_operations`` when not asked for (Java's ``Integer.MIN_VALUE``).
NO_OPERATIONS: Final = -(2**31)
ZERO_UUID: Final = uuid.UUID(int=0)


class CounterMemberIds:
    """The default member id factory: ``f"{prefix}-{n:016x}"`` with a counter, deterministic.

    A real server passes one built on ``uuid.uuid4()`` (as Kafka: ``prefix + "-" + uuid``), so
    that ids stay unique across restarts; the coordinator skips ids that are already in use.
    """

    __slots__ = ("_n",)

    def __init__(self) -> None:
        self._n = 0

    def __call__(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}-{self._n:016x}"


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """What a group's durable state is; equal before a restart and after ``GroupCoordinator.load``.

    For a group in the middle of a rebalance it is the in-memory view (which the log catches up
    with when the rebalance ends). ``members`` use the persisted member layout: ``subscription`` is
    the member's metadata for the selected protocol (``b""`` when there is none).
    """

    group_id: str
    state: GroupState
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    state_timestamp_ms: int
    members: tuple[MemberMetadata, ...]
    #: ``(topic, partition, value)`` sorted by topic then partition.
    offsets: tuple[tuple[str, int, OffsetCommitValue], ...]


@dataclass(slots=True)
class Waiter:
    token: object
    api_version: int


@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: ``(name, metadata)`` in the member's order of preference.
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join: Waiter | None = None
    sync: Waiter | None = None
    is_new: bool = False

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def names(self) -> list[str]:
        return [name for name, _ in self.protocols]


@dataclass(slots=True, eq=False)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    #: group instance id -> member id
    static_members: dict[str, str] = field(default_factory=dict)
    #: member ids handed out with MEMBER_ID_REQUIRED, not yet joined (ordered set)
    pending_join: dict[str, None] = field(default_factory=dict)
    #: members of the current generation that have not sent SyncGroup yet (ordered set)
    pending_sync: dict[str, None] = field(default_factory=dict)
    new_member_added: bool = False
    #: Topics the members subscribe to (consumer protocol only); only used for membership tests.
    subscribed_topics: frozenset[str] | None = None
    #: topic -> partition -> committed offset
    offsets: dict[str, dict[int, OffsetCommitValue]] = field(default_factory=dict)
    #: A KIP-848 consumer group (``consumer_groups``): the classic fields above stay empty.
    consumer: ConsumerGroup | None = None

    def all_joined(self) -> bool:
        return not self.pending_join and all(m.join is not None for m in self.members.values())

    def awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.join is not None)

    def rebalance_timeout_ms(self) -> int:
        return max((max(m.rebalance_timeout_ms, 0) for m in self.members.values()), default=0)

    def is_subscribed(self, topic: str) -> bool:
        if self.consumer is not None:
            return self.consumer.subscribes_to(topic)
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE


def dedupe_protocols(request: JoinGroupRequest) -> list[tuple[str, bytes]]:
    """The request's protocols, first occurrence of each name (Kafka keys them by name)."""
    seen: dict[str, bytes] = {}
    for p in request.protocols:
        seen.setdefault(p.name, bytes(p.metadata))
    return list(seen.items())


def candidates(group: Group) -> set[str]:
    """Protocols every member supports (only used for membership tests)."""
    members = list(group.members.values())
    if not members:
        return set()
    common = set(members[0].names())
    for member in members[1:]:
        common &= set(member.names())
    return common


def inconsistent(asked: str | None, actual: str | None) -> bool:
    return asked is not None and actual is not None and asked != actual


def subscribed_topics(group: Group) -> frozenset[str] | None:
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not group.members:
        return frozenset()
    if group.protocol_name is None:
        return None
    topics: set[str] = set()
    for member in group.members.values():
        data = member.metadata(group.protocol_name)
        if len(data) < 2:
            return None
        try:
            # Every version of the subscription starts with the v0 fields (topics first).
            subscription = messages.ConsumerProtocolSubscription.decode(data[2:], 0)
        except DecodeError:
            return None
        topics.update(subscription.topics)
    return frozenset(topics)


def join_response(
    v: int,
    *,
    error: int = 0,
    generation: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str | None = "",
    member_id: str = "",
    members: list[JoinGroupResponseMember] | None = None,
    skip: bool = False,
) -> JoinGroupResponse:
    return messages.JoinGroupResponse(
        error_code=error,
        generation_id=generation,
        protocol_type=protocol_type,
        # Before v7 the protocol name is not nullable: Kafka sends "" then.
        protocol_name=protocol_name if protocol_name is not None or v >= 7 else "",
        leader=leader or "",
        skip_assignment=skip and v >= 9,
        member_id=member_id,
        members=members or [],
    )


def join_error(v: int, error: int, member_id: str) -> JoinGroupResponse:
    return join_response(v, error=error, member_id=member_id)


def metadata_value(
    group: Group, assignments: dict[str, bytes] | None = None, *, state_timestamp_ms: int | None = None
) -> GroupMetadataValue:
    """The group's metadata record; ``assignments`` and ``state_timestamp_ms`` give what the group
    will hold once the record is stored (a SyncGroup leader's assignment)."""
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation,
        protocol=group.protocol_name,
        leader=group.leader_id if group.members else None,
        current_state_timestamp_ms=group.state_timestamp_ms
        if state_timestamp_ms is None
        else state_timestamp_ms,
        members=member_records(group, assignments),
    )


def member_records(group: Group, assignments: dict[str, bytes] | None = None) -> tuple[MemberMetadata, ...]:
    return tuple(
        MemberMetadata(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            m.metadata(group.protocol_name),
            m.assignment if assignments is None else assignments.get(m.member_id, b""),
        )
        for m in group.members.values()
    )


def offset_commit_error(
    topics: Sequence[OffsetCommitRequestTopic] | Sequence[OffsetCommitResponseTopic], error: int
) -> OffsetCommitResponse:
    """An OffsetCommit answer with ``error`` for every partition of ``topics`` (those of the
    request, or of an answer being replaced)."""
    return messages.OffsetCommitResponse(
        topics=[
            messages.OffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    messages.OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=error
                    )
                    for p in t.partitions
                ],
            )
            for t in topics
        ]
    )


def failed_answer(answer: Message, error: int) -> Message:
    """``answer`` (of a request whose write was refused) with ``error`` instead: every partition of
    an OffsetCommit (Kafka's ``OffsetCommitRequest.getErrorResponse``), an OffsetDelete as a whole."""
    if isinstance(answer, messages.OffsetCommitResponse):
        return offset_commit_error(answer.topics, error)
    if isinstance(answer, messages.OffsetDeleteResponse):
        return messages.OffsetDeleteResponse(error_code=error)
    if isinstance(answer, messages.TxnOffsetCommitResponse):  # TxnOffsetCommitRequest.getErrorResponse
        for topic in answer.topics:
            for partition in topic.partitions:
                partition.error_code = error
        return answer
    raise LocalProtocolError(f"no failure answer for {type(answer).__name__}")


def snapshot(group: Group) -> GroupSnapshot:
    return GroupSnapshot(
        group_id=group.group_id,
        state=group.state,
        generation=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader_id=group.leader_id,
        state_timestamp_ms=group.state_timestamp_ms,
        members=member_records(group),
        offsets=tuple(
            (topic, partition, group.offsets[topic][partition])
            for topic in sorted(group.offsets)
            for partition in sorted(group.offsets[topic])
        ),
    )
