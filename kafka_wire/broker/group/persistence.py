"""The coordinator's durable side: records to ``__consumer_offsets`` and back.

Every change a group makes durable leaves as a :class:`~kafka_wire.broker.group.effects.Persist`
effect with an append id; the write it stands for (one of the ``*Write``/``Group*`` values below)
waits here until :meth:`GroupPersistence.take_write` hands it to the part of the coordinator that
reacts to its outcome. Replay applies stored records at startup, and offset writes the moment
they are handed out (Kafka's coordinator replays its own records at once), through the same path.

Each committed or pending transactional offset keeps the position of the record that wrote it
(``OffsetCommitValue.record_position``, Kafka's ``recordOffset``): a count of the offset records
handed out and replayed, which follows each partition's log order, as its writes are handed out
in that order and a load replays it in that order before the partition's next write. A
transaction's COMMIT marker makes its offset the committed one only over an older record, and an
offset tombstone drops the partition's pending transactional offsets of every producer (Kafka's
``OffsetMetadataManager.replay`` and ``replayEndTransactionMarker``).

A write whose records are not known to be stored (no outcome yet, or a timeout: appended, and
stored once the high watermark passes them) stays *uncommitted* here, per partition in the
order handed out (the log's order); :meth:`GroupPersistence.committed_before` gives what reads
see, the state before the first uncommitted write (Kafka's coordinator reads its timeline at
the last committed offset).
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kafka_wire.broker.coordinator_keys import partition_for_group
from kafka_wire.broker.group.consumer_model import ConsumerGroup
from kafka_wire.broker.group.effects import KeyValue, Persist
from kafka_wire.broker.group.model import Group, Member, Waiter, metadata_value, subscribed_topics
from kafka_wire.broker.group.records import (
    OTHER_GROUP_KEY_VERSIONS,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    group_metadata_record,
    offset_commit_record,
)
from kafka_wire.broker.group.runtime import GroupRuntime
from kafka_wire.broker.group.share_model import ShareGroup
from kafka_wire.broker.group.states import GroupState
from kafka_wire.codec.structs import Message
from kafka_wire.errors import InvalidValueError, LocalProtocolError
from kafka_wire.messages import ErrorCode

if TYPE_CHECKING:
    from kafka_wire.messages import (
        DeleteGroupsResponseDeletableGroupResult,
    )

#: One committed offset to write: ``(topic, partition, value)``; ``None`` is a tombstone.
OffsetEntry = tuple[str, int, OffsetCommitValue | None]
#: One group's OffsetFetch result: its error and, per topic (name, id), each partition's
#: committed value (None: none) and error.
FetchedTopic = tuple[str, uuid.UUID, list[tuple[int, OffsetCommitValue | None, int]]]
FetchedGroup = tuple[int, list[FetchedTopic]]
#: (topic, partition) -> the offset a transaction commits.
PendingOffsets = dict[tuple[str, int], OffsetCommitValue]
#: A pending transactional offset a tombstone dropped: (producer id, group, the producer's pending
#: offsets of the group it was in, (topic, partition), the offset).
DroppedPending = tuple[int, str, PendingOffsets, tuple[str, int], OffsetCommitValue]


@dataclass(slots=True)
class OffsetWrite:
    """Offset records (commits or tombstones): applied when handed out (so that the timers of the
    same call see them), taken back if the write is refused. A partition a later write named
    meanwhile keeps the later value; the later write then takes back to what this one replaced
    (Kafka keeps the latest write that did not fail: ``GroupMetadata.onOffsetCommitAppend``
    never puts an earlier record over a later one)."""

    group_id: str
    offsets: list[OffsetEntry]
    waiter: Waiter | None = None
    #: The answer once stored; a failure answers the same request with the error instead.
    answer: Message | None = None
    #: What the records replaced: (topic, partition) -> the value before (None: there was none).
    undo: dict[tuple[str, int], OffsetCommitValue | None] = field(default_factory=dict)
    #: The write created its group (a commit of a "simple" group).
    created_group: bool = False
    #: The pending transactional offsets its tombstones dropped, given back if it is refused.
    dropped: list[DroppedPending] = field(default_factory=list)


@dataclass(slots=True)
class GroupCreated:
    """The first record of a group a JoinGroup created."""

    group_id: str
    waiter: Waiter


@dataclass(slots=True)
class GroupEmptied:
    """A group's metadata after a join phase that ended with no members: nothing waits on it."""

    group_id: str


