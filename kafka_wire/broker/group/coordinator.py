"""The classic group coordinator (JoinGroup/SyncGroup protocol) as a pure state machine.

Inputs are requests with an opaque ``token`` and the time (``now_ms``); outputs are effects
(:class:`~kafka_wire.broker.group.effects.Respond`, :class:`~kafka_wire.broker.group.effects.Persist`).
There is no I/O, no clock and no randomness: member ids come from an injected factory.

Timers (all on the caller's clock, fired by :meth:`GroupCoordinator.tick` and at the start and end
of :meth:`GroupCoordinator.handle`, so that no timer is ever overdue when a call returns):

* **heartbeat** per member: the session timeout, re-armed by Heartbeat, OffsetCommit, the end of a
  join phase and the SyncGroup answer; a member added during a rebalance gets the (longer)
  new-member join timeout until its join completes. A member awaiting a JoinGroup or SyncGroup
  answer does not expire (Kafka's rule). Pending members (after MEMBER_ID_REQUIRED) expire after
  their session timeout.
* **join** per group: the end of the join phase. An empty group's first rebalance waits
  ``initial_rebalance_delay_ms`` and again while new members keep arriving, up to the rebalance
  timeout; later rebalances wait until every member rejoined or the largest rebalance timeout of
  the members passed. Dynamic members that did not rejoin are removed; static members stay.
* **sync** per group: members that got a JoinGroup answer but sent no SyncGroup within the
  rebalance timeout are removed and a new rebalance starts.
* **retention**: every ``offsets_retention_check_interval_ms``, expired offsets are tombstoned and
  empty groups without offsets are deleted.

Kafka sources of truth for the behaviour: ``GroupMetadataManager``, ``OffsetMetadataManager`` and
``ClassicGroup`` of Kafka's ``group-coordinator`` module (facts only). The differences are listed
in ``docs/internals/group-coordinator.md``.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.broker.group.config import GroupConfig
from kafka_wire.broker.group.effects import GroupEffect, KeyValue, Persist, Respond, client_error
from kafka_wire.broker.group.records import (
    OTHER_GROUP_KEY_VERSIONS,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    group_metadata_record,
    offset_commit_record,
    partition_for_group,
)
from kafka_wire.broker.group.states import GroupInput, GroupState, can_rebalance, transition
from kafka_wire.codec.runtime import Message
from kafka_wire.errors import DecodeError, InvalidValueError, LocalProtocolError
from kafka_wire.messages import (
    ApiKey,
    ConsumerProtocolSubscription,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponseDeletableGroupResult,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseDescribedGroup,
    DescribeGroupsResponseDescribedGroupMember,
    ErrorCode,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    LeaveGroupResponse,
    LeaveGroupResponseMemberResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseListedGroup,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
    SyncGroupRequest,
    SyncGroupResponse,
)

#: Given a prefix (the group instance id of a static member, else the client id), a new member id.
MemberIdFactory = Callable[[str], str]
#: Topic id -> name (``None`` if unknown), for OffsetCommit/OffsetFetch v10+.
TopicNameOf = Callable[[uuid.UUID], str | None]
#: Topic name -> id (``None`` if unknown).
TopicIdOf = Callable[[str], uuid.UUID | None]

#: The APIs :meth:`GroupCoordinator.handle` answers.
GROUP_API_KEYS: Final = (
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS,
    ApiKey.DELETE_GROUPS,
    ApiKey.OFFSET_DELETE,
)

#: The protocol type of Kafka's consumer (its subscriptions are parsed for OffsetDelete/expiry).
CONSUMER_PROTOCOL_TYPE: Final = "consumer"
#: ListGroups v5 ``group_type`` of every group here.
CLASSIC_GROUP_TYPE: Final = "classic"
#: DescribeGroups ``authorized_operations`` when not asked for (Java's ``Integer.MIN_VALUE``).
_NO_OPERATIONS: Final = -(2**31)
_ZERO_UUID: Final = uuid.UUID(int=0)

E = ErrorCode


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


# -- read-only views ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """What a group's durable state is; equal before a restart and after :meth:`load`.

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


# -- internal state -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Waiter:
    token: object
    api_version: int


@dataclass(slots=True, eq=False)
class _Member:
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
    join: _Waiter | None = None
    sync: _Waiter | None = None
    is_new: bool = False

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def names(self) -> list[str]:
        return [name for name, _ in self.protocols]


