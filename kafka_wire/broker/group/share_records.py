"""KIP-932 share group records of ``__consumer_offsets`` in Kafka 4.4's byte layouts, hand-written
(facts from the ``ShareGroup*`` data definitions of Kafka's group-coordinator module; no code
taken), the records one change of a share group makes, and their replay.

Keys are not flexible: int16 key version, the group id, and the member id for member records.
Values are flexible, version 0 (compact strings and arrays, tagged fields at the end of every
struct; unknown ones skipped when read):

============  ===================  ===============================================================
key version   key                  value
============  ===================  ===============================================================
10            group, member        rack id (nullable), client id, client host, subscribed topics
11            group                group epoch int32, metadata hash int64
12            group                target assignment epoch int32
13            group, member        a member's target assignment: [topic id, [partition]]
14            group, member        member epoch, previous epoch, state int8 (0), assigned partitions
15            group                the share-partitions whose state is initializing (topic id,
                                   name, [partition]), initialized (the same), the topics whose
                                   state is being deleted (topic id, name)
============  ===================  ===============================================================

A member that leaves gets tombstones for 10, 13 and 14. Key 15 is written whole whenever one of
its three parts changes (empty lists, not a tombstone, when nothing is left in them); a replayed
key 15 makes the group if it is not there yet (an AlterShareGroupOffsets of a group with no
members ever writes only that record), as Kafka's replay does.
"""

from __future__ import annotations

from typing import Final

from kafka_wire.broker.group.effects import KeyValue
from kafka_wire.broker.group.records import RecordReader, RecordWriter
from kafka_wire.broker.group.share_model import ShareGroup, ShareMember, SharePartitions, StateTopics
from kafka_wire.errors import InvalidValueError

MEMBER_KEY: Final = 10
GROUP_KEY: Final = 11
TARGET_EPOCH_KEY: Final = 12
TARGET_MEMBER_KEY: Final = 13
CURRENT_MEMBER_KEY: Final = 14
STATE_PARTITIONS_KEY: Final = 15
#: Key versions this module reads.
SHARE_KEY_VERSIONS: Final = range(10, 16)
_MEMBER_KEYS: Final = (MEMBER_KEY, TARGET_MEMBER_KEY, CURRENT_MEMBER_KEY)


def _key(version: int, group_id: str, member_id: str = "") -> bytes:
    w = RecordWriter(version)
    w.string(group_id)
    if version in _MEMBER_KEYS:
        w.string(member_id)
    return bytes(w.out)


def _partitions(w: RecordWriter, partitions: SharePartitions) -> None:
    w.count(len(partitions))
    for topic_id in sorted(partitions):
        w.uuid(topic_id)
        w.count(len(partitions[topic_id]))
        for index in partitions[topic_id]:
            w.int32(index)
        w.end_struct()


def _read_partitions(r: RecordReader) -> SharePartitions:
    out: SharePartitions = {}
    for _ in range(r.count("topic partitions")):
        topic_id = r.uuid("topic id")
        out[topic_id] = tuple(sorted(r.int32("partition") for _ in range(r.count("partitions"))))
        r.skip_tagged()
    return out


def _value() -> RecordWriter:
    return RecordWriter(0, flexible=True)


def group_record(group: ShareGroup) -> KeyValue:
    w = _value()
    w.int32(group.group_epoch)
    w.int64(group.topics_hash)
    w.end_struct()
    return _key(GROUP_KEY, group.group_id), bytes(w.out)


def member_record(group_id: str, member: ShareMember) -> KeyValue:
    w = _value()
    w.string(member.rack_id)
    w.string(member.client_id)
    w.string(member.client_host)
    w.count(len(member.subscribed))
    for name in member.subscribed:
        w.string(name)
    w.end_struct()
    return _key(MEMBER_KEY, group_id, member.member_id), bytes(w.out)


def target_epoch_record(group: ShareGroup) -> KeyValue:
    w = _value()
    w.int32(group.assignment_epoch)
    w.end_struct()
    return _key(TARGET_EPOCH_KEY, group.group_id), bytes(w.out)


def target_member_record(group_id: str, member_id: str, target: SharePartitions) -> KeyValue:
    w = _value()
    _partitions(w, target)
    w.end_struct()
    return _key(TARGET_MEMBER_KEY, group_id, member_id), bytes(w.out)


def current_member_record(group_id: str, member: ShareMember) -> KeyValue:
    w = _value()
    w.int32(member.member_epoch)
    w.int32(member.previous_epoch)
    w.int8(0)  # STABLE: a share member never waits on a revocation
    _partitions(w, member.assigned)
    w.end_struct()
    return _key(CURRENT_MEMBER_KEY, group_id, member.member_id), bytes(w.out)


def state_partitions_record(group: ShareGroup) -> KeyValue:
    w = _value()
    for topics in (group.initializing, group.initialized):
        w.count(len(topics))
        for topic_id in sorted(topics):
            name, partitions = topics[topic_id]
            w.uuid(topic_id)
            w.string(name)
            w.count(len(partitions))
            for index in sorted(partitions):
                w.int32(index)
            w.end_struct()
    w.count(len(group.deleting))
    for topic_id in sorted(group.deleting):
        w.uuid(topic_id)
        w.string(group.deleting[topic_id])
        w.end_struct()
    w.end_struct()
    return _key(STATE_PARTITIONS_KEY, group.group_id), bytes(w.out)


def _read_state_topics(r: RecordReader) -> StateTopics:
    out: StateTopics = {}
    for _ in range(r.count("topics")):
        topic_id, name = r.uuid("topic id"), r.text("topic name")
        out[topic_id] = (name, frozenset(r.int32("partition") for _ in range(r.count("partitions"))))
        r.skip_tagged()
    return out