@dataclass(slots=True)
class AssignmentStored:
    """The leader's assignment (SyncGroup): given to the members once stored."""

    group_id: str
    generation: int
    assignments: dict[str, bytes]


@dataclass(slots=True)
class StaticMemberReplaced:
    """A static member that rejoined with a new member id in a stable group."""

    group_id: str
    old: Member
    new_id: str
    previous_leader: str | None
    waiter: Waiter


@dataclass(slots=True)
class DeleteGroupsAnswer:
    """A DeleteGroups answer waiting for the deletions it asked for."""

    waiter: Waiter
    results: list[DeleteGroupsResponseDeletableGroupResult]
    outstanding: int = 0


@dataclass(slots=True)
class OffsetFetchAnswer:
    """An OffsetFetch waiting for the groups it asked with ``require_stable``: each group's
    result, ``(error, topics)``, is drawn from the latest state when the request comes, and the
    answer leaves once everything written before it is stored (a write without records each)."""

    waiter: Waiter
    group_ids: list[str] = field(default_factory=list)
    results: list[FetchedGroup] = field(default_factory=list)
    #: The topics a v0-v1 request named: a group error goes on each of their partitions.
    named: list[tuple[str, list[int]]] | None = None
    outstanding: int = 0


@dataclass(slots=True)
class StableFetch:
    """One group of an OffsetFetch with ``require_stable``: a write without records."""

    group_id: str
    answer: OffsetFetchAnswer
    index: int


@dataclass(slots=True)
class GroupDeleted:
    """Tombstones of an empty group, dropped from memory when they are handed out; the group is
    restored as stored if the write is refused."""

    group: Group
    #: The group's state timestamp before it was deleted (the deletion stamps its own).
    state_timestamp_ms: int
    #: The DeleteGroups request and the index of this group's result in it (None: retention).
    answer: DeleteGroupsAnswer | None = None
    index: int = -1
    #: The group's pending transactional offsets its tombstones dropped, given back if refused.
    dropped: list[DroppedPending] = field(default_factory=list)


@dataclass(slots=True)
class TxnOffsetWrite:
    """A transactional offset commit's write (``txn_offsets``): pending once written."""

    group_id: str
    producer_id: int
    #: (topic, partition) -> the offset the transaction commits.
    offsets: dict[tuple[str, int], OffsetCommitValue]
    waiter: Waiter
    answer: Message


@dataclass(slots=True)
class ConsumerWrite:
    """Records of one KIP-848 consumer group change (``consumer_groups``), applied when handed
    out: the answer waits for them; if they are refused the group goes back to ``before`` (None:
    it was no consumer group) unless a later write of the group was handed out since."""

    group_id: str
    before: ConsumerGroup | None
    waiter: Waiter | None = None
    answer: Message | None = None


@dataclass(slots=True)
class ShareWrite:
    """Records of one KIP-932 share group change (``share_groups``), applied when handed out: the
    answer waits for them; if they are refused the group goes back to ``before`` (None: it was
    not stored) unless a later write of the group was handed out since."""

    group_id: str
    before: ShareGroup | None
    waiter: Waiter | None = None
    answer: Message | None = None
    #: A DeleteGroups' answer and the index of this group's result in it.
    deleted: tuple[DeleteGroupsAnswer, int] | None = None
    #: The share-partitions this write marks initializing, at the group epoch: their state is
    #: initialized once the write is stored.
    initialize: tuple[int, dict[uuid.UUID, frozenset[int]]] | None = None


PendingWrite = (
    OffsetWrite
    | GroupCreated
    | GroupEmptied
    | AssignmentStored
    | StaticMemberReplaced
    | GroupDeleted
    | ConsumerWrite
    | TxnOffsetWrite
    | ShareWrite
    | StableFetch
)

#: What a group's uncommitted writes replaced, for reads of the committed state: per (topic,
#: partition) the value before the first such write (None: none), and whether one changed its
#: KIP-848 side, with what it was then (None: no consumer group).
Committed = tuple[dict[tuple[str, int], OffsetCommitValue | None], bool, ConsumerGroup | None]