@dataclass(slots=True, eq=False)
class _Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, _Member] = field(default_factory=dict)
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

    def all_joined(self) -> bool:
        return not self.pending_join and all(m.join is not None for m in self.members.values())

    def awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.join is not None)

    def rebalance_timeout_ms(self) -> int:
        return max((max(m.rebalance_timeout_ms, 0) for m in self.members.values()), default=0)

    def is_subscribed(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE


_TimerKey = tuple[str, str, str]  # (kind, group id, member id or "")
_JOIN: Final = "join"
_SYNC: Final = "sync"
_HEARTBEAT: Final = "heartbeat"
_RETENTION: Final = "retention"
_RETENTION_KEY: Final[_TimerKey] = (_RETENTION, "", "")


@dataclass(slots=True)
class _Timer:
    deadline_ms: int
    seq: int
    args: tuple[int, ...]


# -- writes awaiting their outcome (see GroupCoordinator.persisted) ------------------------------


@dataclass(slots=True)
class _OffsetWrite:
    """Offset records (commits or tombstones): applied when handed out (so that the timers of the
    same call see them, as Kafka's coordinator replays its records at once), taken back if the
    write is refused."""

    group_id: str
    records: list[KeyValue]
    waiter: _Waiter | None = None
    #: The answer once stored; a failure answers the same request with the error instead.
    answer: Message | None = None
    #: What the records replaced: (topic, partition) -> the value before (None: there was none).
    undo: dict[tuple[str, int], OffsetCommitValue | None] = field(default_factory=dict)
    #: The write created its group (a commit of a "simple" group).
    created_group: bool = False


@dataclass(slots=True)
class _GroupCreated:
    """The first record of a group a JoinGroup created."""

    group_id: str
    waiter: _Waiter


@dataclass(slots=True)
class _GroupEmptied:
    """A group's metadata after a join phase that ended with no members: nothing waits on it."""

    group_id: str


@dataclass(slots=True)
class _AssignmentStored:
    """The leader's assignment (SyncGroup): given to the members once stored."""

    group_id: str
    generation: int
    assignments: dict[str, bytes]


@dataclass(slots=True)
class _StaticMemberReplaced:
    """A static member that rejoined with a new member id in a stable group."""

    group_id: str
    old: _Member
    new_id: str
    previous_leader: str | None
    waiter: _Waiter


@dataclass(slots=True)
class _DeleteGroupsAnswer:
    """A DeleteGroups answer waiting for the deletions it asked for."""

    waiter: _Waiter
    results: list[DeleteGroupsResponseDeletableGroupResult]
    outstanding: int = 0


@dataclass(slots=True)
class _GroupDeleted:
    """Tombstones of an empty group, dropped from memory when they are handed out; the group is
    restored as stored if the write is refused."""

    group: _Group
    #: The group's state timestamp before it was deleted (the deletion stamps its own).
    state_timestamp_ms: int
    #: The DeleteGroups request and the index of this group's result in it (None: retention).
    answer: _DeleteGroupsAnswer | None = None
    index: int = -1


_PendingWrite = (
    _OffsetWrite | _GroupCreated | _GroupEmptied | _AssignmentStored | _StaticMemberReplaced | _GroupDeleted
)


# -- the coordinator ----------------------------------------------------------------------------


class GroupCoordinator:
    """Classic consumer groups and committed offsets.

    ``handle()`` takes one request (a generated ``*Request`` message of a group API, see
    :data:`GROUP_API_KEYS`) decoded at ``api_version``, and returns effects in the order to apply
    them. A JoinGroup or SyncGroup may get no ``Respond`` until a later call (``handle`` or
    ``tick``) completes the rebalance; every held request is answered once its deadline passes.
    """

    def __init__(
        self,
        config: GroupConfig | None = None,
        *,
        member_id_factory: MemberIdFactory | None = None,
        topic_name_of: TopicNameOf | None = None,
        topic_id_of: TopicIdOf | None = None,
    ) -> None:
        self.config = config if config is not None else GroupConfig()
        self._new_id: MemberIdFactory = (
            member_id_factory if member_id_factory is not None else CounterMemberIds()
        )
        self._topic_name_of = topic_name_of
        self._topic_id_of = topic_id_of
        self._groups: dict[str, _Group] = {}
        self._timers: dict[_TimerKey, _Timer] = {}
        self._heap: list[tuple[int, int, _TimerKey]] = []
        self._seq = 0
        self._now: int | None = None
        self._out: list[GroupEffect] = []
        #: Members replayed by load(): their heartbeat timers start at the first time seen.
        self._unarmed: dict[tuple[str, str], None] = {}
        #: Writes handed out as Persist effects whose outcome has not been reported, by append id.
        self._writes: dict[int, _PendingWrite] = {}
        self._next_append_id = 0

    # -- public API -----------------------------------------------------------------------------

    def handle(
        self,
        token: object,
        request: Message,
        api_version: int,
        now_ms: int,
        *,
        client_id: str = "",
        client_host: str = "",
    ) -> list[GroupEffect]:
        """Handle one group request; ``token`` comes back in the ``Respond`` that answers it.

        ``client_id`` is the request header's client id; ``client_host`` the peer address as
        DescribeGroups should show it (Kafka shows ``"/127.0.0.1"``). A request of another API,
        or a version its class does not define, raises :class:`LocalProtocolError`.
        """
        handler = _HANDLERS.get(type(request))
        if handler is None:
            raise LocalProtocolError(f"the group coordinator does not handle {type(request).__name__}")
        if api_version not in type(request).VERSIONS:
            raise LocalProtocolError(f"{type(request).__name__} has no version {api_version}")
        self._observe(now_ms)
        handler(self, _Waiter(token, api_version), request, client_id, client_host)
        self._run_timers()
        return self._take()

    def tick(self, now_ms: int) -> list[GroupEffect]:
        """Fire the timers due at ``now_ms``."""
        self._observe(now_ms)
        return self._take()

    def persisted(self, append_id: int, error_code: int, now_ms: int) -> list[GroupEffect]:
        """The outcome of the ``Persist`` effect ``append_id``: 0 when its records were appended,
        else the log's error code (MESSAGE_TOO_LARGE, ...).

        Once stored, what the write stands for takes effect and its requests are answered; a
        refused write changes nothing in memory, and its requests get the mapped error
        (:data:`~kafka_wire.broker.group.effects.APPEND_ERRORS`): an OffsetCommit every partition,
        a SyncGroup leader's assignment every waiting member (and the group rebalances again), a
        static member's rejoin its JoinGroup (the old member id is restored). Report outcomes in
        the order the effects came; an outcome reported after other inputs still applies, after
        the same checks of the group's state and generation that Kafka's callbacks make. An
        unknown ``append_id`` raises :class:`LocalProtocolError`.
        """
        write = self._writes.pop(append_id, None)
        if write is None:
            raise LocalProtocolError(f"no group write {append_id} is awaiting its outcome")
        self._observe(now_ms)
        error = client_error(error_code) if error_code else E.NONE
        match write:
            case _OffsetWrite():
                self._offsets_written(write, error)
            case _GroupCreated():
                if error:
                    self._creation_failed(write, error)
            case _GroupEmptied():
                pass  # Kafka logs a failure here; the broker logs every refused write
            case _AssignmentStored():
                self._assignment_written(write, error)
            case _StaticMemberReplaced():
                self._static_member_written(write, error)
            case _GroupDeleted():
                self._deletion_written(write, error)
        self._run_timers()
        return self._take()

    def pending_writes(self) -> int:
        """How many ``Persist`` effects await :meth:`persisted`."""
        return len(self._writes)

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` has work next (``0``: at once, before the first call has shown a time)."""
        if self._now is None:
            return 0
        if self._unarmed:
            return self._now  # members loaded since the last call: arm their sessions now
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            timer = self._timers.get(key)
            if timer is not None and timer.seq == seq:
                return deadline
            heapq.heappop(heap)
        return None

    def load(self, records: Iterable[KeyValue]) -> None:
        """Replay ``__consumer_offsets`` records (oldest first; compacted or not) at startup.

        Records of other kinds (KIP-848 consumer groups, share groups) are skipped. Loaded members
        get their session timeout from the first time the coordinator sees (next ``handle`` or
        ``tick``). An unreadable record raises :class:`~kafka_wire.errors.DecodeError` (the records
        before it are loaded); :meth:`replay` takes one record, for callers that skip bad ones.
        """
        for key, value in records:
            self.replay(key, value)

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Replay one ``__consumer_offsets`` record (see :meth:`load`).

        Raises :class:`~kafka_wire.errors.DecodeError`, with nothing applied, for a key or value
        that cannot be read, including a key version Kafka does not define.
        """
        decoded = decode_key(key)
        if isinstance(decoded, OffsetCommitKey):
            self._replay_offset(
                decoded.group,
                decoded.topic,
                decoded.partition,
                None if value is None else decode_offset_commit_value(value),
            )
        elif isinstance(decoded, GroupMetadataKey):
            self._replay_group(decoded.group, None if value is None else decode_group_metadata_value(value))
        elif decoded.version not in OTHER_GROUP_KEY_VERSIONS:
            raise InvalidValueError(f"unknown key version {decoded.version}", offset=0, message="__consumer_offsets key")

    def topics_deleted(self, topics: Iterable[str], now_ms: int) -> list[GroupEffect]:
        """Tombstone the committed offsets of deleted topics in every group (Kafka does the same)."""
        self._observe(now_ms)
        gone = set(topics)
        for group in list(self._groups.values()):
            records = [
                offset_commit_record(group.group_id, topic, partition, None)
                for topic, partitions in group.offsets.items()
                if topic in gone
                for partition in partitions
            ]
            self._persist_offsets(_OffsetWrite(group.group_id, records))
        self._run_timers()
        return self._take()

    def group(self, group_id: str) -> GroupSnapshot | None:
        """A read-only view of one group."""
        group = self._groups.get(group_id)
        return None if group is None else _snapshot(group)

    def groups(self) -> list[GroupSnapshot]:
        """Read-only views of every group, in creation order."""
        return [_snapshot(group) for group in self._groups.values()]

    def state_of(self, group_id: str) -> GroupState | None:
        group = self._groups.get(group_id)
        return None if group is None else group.state

    # -- time -----------------------------------------------------------------------------------

    def _observe(self, now_ms: int) -> None:
        if self._now is not None and now_ms < self._now:
            now_ms = self._now  # time never goes back: a late call acts at the latest time seen
        first = self._now is None
        self._now = now_ms
        if first:
            self._schedule(_RETENTION_KEY, self.config.offsets_retention_check_interval_ms)
        if self._unarmed:
            loaded: dict[str, None] = {}
            for group_id, member_id in self._unarmed:
                group = self._groups.get(group_id)
                member = None if group is None else group.members.get(member_id)
                if group is not None and member is not None:
                    self._arm_heartbeat(group, member, member.session_timeout_ms)
                    loaded[group_id] = None
            self._unarmed.clear()
            for group_id in loaded:
                group = self._groups[group_id]
                if len(group.members) > self.config.max_group_size and can_rebalance(group.state):
                    # Over group.max.size (lowered since it was stored): Kafka rebalances a group
                    # it loads over capacity, and the rejoins beyond the limit are refused.
                    self._prepare_rebalance(group)
        self._run_timers()

    @property
    def _clock(self) -> int:
        now = self._now
        if now is None:
            raise LocalProtocolError("the group coordinator was used before it saw a time")
        return now

    def _schedule(self, key: _TimerKey, delay_ms: int, args: tuple[int, ...] = ()) -> None:
        self._seq += 1
        deadline = self._clock + max(delay_ms, 0)
        self._timers[key] = _Timer(deadline, self._seq, args)
        heapq.heappush(self._heap, (deadline, self._seq, key))

    def _cancel(self, key: _TimerKey) -> None:
        self._timers.pop(key, None)

    def _run_timers(self) -> None:
        """Fire due timers in deadline order, each acting at its own deadline.

        A driver that ticks late gets the same outcome as one that ticked on time (a timer that
        re-arms itself counts from its deadline, not from the late tick).
        """
        now = self._clock
        heap = self._heap
        try:
            while heap and heap[0][0] <= now:
                deadline, seq, key = heapq.heappop(heap)
                timer = self._timers.get(key)
                if timer is None or timer.seq != seq:
                    continue
                del self._timers[key]
                self._now = deadline
                self._fire(key, timer.args)
        finally:
            self._now = now

    def _fire(self, key: _TimerKey, args: tuple[int, ...]) -> None:
        kind, group_id, member_id = key
        if kind == _RETENTION:
            self._expire_offsets()
            self._schedule(_RETENTION_KEY, self.config.offsets_retention_check_interval_ms)
            return
        group = self._groups.get(group_id)
        if group is None:
            return
        if kind == _HEARTBEAT:
            self._expire_heartbeat(group, member_id)
        elif kind == _JOIN:
            if group.state is GroupState.PREPARING_REBALANCE:
                if args:
                    self._try_complete_initial_rebalance(group, args[0], args[1])
                else:
                    self._complete_join(group)
        elif kind == _SYNC:
            self._expire_pending_sync(group, args[0])

    def _arm_heartbeat(self, group: _Group, member: _Member, timeout_ms: int) -> None:
        self._schedule((_HEARTBEAT, group.group_id, member.member_id), timeout_ms)

    # -- effects --------------------------------------------------------------------------------

    def _take(self) -> list[GroupEffect]:
        out, self._out = self._out, []
        return out

    def _respond(self, waiter: _Waiter, body: Message) -> None:
        self._out.append(Respond(waiter.token, body))

    def _persist(self, group_id: str, records: list[KeyValue], write: _PendingWrite) -> None:
        """Ask for ``records`` to be appended; ``write`` says what to do with the outcome."""
        partition = partition_for_group(group_id, self.config.offsets_topic_num_partitions)
        self._next_append_id += 1
        self._writes[self._next_append_id] = write
        self._out.append(Persist(group_id, partition, records, self._next_append_id))

    def _persist_group(self, group: _Group, write: _PendingWrite) -> None:
        self._persist(group.group_id, [group_metadata_record(group.group_id, _metadata_value(group))], write)

    def _persist_offsets(self, write: _OffsetWrite) -> None:
        """Append offset records and apply them through the path :meth:`load` uses (taken back if
        the write is refused); answer at once when there is nothing to write."""
        if not write.records:
            if write.waiter is not None and write.answer is not None:
                self._respond(write.waiter, write.answer)
            return
        group = self._groups.get(write.group_id)
        write.created_group = group is None
        for key, _ in write.records:
            k = decode_key(key)
            if isinstance(k, OffsetCommitKey) and (k.topic, k.partition) not in write.undo:
                before = None if group is None else group.offsets.get(k.topic, {}).get(k.partition)
                write.undo[k.topic, k.partition] = before
        for key, value in write.records:
            self.replay(key, value)
        self._persist(write.group_id, write.records, write)

    # -- outcomes of writes ---------------------------------------------------------------------

    def _offsets_written(self, write: _OffsetWrite, error: int) -> None:
        group = self._groups.get(write.group_id)
        if error and group is not None:
            for (topic, partition), before in write.undo.items():
                self._replay_offset(write.group_id, topic, partition, before)
            if (
                write.created_group
                and not group.offsets
                and not group.members
                and not group.pending_join
                and group.state is GroupState.EMPTY
                and group.protocol_type is None
            ):
                del self._groups[write.group_id]
        if write.waiter is not None and write.answer is not None:
            self._respond(write.waiter, write.answer if not error else _failed(write.answer, error))

    def _creation_failed(self, write: _GroupCreated, error: int) -> None:
        """A new group's first record was refused: the join that created it fails (unless it was
        answered already) and the group is forgotten, member ids handed out with
        MEMBER_ID_REQUIRED included (Kafka reverts to before the group existed), unless a member
        or an offset holds it by now."""
        group = self._groups.get(write.group_id)
        if group is None:
            return
        member = next((m for m in group.members.values() if m.join is write.waiter), None)
        if member is not None:
            member.join = None
            self._respond(write.waiter, _join_error(write.waiter.api_version, error, ""))
            self._remove_member(group, member.member_id)
        if not group.members and not group.offsets:
            for member_id in list(group.pending_join):
                self._remove_member(group, member_id)
            self._cancel((_JOIN, group.group_id, ""))
            self._cancel((_SYNC, group.group_id, ""))
            del self._groups[group.group_id]

    def _assignment_written(self, write: _AssignmentStored, error: int) -> None:
        group = self._groups.get(write.group_id)
        if group is None or group.state is not GroupState.COMPLETING_REBALANCE or group.generation != write.generation:
            return  # the group moved on meanwhile (Kafka's callback makes the same check)
        if not error:
            for member_id, member in group.members.items():
                member.assignment = write.assignments.get(member_id, b"")
            self._transition(group, GroupInput.STORE_ASSIGNMENT)
            self._propagate_assignment(group, E.NONE)
            return
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _static_member_written(self, write: _StaticMemberReplaced, error: int) -> None:
        group = self._groups.get(write.group_id)
        member = None if group is None else group.members.get(write.new_id)
        if group is None or member is None or member.join is not write.waiter:
            return  # superseded meanwhile
        if not error:
            if write.waiter.api_version >= 9:
                is_leader = group.leader_id == write.new_id
                self._join_answer(group, member, with_members=is_leader, skip=is_leader)
            else:
                # Older clients must not think they lead: name the old leader id.
                self._join_answer(group, member, with_members=False, leader=write.previous_leader or "")
            return
        # Put the old member id back (Kafka: "Reverting to old member id").
        old = write.old
        old.join = old.sync = None
        member.join = None
        del group.members[write.new_id]
        group.members[old.member_id] = old
        if old.group_instance_id is not None:
            group.static_members[old.group_instance_id] = old.member_id
        if group.leader_id == write.new_id:
            group.leader_id = old.member_id
        if write.new_id in group.pending_sync:
            del group.pending_sync[write.new_id]
            group.pending_sync[old.member_id] = None
        self._cancel((_HEARTBEAT, group.group_id, write.new_id))
        self._arm_heartbeat(group, old, old.session_timeout_ms)
        self._respond(
            write.waiter,
            _join_response(
                write.waiter.api_version,
                error=error,
                generation=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=write.previous_leader,
            ),
        )

    def _deletion_written(self, write: _GroupDeleted, error: int) -> None:
        old = write.group
        if error and old.group_id not in self._groups:
            # The tombstones are not stored: the group is still what the log says. Restore it as
            # load() would build it (empty, its generation and offsets).
            self._groups[old.group_id] = _Group(
                old.group_id,
                state_timestamp_ms=write.state_timestamp_ms,
                generation=old.generation,
                protocol_type=old.protocol_type,
                offsets=old.offsets,
                subscribed_topics=old.subscribed_topics,
            )
        answer = write.answer
        if answer is None:
            return
        answer.results[write.index].error_code = error
        answer.outstanding -= 1
        if answer.outstanding == 0:
            self._respond(answer.waiter, DeleteGroupsResponse(results=answer.results))

    # -- replay ---------------------------------------------------------------------------------

    def _replay_offset(
        self, group_id: str, topic: str, partition: int, value: OffsetCommitValue | None
    ) -> None:
        group = self._groups.get(group_id)
        if value is None:
            if group is not None:
                partitions = group.offsets.get(topic)
                if partitions is not None:
                    partitions.pop(partition, None)
                    if not partitions:
                        del group.offsets[topic]
            return
        if group is None:
            group = self._groups[group_id] = _Group(group_id)
        group.offsets.setdefault(topic, {})[partition] = value

    def _replay_group(self, group_id: str, value: GroupMetadataValue | None) -> None:
        old = self._groups.get(group_id)
        if old is not None:
            for member_id in old.members:
                self._unarmed.pop((group_id, member_id), None)
        if value is None:
            if old is not None:
                if old.offsets:
                    self._groups[group_id] = _Group(group_id, offsets=old.offsets)
                else:
                    del self._groups[group_id]
            return
        group = _Group(
            group_id,
            state=GroupState.STABLE if value.members else GroupState.EMPTY,
            state_timestamp_ms=value.current_state_timestamp_ms,
            generation=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            leader_id=value.leader if value.members else None,
            offsets=old.offsets if old is not None else {},
        )
        for m in value.members:
            member = _Member(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                value.protocol_type,
                [(value.protocol or "", m.subscription)],
                m.assignment,
            )
            group.members[m.member_id] = member
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
            self._unarmed[group_id, m.member_id] = None
        if group.members and group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.subscribed_topics = _subscribed_topics(group)
        self._groups[group_id] = group

    # -- group state helpers --------------------------------------------------------------------

    def _transition(self, group: _Group, move: GroupInput) -> None:
        target = transition(group.state, move)
        group.previous_state = group.state
        group.state = target
        group.state_timestamp_ms = self._clock

    def _create_group(self, group_id: str) -> _Group:
        group = self._groups[group_id] = _Group(group_id, state_timestamp_ms=self._clock)
        return group

    def _new_member_id(self, group: _Group, prefix: str) -> str:
        while True:
            member_id = self._new_id(prefix)
            if member_id and member_id not in group.members and member_id not in group.pending_join:
                return member_id

    def _validate_member(self, group: _Group, member_id: str, instance_id: str | None) -> ErrorCode | None:
        if instance_id is not None:
            existing = group.static_members.get(instance_id)
            if existing is None:
                return E.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return E.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return E.UNKNOWN_MEMBER_ID
        return None

    def _supports_protocols(self, group: _Group, protocol_type: str, names: Sequence[str]) -> bool:
        if group.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        if group.protocol_type != protocol_type:
            return False
        candidates = _candidates(group)
        return any(name in candidates for name in names)

    def _add_member(self, group: _Group, member: _Member) -> None:
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if not group.members:
            group.protocol_type = member.protocol_type
        if group.leader_id is None:
            group.leader_id = member.member_id
        group.members[member.member_id] = member
        group.pending_join.pop(member.member_id, None)

    def _remove_member(self, group: _Group, member_id: str) -> None:
        """Drop a member (or pending member) and everything keyed by it; answer what it awaits."""
        member = group.members.pop(member_id, None)
        if member is not None:
            instance_id = member.group_instance_id
            if instance_id is not None and group.static_members.get(instance_id) == member_id:
                del group.static_members[instance_id]
            if member.join is not None:
                self._respond(member.join, _join_error(member.join.api_version, E.UNKNOWN_MEMBER_ID, ""))
                member.join = None
            if member.sync is not None:
                self._respond(member.sync, SyncGroupResponse(error_code=E.UNKNOWN_MEMBER_ID))
                member.sync = None
        if group.leader_id == member_id:
            group.leader_id = next(iter(group.members), None)
        group.pending_join.pop(member_id, None)
        group.pending_sync.pop(member_id, None)
        self._cancel((_HEARTBEAT, group.group_id, member_id))

    def _update_member(
        self,
        member: _Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        waiter: _Waiter,
    ) -> None:
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if member.join is not None:
            # A second JoinGroup replaces the first; Kafka leaves the first unanswered.
            self._respond(
                member.join, _join_error(member.join.api_version, E.REBALANCE_IN_PROGRESS, member.member_id)
            )
        member.join = waiter

    def _select_protocol(self, group: _Group) -> str:
        candidates = _candidates(group)
        votes: dict[str, int] = {}
        for member in group.members.values():
            vote = next((name for name in member.names() if name in candidates), None)
            if vote is None:
                raise LocalProtocolError(
                    f"member {member.member_id} supports no protocol of group {group.group_id}"
                )
            votes[vote] = votes.get(vote, 0) + 1
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    def _current_members(self, group: _Group) -> list[JoinGroupResponseMember]:
        return [
            JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata(group.protocol_name),
            )
            for m in group.members.values()
        ]

    def _join_answer(
        self,
        group: _Group,
        member: _Member,
        *,
        with_members: bool,
        leader: str | None = None,
        skip: bool = False,
    ) -> None:
        waiter = member.join
        if waiter is None:
            return
        member.join = None
        self._respond(
            waiter,
            _join_response(
                waiter.api_version,
                generation=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id if leader is None else leader,
                member_id=member.member_id,
                members=self._current_members(group) if with_members else [],
                skip=skip,
            ),
        )

    # -- rebalance machinery (Kafka's names in comments where they help) --------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, group: _Group) -> None:
        if can_rebalance(group.state):
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: _Group) -> None:
        if (
            group.state is GroupState.PREPARING_REBALANCE
            and group.previous_state is not GroupState.EMPTY
            and group.all_joined()
        ):
            self._complete_join(group)

    def _prepare_rebalance(self, group: _Group) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
            self._propagate_assignment(group, E.REBALANCE_IN_PROGRESS)
        group.pending_sync.clear()
        self._cancel((_SYNC, group.group_id, ""))
        initial = group.state is GroupState.EMPTY
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule((_JOIN, group.group_id, ""), delay, (delay, remaining))
        self._transition(group, GroupInput.PREPARE_REBALANCE)
        if not initial:
            if group.all_joined():
                self._complete_join(group)
            else:
                self._schedule((_JOIN, group.group_id, ""), group.rebalance_timeout_ms())

    def _try_complete_initial_rebalance(self, group: _Group, delay_ms: int, remaining_ms: int) -> None:
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self._schedule((_JOIN, group.group_id, ""), new_delay, (new_delay, new_remaining))
        else:
            self._complete_join(group)

    def _complete_join(self, group: _Group) -> None:
        self._cancel((_JOIN, group.group_id, ""))
        for member in list(group.members.values()):
            if member.join is None and member.group_instance_id is None:
                self._remove_member(group, member.member_id)
        if not self._maybe_elect_joined_leader(group) and group.members:
            # Only static members that have not rejoined are left: wait for them.
            self._schedule((_JOIN, group.group_id, ""), max(group.rebalance_timeout_ms(), 1))
            return
        group.generation += 1
        if group.members:
            group.protocol_name = self._select_protocol(group)
            group.subscribed_topics = _subscribed_topics(group)
            self._transition(group, GroupInput.COMPLETE_JOIN)
        else:
            group.protocol_name = None
            group.subscribed_topics = _subscribed_topics(group)
            self._transition(group, GroupInput.COMPLETE_JOIN_EMPTY)
        group.pending_sync.clear()
        if group.state is GroupState.EMPTY:
            self._persist_group(group, _GroupEmptied(group.group_id))
            return
        for member in group.members.values():
            self._join_answer(group, member, with_members=member.member_id == group.leader_id)
            self._arm_heartbeat(group, member, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync[member.member_id] = None
        self._schedule((_SYNC, group.group_id, ""), group.rebalance_timeout_ms(), (group.generation,))

    def _maybe_elect_joined_leader(self, group: _Group) -> bool:
        if group.leader_id is None:
            return False
        if group.members[group.leader_id].join is not None:
            return True
        for member in group.members.values():
            if member.join is not None:
                group.leader_id = member.member_id
                return True
        return False

    def _propagate_assignment(self, group: _Group, error: int) -> None:
        ok = error == E.NONE
        for member in group.members.values():
            waiter = member.sync
            if waiter is None:
                continue
            member.sync = None
            self._respond(
                waiter,
                SyncGroupResponse(
                    error_code=error,
                    protocol_type=group.protocol_type if ok else None,
                    protocol_name=group.protocol_name if ok else None,
                    assignment=member.assignment,
                ),
            )
            self._arm_heartbeat(group, member, member.session_timeout_ms)

    def _remove_pending_sync(self, group: _Group, member_id: str) -> None:
        group.pending_sync.pop(member_id, None)
        if not group.pending_sync or group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            self._cancel((_SYNC, group.group_id, ""))

    def _expire_heartbeat(self, group: _Group, member_id: str) -> None:
        if member_id in group.pending_join:
            del group.pending_join[member_id]
            if group.state is GroupState.PREPARING_REBALANCE and group.all_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if not member.is_new and (member.join is not None or member.sync is not None):
            return  # a member awaiting a rebalance answer satisfies its heartbeat
        self._remove_member(group, member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.state is GroupState.PREPARING_REBALANCE and group.all_joined():
            self._complete_join(group)

    def _expire_pending_sync(self, group: _Group, generation: int) -> None:
        if generation != group.generation or not group.pending_sync:
            return
        if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            for member_id in list(group.pending_sync):
                self._remove_member(group, member_id)
            self._prepare_rebalance(group)

    def _accept_joining(self, group: _Group, member_id: str) -> bool:
        limit = self.config.max_group_size
        if group.state is GroupState.EMPTY:
            return True
        if group.state is GroupState.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.join is not None) or group.awaiting_join() < limit
        return member_id in group.members or len(group.members) < limit

    # -- JoinGroup ------------------------------------------------------------------------------

    def _join(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, JoinGroupRequest)
        v = waiter.api_version
        member_id = request.member_id
        config = self.config
        if not request.group_id:
            self._respond(waiter, _join_error(v, E.INVALID_GROUP_ID, member_id))
            return
        if not config.min_session_timeout_ms <= request.session_timeout_ms <= config.max_session_timeout_ms:
            self._respond(waiter, _join_error(v, E.INVALID_SESSION_TIMEOUT, member_id))
            return
        group = self._groups.get(request.group_id)
        if group is not None:
            self._join_group(waiter, request, group, client_id, client_host)
            return
        if member_id:
            self._respond(waiter, _join_error(v, E.UNKNOWN_MEMBER_ID, member_id))
            return
        group = self._create_group(request.group_id)
        # The new group's first record is written after the join's own work, as Kafka does.
        record = group_metadata_record(group.group_id, _metadata_value(group))
        self._join_group(waiter, request, group, client_id, client_host)
        self._persist(group.group_id, [record], _GroupCreated(group.group_id, waiter))

    def _join_group(
        self, waiter: _Waiter, request: JoinGroupRequest, group: _Group, client_id: str, client_host: str
    ) -> None:
        v = waiter.api_version
        member_id = request.member_id
        instance_id = request.group_instance_id if v >= 5 else None
        rebalance_timeout = request.rebalance_timeout_ms if v >= 1 else request.session_timeout_ms
        protocols = _dedupe(request)
        if not self._accept_joining(group, member_id):
            self._remove_member(group, member_id)
            self._respond(waiter, _join_error(v, E.GROUP_MAX_SIZE_REACHED, ""))
            return
        names = [name for name, _ in protocols]
        if not self._supports_protocols(group, request.protocol_type, names):
            self._respond(waiter, _join_error(v, E.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return

        def new_member(new_id: str) -> _Member:
            return _Member(
                new_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                request.session_timeout_ms,
                request.protocol_type,
                protocols,
                join=waiter,
                is_new=True,
            )

        if not member_id:
            new_id = self._new_member_id(group, instance_id if instance_id is not None else client_id)
            if instance_id is not None:
                existing = group.static_members.get(instance_id)
                if existing is not None:
                    self._replace_static_member(
                        group, existing, new_id, protocols, rebalance_timeout, request, waiter
                    )
                else:
                    self._add_member_and_rebalance(group, new_member(new_id))
            elif v >= 4:
                group.pending_join[new_id] = None
                self._schedule((_HEARTBEAT, group.group_id, new_id), request.session_timeout_ms)
                self._respond(waiter, _join_error(v, E.MEMBER_ID_REQUIRED, new_id))
            else:
                self._add_member_and_rebalance(group, new_member(new_id))
            return

        if member_id in group.pending_join and instance_id is None:
            self._add_member_and_rebalance(group, new_member(member_id))
            return
        error = self._validate_member(group, member_id, instance_id)
        if error is not None:
            self._respond(waiter, _join_error(v, error, member_id))
            return
        member = group.members[member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member(member, protocols, rebalance_timeout, request.session_timeout_ms, waiter)
            self._maybe_prepare_rebalance_or_complete_join(group)
        elif state is GroupState.COMPLETING_REBALANCE or state is GroupState.STABLE:
            unchanged = member.protocols == protocols
            is_leader = member_id == group.leader_id
            if unchanged and (state is GroupState.COMPLETING_REBALANCE or not is_leader):
                if member.join is not None:
                    self._respond(
                        member.join, _join_error(member.join.api_version, E.REBALANCE_IN_PROGRESS, member_id)
                    )
                member.join = waiter
                self._join_answer(
                    group, member, with_members=is_leader and state is GroupState.COMPLETING_REBALANCE
                )
            else:
                self._update_member(member, protocols, rebalance_timeout, request.session_timeout_ms, waiter)
                self._maybe_prepare_rebalance_or_complete_join(group)
        else:
            self._respond(waiter, _join_error(v, E.UNKNOWN_MEMBER_ID, member_id))

    def _add_member_and_rebalance(self, group: _Group, member: _Member) -> None:
        if group.state is GroupState.PREPARING_REBALANCE and group.previous_state is GroupState.EMPTY:
            group.new_member_added = True
        self._add_member(group, member)
        self._arm_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _replace_static_member(
        self,
        group: _Group,
        old_id: str,
        new_id: str,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout: int,
        request: JoinGroupRequest,
        waiter: _Waiter,
    ) -> None:
        """A static member came back with no member id: it takes over its old entry, fencing it."""
        previous_leader = group.leader_id
        old = group.members.pop(old_id)
        if old.join is not None:
            self._respond(old.join, _join_error(old.join.api_version, E.FENCED_INSTANCE_ID, old_id))
        if old.sync is not None:
            self._respond(old.sync, SyncGroupResponse(error_code=E.FENCED_INSTANCE_ID))
        self._cancel((_HEARTBEAT, group.group_id, old_id))
        member = _Member(
            new_id,
            old.group_instance_id,
            old.client_id,
            old.client_host,
            old.rebalance_timeout_ms,
            old.session_timeout_ms,
            old.protocol_type,
            old.protocols,
            old.assignment,
        )
        group.members[new_id] = member
        if group.leader_id == old_id:
            group.leader_id = new_id
        if old.group_instance_id is not None:
            group.static_members[old.group_instance_id] = new_id
        if old_id in group.pending_sync:
            del group.pending_sync[old_id]
            group.pending_sync[new_id] = None
        self._arm_heartbeat(group, member, member.session_timeout_ms)
        self._update_member(member, protocols, rebalance_timeout, request.session_timeout_ms, waiter)
        if group.state is GroupState.STABLE:
            if group.protocol_name == self._select_protocol(group):
                # Same protocol: no rebalance. Store the new member id, then answer.
                self._persist_group(group, _StaticMemberReplaced(group.group_id, old, new_id, previous_leader, waiter))
            else:
                self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.state is GroupState.COMPLETING_REBALANCE:
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    # -- SyncGroup, Heartbeat, LeaveGroup -------------------------------------------------------

    def _sync(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, SyncGroupRequest)
        v = waiter.api_version
        group = self._groups.get(request.group_id)
        if group is None or group.state is GroupState.EMPTY:
            self._respond(waiter, SyncGroupResponse(error_code=E.UNKNOWN_MEMBER_ID))
            return
        member_id = request.member_id
        error = self._validate_member(group, member_id, request.group_instance_id if v >= 3 else None)
        if error is None and request.generation_id != group.generation:
            error = E.ILLEGAL_GENERATION
        if (
            error is None
            and v >= 5
            and (
                _inconsistent(request.protocol_type, group.protocol_type)
                or _inconsistent(request.protocol_name, group.protocol_name)
            )
        ):
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if error is None and group.state is GroupState.PREPARING_REBALANCE:
            error = E.REBALANCE_IN_PROGRESS
        if error is not None:
            self._respond(waiter, SyncGroupResponse(error_code=error))
            return
        member = group.members[member_id]
        if group.state is GroupState.STABLE:
            self._remove_pending_sync(group, member_id)
            self._respond(
                waiter,
                SyncGroupResponse(
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=member.assignment,
                ),
            )
            return
        # COMPLETING_REBALANCE
        if member.sync is not None:
            self._respond(member.sync, SyncGroupResponse(error_code=E.REBALANCE_IN_PROGRESS))
        member.sync = waiter
        self._remove_pending_sync(group, member_id)
        if member_id != group.leader_id:
            return
        given = {a.member_id: a.assignment for a in request.assignments}
        # Members the leader left out get an empty assignment (Kafka does the same).
        assignments = {m: given.get(m, b"") for m in group.members}
        value = _metadata_value(group, assignments, state_timestamp_ms=self._clock)
        self._persist(
            group.group_id,
            [group_metadata_record(group.group_id, value)],
            _AssignmentStored(group.group_id, group.generation, assignments),
        )

    def _heartbeat(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, HeartbeatRequest)
        group = self._groups.get(request.group_id)
        if group is None:
            self._respond(waiter, HeartbeatResponse(error_code=E.UNKNOWN_MEMBER_ID))
            return
        instance_id = request.group_instance_id if waiter.api_version >= 3 else None
        error = self._validate_member(group, request.member_id, instance_id)
        if error is None and request.generation_id != group.generation:
            error = E.ILLEGAL_GENERATION
        if error is None:
            if group.state is GroupState.EMPTY:
                error = E.UNKNOWN_MEMBER_ID
            else:
                self._arm_heartbeat(
                    group,
                    group.members[request.member_id],
                    group.members[request.member_id].session_timeout_ms,
                )
                if group.state is GroupState.PREPARING_REBALANCE:
                    error = E.REBALANCE_IN_PROGRESS
        self._respond(waiter, HeartbeatResponse(error_code=error or E.NONE))

    def _leave(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, LeaveGroupRequest)
        v = waiter.api_version
        identities = (
            request.members if v >= 3 else [LeaveGroupRequestMemberIdentity(member_id=request.member_id)]
        )
        top = E.NONE
        answers: list[LeaveGroupResponseMemberResponse] = []
        group = self._groups.get(request.group_id)
        if not request.group_id:
            top = E.INVALID_GROUP_ID
        elif group is None:
            top = E.UNKNOWN_MEMBER_ID
        else:
            left = False
            for identity in identities:
                member_id, instance_id = identity.member_id, identity.group_instance_id
                error: ErrorCode | None = None
                if not member_id:
                    static_id = None if instance_id is None else group.static_members.get(instance_id)
                    if static_id is None:
                        error = E.UNKNOWN_MEMBER_ID
                    else:
                        self._remove_member(group, static_id)
                elif member_id in group.pending_join:
                    self._remove_member(group, member_id)
                else:
                    error = self._validate_member(group, member_id, instance_id)
                    if error is None:
                        self._remove_member(group, member_id)
                left = left or error is None
                answers.append(
                    LeaveGroupResponseMemberResponse(
                        member_id=member_id, group_instance_id=instance_id, error_code=error or E.NONE
                    )
                )
            if left:
                if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                    self._maybe_prepare_rebalance_or_complete_join(group)
                elif group.state is GroupState.PREPARING_REBALANCE:
                    self._maybe_complete_join_phase(group)
        if v >= 3:
            self._respond(waiter, LeaveGroupResponse(error_code=top, members=answers))
        else:
            first = next((a.error_code for a in answers if a.error_code != E.NONE), E.NONE)
            self._respond(waiter, LeaveGroupResponse(error_code=top or first))

    # -- offsets --------------------------------------------------------------------------------

    def _offset_commit(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, OffsetCommitRequest)
        v = waiter.api_version
        now = self._clock
        generation = request.generation_id_or_member_epoch if v >= 1 else -1
        member_id = request.member_id if v >= 1 else ""
        instance_id = request.group_instance_id if v >= 7 else None
        group = self._groups.get(request.group_id)
        error: ErrorCode | None = None
        if not request.group_id:
            error = E.INVALID_GROUP_ID
        elif group is None and generation >= 0:
            error = E.GROUP_ID_NOT_FOUND if v >= 9 else E.ILLEGAL_GENERATION
        # With generation -1 and no group, the commit creates a "simple" group, kept by its offsets.
        if group is not None and error is None:
            error = self._validate_offset_commit(group, member_id, instance_id, generation)
            if error is None and group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
                member = group.members[member_id]
                self._arm_heartbeat(group, member, member.session_timeout_ms)
        retention = request.retention_time_ms if 2 <= v <= 4 else -1
        expire = now + retention if retention != -1 else -1
        records: list[KeyValue] = []
        topics: list[OffsetCommitResponseTopic] = []
        for topic in request.topics:
            name: str | None = topic.name
            topic_error = error
            if v >= 10:
                name = None if self._topic_name_of is None else self._topic_name_of(topic.topic_id)
                if name is None and topic_error is None:
                    topic_error = E.UNKNOWN_TOPIC_ID
            elif (
                self._topic_id_of is not None
                and topic_error is None
                and self._topic_id_of(topic.name) is None
            ):
                topic_error = E.UNKNOWN_TOPIC_OR_PARTITION
            answers = []
            for p in topic.partitions:
                p_error = topic_error
                metadata = p.committed_metadata if p.committed_metadata is not None else ""
                if p_error is None and len(metadata.encode()) > self.config.offset_metadata_max_bytes:
                    p_error = E.OFFSET_METADATA_TOO_LARGE
                if p_error is None and name is not None:
                    timestamp = p.commit_timestamp if v == 1 and p.commit_timestamp != -1 else now
                    value = OffsetCommitValue(
                        p.committed_offset,
                        metadata,
                        timestamp,
                        expire,
                        p.committed_leader_epoch if v >= 6 else -1,
                    )
                    records.append(offset_commit_record(request.group_id, name, p.partition_index, value))
                answers.append(
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=p_error or E.NONE
                    )
                )
            topics.append(
                OffsetCommitResponseTopic(topic_id=topic.topic_id, partitions=answers)
                if v >= 10
                else OffsetCommitResponseTopic(name=topic.name, partitions=answers)
            )
        self._persist_offsets(_OffsetWrite(request.group_id, records, waiter, OffsetCommitResponse(topics=topics)))

    def _validate_offset_commit(
        self, group: _Group, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode | None:
        if generation < 0 and group.state is GroupState.EMPTY:
            return None
        if generation >= 0 or member_id or instance_id is not None:
            error = self._validate_member(group, member_id, instance_id)
            if error is not None:
                return error
            if generation != group.generation:
                return E.ILLEGAL_GENERATION
        elif group.state is not GroupState.EMPTY:
            return E.UNKNOWN_MEMBER_ID
        if group.state is GroupState.COMPLETING_REBALANCE:
            return E.REBALANCE_IN_PROGRESS
        return None

    def _fetch_group(
        self, group_id: str, topics: list[tuple[str | None, uuid.UUID, list[int]]] | None
    ) -> tuple[ErrorCode, list[tuple[str, uuid.UUID, list[tuple[int, OffsetCommitValue | None, ErrorCode]]]]]:
        """The committed offsets of ``topics`` (``None``: all), as (topic, id, [(partition, value, error)])."""
        if not group_id:
            return E.INVALID_GROUP_ID, []
        group = self._groups.get(group_id)
        offsets = {} if group is None else group.offsets
        out: list[tuple[str, uuid.UUID, list[tuple[int, OffsetCommitValue | None, ErrorCode]]]] = []
        if topics is None:
            for name in sorted(offsets):
                topic_id = None if self._topic_id_of is None else self._topic_id_of(name)
                partitions = offsets[name]
                out.append(
                    (name, topic_id or _ZERO_UUID, [(p, partitions[p], E.NONE) for p in sorted(partitions)])
                )
            return E.NONE, out
        for wanted_name, wanted_id, indexes in topics:
            if wanted_name is None:
                out.append(("", wanted_id, [(p, None, E.UNKNOWN_TOPIC_ID) for p in indexes]))
                continue
            known = offsets.get(wanted_name, {})
            out.append((wanted_name, wanted_id, [(p, known.get(p), E.NONE) for p in indexes]))
        return E.NONE, out

    def _offset_fetch(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        # require_stable (v7+) needs no work: transactional offset commits are not handled here.
        assert isinstance(request, OffsetFetchRequest)
        v = waiter.api_version
        if v >= 8:
            groups = []
            for g in request.groups:
                wanted: list[tuple[str | None, uuid.UUID, list[int]]] | None = None
                if g.topics is not None:
                    wanted = [
                        (
                            self._name_for_id(t.topic_id) if v >= 10 else t.name,
                            t.topic_id,
                            list(t.partition_indexes),
                        )
                        for t in g.topics
                    ]
                error, found = self._fetch_group(g.group_id, wanted)
                groups.append(
                    OffsetFetchResponseGroup(
                        group_id=g.group_id,
                        error_code=error,
                        topics=[
                            OffsetFetchResponseTopics(
                                topic_id=topic_id if v >= 10 else _ZERO_UUID,
                                name=name if v < 10 else "",
                                partitions=[
                                    OffsetFetchResponsePartitions(
                                        partition_index=p,
                                        committed_offset=-1 if value is None else value.offset,
                                        committed_leader_epoch=-1 if value is None else value.leader_epoch,
                                        metadata="" if value is None else value.metadata,
                                        error_code=p_error,
                                    )
                                    for p, value, p_error in partitions
                                ],
                            )
                            for name, topic_id, partitions in found
                        ],
                    )
                )
            self._respond(waiter, OffsetFetchResponse(groups=groups))
            return
        wanted = None
        if request.topics is not None:
            wanted = [(t.name, _ZERO_UUID, list(t.partition_indexes)) for t in request.topics]
        error, found = self._fetch_group(request.group_id, wanted)
        if error != E.NONE and v < 2:
            # v0-v1 have no group-level error: every asked-for partition carries it.
            found = [
                (t.name, _ZERO_UUID, [(p, None, error) for p in t.partition_indexes])
                for t in request.topics or []
            ]
        self._respond(
            waiter,
            OffsetFetchResponse(
                error_code=error if v >= 2 else E.NONE,
                topics=[
                    OffsetFetchResponseTopic(
                        name=name,
                        partitions=[
                            OffsetFetchResponsePartition(
                                partition_index=p,
                                committed_offset=-1 if value is None else value.offset,
                                committed_leader_epoch=-1 if value is None or v < 5 else value.leader_epoch,
                                metadata="" if value is None else value.metadata,
                                error_code=p_error,
                            )
                            for p, value, p_error in partitions
                        ],
                    )
                    for name, _, partitions in found
                ],
            ),
        )

    def _name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return None if self._topic_name_of is None else self._topic_name_of(topic_id)

    def _offset_delete(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, OffsetDeleteRequest)
        group = self._groups.get(request.group_id)
        if not request.group_id:
            self._respond(waiter, OffsetDeleteResponse(error_code=E.INVALID_GROUP_ID))
            return
        if group is None:
            self._respond(waiter, OffsetDeleteResponse(error_code=E.GROUP_ID_NOT_FOUND))
            return
        if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            self._respond(waiter, OffsetDeleteResponse(error_code=E.NON_EMPTY_GROUP))
            return
        records: list[KeyValue] = []
        topics = []
        for topic in request.topics:
            subscribed = group.is_subscribed(topic.name)
            committed = group.offsets.get(topic.name, {})
            answers = []
            for p in topic.partitions:
                if subscribed:
                    answers.append(
                        OffsetDeleteResponsePartition(
                            partition_index=p.partition_index, error_code=E.GROUP_SUBSCRIBED_TO_TOPIC
                        )
                    )
                    continue
                answers.append(OffsetDeleteResponsePartition(partition_index=p.partition_index))
                if p.partition_index in committed:
                    records.append(offset_commit_record(group.group_id, topic.name, p.partition_index, None))
            topics.append(OffsetDeleteResponseTopic(name=topic.name, partitions=answers))
        self._persist_offsets(_OffsetWrite(group.group_id, records, waiter, OffsetDeleteResponse(topics=topics)))

    def _expire_offsets(self) -> None:
        now = self._clock
        retention = self.config.offsets_retention_ms
        for group in list(self._groups.values()):
            if group.protocol_type is None:
                use_state_time = False
            elif group.state is GroupState.EMPTY:
                use_state_time = True
            elif (
                group.protocol_type == CONSUMER_PROTOCOL_TYPE
                and group.subscribed_topics is not None
                and group.state is GroupState.STABLE
            ):
                use_state_time = False
            else:
                continue
            records: list[KeyValue] = []
            all_expired = True
            for topic, partitions in group.offsets.items():
                if group.is_subscribed(topic):
                    all_expired = False
                    continue
                for partition, value in partitions.items():
                    base = (
                        group.state_timestamp_ms
                        if use_state_time and group.state_timestamp_ms != -1
                        else value.commit_timestamp_ms
                    )
                    if value.expire_timestamp_ms != -1:
                        expired = now >= value.expire_timestamp_ms
                    else:
                        expired = now - base >= retention
                    if expired:
                        records.append(offset_commit_record(group.group_id, topic, partition, None))
                    else:
                        all_expired = False
            if all_expired and group.state is GroupState.EMPTY and not group.pending_join:
                self._delete_group(group)  # its tombstones cover every offset
            else:
                self._persist_offsets(_OffsetWrite(group.group_id, records))

    # -- group listing and deletion -------------------------------------------------------------

    def _list_groups(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, ListGroupsRequest)
        v = waiter.api_version
        states = {s.strip().lower() for s in request.states_filter} if v >= 4 else set()
        types = {t.strip().lower() for t in request.types_filter} if v >= 5 else set()
        listed = []
        if not types or CLASSIC_GROUP_TYPE in types:
            for group in self._groups.values():
                if states and group.state.value.lower() not in states:
                    continue
                listed.append(
                    ListGroupsResponseListedGroup(
                        group_id=group.group_id,
                        protocol_type=group.protocol_type or "",
                        group_state=group.state.value if v >= 4 else "",
                        group_type=CLASSIC_GROUP_TYPE if v >= 5 else "",
                    )
                )
        self._respond(waiter, ListGroupsResponse(groups=listed))

    def _describe_groups(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, DescribeGroupsRequest)
        v = waiter.api_version
        described = []
        for group_id in request.groups:
            group = self._groups.get(group_id)
            if not group_id:
                described.append(
                    DescribeGroupsResponseDescribedGroup(
                        group_id=group_id, error_code=E.INVALID_GROUP_ID, group_state=GroupState.DEAD.value
                    )
                )
            elif group is None:
                not_found = v >= 6
                described.append(
                    DescribeGroupsResponseDescribedGroup(
                        group_id=group_id,
                        group_state=GroupState.DEAD.value,
                        error_code=E.GROUP_ID_NOT_FOUND if not_found else E.NONE,
                        error_message=f"Group {group_id} not found." if not_found else None,
                    )
                )
            else:
                stable = group.state is GroupState.STABLE
                described.append(
                    DescribeGroupsResponseDescribedGroup(
                        group_id=group_id,
                        group_state=group.state.value,
                        protocol_type=group.protocol_type or "",
                        protocol_data=(group.protocol_name or "") if stable else "",
                        members=[
                            DescribeGroupsResponseDescribedGroupMember(
                                member_id=m.member_id,
                                group_instance_id=m.group_instance_id,
                                client_id=m.client_id,
                                client_host=m.client_host,
                                member_metadata=m.metadata(group.protocol_name) if stable else b"",
                                member_assignment=m.assignment,
                            )
                            for m in group.members.values()
                        ],
                        authorized_operations=_NO_OPERATIONS,
                    )
                )
        self._respond(waiter, DescribeGroupsResponse(groups=described))

    def _delete_groups(self, waiter: _Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, DeleteGroupsRequest)
        answer = _DeleteGroupsAnswer(waiter, [])
        for group_id in request.groups_names:
            group = self._groups.get(group_id)
            if not group_id:
                error = E.INVALID_GROUP_ID
            elif group is None:
                error = E.GROUP_ID_NOT_FOUND
            elif group.state is not GroupState.EMPTY:
                error = E.NON_EMPTY_GROUP
            else:
                error = E.NONE
                answer.outstanding += 1
                self._delete_group(group, answer, len(answer.results))
            answer.results.append(DeleteGroupsResponseDeletableGroupResult(group_id=group_id, error_code=error))
        if answer.outstanding == 0:
            self._respond(waiter, DeleteGroupsResponse(results=answer.results))

    def _delete_group(self, group: _Group, answer: _DeleteGroupsAnswer | None = None, index: int = -1) -> None:
        """Tombstone every offset and the metadata of an empty group; drop it once stored."""
        group_id = group.group_id
        records = [
            offset_commit_record(group_id, topic, partition, None)
            for topic, partitions in group.offsets.items()
            for partition in partitions
        ]
        records.append(group_metadata_record(group_id, None))
        write = _GroupDeleted(group, group.state_timestamp_ms, answer, index)
        for member_id in list(group.pending_join):
            self._remove_member(group, member_id)
        self._cancel((_JOIN, group_id, ""))
        self._cancel((_SYNC, group_id, ""))
        self._transition(group, GroupInput.DELETE)
        del self._groups[group_id]
        self._persist(group_id, records, write)


_Handler = Callable[[GroupCoordinator, _Waiter, Message, str, str], None]

_HANDLERS: Final[dict[type[Message], _Handler]] = {
    JoinGroupRequest: GroupCoordinator._join,
    SyncGroupRequest: GroupCoordinator._sync,
    HeartbeatRequest: GroupCoordinator._heartbeat,
    LeaveGroupRequest: GroupCoordinator._leave,
    OffsetCommitRequest: GroupCoordinator._offset_commit,
    OffsetFetchRequest: GroupCoordinator._offset_fetch,
    OffsetDeleteRequest: GroupCoordinator._offset_delete,
    ListGroupsRequest: GroupCoordinator._list_groups,
    DescribeGroupsRequest: GroupCoordinator._describe_groups,
    DeleteGroupsRequest: GroupCoordinator._delete_groups,
}


# -- helpers ------------------------------------------------------------------------------------


def _dedupe(request: JoinGroupRequest) -> list[tuple[str, bytes]]:
    """The request's protocols, first occurrence of each name (Kafka keys them by name)."""
    seen: dict[str, bytes] = {}
    for p in request.protocols:
        seen.setdefault(p.name, bytes(p.metadata))
    return list(seen.items())


def _candidates(group: _Group) -> set[str]:
    """Protocols every member supports (only used for membership tests)."""
    members = list(group.members.values())
    if not members:
        return set()
    common = set(members[0].names())
    for member in members[1:]:
        common &= set(member.names())
    return common


def _inconsistent(asked: str | None, actual: str | None) -> bool:
    return asked is not None and actual is not None and asked != actual


def _subscribed_topics(group: _Group) -> frozenset[str] | None:
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
            subscription = ConsumerProtocolSubscription.decode(data[2:], 0)
        except DecodeError:
            return None
        topics.update(subscription.topics)
    return frozenset(topics)


def _join_response(
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
    return JoinGroupResponse(
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


def _join_error(v: int, error: int, member_id: str) -> JoinGroupResponse:
    return _join_response(v, error=error, member_id=member_id)


def _metadata_value(
    group: _Group, assignments: dict[str, bytes] | None = None, *, state_timestamp_ms: int | None = None
) -> GroupMetadataValue:
    """The group's metadata record; ``assignments`` and ``state_timestamp_ms`` give what the group
    will hold once the record is stored (a SyncGroup leader's assignment)."""
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation,
        protocol=group.protocol_name,
        leader=group.leader_id if group.members else None,
        current_state_timestamp_ms=group.state_timestamp_ms if state_timestamp_ms is None else state_timestamp_ms,
        members=_member_records(group, assignments),
    )


def _member_records(group: _Group, assignments: dict[str, bytes] | None = None) -> tuple[MemberMetadata, ...]:
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


def _failed(answer: Message, error: int) -> Message:
    """``answer`` (of a request whose write was refused) with ``error`` instead: every partition of
    an OffsetCommit (Kafka's ``OffsetCommitRequest.getErrorResponse``), an OffsetDelete as a whole."""
    if isinstance(answer, OffsetCommitResponse):
        return OffsetCommitResponse(
            topics=[
                OffsetCommitResponseTopic(
                    name=t.name,
                    topic_id=t.topic_id,
                    partitions=[
                        OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
                        for p in t.partitions
                    ],
                )
                for t in answer.topics
            ]
        )
    if isinstance(answer, OffsetDeleteResponse):
        return OffsetDeleteResponse(error_code=error)
    raise LocalProtocolError(f"no failure answer for {type(answer).__name__}")


def _snapshot(group: _Group) -> GroupSnapshot:
    return GroupSnapshot(
        group_id=group.group_id,
        state=group.state,
        generation=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader_id=group.leader_id,
        state_timestamp_ms=group.state_timestamp_ms,
        members=_member_records(group),
        offsets=tuple(
            (topic, partition, group.offsets[topic][partition])
            for topic in sorted(group.offsets)
            for partition in sorted(group.offsets[topic])
        ),
    )