def group_keys(group_id: str) -> list[bytes]:
    """The keys of an empty share group's records (what its deletion tombstones)."""
    return [_key(version, group_id) for version in (GROUP_KEY, TARGET_EPOCH_KEY, STATE_PARTITIONS_KEY)]


def changes(before: ShareGroup | None, after: ShareGroup) -> list[KeyValue]:
    """The records that take a share group from ``before`` (None: not stored) to ``after``."""
    out: list[KeyValue] = []
    gid = after.group_id
    if before is None or (before.group_epoch, before.topics_hash) != (after.group_epoch, after.topics_hash):
        out.append(group_record(after))
    old_members = {} if before is None else before.members
    for member_id, member in after.members.items():
        old = old_members.get(member_id)
        metadata = (member.rack_id, member.client_id, member.client_host, member.subscribed)
        if old is None or metadata != (old.rack_id, old.client_id, old.client_host, old.subscribed):
            out.append(member_record(gid, member))
    if before is None or before.assignment_epoch != after.assignment_epoch:
        out.append(target_epoch_record(after))
    old_targets = {} if before is None else before.targets
    for member_id, target in after.targets.items():
        if old_targets.get(member_id) != target:
            out.append(target_member_record(gid, member_id, target))
    for member_id, member in after.members.items():
        old = old_members.get(member_id)
        if old is None or (old.member_epoch, old.previous_epoch, old.assigned) != (
            member.member_epoch,
            member.previous_epoch,
            member.assigned,
        ):
            out.append(current_member_record(gid, member))
    for member_id in old_members:
        if member_id not in after.members:
            out += [(_key(version, gid, member_id), None) for version in _MEMBER_KEYS]
    old_metadata = ({}, {}, {}) if before is None else before.state_metadata()
    if old_metadata != after.state_metadata():
        out.append(state_partitions_record(after))
    return out


def replay(groups: dict[str, ShareGroup], key: bytes, value: bytes | None) -> tuple[str, str] | None:
    """Apply one share group record to ``groups`` (whole, or ``DecodeError`` with nothing
    applied); the (group, member) of a member record that left a member in the group."""
    r = RecordReader(bytes(key), "__consumer_offsets key")
    version = r.int16("version")
    if version not in SHARE_KEY_VERSIONS:
        raise InvalidValueError(f"not a share group key version: {version}", offset=0, message=r.what)
    group_id = r.text("groupId")
    member_id = r.text("memberId") if version in _MEMBER_KEYS else ""
    r.done()
    if value is None:
        _tombstone(groups, version, group_id, member_id)
        return None
    v = RecordReader(bytes(value), "__consumer_offsets value")
    if v.int16("version") != 0:
        raise InvalidValueError("unknown share group value version", offset=0, message=v.what)
    v.flexible = True
    group = groups.get(group_id) or ShareGroup(group_id)
    if version == STATE_PARTITIONS_KEY:
        initializing, initialized = _read_state_topics(v), _read_state_topics(v)
        deleting = {}
        for _ in range(v.count("deleting topics")):
            topic_id, name = v.uuid("topic id"), v.text("topic name")
            v.skip_tagged()
            deleting[topic_id] = name
        v.skip_tagged()
        v.done()
        group.initializing, group.initialized, group.deleting = initializing, initialized, deleting
        group.initializing_since_ms = dict.fromkeys(initializing, 0)
    elif version == GROUP_KEY:
        epoch, topics_hash = v.int32("epoch"), v.int64("metadata hash")
        v.skip_tagged()
        v.done()
        group.group_epoch, group.topics_hash = epoch, topics_hash
    elif version == TARGET_EPOCH_KEY:
        epoch = v.int32("assignment epoch")
        v.skip_tagged()
        v.done()
        group.assignment_epoch = epoch
    elif version == TARGET_MEMBER_KEY:
        target = _read_partitions(v)
        v.skip_tagged()
        v.done()
        group.targets[member_id] = target
    elif version == MEMBER_KEY:
        rack, client_id, host = v.string("rack", nullable=True), v.text("client id"), v.text("host")
        subscribed = tuple(v.text("topic") for _ in range(v.count("topics")))
        v.skip_tagged()
        v.done()
        member = group.members.get(member_id) or ShareMember(member_id)
        member.rack_id, member.client_id, member.client_host, member.subscribed = (
            rack,
            client_id,
            host,
            subscribed,
        )
        group.members[member_id] = member
    else:  # CURRENT_MEMBER_KEY
        epoch, previous, _state = v.int32("epoch"), v.int32("previous epoch"), v.int8("state")
        assigned = _read_partitions(v)
        v.skip_tagged()
        v.done()
        member = group.members.get(member_id) or ShareMember(member_id)
        member.member_epoch, member.previous_epoch, member.assigned = epoch, previous, assigned
        group.members[member_id] = member
    groups[group_id] = group
    return (group_id, member_id) if member_id else None


def _tombstone(groups: dict[str, ShareGroup], version: int, group_id: str, member_id: str) -> None:
    group = groups.get(group_id)
    if group is None:
        return
    if version == GROUP_KEY:
        del groups[group_id]
    elif version == STATE_PARTITIONS_KEY:
        group.initializing, group.initialized, group.deleting = {}, {}, {}
        group.initializing_since_ms = {}
    elif version in _MEMBER_KEYS:
        group.members.pop(member_id, None)
        group.targets.pop(member_id, None)
