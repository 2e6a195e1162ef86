"""A simulated member of a KIP-848 consumer group (``group.protocol=consumer``).

It finds the coordinator, then heartbeats (ConsumerGroupHeartbeat v1, its own member id): epoch 0
with its subscription to join, then its member epoch and the partitions it owns. An answer with
an assignment is applied at once, as Kafka's consumer does: partitions no longer assigned are
dropped (and reported revoked by the next heartbeat, sent at once), new ones are read from the
group's committed offsets (OffsetFetch; none: offset 0). It fetches as
:class:`~kafka_wire.sim.clients.consumer.Fetcher` does and commits at its member epoch
(OffsetCommit v9) after each poll, one commit in flight. FENCED_MEMBER_EPOCH and
UNKNOWN_MEMBER_ID drop the assignment and rejoin at epoch 0; coordinator errors and lost
connections find the coordinator again; a restart leaves (epoch -1) and joins as a new member.

History: ``assign`` on each new assignment (its generation is the member epoch), ``commit`` and
``poll`` as :class:`~kafka_wire.sim.clients.group.GroupMember` records them, except that commits
carry generation -1: member epochs are per member, so a commit at an older epoch than another
member's is no stale commit (the coordinator checks the member's own epoch).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Final

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
    ErrorCode,
    FindCoordinatorRequest,
    OffsetFetchResponse,
)
from kafka_wire.sim.clients.base import RETRY_BACKOFF_MS, Address
from kafka_wire.sim.clients.consumer import Fetcher
from kafka_wire.sim.clients.group import REBALANCE_TIMEOUT_MS, GroupMember, MemberState, committed_positions
from kafka_wire.sim.history import Op, OpKind, OpType

if TYPE_CHECKING:
    from kafka_wire.sim.history import History

#: Heartbeat at least this often (the coordinator's interval is 5 s by default).
HEARTBEAT_INTERVAL_MS: Final = 500
_REJOIN: Final = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
_COORDINATOR_ERRORS: Final = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
)


class ConsumerProtocolMember(GroupMember):
    """One KIP-848 member of ``group``; see the module docstring."""

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
        super().__init__(name, history, rng, bootstrap, topics, group, restart_every_ms=restart_every_ms)
        self.incarnation = 1
        self.member_id = f"{name}-1"
        self.generation = 0
        self.state = MemberState.STABLE
        self.leaving = False
        #: Partitions assigned and not yet read (their committed offsets are being fetched).
        self.adding: list[tuple[str, int]] = []

    def pump(self, now_ms: int) -> None:
        Fetcher.pump(self, now_ms)
        if self.group_in_flight:
            return
        if now_ms < self.group_retry_at_ms:
            self.wake_at(self.group_retry_at_ms)
            return
        if self.coordinator is None:
            self._send_group(
                self.any_address(), FindCoordinatorRequest(key=self.group, key_type=0), self._on_coordinator
            )
            return
        if self.state is MemberState.FETCHING_OFFSETS:
            self._fetch_offsets()
            return
        if self.state is MemberState.STABLE and self._restart_due(now_ms):
            self.leaving = True
        if not self.topic_ids or not all(t in self.topic_ids for t in self.topics):
            return  # partitions are named by topic id
        if self.leaving or self.generation == 0 or now_ms >= self.heartbeat_at_ms:
            self._heartbeat()
        else:
            self.wake_at(self.heartbeat_at_ms)
        self._commit(now_ms)

    def _heartbeat(self) -> None:
        joining = self.generation == 0
        owned: dict[str, list[int]] = {}
        for topic, partition in self.assignment:
            owned.setdefault(topic, []).append(partition)
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=-1 if self.leaving else self.generation,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS if joining else -1,
            subscribed_topic_names=list(self.topics) if joining else None,
            topic_partitions=[
                ConsumerGroupHeartbeatRequestTopicPartitions(
                    topic_id=self.topic_ids[t], partitions=sorted(ps)
                )
                for t, ps in sorted(owned.items())
            ],
        )
        assert self.coordinator is not None
        self._send_group(self.coordinator, request, self._on_beat)

    def _on_beat(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, ConsumerGroupHeartbeatResponse)
        if self.leaving and body.error_code in _COORDINATOR_ERRORS:
            self._find_coordinator(now_ms)  # leave through the coordinator found next
            return
        if self.leaving:  # left (or refused: the session ends it anyway): join as a new member
            self.leaving = False
            self.incarnation += 1
            self.member_id = f"{self.name}-{self.incarnation}"
            self._rejoin(now_ms)
            return
        if body.error_code != ErrorCode.NONE:
            if body.error_code in _COORDINATOR_ERRORS:
                self._find_coordinator(now_ms)
            elif body.error_code in _REJOIN:
                self._rejoin(now_ms)
            else:
                self.group_retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        self.generation = body.member_epoch
        self.heartbeat_at_ms = now_ms + min(body.heartbeat_interval_ms, HEARTBEAT_INTERVAL_MS)
        if body.assignment is None:
            return
        names = {topic_id: name for name, topic_id in self.topic_ids.items()}
        new = sorted(
            (names[tp.topic_id], p)
            for tp in body.assignment.topic_partitions
            if tp.topic_id in names
            for p in tp.partitions
        )
        revoked = set(self.assignment) - set(new)
        for key in revoked:
            self.reads.pop(key, None)
            self.committed.pop(key, None)
        self.adding = [key for key in new if key not in self.assignment]
        self.assignment = new
        self.record(
            Op(
                now_ms,
                self.name,
                OpType.OK,
                OpKind.ASSIGN,
                value=",".join(f"{t}:{p}" for t, p in new),
                group=self.group,
                generation=self.generation,
            )
        )
        if revoked:
            self.heartbeat_at_ms = now_ms  # say at once that they are given up
        if self.adding:
            self.state = MemberState.FETCHING_OFFSETS
            self._fetch_offsets()

    def _rejoin(self, now_ms: int, *, as_new: bool = False, backoff: bool = False) -> None:
        self._revoke()
        self.generation = 0
        self.adding = []
        self.state = MemberState.STABLE
        self.group_retry_at_ms = now_ms + (RETRY_BACKOFF_MS if backoff else 0)

    def _on_offsets(self, body: Message, now_ms: int) -> None:
        assert isinstance(body, OffsetFetchResponse)
        if self.state is not MemberState.FETCHING_OFFSETS:
            return
        errors = {body.error_code} | {p.error_code for t in body.topics for p in t.partitions}
        errors.discard(ErrorCode.NONE)
        if errors:  # asked again once the coordinator is found, or after a backoff
            if errors & _COORDINATOR_ERRORS:
                self._find_coordinator(now_ms)
            else:
                self.group_retry_at_ms = now_ms + RETRY_BACKOFF_MS
            return
        offsets = committed_positions(body)
        for key in self.assignment:
            if key not in self.reads:
                offset, epoch = offsets.get(key, (0, -1))
                self.read_from(key, offset, epoch)
                self.committed[key] = offset
        self.adding = []
        self.state = MemberState.STABLE

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
        super()._record_commit(outcome, key, offset, -1, sent_ms, now_ms, error)
