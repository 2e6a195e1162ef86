"""Committed offsets: OffsetCommit, OffsetDelete, retention and deleted topics (OffsetFetch reads
them in ``offset_fetch``).

What Kafka's ``OffsetMetadataManager`` holds. Offsets are applied when their write is handed out
and taken back if the append is refused, unless a later write of the same partition was handed
out meanwhile (see ``persistence.OffsetWrite``); a write appended but not stored in time is kept.
A tombstone drops the partition's pending transactional offsets too (``txn_offsets``), so
OffsetDelete and a deleted topic tombstone a partition that only a transaction holds, as Kafka's
``deleteOffsets`` and ``onTopicsDeleted`` do; retention deletes no group with an open transaction
(``cleanupExpiredOffsets``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from kafka_wire import messages
from kafka_wire.broker.group.model import (
    CONSUMER_PROTOCOL_TYPE,
    Group,
    Waiter,
    failed_answer,
)
from kafka_wire.broker.group.persistence import GroupPersistence, OffsetEntry, OffsetWrite
from kafka_wire.broker.group.rebalance import Rebalance
from kafka_wire.broker.group.records import OffsetCommitValue
from kafka_wire.broker.group.runtime import GroupRuntime
from kafka_wire.broker.group.states import GroupState
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        OffsetCommitResponseTopic,
    )

E = ErrorCode


_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


class Offsets:
    """The offsets of every group (kept in ``Group.offsets``)."""

    def __init__(
        self,
        rt: GroupRuntime,
        persistence: GroupPersistence,
        rebalance: Rebalance,
        delete_group: Callable[[Group], None],
    ) -> None:
        self._rt = rt
        self._persistence = persistence
        self._rebalance = rebalance
        #: Tombstones an empty group whose offsets all expired (``admin``).
        self._delete_group = delete_group

    def offsets_written(self, write: OffsetWrite, error: int, *, revert: bool = True) -> None:
        """The outcome of an offset write: a refused one (``revert``: its records were not
        appended) is taken back; one appended but not stored in time keeps its values, as its
        records may yet be stored (reads see them once they are)."""
        group = self._rt.groups.get(write.group_id)
        if error and revert:
            self._persistence.give_back_offsets(write)
        later = self._persistence.offset_write_settled(write) if error and revert else {}
        if error and revert and group is not None:
            wrote = {(topic, partition): value for topic, partition, value in write.offsets}
            for (topic, partition), before in write.undo.items():
                successor = later.get((topic, partition))
                if successor is None:
                    if group.offsets.get(topic, {}).get(partition) is wrote.get((topic, partition)):
                        self._persistence.replay_offset(write.group_id, topic, partition, before)
                else:
                    # A later write of the partition holds it: keep its value (a later write
                    # wins, as in Kafka), and should it fail too, it takes back to what this
                    # refused write replaced.
                    successor.undo[topic, partition] = before
                    successor.created_group = successor.created_group or write.created_group
            if (
                write.created_group
                and not group.offsets
                and not group.members
                and not group.pending_join
                and group.state is GroupState.EMPTY
                and group.protocol_type is None
            ):
                del self._rt.groups[write.group_id]
        if write.waiter is not None and write.answer is not None:
            self._rt.respond(write.waiter, write.answer if not error else failed_answer(write.answer, error))

    def offset_commit(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.OffsetCommitRequest)
        v = waiter.api_version
        now = self._rt.clock
        generation = request.generation_id_or_member_epoch if v >= 1 else -1
        member_id = request.member_id if v >= 1 else ""
        instance_id = request.group_instance_id if v >= 7 else None
        group = self._rt.groups.get(request.group_id)
        error: ErrorCode | None = None
        if not request.group_id:
            error = E.INVALID_GROUP_ID
        elif group is None and generation >= 0:
            error = E.GROUP_ID_NOT_FOUND if v >= 9 else E.ILLEGAL_GENERATION
        # With generation -1 and no group, the commit creates a "simple" group, kept by its offsets.
        if group is not None and error is None and group.consumer is not None:
            error = group.consumer.commit_error(member_id, generation, v)
        elif group is not None and error is None:
            error = self.validate_offset_commit(group, member_id, instance_id, generation)
            if error is None and group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
                member = group.members[member_id]
                self._rt.arm_heartbeat(group, member, member.session_timeout_ms)
        retention = request.retention_time_ms if 2 <= v <= 4 else -1
        # Kafka adds in a Java long, which wraps; kept within int64 here, so that the record
        # encodes (found by kafka-wire fuzz: retention_time_ms near int64 max crashed the commit).
        expire = min(max(now + retention, _INT64_MIN), _INT64_MAX) if retention != -1 else -1
        offsets: list[OffsetEntry] = []
        topics: list[OffsetCommitResponseTopic] = []
        for topic in request.topics:
            name: str | None = topic.name
            topic_error = error
            # Kafka's broker answers unknown topics before its coordinator sees the group.
            if v >= 10:
                name = None if self._rt.topic_name_of is None else self._rt.topic_name_of(topic.topic_id)
                if name is None:
                    topic_error = E.UNKNOWN_TOPIC_ID
            elif self._rt.topic_id_of is not None and self._rt.topic_id_of(topic.name) is None:
                topic_error = E.UNKNOWN_TOPIC_OR_PARTITION
            answers = []
            count = None if name is None or self._rt.partitions_of is None else self._rt.partitions_of(name)
            for p in topic.partitions:
                p_error = topic_error
                if count is not None and not 0 <= p.partition_index < count:
                    p_error = E.UNKNOWN_TOPIC_OR_PARTITION  # Kafka's broker checks each partition first
                metadata = p.committed_metadata if p.committed_metadata is not None else ""
                if p_error is None and len(metadata.encode()) > self._rt.config.offset_metadata_max_bytes:
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
                    offsets.append((name, p.partition_index, value))
                answers.append(
                    messages.OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=p_error or E.NONE
                    )
                )
            topics.append(
                messages.OffsetCommitResponseTopic(topic_id=topic.topic_id, partitions=answers)
                if v >= 10
                else messages.OffsetCommitResponseTopic(name=topic.name, partitions=answers)
            )
        self._persistence.persist_offsets(
            OffsetWrite(request.group_id, offsets, waiter, messages.OffsetCommitResponse(topics=topics))
        )

    def validate_offset_commit(
        self, group: Group, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode | None:
        if generation < 0 and group.state is GroupState.EMPTY:
            return None
        if generation >= 0 or member_id or instance_id is not None:
            error = self._rebalance.validate_member(group, member_id, instance_id)
            if error is not None:
                return error
            if generation != group.generation:
                return E.ILLEGAL_GENERATION
        elif group.state is not GroupState.EMPTY:
            return E.UNKNOWN_MEMBER_ID
        if group.state is GroupState.COMPLETING_REBALANCE:
            return E.REBALANCE_IN_PROGRESS
        return None

    def offset_delete(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.OffsetDeleteRequest)
        group = self._rt.groups.get(request.group_id)
        if not request.group_id:
            self._rt.respond(waiter, messages.OffsetDeleteResponse(error_code=E.INVALID_GROUP_ID))
            return
        if group is None:
            self._rt.respond(waiter, messages.OffsetDeleteResponse(error_code=E.GROUP_ID_NOT_FOUND))
            return
        if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            self._rt.respond(waiter, messages.OffsetDeleteResponse(error_code=E.NON_EMPTY_GROUP))
            return
        offsets: list[OffsetEntry] = []
        topics = []
        pending = self._persistence.pending_partitions(group.group_id)
        for topic in request.topics:
            subscribed = group.is_subscribed(topic.name)
            committed = group.offsets.get(topic.name, {})
            answers = []
            for p in topic.partitions:
                if subscribed:
                    answers.append(
                        messages.OffsetDeleteResponsePartition(
                            partition_index=p.partition_index, error_code=E.GROUP_SUBSCRIBED_TO_TOPIC
                        )
                    )
                    continue
                answers.append(messages.OffsetDeleteResponsePartition(partition_index=p.partition_index))
                if p.partition_index in committed or (topic.name, p.partition_index) in pending:
                    offsets.append((topic.name, p.partition_index, None))
            topics.append(messages.OffsetDeleteResponseTopic(name=topic.name, partitions=answers))
        self._persistence.persist_offsets(
            OffsetWrite(group.group_id, offsets, waiter, messages.OffsetDeleteResponse(topics=topics))
        )

    def expire(self) -> None:
        now = self._rt.clock
        retention = self._rt.config.offsets_retention_ms
        for group in list(self._rt.groups.values()):
            if not self._rt.serves(group.group_id):
                continue  # a partition still loading: its groups expire once it is served
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
            offsets: list[OffsetEntry] = []
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
                        offsets.append((topic, partition, None))
                    else:
                        all_expired = False
            if (
                all_expired
                and group.state is GroupState.EMPTY
                and not group.pending_join
                and not (group.consumer and group.consumer.members)
                and not self._persistence.pending_partitions(group.group_id)
            ):
                self._delete_group(group)  # its tombstones cover every offset
            else:
                self._persistence.persist_offsets(OffsetWrite(group.group_id, offsets))

    def topics_deleted(self, topics: Iterable[str]) -> None:
        """Tombstone the committed and pending transactional offsets of deleted topics in every
        group (Kafka does the same)."""
        gone = set(topics)
        for group in list(self._rt.groups.values()):
            if not self._rt.serves(group.group_id):
                continue  # a partition still loading (a gap: its offsets of the topics stay)
            keys = dict.fromkeys(
                (topic, partition)
                for topic, partitions in group.offsets.items()
                if topic in gone
                for partition in partitions
            )
            keys.update(
                dict.fromkeys(k for k in self._persistence.pending_partitions(group.group_id) if k[0] in gone)
            )
            offsets: list[OffsetEntry] = [(topic, partition, None) for topic, partition in keys]
            self._persistence.persist_offsets(OffsetWrite(group.group_id, offsets))
