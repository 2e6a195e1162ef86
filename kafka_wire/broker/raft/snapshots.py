"""Snapshots of the metadata log: ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`` files.

A snapshot holds the state the records below its end offset build, as Kafka writes one: v2 record
batches stamped with the snapshot's epoch, offsets from 0, a SnapshotHeader control batch first,
then the records, then a SnapshotFooter control batch. It is written as ``.checkpoint.part``,
fsynced, and renamed into place, so a snapshot file is always whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.effects import Delete, EffectSink, Fsync, Rename, WriteAt
from kafka_wire.errors import InvalidValueError
from kafka_wire.quick_dataclass import dataclass
from kafka_wire.records.batch import RecordBatch
from kafka_wire.records.builder import build_batch
from kafka_wire.records.control import ControlRecordType, build_control_batch, decode_control_key
from kafka_wire.records.reader import read_batches

SNAPSHOT_SUFFIX: Final = ".checkpoint"
PARTIAL_SUFFIX: Final = ".checkpoint.part"
#: Records per data batch in a snapshot file (Kafka cuts batches by size; this keeps them small).
RECORDS_PER_BATCH: Final = 1024


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    """A snapshot's end offset (the first offset it does not cover) and the epoch of its last record."""

    end_offset: int
    epoch: int

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_name(name: str) -> SnapshotId | None:
    """The id in a snapshot file name, or None when ``name`` is not one."""
    if not name.endswith(SNAPSHOT_SUFFIX):
        return None
    stem = name[: -len(SNAPSHOT_SUFFIX)]
    offset, dash, epoch = stem.partition("-")
    if not dash or len(offset) != 20 or len(epoch) != 10 or not (offset.isdigit() and epoch.isdigit()):
        return None
    return SnapshotId(int(offset), int(epoch))


def encode_snapshot(snapshot_id: SnapshotId, records: Sequence[bytes], last_timestamp_ms: int) -> bytes:
    """A snapshot file's bytes: header, ``records`` (values) in batches, footer."""
    epoch = snapshot_id.epoch
    parts = [
        build_control_batch(
            ControlRecordType.SNAPSHOT_HEADER,
            messages.SnapshotHeaderRecord(version=0, last_contained_log_timestamp=last_timestamp_ms).encode(
                0
            ),
            base_offset=0,
            timestamp=last_timestamp_ms,
            partition_leader_epoch=epoch,
        )
    ]
    offset = 1
    for start in range(0, len(records), RECORDS_PER_BATCH):
        chunk = records[start : start + RECORDS_PER_BATCH]
        parts.append(
            build_batch(
                [(None, value, (), last_timestamp_ms) for value in chunk],
                base_offset=offset,
                partition_leader_epoch=epoch,
            )
        )
        offset += len(chunk)
    parts.append(
        build_control_batch(
            ControlRecordType.SNAPSHOT_FOOTER,
            messages.SnapshotFooterRecord(version=0).encode(0),
            base_offset=offset,
            timestamp=last_timestamp_ms,
            partition_leader_epoch=epoch,
        )
    )
    return b"".join(parts)


def decode_snapshot(data: bytes) -> list[bytes]:
    """The record values of a snapshot file (control records left out).

    A file without its SnapshotHeader first and SnapshotFooter last raises
    :class:`InvalidValueError`; bad batches raise :class:`DecodeError`.
    """
    values: list[bytes] = []
    kinds: list[ControlRecordType | None] = []
    for batch in read_batches(data):
        if not isinstance(batch, RecordBatch):
            raise InvalidValueError("a snapshot holds v2 batches only", message="snapshot")
        is_control = batch.is_control
        for record in batch.records():
            if is_control:
                kinds.append(decode_control_key(record.key).type)
            else:
                kinds.append(None)
                values.append(b"" if record.value is None else bytes(record.value))
    if not kinds or kinds[0] is not ControlRecordType.SNAPSHOT_HEADER:
        raise InvalidValueError("a snapshot must start with a SnapshotHeader", message="snapshot")
    if kinds[-1] is not ControlRecordType.SNAPSHOT_FOOTER:
        raise InvalidValueError("a snapshot must end with a SnapshotFooter", message="snapshot")
    return values


def write_snapshot(effects: EffectSink, directory: str, snapshot_id: SnapshotId, data: bytes) -> None:
    """Emit the effects that store a whole snapshot file atomically."""
    final = f"{directory}/{snapshot_id.file_name}"
    partial = final[: -len(SNAPSHOT_SUFFIX)] + PARTIAL_SUFFIX
    effects.emit(Delete(partial))
    effects.emit(WriteAt(partial, 0, data))
    effects.emit(Fsync(partial))
    effects.emit(Rename(partial, final))
