"""A partition's producer-state snapshot file (``<offset>.snapshot``, Kafka's ``ProducerSnapshot``).

The file is an int16 version (1), then the ``ProducerSnapshot`` message of that version (the
schema in ``schemas/stored/``): a uint32 CRC-32C and the producer entries (producer id, epoch,
last sequence, last offset, offset delta of the last batch, its max timestamp, the coordinator
epoch of the last marker, and the first offset of the transaction open, -1 for none). The CRC
covers every byte after it. The file's offset is the log offset the state is as of: replaying the
batches from there rebuilds the state at the log end.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from kafka_wire.errors import CorruptBatchError, InvalidValueError, TruncatedError
from kafka_wire.messages import ProducerSnapshot, ProducerSnapshotProducerEntry
from kafka_wire.records.crc import crc32c

VERSION: Final = 1
#: Where the CRC sits and where the bytes it covers start (after the version and the CRC).
_CRC_AT: Final = 2
_ENTRIES_AT: Final = 6
_CRC: Final = struct.Struct(">I")
_VERSION: Final = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    #: -1 when the producer has no batch (only a marker).
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    #: -1 when no transaction is open.
    txn_first_offset: int


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    message = ProducerSnapshot(
        producer_entries=[
            ProducerSnapshotProducerEntry(
                producer_id=e.producer_id,
                epoch=e.epoch,
                last_sequence=e.last_sequence,
                last_offset=e.last_offset,
                offset_delta=e.offset_delta,
                timestamp=e.timestamp,
                coordinator_epoch=e.coordinator_epoch,
                current_txn_first_offset=e.txn_first_offset,
            )
            for e in entries
        ]
    )
    data = bytearray(_VERSION.pack(VERSION) + ProducerSnapshot.encode(message, VERSION))
    _CRC.pack_into(data, _CRC_AT, crc32c(memoryview(data)[_ENTRIES_AT:]))
    return bytes(data)


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    """The entries of a snapshot file; ``DecodeError`` when it is not one Kafka would load (an
    unknown version, a bad CRC, trailing bytes)."""
    if len(data) < _ENTRIES_AT:
        raise TruncatedError("a producer snapshot needs its version and CRC", offset=len(data))
    (version,) = _VERSION.unpack_from(data)
    if version != VERSION:
        raise InvalidValueError(f"unknown producer snapshot version {version}", offset=0)
    message, end = ProducerSnapshot.decode_from(data, _CRC_AT, VERSION)
    if end != len(data):
        raise InvalidValueError("trailing bytes after a producer snapshot", offset=end)
    if message.crc != crc32c(memoryview(data)[_ENTRIES_AT:]):
        raise CorruptBatchError("producer snapshot CRC mismatch", offset=_CRC_AT)
    return [
        SnapshotEntry(
            e.producer_id,
            e.epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        for e in message.producer_entries
    ]
