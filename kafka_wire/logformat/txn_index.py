"""Entries of a segment's transaction index (``.txnindex``): the aborted transactions whose ABORT
marker the segment holds, in marker order.

Each entry is 34 bytes, big-endian: ``int16 version`` (0), ``int64 producer id``, ``int64 first
offset`` (the transaction's first record in the partition), ``int64 last offset`` (its ABORT
marker) and ``int64 last stable offset`` (the partition's last stable offset once the marker was
written: the first offset of the next transaction still open, else the offset after the marker).
Kafka's ``AbortedTxn``. A read_committed Fetch lists the entries that overlap what it returns.
"""

from __future__ import annotations

import struct
from typing import Final

from kafka_wire.errors import InvalidValueError
from kafka_wire.quick_dataclass import dataclass
from kafka_wire.records.record import BufferLike

ENTRY: Final = struct.Struct(">hqqqq")
ENTRY_SIZE: Final = 34
CURRENT_VERSION: Final = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode_entry(txn: AbortedTxn) -> bytes:
    return ENTRY.pack(
        CURRENT_VERSION, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
    )


def decode_entries(data: BufferLike) -> list[AbortedTxn]:
    """Every whole entry of ``data`` (a partial one at the end is ignored, as Kafka ignores it);
    an entry of a version above 0 raises :class:`InvalidValueError`."""
    view = memoryview(data).cast("B")
    out: list[AbortedTxn] = []
    for i, (version, producer_id, first, last, lso) in enumerate(
        ENTRY.iter_unpack(view[: len(view) // ENTRY_SIZE * ENTRY_SIZE])
    ):
        if version > CURRENT_VERSION:
            raise InvalidValueError(f"unknown aborted transaction version {version}", offset=i * ENTRY_SIZE)
        out.append(AbortedTxn(producer_id, first, last, lso))
    return out
