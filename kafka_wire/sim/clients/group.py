"""A simulated member of a classic consumer group (the eager protocol, Kafka's range assignor).

States: find the coordinator (FindCoordinator), join (JoinGroup, again with the member id the
broker names on MEMBER_ID_REQUIRED), sync (SyncGroup; the leader sends the range assignment of
the members' subscriptions), fetch the committed offsets (OffsetFetch; none: offset 0), then
stable: fetch as :class:`~kafka_wire.sim.clients.consumer.Fetcher` does, heartbeat, and commit
the next offset after each poll with the leader epoch of the last record consumed (OffsetCommit,
one in flight; a committed offset's epoch holds fetching back until the metadata is as new).
REBALANCE_IN_PROGRESS rejoins; ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID rejoin as a new member;
coordinator errors and lost connections find the coordinator again. A rejoin first gives up the
assignment (eager).

History: ``assign`` on each new assignment (value ``"t:p,..."``, with the generation), ``commit``
per partition on each acknowledged commit (``ok``) and on each commit whose fate is unknown
(``info``: no answer, an answer the member no longer reads, or an error the coordinator may give
after appending it; with the time it was sent), ``poll`` as the fetcher records it (group,
generation).
"""

from __future__ import annotations

import enum
import random
from typing import TYPE_CHECKING, Final

from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError
from kafka_wire.messages import (
    ConsumerProtocolAssignment,
    ConsumerProtocolAssignmentTopicPartition,
    ConsumerProtocolSubscription,
    ErrorCode,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from kafka_wire.sim.clients.base import REQUEST_TIMEOUT_MS, RETRY_BACKOFF_MS, Address
from kafka_wire.sim.clients.consumer import Fetcher
from kafka_wire.sim.history import Op, OpKind, OpType

if TYPE_CHECKING:
    from kafka_wire.sim.history import History

SESSION_TIMEOUT_MS: Final = 3_000
REBALANCE_TIMEOUT_MS: Final = 10_000
#: Kafka's ``heartbeat.interval.ms`` is a third of the session timeout or less.
HEARTBEAT_INTERVAL_MS: Final = 500
PROTOCOL: Final = "range"
#: The consumer protocol's version prefix of subscriptions and assignments.
_V0: Final = b"\x00\x00"

_REJOIN_AS_NEW: Final = frozenset(
    {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID}
)
_COORDINATOR_ERRORS: Final = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
)
#: OffsetCommit errors that leave the commit's fate unknown: the coordinator may have appended it
#: before the error (a write not replicated in time, a partition whose leadership moved, Kafka's
#: REQUEST_TIMED_OUT / NOT_ENOUGH_REPLICAS_AFTER_APPEND mapped to COORDINATOR_NOT_AVAILABLE), and
#: a new coordinator loads whatever reached its log.
_OUTCOME_UNKNOWN: Final = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.REQUEST_TIMED_OUT}
)


class MemberState(enum.Enum):
    JOINING = "JOINING"
    SYNCING = "SYNCING"
    FETCHING_OFFSETS = "FETCHING_OFFSETS"
    STABLE = "STABLE"


def range_assignment(
    members: dict[str, list[str]], counts: dict[str, int]
) -> dict[str, list[tuple[str, int]]]:
    """Kafka's range assignor: per topic, its subscribers in member id order each take a
    contiguous range, the first ``partitions % members`` one more."""
    out: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
    for topic in sorted({t for ts in members.values() for t in ts}):
        subscribers = sorted(m for m, ts in members.items() if topic in ts)
        n = counts.get(topic, 0)
        per, extra = divmod(n, len(subscribers))
        start = 0
        for i, member in enumerate(subscribers):
            take = per + (1 if i < extra else 0)
            out[member] += [(topic, p) for p in range(start, start + take)]
            start += take
    return out


def encode_assignment(partitions: list[tuple[str, int]]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[
            ConsumerProtocolAssignmentTopicPartition(topic=t, partitions=ps) for t, ps in by_topic.items()
        ]
    )
    return _V0 + assignment.encode(0)