class GroupPersistence:
    """Writes awaiting their outcome, by append id, and the replay of stored records."""

    def __init__(self, rt: GroupRuntime) -> None:
        self._rt = rt
        #: Writes handed out as Persist effects whose outcome has not been reported, by append id.
        self.writes: dict[int, PendingWrite] = {}
        self.next_append_id = 0
        #: Members replayed by load(): their heartbeat timers start at the first time seen.
        self.unarmed: dict[tuple[str, str], None] = {}
        #: Offset writes not stored yet, by (group, topic, partition), in the order they were
        #: handed out: a refused write must not take back what a later one wrote.
        self.offset_writes: dict[tuple[str, str, int], list[OffsetWrite]] = {}
        #: Writes whose records are not known to be stored, per partition, by append id in the
        #: order handed out (see the module docstring); ``True`` for a write with records.
        self.uncommitted: dict[int, OrderedDict[int, tuple[PendingWrite, bool]]] = {}
        #: The partition of each uncommitted write.
        self._partition_of: dict[int, int] = {}
        #: The position of the latest offset record handed out or replayed (see the module
        #: docstring); the records of one write share one.
        self.position = 0
        #: Offsets transactions wrote, pending until their producer's marker, by producer id then
        #: group (``txn_offsets``). A tombstone leaves the producer's (maybe empty) offsets of the
        #: group in place until the marker, so that a refused one can give them back.
        self.txn_pending: dict[int, dict[str, PendingOffsets]] = {}

    def take_write(self, append_id: int) -> PendingWrite:
        """The write ``append_id`` stands for; it no longer awaits its outcome."""
        write = self.writes.pop(append_id, None)
        if write is None:
            raise LocalProtocolError(f"no group write {append_id} is awaiting its outcome")
        return write

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Replay one ``__consumer_offsets`` record (see ``GroupCoordinator.load``).

        Raises :class:`~kafka_wire.errors.DecodeError`, with nothing applied, for a key or value
        that cannot be read, including a key version Kafka does not define.
        """
        decoded = decode_key(key)
        if isinstance(decoded, OffsetCommitKey):
            if self._rt.hooks.planted("offsets-not-loaded"):
                return
            offset = None if value is None else decode_offset_commit_value(value)
            self.position += 1
            if offset is not None:
                offset = replace(offset, record_position=self.position)
            self.replay_offset(decoded.group, decoded.topic, decoded.partition, offset)
        elif isinstance(decoded, GroupMetadataKey):
            self.replay_group(decoded.group, None if value is None else decode_group_metadata_value(value))
        elif decoded.version not in OTHER_GROUP_KEY_VERSIONS:
            raise InvalidValueError(
                f"unknown key version {decoded.version}", offset=0, message="__consumer_offsets key"
            )

    def load(self, records: Iterable[KeyValue]) -> None:
        for key, value in records:
            self.replay(key, value)

    def persist(
        self,
        group_id: str,
        records: list[KeyValue],
        write: PendingWrite,
        producer: tuple[int, int] = (-1, -1),
    ) -> int:
        """Ask for ``records`` to be appended (as a transactional batch of ``producer``'s id and
        epoch when it has one); ``write`` says what to do with the outcome. Returns the position
        of the records (see the module docstring)."""
        partition = partition_for_group(group_id, self._rt.config.offsets_topic_num_partitions)
        self.next_append_id += 1
        self.position += 1
        self.writes[self.next_append_id] = write
        self.uncommitted.setdefault(partition, OrderedDict())[self.next_append_id] = (write, bool(records))
        self._partition_of[self.next_append_id] = partition
        self._rt.out.append(Persist(group_id, partition, records, self.next_append_id, *producer))
        return self.position

    # -- commitment: what reads see ----------------------------------------------------------------

    def settle(self, append_id: int, error_code: int, appended: bool) -> None:
        """Where the records of ``append_id`` stand once its outcome (the log's ``error_code``)
        is known: stored (with every write of the partition handed out before it: the high
        watermark passed them too), still uncommitted (``appended``: in the log, stored once
        :meth:`stored` says so), or never (refused before the append; a write without records
        has nothing left to wait for)."""
        if error_code in (ErrorCode.NONE, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
            self.stored(append_id)
            return
        partition = self._partition_of.get(append_id)
        if partition is None:
            return
        writes = self.uncommitted[partition]
        if appended and writes[append_id][1]:
            return
        del writes[append_id], self._partition_of[append_id]
        if not writes:
            del self.uncommitted[partition]

    def stored(self, append_id: int) -> None:
        """The records of ``append_id`` are stored (the high watermark passed them), and so are
        those of every write handed out before it to the same partition. Unknown ids (stored
        already, or of a partition dropped since) are ignored."""
        partition = self._partition_of.get(append_id)
        if partition is None:
            return
        writes = self.uncommitted[partition]
        while writes:
            first, (write, _) = writes.popitem(last=False)
            del self._partition_of[first]
            if isinstance(write, OffsetWrite):
                self.offset_write_settled(write)
            if first == append_id:
                break
        if not writes:
            del self.uncommitted[partition]

    def drop_partition(self, partition: int) -> None:
        """The partition's groups leave memory: so do its uncommitted writes."""
        for append_id, (write, _) in self.uncommitted.pop(partition, {}).items():
            del self._partition_of[append_id]
            if isinstance(write, OffsetWrite):
                self.offset_write_settled(write)

    def committed_before(self, group_id: str) -> Committed:
        """What the uncommitted writes of ``group_id`` replaced (see :data:`Committed`): reads
        of the committed state see these values, the group's current ones elsewhere."""
        offsets: dict[tuple[str, int], OffsetCommitValue | None] = {}
        consumer_changed = False
        consumer: ConsumerGroup | None = None
        partition = partition_for_group(group_id, self._rt.config.offsets_topic_num_partitions)
        for write, _ in self.uncommitted.get(partition, {}).values():
            if isinstance(write, OffsetWrite) and write.group_id == group_id:
                for key, before in write.undo.items():
                    offsets.setdefault(key, before)
            elif isinstance(write, GroupDeleted) and write.group.group_id == group_id:
                for topic, partitions in write.group.offsets.items():
                    for index, value in partitions.items():
                        offsets.setdefault((topic, index), value)
                if not consumer_changed:
                    consumer_changed, consumer = True, write.group.consumer
            elif isinstance(write, ConsumerWrite) and write.group_id == group_id and not consumer_changed:
                consumer_changed, consumer = True, write.before
        return offsets, consumer_changed, consumer

    def stored_share_group(self, group_id: str) -> tuple[bool, ShareGroup | None]:
        """Whether a write of share group ``group_id`` is not stored yet, and if so the group as
        its stored records say (as before the first such write; None: not stored at all)."""
        partition = partition_for_group(group_id, self._rt.config.offsets_topic_num_partitions)
        for write, _ in self.uncommitted.get(partition, {}).values():
            if isinstance(write, ShareWrite) and write.group_id == group_id:
                return True, write.before
        return False, None

    def persist_group(self, group: Group, write: PendingWrite) -> None:
        self.persist(group.group_id, [group_metadata_record(group.group_id, metadata_value(group))], write)

    def persist_offsets(self, write: OffsetWrite) -> None:
        """Append offset records and apply them through the path replay uses (taken back if
        the write is refused); answer at once when there is nothing to write."""
        if not write.offsets:
            if write.waiter is not None and write.answer is not None:
                self._rt.respond(write.waiter, write.answer)
            return
        group = self._rt.groups.get(write.group_id)
        write.created_group = group is None
        for topic, partition, _ in write.offsets:
            if (topic, partition) not in write.undo:
                write.undo[topic, partition] = (
                    None if group is None else group.offsets.get(topic, {}).get(partition)
                )
        records = [offset_commit_record(write.group_id, t, p, value) for t, p, value in write.offsets]
        position = self.persist(write.group_id, records, write)
        write.offsets[:] = [
            (t, p, None if v is None else replace(v, record_position=position)) for t, p, v in write.offsets
        ]
        for topic, partition, value in write.offsets:
            write.dropped += self.replay_offset(write.group_id, topic, partition, value)
        for topic, partition in write.undo:
            self.offset_writes.setdefault((write.group_id, topic, partition), []).append(write)

    def offset_write_settled(self, write: OffsetWrite) -> dict[tuple[str, int], OffsetWrite]:
        """``write`` is stored, refused or dropped: it is no longer tracked. Returns, for each of
        its partitions that a later write not stored yet names, the first such write."""
        later: dict[tuple[str, int], OffsetWrite] = {}
        for topic, partition in write.undo:
            key = (write.group_id, topic, partition)
            writes = self.offset_writes.get(key, [])
            index = next((i for i, w in enumerate(writes) if w is write), None)
            if index is None:
                continue
            del writes[index]
            if index < len(writes):
                later[topic, partition] = writes[index]
            if not writes:
                del self.offset_writes[key]
        return later

    def replay_offset(
        self, group_id: str, topic: str, partition: int, value: OffsetCommitValue | None
    ) -> list[DroppedPending]:
        """Apply one committed offset, or a tombstone: it also drops the partition's pending
        transactional offsets (returned)."""
        group = self._rt.groups.get(group_id)
        if value is None:
            if group is not None:
                partitions = group.offsets.get(topic)
                if partitions is not None:
                    partitions.pop(partition, None)
                    if not partitions:
                        del group.offsets[topic]
            return self.drop_pending(group_id, [(topic, partition)])
        if group is None:
            group = self._rt.groups[group_id] = Group(group_id)
        group.offsets.setdefault(topic, {})[partition] = value
        return []

    # -- pending transactional offsets ------------------------------------------------------------

    def pending_partitions(self, group_id: str) -> list[tuple[str, int]]:
        """The partitions of which a transaction holds an offset for ``group_id``."""
        held: dict[tuple[str, int], None] = {}
        for groups in self.txn_pending.values():
            held.update(dict.fromkeys(groups.get(group_id, {})))
        return list(held)

    def drop_pending(self, group_id: str, keys: Iterable[tuple[str, int]]) -> list[DroppedPending]:
        """Drop the pending transactional offsets of ``group_id`` at ``keys`` ((topic,
        partition)) of every producer (an offset tombstone's replay); what was dropped."""
        dropped: list[DroppedPending] = []
        for key in keys:
            for producer_id, groups in self.txn_pending.items():
                offsets = groups.get(group_id)
                value = None if offsets is None else offsets.pop(key, None)
                if offsets is not None and value is not None:
                    dropped.append((producer_id, group_id, offsets, key, value))
        return dropped

    def give_back(self, dropped: Iterable[DroppedPending]) -> None:
        """Pending transactional offsets a refused tombstone dropped are pending again, unless
        their transaction ended since (or a newer one of the producer wrote the group)."""
        for producer_id, group_id, offsets, key, value in dropped:
            if self.txn_pending.get(producer_id, {}).get(group_id) is offsets:
                offsets.setdefault(key, value)

    def give_back_offsets(self, write: OffsetWrite) -> None:
        """A refused offset write: what its tombstones dropped goes to the next write not stored
        yet that tombstones the same partition (which found nothing left to drop), or is given
        back. Call before the write is settled."""
        for entry in write.dropped:
            topic, partition = entry[3]
            writes = self.offset_writes.get((write.group_id, topic, partition), [])
            after = next((i + 1 for i, w in enumerate(writes) if w is write), len(writes))
            heir = next(
                (
                    w
                    for w in writes[after:]
                    if any(t == topic and p == partition and v is None for t, p, v in w.offsets)
                ),
                None,
            )
            if heir is None:
                self.give_back([entry])
            else:
                heir.dropped.append(entry)

    def replay_group(self, group_id: str, value: GroupMetadataValue | None) -> None:
        old = self._rt.groups.get(group_id)
        if old is not None:
            for member_id in old.members:
                self.unarmed.pop((group_id, member_id), None)
        if value is None:
            if old is not None:
                if old.offsets:
                    self._rt.groups[group_id] = Group(group_id, offsets=old.offsets)
                else:
                    del self._rt.groups[group_id]
            return
        group = Group(
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
            member = Member(
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
            self.unarmed[group_id, m.member_id] = None
        if group.members and group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.subscribed_topics = subscribed_topics(group)
        self._rt.groups[group_id] = group
