"""A scripted driver for GroupCoordinator: a virtual clock, the internal log, answers by token.

Every ``Respond`` is checked on the way: it answers a pending token exactly once, has the response
class of the request, and encodes at the request's version (then decodes strictly and re-encodes to
the same bytes). Every ``Persist`` is checked to name the group and partition of its records.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from kafka_wire.broker.group import (
    APPENDED_ERRORS,
    GroupConfig,
    GroupCoordinator,
    GroupEffect,
    KeyValue,
    Persist,
    partition_for_group,
)
from kafka_wire.broker.group.consumer_records import CONSUMER_KEY_VERSIONS, decode_consumer_key
from kafka_wire.broker.group.records import UnknownKey, decode_key
from kafka_wire.broker.group.share_records import SHARE_KEY_VERSIONS
from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerProtocolAssignment,
    ConsumerProtocolAssignmentTopicPartition,
    ConsumerProtocolSubscription,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

#: Tests use no initial delay and a small minimum session timeout.
CONFIG = GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=1000)
#: For scripts where several members must land in the first generation together.
DELAYED = GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=1000)
SESSION_MS = 10_000
REBALANCE_MS = 30_000

RESPONSES: dict[type[Message], type[Message]] = {
    ConsumerGroupHeartbeatRequest: ConsumerGroupHeartbeatResponse,
    ConsumerGroupDescribeRequest: ConsumerGroupDescribeResponse,
    JoinGroupRequest: JoinGroupResponse,
    SyncGroupRequest: SyncGroupResponse,
    HeartbeatRequest: HeartbeatResponse,
    LeaveGroupRequest: LeaveGroupResponse,
    OffsetCommitRequest: OffsetCommitResponse,
    OffsetFetchRequest: OffsetFetchResponse,
    OffsetDeleteRequest: OffsetDeleteResponse,
    ListGroupsRequest: ListGroupsResponse,
    DescribeGroupsRequest: DescribeGroupsResponse,
    DeleteGroupsRequest: DeleteGroupsResponse,
    ShareGroupHeartbeatRequest: ShareGroupHeartbeatResponse,
    ShareGroupDescribeRequest: ShareGroupDescribeResponse,
    TxnOffsetCommitRequest: TxnOffsetCommitResponse,
}


def subscription(*topics: str) -> bytes:
    """A consumer protocol subscription (version 0) to ``topics``."""
    return b"\x00\x00" + ConsumerProtocolSubscription(topics=list(topics)).encode(0)


def assignment(partitions: dict[str, list[int]]) -> bytes:
    body = ConsumerProtocolAssignment(
        assigned_partitions=[
            ConsumerProtocolAssignmentTopicPartition(topic=t, partitions=ps) for t, ps in partitions.items()
        ]
    )
    return b"\x00\x00" + body.encode(0)


def assigned(data: bytes) -> dict[str, list[int]]:
    if not data:
        return {}
    body = ConsumerProtocolAssignment.decode(data[2:], 0)
    return {tp.topic: list(tp.partitions) for tp in body.assigned_partitions}


def range_assign(members: Sequence[str], topic: str, partitions: int) -> dict[str, bytes]:
    """Spread ``partitions`` of ``topic`` over ``members`` (sorted), contiguous ranges."""
    ordered = sorted(members)
    out: dict[str, list[int]] = {m: [] for m in ordered}
    for p in range(partitions):
        out[ordered[p * len(ordered) // partitions]].append(p)
    return {m: assignment({topic: ps} if ps else {}) for m, ps in out.items()}


class Harness:
    def __init__(self, config: GroupConfig = CONFIG, coordinator: GroupCoordinator | None = None) -> None:
        self.coord = coordinator if coordinator is not None else GroupCoordinator(config)
        self.now = 0
        self.log: list[KeyValue] = []
        #: ``__consumer_offsets`` in log order: each appended write (its records, with its
        #: producer) and each transaction marker, ``(partition, producer id, commit)``.
        self.written: list[Persist | tuple[int, int, bool]] = []
        self.effects: list[GroupEffect] = []
        self.pending: dict[int, tuple[type[Message], int]] = {}
        self.answers: dict[int, Message] = {}
        self._tokens = itertools.count(1)
        #: The log's error code for the next writes (0: they are appended), as the broker reports it.
        self.append_error = 0
        #: Writes reported as refused, in order.
        self.refused: list[Persist] = []
        #: When set, writes are appended but their outcome waits here (a write not replicated
        #: yet) until :meth:`report`.
        self.held: list[Persist] | None = None

    # -- driving --------------------------------------------------------------------------------

    def send(
        self, request: Message, version: int, *, client_id: str = "client", host: str = "/10.0.0.1"
    ) -> int:
        token = next(self._tokens)
        self.pending[token] = (RESPONSES[type(request)], version)
        self._apply(
            self.coord.handle(token, request, version, self.now, client_id=client_id, client_host=host)
        )
        return token

    def call(self, request: Message, version: int, **kwargs: str) -> Message:
        """Send a request that must be answered at once."""
        token = self.send(request, version, **kwargs)
        assert token in self.answers, f"{type(request).__name__} was not answered at once"
        return self.answers.pop(token)

    def answer(self, token: int) -> Message | None:
        return self.answers.pop(token, None)

    def advance(self, ms: int) -> None:
        self.now += ms
        self._apply(self.coord.tick(self.now))

    def _apply(self, effects: list[GroupEffect]) -> None:
        self.effects.extend(effects)
        for effect in effects:
            if isinstance(effect, Persist):
                assert effect.records or effect.producer_id < 0
                assert effect.partition == partition_for_group(
                    effect.group_id, self.coord.config.offsets_topic_num_partitions
                )
                for key, _ in effect.records:
                    decoded = decode_key(key)
                    if isinstance(decoded, UnknownKey) and decoded.version in SHARE_KEY_VERSIONS:
                        assert key[4 : 4 + int.from_bytes(key[2:4], "big")].decode() == effect.group_id
                        continue
                    if isinstance(decoded, UnknownKey):
                        assert decoded.version in CONSUMER_KEY_VERSIONS
                        assert decode_consumer_key(key).group == effect.group_id
                        continue
                    assert decoded.group == effect.group_id
                if not self.append_error or self.append_error in APPENDED_ERRORS:
                    self.log.extend(effect.records)
                    if effect.records:
                        self.written.append(effect)
                else:
                    self.refused.append(effect)
                if self.held is not None and not self.append_error:
                    self.held.append(effect)
                    continue
                # Reported at once, as the broker does (the log answers an append synchronously).
                self._apply(self.coord.persisted(effect.append_id, self.append_error, self.now))
                continue
            assert isinstance(effect.token, int)
            cls, version = self.pending.pop(effect.token)  # KeyError: answered twice or never asked
            assert type(effect.body) is cls
            data = effect.body.encode(version)
            again = cls.decode(data, version, strict=True)
            assert again.encode(version) == data
            self.answers[effect.token] = effect.body

    def end_transaction(self, producer_id: int, commit: bool, group: str = "g") -> None:
        """The producer's COMMIT (or ABORT) marker reaches the partition of ``group`` (replicated)."""
        partition = partition_for_group(group, self.coord.config.offsets_topic_num_partitions)
        self.written.append((partition, producer_id, commit))
        self._apply(self.coord.transactions_ended([(partition, producer_id, commit)], self.now))

    def replay_into(self, coordinator: GroupCoordinator) -> GroupCoordinator:
        """Load what :attr:`written` holds into ``coordinator``, as a new leader of the partitions
        reads them: plain records, records of transactional batches with their producer, markers."""
        for entry in self.written:
            if isinstance(entry, tuple):
                coordinator.replay_marker(*entry)
                continue
            for key, value in entry.records:
                if entry.producer_id >= 0:
                    coordinator.replay_transactional(entry.producer_id, key, value)
                else:
                    coordinator.replay(key, value)
        return coordinator

    def report(self, write: Persist, error: int = 0) -> None:
        """The outcome of a held write (0: replicated in time)."""
        assert self.held is not None
        self.held.remove(write)
        self._apply(self.coord.persisted(write.append_id, error, self.now))

    def replicated(self, write: Persist) -> None:
        """A write whose outcome was a timeout is stored after all."""
        self._apply(self.coord.replicated(write.append_id, self.now))

    # -- group protocol shortcuts ---------------------------------------------------------------

    def join(
        self,
        group: str,
        member_id: str = "",
        *,
        version: int = 7,
        instance: str | None = None,
        topics: Sequence[str] = ("t",),
        protocols: Sequence[tuple[str, bytes]] | None = None,
        session_ms: int = SESSION_MS,
        rebalance_ms: int = REBALANCE_MS,
        client_id: str = "client",
        protocol_type: str = "consumer",
    ) -> int:
        if protocols is None:
            protocols = [("range", subscription(*topics))]
        request = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms if version >= 1 else -1,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type=protocol_type,
            protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
        )
        return self.send(request, version, client_id=client_id)

    def join_new(self, group: str, *, version: int = 7, **kwargs: object) -> tuple[str, int]:
        """The v4+ handshake: a join without id gets MEMBER_ID_REQUIRED, then rejoin with the id."""
        first = self.answer(self.join(group, version=version, **kwargs))  # type: ignore[arg-type]  # test shortcut
        assert isinstance(first, JoinGroupResponse)
        assert first.error_code == 79, first
        return first.member_id, self.join(group, first.member_id, version=version, **kwargs)  # type: ignore[arg-type]  # test shortcut

    def sync(
        self,
        group: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        version: int = 5,
        instance: str | None = None,
        protocol_name: str | None = None,
    ) -> int:
        request = SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type="consumer" if version >= 5 else None,
            protocol_name=protocol_name if version >= 5 else None,
            assignments=[
                SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in (assignments or {}).items()
            ],
        )
        return self.send(request, version)

    def heartbeat(
        self, group: str, member_id: str, generation: int, *, version: int = 4, instance: str | None = None
    ) -> int:
        request = HeartbeatRequest(
            group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance
        )
        response = self.call(request, version)
        assert isinstance(response, HeartbeatResponse)
        return response.error_code

    def leave(self, group: str, *members: tuple[str, str | None], version: int = 5) -> LeaveGroupResponse:
        if version >= 3:
            request = LeaveGroupRequest(
                group_id=group,
                members=[
                    LeaveGroupRequestMemberIdentity(member_id=m, group_instance_id=i) for m, i in members
                ],
            )
        else:
            [(member_id, _)] = members
            request = LeaveGroupRequest(group_id=group, member_id=member_id)
        response = self.call(request, version)
        assert isinstance(response, LeaveGroupResponse)
        return response

    def commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        *,
        generation: int = -1,
        member_id: str = "",
        version: int = 8,
        metadata: str | None = "",
        retention_ms: int = -1,
        instance: str | None = None,
    ) -> dict[tuple[str, int], int]:
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=partition,
                    committed_offset=offset,
                    committed_leader_epoch=5 if version >= 6 else -1,
                    committed_metadata=metadata,
                )
            )
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation if version >= 1 else -1,
            member_id=member_id if version >= 1 else "",
            group_instance_id=instance if version >= 7 else None,
            retention_time_ms=retention_ms if 2 <= version <= 4 else -1,
            topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        )
        response = self.call(request, version)
        assert isinstance(response, OffsetCommitResponse)
        return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}

    def fetch(
        self, group: str, partitions: dict[str, list[int]] | None = None, *, version: int = 7
    ) -> tuple[int, dict[tuple[str, int], tuple[int, str, int]]]:
        """(group error, {(topic, partition): (offset, metadata, error)}) for v0-v7."""
        topics = (
            None
            if partitions is None
            else [OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in partitions.items()]
        )
        response = self.call(OffsetFetchRequest(group_id=group, topics=topics), version)
        assert isinstance(response, OffsetFetchResponse)
        found = {
            (t.name, p.partition_index): (p.committed_offset, p.metadata or "", p.error_code)
            for t in response.topics
            for p in t.partitions
        }
        return response.error_code, found


def run_group(
    h: Harness, group: str, count: int, *, topic: str = "t", partitions: int = 6
) -> tuple[list[str], int]:
    """Bring ``count`` dynamic members into a stable group; returns (member ids in join order, generation)."""
    ids, tokens = [], []
    for _ in range(count):
        member_id, token = h.join_new(group, topics=(topic,))
        ids.append(member_id)
        tokens.append(token)
    step = max(h.coord.config.initial_rebalance_delay_ms, 1)
    for _ in range(count + 2):
        if all(t in h.answers for t in tokens):
            break
        h.advance(step)
    for token in tokens:
        assert isinstance(h.answers.get(token), JoinGroupResponse), "the join phase did not end"
    responses = [h.answer(t) for t in tokens]
    assert all(isinstance(r, JoinGroupResponse) and r.error_code == 0 for r in responses)
    first = responses[0]
    assert isinstance(first, JoinGroupResponse)
    generation = first.generation_id
    leader = first.leader
    followers = [h.sync(group, m, generation) for m in ids if m != leader]
    plan = range_assign(ids, topic, partitions)
    h.answer(h.sync(group, leader, generation, plan))
    for token in followers:
        assert isinstance(h.answer(token), SyncGroupResponse)
    return ids, generation
