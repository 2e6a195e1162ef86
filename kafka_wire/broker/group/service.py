"""The classic group coordinator (JoinGroup/SyncGroup protocol) as a pure state machine: the
facade the broker calls.

Inputs are requests with an opaque ``token`` and the time (``now_ms``); outputs are effects
(:class:`~kafka_wire.broker.group.effects.Respond`, :class:`~kafka_wire.broker.group.effects.Persist`).
There is no I/O, no clock and no randomness: member ids come from an injected factory.

The work is done by one object per job, as Kafka's group-coordinator module splits it:

* ``membership`` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) over ``rebalance`` (the classic
  protocol's join and sync phases, member expiry): Kafka's ``GroupMetadataManager`` and
  ``ClassicGroup``;
* ``offsets`` (OffsetCommit, OffsetFetch, OffsetDelete, retention): ``OffsetMetadataManager``;
* ``admin`` (ListGroups, DescribeGroups, DeleteGroups);
* ``persistence`` (records to and from ``__consumer_offsets``, append ids, replay);
* ``runtime`` (groups, clock, timers, effects) shared by all of them.

Timers (on the caller's clock, in the engine's :class:`~kafka_wire.broker.timers.TimerQueue`,
fired by :meth:`GroupCoordinator.tick` and at the start and end of every other call, so that no
timer is ever overdue when a call returns):

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

import copy
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TypeVar

from kafka_wire import messages
from kafka_wire.broker.buggify import OFF, Hooks
from kafka_wire.broker.group.admin import GroupAdmin
from kafka_wire.broker.group.config import GroupConfig
from kafka_wire.broker.group.consumer_groups import (
    CONSUMER_REBALANCE,
    CONSUMER_SESSION,
    ConsumerGroups,
    TopicsOf,
)
from kafka_wire.broker.group.consumer_model import ConsumerGroup, ConsumerGroupState
from kafka_wire.broker.group.consumer_records import CONSUMER_KEY_VERSIONS
from kafka_wire.broker.group.effects import APPENDED_ERRORS, GroupEffect, KeyValue, client_error
from kafka_wire.broker.group.membership import Membership
from kafka_wire.broker.group.model import (
    CounterMemberIds,
    GroupSnapshot,
    MemberIdFactory,
    PartitionsOf,
    TopicIdOf,
    TopicNameOf,
    Waiter,
    join_error,
    snapshot,
)
from kafka_wire.broker.group.offset_fetch import OffsetFetches
from kafka_wire.broker.group.offsets import Offsets
from kafka_wire.broker.group.persistence import (
    AssignmentStored,
    ConsumerWrite,
    GroupCreated,
    GroupDeleted,
    GroupPersistence,
    OffsetWrite,
    ShareWrite,
    StableFetch,
    StaticMemberReplaced,
    TxnOffsetWrite,
)
from kafka_wire.broker.group.rebalance import Rebalance
from kafka_wire.broker.group.records import OffsetCommitKey, decode_key, decode_offset_commit_value
from kafka_wire.broker.group.routing import refusal_answer, single_group
from kafka_wire.broker.group.runtime import (
    GROUP_TIMERS,
    HEARTBEAT,
    JOIN,
    RETENTION,
    RETENTION_KEY,
    SYNC,
    GroupRuntime,
    timer_key,
)
from kafka_wire.broker.group.share_groups import SHARE_SESSION, ShareGroups
from kafka_wire.broker.group.share_model import ShareGroup
from kafka_wire.broker.group.share_records import SHARE_KEY_VERSIONS
from kafka_wire.broker.group.states import GroupState, can_rebalance
from kafka_wire.broker.group.txn_offsets import TxnOffsets
from kafka_wire.broker.timers import DueTimer, TimerQueue
from kafka_wire.codec.structs import Message
from kafka_wire.errors import LocalProtocolError
from kafka_wire.messages import ApiKey, ErrorCode

_Handler = Callable[[Waiter, Message, str, str], None]


_T = TypeVar("_T")


class GroupCoordinator:
    """Classic consumer groups and committed offsets.

    ``handle()`` takes one request (a generated ``*Request`` message of a group API, see
    :data:`~kafka_wire.broker.group.api_keys.GROUP_API_KEYS`) decoded at ``api_version``, and
    returns effects in the order to apply them. A JoinGroup or SyncGroup may get no ``Respond`` until a later call (``handle`` or
    ``tick``) completes the rebalance; every held request is answered once its deadline passes.

    ``timers`` is the engine's shared queue (the coordinator uses the owner ``"group"`` in it);
    without one the coordinator keeps its own.

    ``partitioned`` (a replicated cluster): the coordinator serves only the ``__consumer_offsets``
    partitions it is told this node leads (:meth:`partition_loading`, :meth:`partition_loaded`,
    :meth:`partition_lost`); requests for other groups are refused (``routing``).
    """

    def __init__(
        self,
        config: GroupConfig | None = None,
        *,
        member_id_factory: MemberIdFactory | None = None,
        topic_name_of: TopicNameOf | None = None,
        topic_id_of: TopicIdOf | None = None,
        partitions_of: PartitionsOf | None = None,
        timers: TimerQueue | None = None,
        partitioned: bool = False,
        topics: TopicsOf | None = None,
        hooks: Hooks = OFF,
    ) -> None:
        self.config = config if config is not None else GroupConfig()
        rt = self._rt = GroupRuntime(
            self.config,
            timers if timers is not None else TimerQueue(),
            member_id_factory if member_id_factory is not None else CounterMemberIds(),
            topic_name_of,
            topic_id_of,
            partitions_of,
            hooks,
        )
        if partitioned:
            rt.served = set()
        self._persistence = GroupPersistence(rt)
        self._rebalance = Rebalance(rt, self._persistence)
        self._membership = Membership(rt, self._persistence, self._rebalance)
        topics_of: TopicsOf = topics if topics is not None else lambda: ()
        self._consumer = ConsumerGroups(rt, self._persistence.persist, topics_of)
        self._share = ShareGroups(rt, self._persistence, topics_of)
        self._admin = GroupAdmin(
            rt, self._persistence, self._rebalance, self._share.groups, self._share.delete
        )
        self._txn_offsets = TxnOffsets(rt, self._persistence, self._rebalance)
        self._offsets = Offsets(rt, self._persistence, self._rebalance, self._admin.delete_group)
        self._fetches = OffsetFetches(rt, self._persistence, self._txn_offsets.has_pending)
        self._handlers: dict[int, _Handler] = {
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self._consumer_heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: self._admin.consumer_group_describe,
            ApiKey.JOIN_GROUP: self._join,
            ApiKey.SYNC_GROUP: self._membership.sync,
            ApiKey.HEARTBEAT: self._membership.heartbeat,
            ApiKey.LEAVE_GROUP: self._membership.leave,
            ApiKey.OFFSET_COMMIT: self._offsets.offset_commit,
            ApiKey.OFFSET_FETCH: self._fetches.offset_fetch,
            ApiKey.OFFSET_DELETE: self._offsets.offset_delete,
            ApiKey.LIST_GROUPS: self._admin.list_groups,
            ApiKey.DESCRIBE_GROUPS: self._admin.describe_groups,
            ApiKey.DELETE_GROUPS: self._admin.delete_groups,
            ApiKey.TXN_OFFSET_COMMIT: self._txn_offsets.txn_offset_commit,
            ApiKey.SHARE_GROUP_HEARTBEAT: self._share.heartbeat,
            ApiKey.SHARE_GROUP_DESCRIBE: self._share.describe,
        }

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
        key = request.API_KEY
        handler = self._handlers.get(key) if key is not None and request.KIND == "request" else None
        if handler is None:
            raise LocalProtocolError(f"the group coordinator does not handle {type(request).__name__}")
        if api_version not in type(request).VERSIONS:
            raise LocalProtocolError(f"{type(request).__name__} has no version {api_version}")
        self._observe(now_ms)
        waiter = Waiter(token, api_version)
        group_id = single_group(request, api_version)
        refused = None if not group_id else self._rt.refusal(group_id)
        if refused is not None:
            self._rt.respond(waiter, refusal_answer(request, api_version, refused))
        else:
            handler(waiter, request, client_id, client_host)
        self._run_timers()
        return self._rt.take()

    def tick(self, now_ms: int) -> list[GroupEffect]:
        """Fire the timers due at ``now_ms``."""
        self._observe(now_ms)
        return self._rt.take()

    def persisted(self, append_id: int, error_code: int, now_ms: int) -> list[GroupEffect]:
        """The outcome of the ``Persist`` effect ``append_id``: 0 when its records were appended
        (and, in a cluster, replicated), else the log's error code.

        Once stored, what the write stands for takes effect, reads see it (and every write handed
        out before it to its partition) and its requests are answered. A refused write changes
        nothing in memory and its requests get the mapped error (``APPEND_ERRORS``): an
        OffsetCommit every partition, a leader's assignment every waiting member (and the group
        rebalances again), a static member's rejoin its JoinGroup (the old member id is
        restored). REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS_AFTER_APPEND (``APPENDED_ERRORS``):
        the records were appended, so what they changed stays while the requests get the error
        (the last two cases act as above, as Kafka's callbacks do); the second is stored, a
        timeout once :meth:`replicated` says so. Report outcomes in the order the effects came;
        one reported late still applies, after the checks of the group's state and generation
        that Kafka's callbacks make. An unknown ``append_id`` raises :class:`LocalProtocolError`.
        """
        write = self._persistence.take_write(append_id)
        self._observe(now_ms)
        error = client_error(error_code) if error_code else ErrorCode.NONE
        revert = error_code not in APPENDED_ERRORS  # Kafka's runtime reverts only a refused append
        match write:
            case OffsetWrite():
                self._offsets.offsets_written(write, error, revert=revert)
            case GroupCreated() if error:
                self._membership.creation_failed(write, error, revert=revert)
            # GroupEmptied: Kafka logs a failure; the broker logs every refused write.
            case AssignmentStored():
                self._membership.assignment_written(write, error)
            case StaticMemberReplaced():
                self._membership.static_member_written(write, error)
            case GroupDeleted():
                self._admin.deletion_written(write, error, revert=revert)
            case ConsumerWrite():
                self._consumer.written(write, error, revert=revert)
            case TxnOffsetWrite():
                self._txn_offsets.written(write, error, revert=revert)
            case ShareWrite():
                self._share.written(write, error, revert=revert)
            case StableFetch():
                self._fetches.fetched(write, error_code)
        self._persistence.settle(append_id, error_code, appended=not revert)
        self._run_timers()
        return self._rt.take()

    def replicated(self, append_id: int, now_ms: int) -> list[GroupEffect]:
        """The records of ``append_id``, whose outcome was REQUEST_TIMED_OUT, are stored after all
        (the high watermark passed them): reads see them from now on, and the writes handed out
        before them to the partition. An id stored already, or of a partition dropped, is ignored."""
        self._observe(now_ms)
        self._persistence.stored(append_id)
        return self._rt.take()

    def pending_writes(self) -> int:
        """How many ``Persist`` effects await :meth:`persisted`."""
        return len(self._persistence.writes)

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` has work next (``0``: at once, before the first call has shown a time)."""
        if self._rt.now is None:
            return 0
        unarmed = [*self._persistence.unarmed, *self._consumer.unarmed, *self._share.unarmed]
        if any(self._rt.serves(group_id) for group_id, _ in unarmed):
            return self._rt.now  # members loaded since the last call: arm their sessions now
        return self._rt.timers.next_deadline_ms(GROUP_TIMERS)

    def load(self, records: Iterable[KeyValue]) -> None:
        """Replay ``__consumer_offsets`` records (oldest first; compacted or not) at startup.

        KIP-848 consumer group records rebuild those groups; other kinds (share groups) are
        skipped. Loaded members
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
        version = int.from_bytes(key[:2], "big", signed=True) if len(key) >= 2 else -1
        if version in CONSUMER_KEY_VERSIONS:
            self._consumer.replay(key, value)
        elif version in SHARE_KEY_VERSIONS:
            self._share.replay(key, value)
        else:
            self._persistence.replay(key, value)

    def _consumer_heartbeat(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        """ConsumerGroupHeartbeat; a share group's id is GROUP_ID_NOT_FOUND, as Kafka answers."""
        assert isinstance(request, messages.ConsumerGroupHeartbeatRequest)
        if request.group_id in self._share.groups:
            message = f"Group {request.group_id} is not a consumer group."
            answer = messages.ConsumerGroupHeartbeatResponse(
                error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=message, member_epoch=0
            )
            self._rt.respond(waiter, answer)
            return
        self._consumer.heartbeat(waiter, request, client_id, client_host)

    def _join(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        """JoinGroup; a consumer group (KIP-848) it names is downgraded to a classic group when it
        is empty and ``group.consumer.migration.policy`` allows it, else refused: a classic member
        in a consumer group (mixed membership) is not served here."""
        assert isinstance(request, messages.JoinGroupRequest)
        if request.group_id in self._share.groups:  # a share group: Kafka's answer
            self._rt.respond(
                waiter,
                join_error(waiter.api_version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, request.member_id),
            )
            return
        group = self._rt.groups.get(request.group_id)
        if group is not None and group.consumer is not None:
            downgrade = self.config.consumer_migration_policy in ("bidirectional", "downgrade")
            if group.consumer.members or not downgrade:
                self._rt.respond(
                    waiter,
                    join_error(waiter.api_version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, request.member_id),
                )
                return
            self._consumer.delete_empty(group)
        self._membership.join(waiter, request, client_id, client_host)

    def replay_transactional(self, producer_id: int, key: bytes, value: bytes | None) -> None:
        """Replay one record of a transactional batch (a TxnOffsetCommit's offsets): pending until
        the producer's marker (:meth:`replay_marker`); ``DecodeError`` as :meth:`replay`."""
        decoded = decode_key(key)
        if isinstance(decoded, OffsetCommitKey):
            offset = None if value is None else decode_offset_commit_value(value)
            self._txn_offsets.replay_pending(
                producer_id, decoded.group, decoded.topic, decoded.partition, offset
            )
        else:
            self._persistence.replay(key, value)

    def replay_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """Replay a COMMIT or ABORT marker of ``__consumer_offsets-<partition>``."""
        self._txn_offsets.transaction_ended(partition, producer_id, commit)

    def transactions_ended(self, ended: Iterable[tuple[int, int, bool]], now_ms: int) -> list[GroupEffect]:
        """Markers ``__consumer_offsets`` partitions took (replicated): (partition, producer id,
        commit); the producers' pending offsets there are committed or dropped."""
        self._observe(now_ms)
        for partition, producer_id, commit in ended:
            self._txn_offsets.transaction_ended(partition, producer_id, commit)
        return self._rt.take()

    # -- partitions of __consumer_offsets (a replicated cluster) --------------------------------

    @property
    def served_partitions(self) -> frozenset[int] | None:
        """The partitions whose groups are served (None: every one, not ``partitioned``)."""
        served = self._rt.served
        return None if served is None else frozenset(served)

    @property
    def loading_partitions(self) -> frozenset[int]:
        return frozenset(self._rt.loading)

    def use_partition_count(self, partitions: int) -> None:
        """Place groups by ``partitions`` (the count the offsets topic was created with, once a
        cluster has it); only while no partition is served or loading."""
        rt = self._rt
        if partitions == self.config.offsets_topic_num_partitions:
            return
        if rt.served or rt.loading or rt.groups:
            raise LocalProtocolError("the offsets topic's partition count cannot change under served groups")
        self.config = rt.config = replace(self.config, offsets_topic_num_partitions=partitions)

    def partition_loading(self, partition: int) -> None:
        """This node leads ``partition`` now: its records follow through :meth:`replay` (oldest
        first), then :meth:`partition_loaded`. Meanwhile its groups get COORDINATOR_LOAD_IN_PROGRESS.
        What was in memory of the partition (a stale load) is dropped first."""
        served = self._served()
        self._drop_partition(partition)
        served.discard(partition)
        self._rt.loading.add(partition)

    def partition_loaded(self, partition: int, now_ms: int) -> list[GroupEffect]:
        """The records of ``partition`` are replayed: its groups are served from now on (loaded
        members get their session timeout from ``now_ms``)."""
        served, rt = self._served(), self._rt
        if partition not in rt.loading:
            raise LocalProtocolError(f"partition {partition} of the offsets topic is not loading")
        rt.loading.discard(partition)
        served.add(partition)
        self._observe(now_ms)
        return rt.take()

    def stop_serving(self, partition: int) -> None:
        """Refuse ``partition``'s groups from now on (NOT_COORDINATOR; their writes too), while
        their pending writes are failed; :meth:`partition_lost` then drops them."""
        self._served().discard(partition)
        self._rt.loading.discard(partition)

    def partition_lost(self, partition: int, now_ms: int) -> list[GroupEffect]:
        """This node no longer leads ``partition``: its groups leave memory, their timers stop,
        and the requests waiting in them (JoinGroup, SyncGroup) get NOT_COORDINATOR, so that their
        members look the coordinator up again. Writes of the partition still awaiting
        :meth:`persisted` should be failed before this call, after :meth:`stop_serving` (so that
        what their failure triggers is not written to a partition led elsewhere)."""
        self.stop_serving(partition)
        self._observe(now_ms)
        self._drop_partition(partition, answer=ErrorCode.NOT_COORDINATOR)
        return self._rt.take()

    def _served(self) -> set[int]:
        served = self._rt.served
        if served is None:
            raise LocalProtocolError("this group coordinator serves every partition (not partitioned)")
        return served

    def _drop_partition(self, partition: int, answer: int = 0) -> None:
        rt = self._rt
        self._persistence.drop_partition(partition)
        self._txn_offsets.drop_partition(partition)
        self._share.drop_partition({g for g in self._share.groups if rt.partition_of(g) == partition})
        for group_id in [g for g in rt.groups if rt.partition_of(g) == partition]:
            group = rt.groups.pop(group_id)
            if group.consumer is not None:
                self._consumer.drop(group_id, group.consumer)
            rt.cancel(timer_key(JOIN, group_id))
            rt.cancel(timer_key(SYNC, group_id))
            for member_id in [*group.members, *group.pending_join]:
                rt.cancel(timer_key(HEARTBEAT, group_id, member_id))
                self._persistence.unarmed.pop((group_id, member_id), None)
            if not answer:
                continue
            for member in group.members.values():
                if member.join is not None:
                    rt.respond(member.join, join_error(member.join.api_version, answer, member.member_id))
                    member.join = None
                if member.sync is not None:
                    rt.respond(member.sync, messages.SyncGroupResponse(error_code=answer))
                    member.sync = None

    def topics_deleted(self, topics: Iterable[str], now_ms: int) -> list[GroupEffect]:
        """Tombstone the committed offsets of deleted topics in every group (Kafka does the same)."""
        self._observe(now_ms)
        self._offsets.topics_deleted(topics)
        self._share.topics_deleted()
        self._run_timers()
        return self._rt.take()

    def group(self, group_id: str) -> GroupSnapshot | None:
        """A read-only view of one group."""
        group = self._rt.groups.get(group_id)
        return None if group is None else snapshot(group)

    def groups(self) -> list[GroupSnapshot]:
        """Read-only views of every group, in creation order."""
        return [snapshot(group) for group in self._rt.groups.values()]

    def consumer_group_view(self, group_id: str) -> ConsumerGroup | None:
        """A copy of a KIP-848 consumer group (None: no such group)."""
        group = self._rt.groups.get(group_id)
        return None if group is None or group.consumer is None else group.consumer.copy()

    def consumer_group_ids(self) -> list[str]:
        """The KIP-848 consumer groups in memory, in creation order."""
        return [g.group_id for g in self._rt.groups.values() if g.consumer is not None]

    def consumer_group_state(self, group_id: str) -> ConsumerGroupState | None:
        group = self._rt.groups.get(group_id)
        return None if group is None or group.consumer is None else group.consumer.state()

    def refusal(self, group_id: str) -> ErrorCode | None:
        """Why a request for ``group_id`` is not served here (NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS), None when it is."""
        return self._rt.refusal(group_id)

    def share_group_view(self, group_id: str) -> ShareGroup | None:
        """A copy of a KIP-932 share group (None: no such group)."""
        group = self._share.groups.get(group_id)
        return None if group is None else copy.deepcopy(group)

    @property
    def share_groups(self) -> ShareGroups:
        """The share groups' part: its state metadata (key 15) is read there and changed through
        :meth:`share_write`."""
        return self._share

    def share_write(self, call: Callable[[ShareGroups], _T], now_ms: int) -> tuple[_T, list[GroupEffect]]:
        """``call`` on the share groups' part at ``now_ms``; what it returned and the effects."""
        self._observe(now_ms)
        result = call(self._share)
        self._run_timers()
        return result, self._rt.take()

    def state_of(self, group_id: str) -> GroupState | None:
        group = self._rt.groups.get(group_id)
        return None if group is None else group.state

    # -- time -----------------------------------------------------------------------------------

    def _observe(self, now_ms: int) -> None:
        rt = self._rt
        if rt.now is not None and now_ms < rt.now:
            now_ms = rt.now  # time never goes back: a late call acts at the latest time seen
        first = rt.now is None
        rt.now = now_ms
        if first:
            rt.schedule(RETENTION_KEY, self.config.offsets_retention_check_interval_ms)
        for group_id, member_id in list(self._consumer.unarmed):
            if rt.serves(group_id):
                del self._consumer.unarmed[group_id, member_id]
                self._consumer.arm_loaded(group_id, member_id)
        for group_id, member_id in list(self._share.unarmed):
            if rt.serves(group_id):
                del self._share.unarmed[group_id, member_id]
                self._share.arm_loaded(group_id, member_id)
        unarmed = self._persistence.unarmed
        if unarmed:
            loaded: dict[str, None] = {}
            for group_id, member_id in list(unarmed):
                if not rt.serves(group_id):
                    continue  # a partition still loading: armed once it is served
                del unarmed[group_id, member_id]
                group = rt.groups.get(group_id)
                member = None if group is None else group.members.get(member_id)
                if group is not None and member is not None:
                    rt.arm_heartbeat(group, member, member.session_timeout_ms)
                    loaded[group_id] = None
            for group_id in loaded:
                group = rt.groups[group_id]
                if len(group.members) > self.config.max_group_size and can_rebalance(group.state):
                    # Over group.max.size (lowered since it was stored): Kafka rebalances a group
                    # it loads over capacity, and the rejoins beyond the limit are refused.
                    self._rebalance.prepare_rebalance(group)
        self._run_timers()

    def _run_timers(self) -> None:
        """Fire due timers in deadline order, each acting at its own deadline.

        A driver that ticks late gets the same outcome as one that ticked on time (a timer that
        re-arms itself counts from its deadline, not from the late tick).
        """
        rt = self._rt
        now = rt.clock
        try:
            while (due := rt.timers.pop_due(now, GROUP_TIMERS)) is not None:
                rt.now = due.deadline_ms
                self._fire(due)
        finally:
            rt.now = now

    def _fire(self, due: DueTimer) -> None:
        _, kind, group_id, member_id = due.key
        args = due.payload
        if kind == RETENTION:
            self._offsets.expire()
            self._rt.schedule(RETENTION_KEY, self.config.offsets_retention_check_interval_ms)
            return
        if kind == SHARE_SESSION:
            self._share.expire(str(group_id), str(member_id))
            return
        group = self._rt.groups.get(str(group_id))
        if group is None:
            return
        if kind in (CONSUMER_SESSION, CONSUMER_REBALANCE):
            self._consumer.expire(kind, str(group_id), str(member_id), args)
        elif kind == HEARTBEAT:
            self._rebalance.expire_heartbeat(group, str(member_id))
        elif kind == JOIN:
            if group.state is GroupState.PREPARING_REBALANCE:
                if args:
                    self._rebalance.try_complete_initial_rebalance(group, args[0], args[1])
                else:
                    self._rebalance.complete_join(group)
        elif kind == SYNC:
            self._rebalance.expire_pending_sync(group, args[0])
