"""The header of a stored batch, any magic: enough to walk a segment without decoding records.

The 12-byte prefix gives the offset and the size, byte 16 the magic, and the v2 header (61
bytes) or the legacy message header (22 or 26 bytes) the offsets and the largest timestamp.

Offsets of legacy messages: an uncompressed message has one offset; a compressed wrapper carries
the offset of its *last* inner message, and its first offset is only known after inflating it, so
``base_offset`` of a wrapper header is its last offset. Readers rely only on ``last_offset`` for
such batches (as Kafka's ``FileRecords.searchForOffsetWithSize`` does).
"""

from __future__ import annotations

import struct
from typing import Final

from kafka_wire.errors import CorruptBatchError
from kafka_wire.quick_dataclass import dataclass
from kafka_wire.records import read_batches, validate_batch
from kafka_wire.records.batch import V2_HEADER
from kafka_wire.records.constants import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
    TRANSACTIONAL_MASK,
)
from kafka_wire.records.record import BufferLike

_PREFIX: Final = struct.Struct(">qi")
_LEGACY_V1_TIMESTAMP: Final = struct.Struct(">q")
_LEGACY_V1_TIMESTAMP_AT: Final = 18
MAX_HEADER_BYTES: Final = RECORD_BATCH_OVERHEAD
"""Bytes that always suffice for :func:`parse_header` (the v2 header; legacy headers are shorter)."""
_MSG: Final = "segment"


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """Where a stored batch sits and what its header says."""

    position: int
    size: int
    """The whole batch, offset and size fields included."""
    magic: int
    base_offset: int
    """v2: the base offset; legacy: the message offset (a compressed wrapper's *last* offset)."""
    last_offset: int
    max_timestamp: int
    """v2: the max timestamp; v1: the message timestamp; v0: -1."""
    attributes: int
    record_count: int
    """v2: the record count; legacy: 1 (a wrapper's inner count is not known from its header)."""
    producer_id: int = -1

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_MASK)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def compressed(self) -> bool:
        return bool(self.attributes & COMPRESSION_MASK)


def parse_header(buf: BufferLike, at: int, position: int) -> BatchHeader | None:
    """The header of the batch at ``buf[at:]`` (stored at ``position``); None when ``buf`` ends first.

    Raises :class:`CorruptBatchError` for a size below the format's minimum or an unknown magic.
    Does not check that the whole batch is in ``buf``.
    """
    available = len(buf) - at
    if available < 17:
        return None
    offset, size = _PREFIX.unpack_from(buf, at)
    magic = buf[at + 16]
    if size < RECORD_OVERHEAD_V0:
        raise CorruptBatchError(
            f"batch size {size} is below the 14-byte minimum", offset=position, message=_MSG
        )
    if magic == 2:
        if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            raise CorruptBatchError(
                f"v2 batch size {size} is below the 61-byte header", offset=position, message=_MSG
            )
        if available < RECORD_BATCH_OVERHEAD:
            return None
        (base, _, _, _, _, attributes, last_delta, _, max_ts, producer_id, _, _, count) = (
            V2_HEADER.unpack_from(buf, at)
        )
        return BatchHeader(
            position, size + LOG_OVERHEAD, 2, base, base + last_delta, max_ts, attributes, count, producer_id
        )
    if magic == 1:
        if size < RECORD_OVERHEAD_V1:
            raise CorruptBatchError(
                f"v1 message size {size} is below 22 bytes", offset=position, message=_MSG
            )
        if available < LOG_OVERHEAD + RECORD_OVERHEAD_V1 - 8:
            return None
        (timestamp,) = _LEGACY_V1_TIMESTAMP.unpack_from(buf, at + _LEGACY_V1_TIMESTAMP_AT)
        return BatchHeader(position, size + LOG_OVERHEAD, 1, offset, offset, timestamp, buf[at + 17], 1)
    if magic == 0:
        if available < 18:
            return None
        return BatchHeader(position, size + LOG_OVERHEAD, 0, offset, offset, -1, buf[at + 17], 1)
    shown = magic - 256 if magic > 127 else magic
    raise CorruptBatchError(f"unknown magic {shown}", offset=position + 16, message=_MSG)


def check_batch(data: BufferLike, header: BatchHeader) -> None:
    """Verify the CRC (and v2 framing) of one whole stored batch; raises a DecodeError subclass."""
    if header.magic == 2:
        validate_batch(data)
        return
    for _ in read_batches(data):
        return
    raise CorruptBatchError("legacy message is incomplete", offset=header.position, message=_MSG)
