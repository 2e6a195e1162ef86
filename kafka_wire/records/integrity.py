"""Header-only operations a broker needs on v2 batches: validate, and re-offset without decoding.

Neither the base offset (bytes 0-7) nor the partition leader epoch (bytes 12-15) is covered by
the CRC-32C (which starts at the attributes, byte 21), so re-offsetting leaves the CRC valid;
stamping LogAppendTime changes the attributes and max timestamp and recomputes it.
"""

from __future__ import annotations

import struct
from typing import Final

from kafka_wire.errors import CorruptBatchError, InvalidValueError, TruncatedError, ValueOutOfRangeError
from kafka_wire.records.batch import RecordBatch
from kafka_wire.records.config import DEFAULT_READ_CONFIG, ReadConfig
from kafka_wire.records.constants import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CRC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    MAX_TIMESTAMP_OFFSET,
    MIN_RECORD_SIZE_V2,
    PARTITION_LEADER_EPOCH_OFFSET,
    RECORD_BATCH_OVERHEAD,
    SIZE_OFFSET,
    TIMESTAMP_TYPE_MASK,
)
from kafka_wire.records.crc import crc32c
from kafka_wire.records.record import BufferLike

_I64: Final = struct.Struct(">q")
_I32: Final = struct.Struct(">i")
_U32: Final = struct.Struct(">I")
_I16: Final = struct.Struct(">h")
_NO_CRC_CHECK: Final = ReadConfig(verify_crc=False)
_MSG: Final = "RecordBatch"


def _batch_end(buf: BufferLike, position: int) -> int:
    """Where the v2 batch at ``position`` ends; checks framing and magic."""
    n = len(buf)
    if n - position < RECORD_BATCH_OVERHEAD:
        raise TruncatedError(
            f"v2 batch header needs {RECORD_BATCH_OVERHEAD} bytes, {n - position} available",
            offset=position,
            message=_MSG,
        )
    magic = memoryview(buf).cast("B")[position + MAGIC_OFFSET]
    if magic != MAGIC_V2:
        raise CorruptBatchError(f"magic {magic} is not 2", offset=position + MAGIC_OFFSET, message=_MSG)
    (size,) = _I32.unpack_from(buf, position + SIZE_OFFSET)
    if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
        raise CorruptBatchError(
            f"batch size {size + LOG_OVERHEAD} is below the 61-byte overhead", offset=position, message=_MSG
        )
    end: int = position + LOG_OVERHEAD + size
    if end > n:
        raise TruncatedError(
            f"batch declares {size + LOG_OVERHEAD} bytes, {n - position} available",
            offset=position,
            message=_MSG,
        )
    return end


def validate_batch(
    buf: BufferLike,
    position: int = 0,
    *,
    verify_crc: bool = True,
    require_dense: bool = False,
) -> RecordBatch[bytes]:
    """Check the v2 batch at ``buf[position:]`` from its header alone and return a view of it.

    Checks: the batch fits ``buf`` and the 61-byte overhead, magic is 2, the CRC-32C (unless
    ``verify_crc=False``), the codec id is known, the record count is not negative, not above
    ``last_offset_delta + 1`` and (uncompressed) not above what the bytes can hold. With
    ``require_dense`` (the produce path, as Kafka's log validator): at least one record and
    ``record_count == last_offset_delta + 1``. Records themselves are not decoded.
    """
    _batch_end(buf, position)
    data = buf if type(buf) is bytes else memoryview(buf).cast("B")
    batch: RecordBatch[bytes] = RecordBatch(
        data,
        position,
        position=position,
        config=DEFAULT_READ_CONFIG if verify_crc else _NO_CRC_CHECK,
        zero_copy=False,
    )
    where = f"(batch base offset {batch.base_offset})"
    count = batch.record_count
    if batch.attributes & COMPRESSION_MASK > 4:
        raise InvalidValueError(
            f"unknown compression codec id {batch.attributes & COMPRESSION_MASK} {where}",
            offset=position,
            message=_MSG,
        )
    if count < 0:
        raise InvalidValueError(f"negative record count {count} {where}", offset=position, message=_MSG)
    if count > batch.last_offset_delta + 1:
        raise InvalidValueError(
            f"record count {count} exceeds the offset range (last offset delta {batch.last_offset_delta}) {where}",
            offset=position,
            message=_MSG,
        )
    if (
        batch.attributes & COMPRESSION_MASK == 0
        and count * MIN_RECORD_SIZE_V2 > batch.batch_length + LOG_OVERHEAD - RECORD_BATCH_OVERHEAD
    ):
        raise CorruptBatchError(
            f"record count {count} cannot fit in {batch.batch_length + LOG_OVERHEAD} bytes {where}",
            offset=position,
            message=_MSG,
        )
    if require_dense and (count == 0 or count != batch.last_offset_delta + 1):
        raise InvalidValueError(
            f"record count {count} does not match the offset range (last offset delta {batch.last_offset_delta}) {where}",
            offset=position,
            message=_MSG,
        )
    return batch


