"""KIP-848 consumer group records of ``__consumer_offsets`` in Kafka's byte layouts, hand-written
(facts from the ``ConsumerGroup*`` data definitions of Kafka's ``group-coordinator`` module; no
code taken).

Keys are not flexible: int16 key version, then strings (int16 length + UTF-8). Values are
flexible (version 0): int16 version, compact strings and arrays (unsigned varint n + 1), tagged
fields at the end of every struct; unknown tagged fields are skipped when read.

============  =============================  ===========================================
key version   key fields                     value
============  =============================  ===========================================
3             group                          group epoch int32 (tagged 0: metadata hash int64)
4             group                          subscription metadata (read and ignored: Kafka
                                             4.1+ writes none)
5             group, member                  member metadata (instance id, rack, client id
                                             and host, topic names, regex, rebalance
                                             timeout, assignor; tagged 0: classic metadata)
6             group                          target assignment epoch int32
7             group, member                  a member's target assignment
8             group, member                  a member's current assignment: epoch, previous
                                             epoch, state int8, assigned partitions,
                                             partitions pending revocation
============  =============================  ===========================================

A partition list is an array of (topic id uuid, partitions []int32).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from kafka_wire.broker.group.records import RecordReader, RecordWriter
from kafka_wire.errors import InvalidValueError

GROUP_KEY: Final = 3
SUBSCRIPTION_METADATA_KEY: Final = 4
MEMBER_KEY: Final = 5
TARGET_METADATA_KEY: Final = 6
TARGET_MEMBER_KEY: Final = 7
CURRENT_MEMBER_KEY: Final = 8
#: Key versions this module reads.
CONSUMER_KEY_VERSIONS: Final = range(3, 9)
_MEMBER_KEYS: Final = (MEMBER_KEY, TARGET_MEMBER_KEY, CURRENT_MEMBER_KEY)

#: ``{topic id: partitions}``, partitions sorted.
Partitions = dict[uuid.UUID, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class ConsumerKey:
    """A consumer group record's key: ``member`` is ``""`` for the group-level records."""

    version: int
    group: str
    member: str = ""


@dataclass(frozen=True, slots=True)
class GroupEpochValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class TargetEpochValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class TargetMemberValue:
    partitions: Partitions


@dataclass(frozen=True, slots=True)
class CurrentMemberValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Partitions
    pending_revocation: Partitions


ConsumerValue = (
    GroupEpochValue | MemberMetadataValue | TargetEpochValue | TargetMemberValue | CurrentMemberValue
)


# -- writing ------------------------------------------------------------------------------------


def encode_consumer_key(key: ConsumerKey) -> bytes:
    w = RecordWriter(key.version)
    w.string(key.group)
    if key.version in _MEMBER_KEYS:
        w.string(key.member)
    return bytes(w.out)


def _partitions(w: RecordWriter, partitions: Partitions) -> None:
    w.count(len(partitions))
    for topic_id in sorted(partitions):
        w.uuid(topic_id)
        numbers = partitions[topic_id]
        w.count(len(numbers))
        for n in numbers:
            w.int32(n)
        w.end_struct()


def encode_consumer_value(value: ConsumerValue) -> bytes:
    w = RecordWriter(0, flexible=True)
    match value:
        case GroupEpochValue():
            w.int32(value.epoch)
            if value.metadata_hash:
                w.uvarint(1)  # one tagged field: tag 0, the metadata hash
                w.uvarint(0)
                w.uvarint(8)
                w.int64(value.metadata_hash)
                return bytes(w.out)
        case MemberMetadataValue():
            w.string(value.instance_id)
            w.string(value.rack_id)
            w.string(value.client_id)
            w.string(value.client_host)
            w.count(len(value.subscribed_topic_names))
            for name in value.subscribed_topic_names:
                w.string(name)
            w.string(value.subscribed_topic_regex)
            w.int32(value.rebalance_timeout_ms)
            w.string(value.server_assignor)
        case TargetEpochValue():
            w.int32(value.assignment_epoch)
        case TargetMemberValue():
            _partitions(w, value.partitions)
        case CurrentMemberValue():
            w.int32(value.member_epoch)
            w.int32(value.previous_member_epoch)
            w.int8(value.state)
            _partitions(w, value.assigned)
            _partitions(w, value.pending_revocation)
    w.end_struct()
    return bytes(w.out)


def consumer_record(key: ConsumerKey, value: ConsumerValue | None) -> tuple[bytes, bytes | None]:
    """A record, or its tombstone when ``value`` is ``None``."""
    return encode_consumer_key(key), None if value is None else encode_consumer_value(value)


# -- reading ------------------------------------------------------------------------------------


def decode_consumer_key(data: bytes) -> ConsumerKey:
    r = RecordReader(bytes(data), "__consumer_offsets key")
    version = r.int16("version")
    if version not in CONSUMER_KEY_VERSIONS:
        raise InvalidValueError(f"not a consumer group key version: {version}", offset=0, message=r.what)
    group = r.text("groupId")
    member = r.text("memberId") if version in _MEMBER_KEYS else ""
    r.done()
    return ConsumerKey(version, group, member)


def _read_partitions(r: RecordReader) -> Partitions:
    out: Partitions = {}
    for _ in range(r.count("topicPartitions")):
        topic_id = r.uuid("topicId")
        out[topic_id] = tuple(sorted(r.int32("partition") for _ in range(r.count("partitions"))))
        r.skip_tagged()
    return out


def decode_consumer_value(key_version: int, data: bytes) -> ConsumerValue | None:
    """The value of a record whose key has ``key_version``; ``None`` for the subscription metadata
    (key 4), which this coordinator recomputes instead of storing."""
    r = RecordReader(bytes(data), f"consumer group record {key_version}")
    version = r.int16("version")
    if version != 0:
        raise InvalidValueError(f"unknown version {version}", offset=0, message=r.what)
    r.flexible = True
    value: ConsumerValue
    if key_version == GROUP_KEY:
        epoch = r.int32("epoch")
        metadata_hash = 0
        for _ in range(r.uvarint("tagged field count")):
            tag, size = r.uvarint("tag"), r.uvarint("tagged field size")
            if tag == 0 and size == 8:
                metadata_hash = r.int64("metadataHash")
            else:
                r.skip_bytes(size, "tagged field")
        return GroupEpochValue(epoch, metadata_hash)
    if key_version == SUBSCRIPTION_METADATA_KEY:
        return None
    if key_version == MEMBER_KEY:
        instance_id = r.string("instanceId", nullable=True)
        rack_id = r.string("rackId", nullable=True)
        client_id = r.text("clientId")
        client_host = r.text("clientHost")
        names = tuple(r.text("subscribedTopicName") for _ in range(r.count("subscribedTopicNames")))
        value = MemberMetadataValue(
            instance_id,
            rack_id,
            client_id,
            client_host,
            names,
            r.string("subscribedTopicRegex", nullable=True),
            r.int32("rebalanceTimeoutMs"),
            r.string("serverAssignor", nullable=True),
        )
    elif key_version == TARGET_METADATA_KEY:
        value = TargetEpochValue(r.int32("assignmentEpoch"))
    elif key_version == TARGET_MEMBER_KEY:
        value = TargetMemberValue(_read_partitions(r))
    else:
        value = CurrentMemberValue(
            r.int32("memberEpoch"),
            r.int32("previousMemberEpoch"),
            r.int8("state"),
            _read_partitions(r),
            _read_partitions(r),
        )
    r.skip_tagged()
    return value
