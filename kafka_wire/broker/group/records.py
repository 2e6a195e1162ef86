"""``__consumer_offsets`` records in Kafka's own byte layouts, hand-written (facts from Kafka's
``group-coordinator`` message definitions; no code taken).

Every key and value starts with a big-endian int16 version. Keys:

============  ==================================================  ==========================
key version   fields                                              record
============  ==================================================  ==========================
0 or 1        group string, topic string, partition int32         committed offset
2             group string                                        group metadata
3-8           KIP-848 consumer groups (``consumer_records``)      :class:`UnknownKey` here
9-15          (share groups)                                      :class:`UnknownKey`
other         (no record Kafka writes)                            :class:`UnknownKey`
============  ==================================================  ==========================

Values (``string`` is int16 length + UTF-8, ``bytes`` int32 length; version 4 is "flexible":
lengths and counts are unsigned varints of n + 1, and each struct ends with tagged fields):

* offset commit v0 and v2: offset int64, metadata string, commit timestamp int64; v1 adds the
  expire timestamp int64; v3 and v4: offset, leader epoch int32, metadata, commit timestamp.
  Written as v3, or v1 when an expire timestamp is set (OffsetCommit v2-v4 ``retention_time_ms``),
  as Kafka does.
* group metadata v0-v4: protocol type string, generation int32, protocol nullable string, leader
  nullable string, current-state timestamp int64 (v2+), members array of: member id, group
  instance id (nullable, v3+), client id, client host, rebalance timeout int32 (v1+), session
  timeout int32, subscription bytes, assignment bytes. Written as v3, as Kafka does.

Decoders read every version and raise :class:`~kafka_wire.errors.DecodeError` subclasses on bad
input (truncation, negative lengths, bad UTF-8, trailing garbage in a key). A group's partition
is :func:`kafka_wire.broker.coordinator_keys.partition_for_group`'s.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from typing import Final

from kafka_wire.errors import InvalidValueError, TruncatedError, UnsupportedVersionError, ValueOutOfRangeError
from kafka_wire.quick_dataclass import dataclass

OFFSET_COMMIT_KEY_VERSION: Final = 1
GROUP_METADATA_KEY_VERSION: Final = 2
OFFSET_COMMIT_VALUE_VERSION: Final = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY: Final = 1
GROUP_METADATA_VALUE_VERSION: Final = 3
#: Key versions of Kafka's other record types in ``__consumer_offsets`` (KIP-848 consumer groups
#: 3-8, read by ``consumer_records``; share groups 9-15, skipped at load), as of Kafka 4.0:
#: :class:`UnknownKey` here. Any other version is no record Kafka writes.
OTHER_GROUP_KEY_VERSIONS: Final = range(3, 16)

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A record type this coordinator does not use (consumer/share/streams groups, ...)."""

    version: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str = ""
    commit_timestamp_ms: int = -1
    #: -1 when the commit had no explicit retention.
    expire_timestamp_ms: int = -1
    #: -1 when unknown.
    leader_epoch: int = -1
    #: Where the record that wrote this value stands in its partition's log order (-1: not
    #: known), Kafka's ``OffsetAndMetadata.recordOffset``: the coordinator's count of the offset
    #: records it hands out and replays, not a log offset. Not in the record's bytes, nor in
    #: equality.
    record_position: int = dataclasses.field(default=-1, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    #: The member's metadata for the group's selected protocol.
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int = -1
    members: tuple[MemberMetadata, ...] = ()


# -- writing ------------------------------------------------------------------------------------


class RecordWriter:
    __slots__ = ("flexible", "out")

    def __init__(self, version: int, *, flexible: bool = False) -> None:
        self.out = bytearray(_I16.pack(version))
        self.flexible = flexible

    def uvarint(self, value: int) -> None:
        while value >= 0x80:
            self.out.append((value & 0x7F) | 0x80)
            value >>= 7
        self.out.append(value)

    def int8(self, value: int) -> None:
        self.out += _I8.pack(value)

    def int16(self, value: int) -> None:
        self.out += _I16.pack(value)

    def int32(self, value: int) -> None:
        self.out += _I32.pack(value)

    def int64(self, value: int) -> None:
        self.out += _I64.pack(value)

    def uuid(self, value: uuid.UUID) -> None:
        self.out += value.bytes

    def string(self, value: str | None) -> None:
        if value is None:
            if self.flexible:
                self.out.append(0)
            else:
                self.int16(-1)
            return
        data = value.encode()
        if len(data) > 0x7FFF:
            raise ValueOutOfRangeError("string longer than 32767 bytes", message="__consumer_offsets record")
        if self.flexible:
            self.uvarint(len(data) + 1)
        else:
            self.int16(len(data))
        self.out += data

    def bytes_(self, value: bytes) -> None:
        if self.flexible:
            self.uvarint(len(value) + 1)
        else:
            self.int32(len(value))
        self.out += value

    def count(self, n: int) -> None:
        if self.flexible:
            self.uvarint(n + 1)
        else:
            self.int32(n)

    def end_struct(self) -> None:
        if self.flexible:
            self.out.append(0)  # no tagged fields


def encode_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    if isinstance(key, OffsetCommitKey):
        w = RecordWriter(OFFSET_COMMIT_KEY_VERSION)
        w.string(key.group)
        w.string(key.topic)
        w.int32(key.partition)
    else:
        w = RecordWriter(GROUP_METADATA_KEY_VERSION)
        w.string(key.group)
    return bytes(w.out)


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """Version 3 (1 when ``expire_timestamp_ms`` is set) unless ``version`` says otherwise."""
    if version is None:
        version = (
            OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
            if value.expire_timestamp_ms != -1
            else OFFSET_COMMIT_VALUE_VERSION
        )
    if not 0 <= version <= 4:
        raise UnsupportedVersionError("valid versions are 0-4", message="OffsetCommitValue", version=version)
    w = RecordWriter(version, flexible=version >= 4)
    w.int64(value.offset)
    if version >= 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata)
    w.int64(value.commit_timestamp_ms)
    if version == 1:
        w.int64(value.expire_timestamp_ms)
    w.end_struct()
    return bytes(w.out)


