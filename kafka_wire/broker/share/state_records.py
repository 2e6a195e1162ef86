"""The records of ``__share_group_state`` in Kafka's byte layouts (facts from the
``ShareSnapshotKey/Value`` and ``ShareUpdateKey/Value`` definitions of Kafka 4.4's
share-coordinator module; no code taken), and where a share-partition's state is kept.

Keys are not flexible: int16 record type (0 a snapshot, 1 an update), then the group id (int16
length + UTF-8), the topic id (16 bytes) and the partition (int32). Values are flexible, version
0 (int16): a snapshot holds the snapshot epoch, state epoch, leader epoch (int32 each), the
share-partition start offset, its create and write timestamps (int64 each) and the state batches
(compact array of first offset, last offset int64, delivery state int8, delivery count int16);
an update the snapshot epoch, leader epoch, start offset and the batches that changed. Unknown
tagged fields are skipped when read; none are written. A null value (a tombstone) deletes the
state.

A share-partition's state lives in partition ``abs(hash("group:topic id:partition")) % n`` of the
topic (Kafka's ``SharePartitionKey.asCoordinatorKey`` placed by the Java string hash).
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import field
from typing import Final

from kafka_wire.broker.coordinator_keys import partition_for_group
from kafka_wire.broker.group.records import RecordReader, RecordWriter
from kafka_wire.errors import InvalidValueError
from kafka_wire.quick_dataclass import dataclass

SNAPSHOT: Final = 0
UPDATE: Final = 1
_VALUE_VERSION: Final = 0

#: (first offset, last offset, delivery state, delivery count): Kafka's state batch.
StateBatch = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int

    def coordinator_key(self) -> str:
        return f"{self.group_id}:{self.topic_id_string()}:{self.partition}"

    def topic_id_string(self) -> str:
        """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
        return base64.urlsafe_b64encode(self.topic_id.bytes).decode().rstrip("=")


@dataclass(slots=True)
class ShareState:
    """One share-partition's persisted state (a snapshot, with the updates after it merged in)."""

    state_epoch: int = 0
    leader_epoch: int = -1
    start_offset: int = -1
    snapshot_epoch: int = 0
    create_timestamp_ms: int = -1
    write_timestamp_ms: int = -1
    batches: list[StateBatch] = field(default_factory=list)


def state_partition(key: ShareStateKey, partitions: int) -> int:
    """The ``__share_group_state`` partition holding ``key``'s state."""
    return partition_for_group(key.coordinator_key(), partitions)


def encode_key(key: ShareStateKey, record_type: int = SNAPSHOT) -> bytes:
    w = RecordWriter(record_type)
    w.string(key.group_id)
    w.uuid(key.topic_id)
    w.int32(key.partition)
    return bytes(w.out)


def encode_snapshot(state: ShareState) -> bytes:
    w = RecordWriter(_VALUE_VERSION, flexible=True)
    w.int32(state.snapshot_epoch)
    w.int32(state.state_epoch)
    w.int32(state.leader_epoch)
    w.int64(state.start_offset)
    w.int64(state.create_timestamp_ms)
    w.int64(state.write_timestamp_ms)
    _write_batches(w, state.batches)
    w.end_struct()
    return bytes(w.out)


def _write_batches(w: RecordWriter, batches: list[StateBatch]) -> None:
    w.count(len(batches))
    for first, last, delivery_state, count in batches:
        w.int64(first)
        w.int64(last)
        w.int8(delivery_state)
        w.int16(count)
        w.end_struct()


def decode_key(data: bytes) -> tuple[int, ShareStateKey]:
    """(record type, key); ``DecodeError`` for bytes that are not one."""
    r = RecordReader(bytes(data), "__share_group_state key")
    record_type = r.int16("record type")
    if record_type not in (SNAPSHOT, UPDATE):
        raise InvalidValueError(f"unknown record type {record_type}", offset=0, message=r.what)
    key = ShareStateKey(r.text("group id"), r.uuid("topic id"), r.int32("partition"))
    r.done()
    return record_type, key


def decode_value(record_type: int, data: bytes) -> ShareState:
    """A snapshot, or an update (as a state whose batches are the changed ones)."""
    r = RecordReader(bytes(data), "__share_group_state value")
    version = r.int16("version")
    if version != _VALUE_VERSION:
        raise InvalidValueError(f"unknown value version {version}", offset=0, message=r.what)
    r.flexible = True
    state = ShareState()
    state.snapshot_epoch = r.int32("snapshot epoch")
    if record_type == SNAPSHOT:
        state.state_epoch = r.int32("state epoch")
    state.leader_epoch = r.int32("leader epoch")
    state.start_offset = r.int64("start offset")
    if record_type == SNAPSHOT:
        state.create_timestamp_ms = r.int64("create timestamp")
        state.write_timestamp_ms = r.int64("write timestamp")
    for _ in range(r.count("state batches")):
        batch = (r.int64("first offset"), r.int64("last offset"), r.int8("delivery state"), r.int16("count"))
        r.skip_tagged()
        state.batches.append(batch)
    r.skip_tagged()
    r.done()
    return state


def merge_batches(old: list[StateBatch], new: list[StateBatch], start_offset: int) -> list[StateBatch]:
    """``old`` overwritten by ``new`` where they overlap, without what lies before
    ``start_offset`` (Kafka's coordinator merges an update into its snapshot so); by ranges, never
    offset by offset (a batch may span any number of offsets)."""
    pieces: list[StateBatch] = []
    for first, last, delivery_state, count in old:
        spans = [(max(first, start_offset), last)]
        for n_first, n_last, _, _ in new:
            spans = [
                part
                for lo, hi in spans
                for part in ((lo, min(hi, n_first - 1)), (max(lo, n_last + 1), hi))
                if part[0] <= part[1]
            ]
        pieces += [(lo, hi, delivery_state, count) for lo, hi in spans if lo <= hi]
    pieces += [(max(f, start_offset), last, s, c) for f, last, s, c in new if last >= max(f, start_offset)]
    out: list[StateBatch] = []
    for piece in sorted(pieces):
        if out and out[-1][1] == piece[0] - 1 and out[-1][2:] == piece[2:]:
            out[-1] = (out[-1][0], piece[1], piece[2], piece[3])
        else:
            out.append(piece)
    return out