def decode_assignment(data: bytes) -> list[tuple[str, int]] | None:
    """The partitions of a consumer protocol assignment; None when it does not decode."""
    if len(data) < 2:
        return []
    try:
        assignment = ConsumerProtocolAssignment.decode(data[2:], 0)
    except DecodeError:
        return None
    return sorted((tp.topic, p) for tp in assignment.assigned_partitions for p in tp.partitions)


def committed_positions(body: OffsetFetchResponse) -> dict[tuple[str, int], tuple[int, int]]:
    """The committed offsets of an OffsetFetch answer with their leader epochs (none: 0, -1)."""
    return {
        (t.name, p.partition_index): (max(p.committed_offset, 0), p.committed_leader_epoch)
        for t in body.topics
        for p in t.partitions
    }


class GroupMember(Fetcher):
    """One member of ``group``; see the module docstring."""

    def __init__(
        self,
        name: str,
        history: History,
        rng: random.Random,
        bootstrap: list[Address],
        topics: list[str],
        group: str,
        *,
        restart_every_ms: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(name, history, rng, bootstrap, topics)
        self.group = group
        #: A consumer process restarting now and then (a new member id, its assignment dropped):
        #: a pause drawn from this range between restarts (None: never), until quiesced.
        self.restart_every_ms = restart_every_ms
        self.restart_at_ms: int | None = None
        self.state = MemberState.JOINING
        self.member_id = ""
        self.coordinator: Address | None = None
        self.group_in_flight = False
        self.group_retry_at_ms = 0
        self.heartbeat_at_ms = 0
        self.assignment: list[tuple[str, int]] = []
        self.commit_in_flight = False
        #: Per partition, the last offset the coordinator acknowledged.
        self.committed: dict[tuple[str, int], int] = {}

    def idle(self) -> bool:
        return (
            self.state is MemberState.STABLE
            and not self.commit_in_flight
            and all(self.committed.get(k, 0) >= r.offset for k, r in self.reads.items())
        )

    # -- the state machine -----------------------------------------------------------------------

    def pump(self, now_ms: int) -> None:
        super().pump(now_ms)
        if self.group_in_flight:
            return
        if now_ms < self.group_retry_at_ms:
            self.wake_at(self.group_retry_at_ms)
            return
        state = self.state
        if self.coordinator is None:
            self._send_group(
                self.any_address(), FindCoordinatorRequest(key=self.group, key_type=0), self._on_coordinator
            )
        elif state is MemberState.SYNCING:  # the SyncGroup went unanswered: join again
            self._rejoin(now_ms)
            self.pump(now_ms)
        elif state is MemberState.FETCHING_OFFSETS:
            self._fetch_offsets()
        elif state is MemberState.JOINING:
            if not self.partition_counts:
                return  # the leader needs partition counts to assign
            subscription = ConsumerProtocolSubscription(topics=list(self.topics))
            request = JoinGroupRequest(
                group_id=self.group,
                session_timeout_ms=SESSION_TIMEOUT_MS,
                rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                member_id=self.member_id,
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name=PROTOCOL, metadata=_V0 + subscription.encode(0))],
            )
            self._send_group(
                self.coordinator, request, self._on_joined, REBALANCE_TIMEOUT_MS + REQUEST_TIMEOUT_MS
            )
        elif state is MemberState.STABLE:
            if self._restart_due(now_ms):
                self._rejoin(now_ms, as_new=True)
                self.pump(now_ms)
                return
            if now_ms >= self.heartbeat_at_ms:
                heartbeat = HeartbeatRequest(
                    group_id=self.group, generation_id=self.generation, member_id=self.member_id
                )
                self._send_group(self.coordinator, heartbeat, self._on_heartbeat)
            else:
                self.wake_at(self.heartbeat_at_ms)
            self._commit(now_ms)

    def _restart_due(self, now_ms: int) -> bool:
        """Time for this member's process to restart (it rejoins as a new member)?"""
        if self.restart_every_ms is None or self.commit_in_flight:
            return False
        if self.restart_at_ms is None:
            self.restart_at_ms = now_ms + self.rng.randint(*self.restart_every_ms)
        if now_ms < self.restart_at_ms:
            self.wake_at(self.restart_at_ms)
            return False
        self.restart_at_ms = None
        return True

    def quiesce(self, now_ms: int) -> None:
        self.restart_every_ms = None
        super().quiesce(now_ms)

    def _send_group(
        self, address: Address, message: Message, handler: _GroupHandler, timeout_ms: int | None = None
    ) -> None:
        self.group_in_flight = True

        def answered(body: Message | None, now_ms: int) -> None:
            self.group_in_flight = False
            if body is None:
                self._find_coordinator(now_ms)
            elif handler != self._on_coordinator and self.coordinator != address:
                # Another answer (an OffsetCommit's coordinator error) marked the coordinator
                # unknown meanwhile. Kafka's consumer then disconnects from it, which fails this
                # request: the state is kept and retried once the coordinator is found again.
                return
            else:
                handler(body, now_ms)

        self.request(address, message, answered, timeout_ms=timeout_ms)

    def _find_coordinator(self, now_ms: int) -> None:
        """The coordinator moved or is unreachable: find it again, keeping the assignment (a
        member whose session outlives the search goes on as before)."""
        self.coordinator = None
        self.group_retry_at_ms = now_ms + RETRY_BACKOFF_MS

    def _rejoin(self, now_ms: int, *, as_new: bool = False, backoff: bool = False) -> None:
        if as_new:
            self.member_id = ""
        self._revoke()
        self.state = MemberState.JOINING
        if backoff:
            self.group_retry_at_ms = now_ms + RETRY_BACKOFF_MS

    def _revoke(self) -> None:
        self.assignment = []
        self.reads.clear()
        self.committed.clear()

    def _group_error(self, code: int, now_ms: int) -> None:
        if code in _COORDINATOR_ERRORS:
            self._find_coordinator(now_ms)
        elif code in _REJOIN_AS_NEW:
            self._rejoin(now_ms, as_new=True)
        else:  # REBALANCE_IN_PROGRESS and the rest
            self._rejoin(now_ms, backoff=code != ErrorCode.REBALANCE_IN_PROGRESS)

    def _on_coordinator(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, FindCoordinatorResponse)
        if body.error_code != ErrorCode.NONE or body.node_id < 0:
            self.group_retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        self.coordinator = (body.host, body.port)

    def _on_joined(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, JoinGroupResponse)
        if body.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = body.member_id
            return
        if body.error_code != ErrorCode.NONE:
            self._group_error(body.error_code, now_ms)
            return
        self.member_id = body.member_id
        self.generation = body.generation_id
        assignments: list[SyncGroupRequestAssignment] = []
        if body.leader == body.member_id:
            members: dict[str, list[str]] = {}
            for member in body.members:
                try:
                    members[member.member_id] = ConsumerProtocolSubscription.decode(
                        member.metadata[2:], 0
                    ).topics
                except DecodeError:
                    members[member.member_id] = []
            plan = range_assignment(members, self.partition_counts)
            assignments = [
                SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(ps))
                for m, ps in plan.items()
            ]
        self.state = MemberState.SYNCING
        request = SyncGroupRequest(
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            protocol_type="consumer",
            protocol_name=PROTOCOL,
            assignments=assignments,
        )
        assert self.coordinator is not None
        self._send_group(
            self.coordinator, request, self._on_synced, REBALANCE_TIMEOUT_MS + REQUEST_TIMEOUT_MS
        )

    def _on_synced(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, SyncGroupResponse)
        if body.error_code != ErrorCode.NONE:
            self._group_error(body.error_code, now_ms)
            return
        partitions = decode_assignment(body.assignment)
        if partitions is None:
            self._rejoin(now_ms, backoff=True)
            return
        self.assignment = partitions
        self.record(
            Op(
                now_ms,
                self.name,
                OpType.OK,
                OpKind.ASSIGN,
                value=",".join(f"{t}:{p}" for t, p in partitions),
                group=self.group,
                generation=self.generation,
            )
        )
        self.state = MemberState.FETCHING_OFFSETS
        self.heartbeat_at_ms = now_ms + HEARTBEAT_INTERVAL_MS
        self._fetch_offsets()

    def _fetch_offsets(self) -> None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in self.assignment:
            by_topic.setdefault(topic, []).append(partition)
        request = OffsetFetchRequest(
            group_id=self.group,
            topics=[OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()],
        )
        assert self.coordinator is not None
        self._send_group(self.coordinator, request, self._on_offsets)

    def _on_offsets(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, OffsetFetchResponse)
        if self.state is not MemberState.FETCHING_OFFSETS:
            return
        if body.error_code != ErrorCode.NONE:
            self._group_error(body.error_code, now_ms)
            return
        for topic in body.topics:
            for p in topic.partitions:
                if p.error_code != ErrorCode.NONE:
                    self._group_error(p.error_code, now_ms)
                    return
        offsets = committed_positions(body)
        for key in self.assignment:
            offset, epoch = offsets.get(key, (0, -1))
            self.read_from(key, offset, epoch)
            self.committed[key] = offset
        self.state = MemberState.STABLE

    def _on_heartbeat(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, HeartbeatResponse)
        if body.error_code != ErrorCode.NONE:
            self._group_error(body.error_code, now_ms)
            return
        self.heartbeat_at_ms = now_ms + HEARTBEAT_INTERVAL_MS

    # -- commits ---------------------------------------------------------------------------------

    def polled(self, key: tuple[str, int], now_ms: int) -> None:
        self._commit(now_ms)

    def _commit(self, now_ms: int) -> None:
        if self.state is not MemberState.STABLE or self.commit_in_flight or self.coordinator is None:
            return
        ahead = {k: r.offset for k, r in self.reads.items() if r.offset > self.committed.get(k, 0)}
        if not ahead:
            return
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (topic, partition), offset in ahead.items():
            by_topic.setdefault(topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=partition,
                    committed_offset=offset,
                    committed_leader_epoch=self.epochs.get((topic, partition), -1),
                )
            )
        request = OffsetCommitRequest(
            group_id=self.group,
            generation_id_or_member_epoch=self.generation,
            member_id=self.member_id,
            topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        )
        self.commit_in_flight = True
        generation = self.generation

        def answered(body: Message | None, at_ms: int) -> None:
            self.commit_in_flight = False
            if isinstance(body, OffsetCommitResponse) and generation == self.generation:
                self._on_committed(body, ahead, generation, now_ms, at_ms)
            else:  # no answer, or one this member no longer reads: stored or not, unknown
                for key, offset in ahead.items():
                    self._record_commit(OpType.INFO, key, offset, generation, now_ms, at_ms)

        self.request(self.coordinator, request, answered)

    def _record_commit(
        self,
        outcome: OpType,
        key: tuple[str, int],
        offset: int,
        generation: int,
        sent_ms: int,
        now_ms: int,
        error: str = "",
    ) -> None:
        self.record(
            Op(
                now_ms,
                self.name,
                outcome,
                OpKind.COMMIT,
                topic=key[0],
                partition=key[1],
                offset=offset,
                group=self.group,
                generation=generation,
                error=error,
                invoked_ms=sent_ms,
            )
        )

    def _on_committed(
        self,
        body: OffsetCommitResponse,
        sent: dict[tuple[str, int], int],
        generation: int,
        sent_ms: int,
        now_ms: int,
    ) -> None:
        for topic in body.topics:
            for p in topic.partitions:
                key = (topic.name, p.partition_index)
                if p.error_code in _OUTCOME_UNKNOWN and (offset := sent.get(key)) is not None:
                    name = ErrorCode.lookup(p.error_code)
                    error = name.name if isinstance(name, ErrorCode) else str(p.error_code)
                    self._record_commit(OpType.INFO, key, offset, generation, sent_ms, now_ms, error)
        for topic in body.topics:
            for p in topic.partitions:
                key = (topic.name, p.partition_index)
                if p.error_code != ErrorCode.NONE:
                    if (
                        p.error_code in _COORDINATOR_ERRORS
                        or p.error_code in _REJOIN_AS_NEW
                        or (p.error_code == ErrorCode.REBALANCE_IN_PROGRESS)
                    ):
                        self._group_error(p.error_code, now_ms)
                        return
                    continue
                offset = sent.get(key)
                if offset is None:
                    continue
                if key in self.reads:
                    self.committed[key] = max(self.committed.get(key, 0), offset)
                self._record_commit(OpType.OK, key, offset, generation, sent_ms, now_ms)


if TYPE_CHECKING:
    from collections.abc import Callable

    _GroupHandler = Callable[[Message, int], None]