def encode_group_metadata_value(
    value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION
) -> bytes:
    if not 0 <= version <= 4:
        raise UnsupportedVersionError("valid versions are 0-4", message="GroupMetadataValue", version=version)
    w = RecordWriter(version, flexible=version >= 4)
    w.string(value.protocol_type)
    w.int32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    if version >= 2:
        w.int64(value.current_state_timestamp_ms)
    w.count(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if version >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        if version >= 1:
            w.int32(m.rebalance_timeout_ms)
        w.int32(m.session_timeout_ms)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
        w.end_struct()
    w.end_struct()
    return bytes(w.out)


# -- reading ------------------------------------------------------------------------------------


class RecordReader:
    __slots__ = ("buf", "flexible", "pos", "what")

    def __init__(self, buf: bytes, what: str) -> None:
        self.buf = buf
        self.pos = 0
        self.flexible = False
        self.what = what

    def _take(self, n: int, field: str) -> bytes:
        end = self.pos + n
        if end > len(self.buf):
            raise TruncatedError(
                f"needed {n} bytes for {field}, had {len(self.buf) - self.pos}",
                offset=self.pos,
                message=self.what,
            )
        data = self.buf[self.pos : end]
        self.pos = end
        return data

    def int8(self, field: str) -> int:
        value: int = _I8.unpack(self._take(1, field))[0]
        return value

    def int16(self, field: str) -> int:
        value: int = _I16.unpack(self._take(2, field))[0]
        return value

    def int32(self, field: str) -> int:
        value: int = _I32.unpack(self._take(4, field))[0]
        return value

    def int64(self, field: str) -> int:
        value: int = _I64.unpack(self._take(8, field))[0]
        return value

    def uuid(self, field: str) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16, field))

    def uvarint(self, field: str) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self._take(1, field)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
        raise InvalidValueError(
            f"varint of {field} is longer than 5 bytes", offset=self.pos, message=self.what
        )

    def _length(self, field: str, *, wide: bool) -> int:
        if self.flexible:
            return self.uvarint(field) - 1
        return self.int32(field) if wide else self.int16(field)

    def string(self, field: str, *, nullable: bool = False) -> str | None:
        start = self.pos
        n = self._length(field, wide=False)
        if n < 0:
            if nullable:
                return None
            raise InvalidValueError(f"{field} is null", offset=start, message=self.what)
        try:
            return self._take(n, field).decode()
        except UnicodeDecodeError as exc:
            raise InvalidValueError(
                f"{field} is not UTF-8: {exc.reason}", offset=start, message=self.what
            ) from None

    def text(self, field: str) -> str:
        value = self.string(field)
        if value is None:  # unreachable: string() raises on null unless nullable
            raise InvalidValueError(f"{field} is null", offset=self.pos, message=self.what)
        return value

    def bytes_(self, field: str) -> bytes:
        start = self.pos
        n = self._length(field, wide=True)
        if n < 0:
            raise InvalidValueError(f"{field} is null", offset=start, message=self.what)
        return self._take(n, field)

    def count(self, field: str) -> int:
        start = self.pos
        n = self._length(field, wide=True)
        if n < 0 or n > len(self.buf) - self.pos:
            raise InvalidValueError(f"bad element count {n} of {field}", offset=start, message=self.what)
        return n

    def skip_bytes(self, n: int, field: str) -> None:
        self._take(n, field)

    def skip_tagged(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint("tagged field count")):
            self.uvarint("tag")
            self._take(self.uvarint("tagged field size"), "tagged field")

    def done(self) -> None:
        if self.pos != len(self.buf):
            raise InvalidValueError(
                f"{len(self.buf) - self.pos} bytes left after the record", offset=self.pos, message=self.what
            )


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | UnknownKey:
    r = RecordReader(bytes(data), "__consumer_offsets key")
    version = r.int16("version")
    if version in (0, 1):
        key: OffsetCommitKey | GroupMetadataKey = OffsetCommitKey(
            r.text("group"), r.text("topic"), r.int32("partition")
        )
    elif version == GROUP_METADATA_KEY_VERSION:
        key = GroupMetadataKey(r.text("group"))
    else:
        return UnknownKey(version)
    r.done()
    return key


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    r = RecordReader(bytes(data), "OffsetCommitValue")
    version = r.int16("version")
    if not 0 <= version <= 4:
        raise InvalidValueError(f"unknown version {version}", offset=0, message=r.what)
    r.flexible = version >= 4
    offset = r.int64("offset")
    leader_epoch = r.int32("leaderEpoch") if version >= 3 else -1
    metadata = r.text("metadata")
    commit_timestamp = r.int64("commitTimestamp")
    expire_timestamp = r.int64("expireTimestamp") if version == 1 else -1
    r.skip_tagged()
    # Kafka ignores bytes after the fields it knows (newer writers may add some): so do we.
    return OffsetCommitValue(offset, metadata, commit_timestamp, expire_timestamp, leader_epoch)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    r = RecordReader(bytes(data), "GroupMetadataValue")
    version = r.int16("version")
    if not 0 <= version <= 4:
        raise InvalidValueError(f"unknown version {version}", offset=0, message=r.what)
    r.flexible = version >= 4
    protocol_type = r.text("protocolType")
    generation = r.int32("generation")
    protocol = r.string("protocol", nullable=True)
    leader = r.string("leader", nullable=True)
    timestamp = r.int64("currentStateTimestamp") if version >= 2 else -1
    members = []
    for _ in range(r.count("members")):
        member_id = r.text("memberId")
        instance_id = r.string("groupInstanceId", nullable=True) if version >= 3 else None
        client_id = r.text("clientId")
        client_host = r.text("clientHost")
        rebalance_timeout = r.int32("rebalanceTimeout") if version >= 1 else None
        session_timeout = r.int32("sessionTimeout")
        subscription = r.bytes_("subscription")
        assignment = r.bytes_("assignment")
        r.skip_tagged()
        members.append(
            MemberMetadata(
                member_id,
                instance_id,
                client_id,
                client_host,
                session_timeout if rebalance_timeout is None else rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    r.skip_tagged()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, timestamp, tuple(members))


# -- record helpers -----------------------------------------------------------------------------


def offset_commit_record(
    group: str, topic: str, partition: int, value: OffsetCommitValue | None
) -> tuple[bytes, bytes | None]:
    """A committed offset, or its tombstone when ``value`` is ``None``."""
    key = encode_key(OffsetCommitKey(group, topic, partition))
    return key, None if value is None else encode_offset_commit_value(value)


def group_metadata_record(group: str, value: GroupMetadataValue | None) -> tuple[bytes, bytes | None]:
    """A group's metadata, or its tombstone when ``value`` is ``None``."""
    key = encode_key(GroupMetadataKey(group))
    return key, None if value is None else encode_group_metadata_value(value)
