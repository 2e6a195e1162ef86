"""Transactional offset commits (TxnOffsetCommit, KIP-98 and KIP-447): offsets a transactional
producer commits for a group, pending until its transaction ends (Kafka's
``OffsetMetadataManager`` pending transactional offsets).

A TxnOffsetCommit is checked as Kafka 4's coordinator checks it: an empty group id is
INVALID_GROUP_ID; an unknown group with a generation is ILLEGAL_GENERATION (with generation -1 a
"simple" group is made); a group being deleted COORDINATOR_NOT_AVAILABLE; when the request names
a member (v3+, KIP-447: generation, member id or group instance id), the member must be in the
group (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID for a static member replaced) and the generation the
group's (ILLEGAL_GENERATION): a zombie from an older generation cannot commit. Metadata longer
than ``offset.metadata.max.bytes`` is OFFSET_METADATA_TOO_LARGE for its partition. The offsets
are written as a transactional batch of the producer's id and epoch; once handed out they are
*pending* (taken back if the append is refused): OffsetFetch does not see them (with
``require_stable`` their partitions answer UNSTABLE_OFFSET_COMMIT), until the producer's COMMIT
marker reaches the group's ``__consumer_offsets`` partition or its ABORT marker (they are dropped).
At the COMMIT marker each becomes the group's committed offset unless the committed offset's
record came after its own in the log (an OffsetCommit written meanwhile stays), as Kafka 4.4's
``replayEndTransactionMarker`` compares record offsets (``persistence``: record positions). An
offset tombstone (OffsetDelete, DeleteGroups, retention, a deleted topic) drops the partition's
pending offsets of every producer. The broker does the parts that need other nodes before the
coordinator sees the request (the topics' existence, the transaction's verification,
``group_link.py``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from kafka_wire import messages
from kafka_wire.broker.group.model import Group, Waiter, failed_answer
from kafka_wire.broker.group.persistence import GroupPersistence, PendingOffsets, TxnOffsetWrite
from kafka_wire.broker.group.rebalance import Rebalance
from kafka_wire.broker.group.records import OffsetCommitValue, offset_commit_record
from kafka_wire.broker.group.runtime import GroupRuntime
from kafka_wire.broker.group.states import GroupState
from kafka_wire.codec.structs import Message
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponseTopic

E = ErrorCode


class TxnOffsets:
    """Pending transactional offsets, by producer id then group (see the module docstring)."""

    def __init__(self, rt: GroupRuntime, persistence: GroupPersistence, rebalance: Rebalance) -> None:
        self._rt = rt
        self._persistence = persistence
        self._rebalance = rebalance
        #: Producer id -> group -> its pending offsets (``GroupPersistence.txn_pending``, which
        #: tombstones change too).
        self.pending = persistence.txn_pending

    # -- TxnOffsetCommit --------------------------------------------------------------------------

    def txn_offset_commit(self, waiter: Waiter, request: Message, client_id: str, client_host: str) -> None:
        assert isinstance(request, messages.TxnOffsetCommitRequest)
        v = waiter.api_version
        error = self._validate(request, v)
        now = self._rt.clock
        offsets: PendingOffsets = {}
        topics: list[TxnOffsetCommitResponseTopic] = []
        for topic in request.topics:
            name = (
                topic.name
                if v < 6
                else self._rt.topic_name_of(topic.topic_id)
                if self._rt.topic_name_of
                else None
            )
            answers = []
            for p in topic.partitions:
                p_error = error if name is not None else E.UNKNOWN_TOPIC_ID
                metadata = p.committed_metadata if p.committed_metadata is not None else ""
                if not p_error and len(metadata.encode()) > self._rt.config.offset_metadata_max_bytes:
                    p_error = E.OFFSET_METADATA_TOO_LARGE
                if not p_error and name is not None:
                    offsets[(name, p.partition_index)] = OffsetCommitValue(
                        p.committed_offset, metadata, now, -1, p.committed_leader_epoch if v >= 2 else -1
                    )
                answers.append(
                    messages.TxnOffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=p_error
                    )
                )
            topics.append(
                messages.TxnOffsetCommitResponseTopic(topic_id=topic.topic_id, partitions=answers)
                if v >= 6
                else messages.TxnOffsetCommitResponseTopic(name=topic.name, partitions=answers)
            )
        answer = messages.TxnOffsetCommitResponse(topics=topics)
        if not offsets:
            self._rt.respond(waiter, answer)
            return
        if request.group_id not in self._rt.groups:  # a "simple" group, made by its commit
            self._rt.groups[request.group_id] = Group(request.group_id)
        records = [offset_commit_record(request.group_id, t, p, value) for (t, p), value in offsets.items()]
        write = TxnOffsetWrite(request.group_id, request.producer_id, offsets, waiter, answer)
        position = self._persistence.persist(
            request.group_id, records, write, producer=(request.producer_id, request.producer_epoch)
        )
        for key, value in offsets.items():
            offsets[key] = replace(value, record_position=position)
        # Pending once handed out (Kafka replays its records at the append): a stable OffsetFetch
        # meanwhile answers UNSTABLE_OFFSET_COMMIT; a refused append takes them back.
        self.pending.setdefault(request.producer_id, {}).setdefault(request.group_id, {}).update(offsets)

    def _validate(self, request: TxnOffsetCommitRequest, v: int) -> ErrorCode:
        """Kafka's ``validateTransactionalOffsetCommit`` (and ``ClassicGroup.validateOffsetCommit``
        for a transactional commit)."""
        if not request.group_id:
            return E.INVALID_GROUP_ID
        group = self._rt.groups.get(request.group_id)
        generation = request.generation_id_or_member_epoch if v >= 3 else -1
        member_id = request.member_id if v >= 3 else ""
        instance_id = request.group_instance_id if v >= 3 else None
        if group is None:
            return E.NONE if generation < 0 else E.ILLEGAL_GENERATION
        if group.state is GroupState.DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and group.state is GroupState.EMPTY:
            return E.NONE
        if generation >= 0 or member_id or instance_id is not None:
            refused = self._rebalance.validate_member(group, member_id, instance_id)
            if refused is not None:
                return refused
            if generation != group.generation:
                return E.ILLEGAL_GENERATION
        return E.NONE

    def written(self, write: TxnOffsetWrite, error: int, *, revert: bool = True) -> None:
        """The outcome of a transactional offset write: refused (``revert``), its offsets are no
        longer pending (unless a later write of the producer replaced them); appended but not
        stored in time, they stay pending until the producer's marker, as Kafka keeps them."""
        if error and revert:
            groups = self.pending.get(write.producer_id, {})
            offsets = groups.get(write.group_id, {})
            for key, value in write.offsets.items():
                if offsets.get(key) is value:
                    del offsets[key]
            if not offsets:
                groups.pop(write.group_id, None)
            if not groups:
                self.pending.pop(write.producer_id, None)
        elif not error and self._rt.hooks.planted("txn-offsets-before-commit"):  # planted: visible at once
            for (topic, index), value in write.offsets.items():
                self._persistence.replay_offset(write.group_id, topic, index, value)
        self._rt.respond(write.waiter, failed_answer(write.answer, error) if error else write.answer)

    # -- markers ----------------------------------------------------------------------------------

    def transaction_ended(self, partition: int, producer_id: int, commit: bool) -> None:
        """The producer's marker reached ``__consumer_offsets-<partition>``: its pending offsets of
        the groups there become committed (COMMIT: each one whose record is newer than the
        committed offset's) or are dropped (ABORT)."""
        groups = self.pending.get(producer_id)
        if not groups:
            return
        for group_id in [g for g in groups if self._rt.partition_of(g) == partition]:
            offsets = groups.pop(group_id)
            if not commit:
                continue
            group = self._rt.groups.get(group_id)
            for (topic, index), value in offsets.items():
                current = None if group is None else group.offsets.get(topic, {}).get(index)
                if current is None or value.record_position > current.record_position:
                    self._persistence.replay_offset(group_id, topic, index, value)
        if not groups:
            del self.pending[producer_id]

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether a transaction holds an offset of the partition for the group (OffsetFetch
        ``require_stable`` answers UNSTABLE_OFFSET_COMMIT then)."""
        return any((topic, partition) in groups.get(group_id, {}) for groups in self.pending.values())

    # -- replay -----------------------------------------------------------------------------------

    def replay_pending(
        self, producer_id: int, group_id: str, topic: str, partition: int, value: OffsetCommitValue | None
    ) -> None:
        """A loaded offset record of a transactional batch: pending until its marker (its group
        made if there is none, as at the commit); a tombstone is one whatever its batch, as Kafka
        replays it."""
        if value is None:
            self._persistence.replay_offset(group_id, topic, partition, None)
            return
        self._persistence.position += 1
        if group_id not in self._rt.groups:
            self._rt.groups[group_id] = Group(group_id)
        offsets = self.pending.setdefault(producer_id, {}).setdefault(group_id, {})
        offsets[(topic, partition)] = replace(value, record_position=self._persistence.position)

    def drop_partition(self, partition: int) -> None:
        """The partition is no longer served here: its groups' pending offsets go with it."""
        for producer_id in list(self.pending):
            groups = self.pending[producer_id]
            for group_id in [g for g in groups if self._rt.partition_of(g) == partition]:
                del groups[group_id]
            if not groups:
                del self.pending[producer_id]