def reoffset_batch_in_place(
    buf: bytearray | memoryview,
    base_offset: int,
    partition_leader_epoch: int | None = None,
    *,
    position: int = 0,
    log_append_time: int | None = None,
) -> int:
    """Patch the v2 batch at ``buf[position:]`` in place; returns the next offset after it.

    Sets the base offset and (if given) the partition leader epoch; neither is covered by the
    CRC. With ``log_append_time``, also sets the LogAppendTime attribute bit and the max
    timestamp and recomputes the CRC-32C. Records are not decoded and the stored CRC is not
    checked (use :func:`validate_batch` first).
    """
    end = _batch_end(buf, position)
    if not -(1 << 63) <= base_offset < 1 << 63:
        raise ValueOutOfRangeError(f"base offset {base_offset} out of int64 range")
    if partition_leader_epoch is not None and not -(1 << 31) <= partition_leader_epoch < 1 << 31:
        raise ValueOutOfRangeError(f"partition leader epoch {partition_leader_epoch} out of int32 range")
    if log_append_time is not None and not -(1 << 63) <= log_append_time < 1 << 63:
        raise ValueOutOfRangeError(f"log append time {log_append_time} out of int64 range")
    _I64.pack_into(buf, position, base_offset)
    if partition_leader_epoch is not None:
        _I32.pack_into(buf, position + PARTITION_LEADER_EPOCH_OFFSET, partition_leader_epoch)
    if log_append_time is not None:
        (attributes,) = _I16.unpack_from(buf, position + ATTRIBUTES_OFFSET)
        _I16.pack_into(buf, position + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
        _I64.pack_into(buf, position + MAX_TIMESTAMP_OFFSET, log_append_time)
        _U32.pack_into(
            buf, position + CRC_OFFSET, crc32c(memoryview(buf)[position + ATTRIBUTES_OFFSET : end])
        )
    last_offset_delta: int = _I32.unpack_from(buf, position + LAST_OFFSET_DELTA_OFFSET)[0]
    return base_offset + last_offset_delta + 1


def reoffset_batch(
    buf: BufferLike,
    base_offset: int,
    partition_leader_epoch: int | None = None,
    *,
    log_append_time: int | None = None,
) -> bytes:
    """A copy of the single v2 batch ``buf`` with a new base offset (and leader epoch / LogAppendTime).

    ``buf`` must hold exactly one batch. See :func:`reoffset_batch_in_place`.
    """
    end = _batch_end(buf, 0)
    if end != len(buf):
        raise CorruptBatchError(f"{len(buf) - end} bytes follow the batch", offset=end, message=_MSG)
    out = bytearray(buf)
    reoffset_batch_in_place(out, base_offset, partition_leader_epoch, log_append_time=log_append_time)
    return bytes(out)
