"""Building batches: RecordBatch v2 (every header field settable) and legacy message sets.

Records are ``(key, value, headers, timestamp)`` tuples (shorter tuples and objects with those
attributes work too); a ``None`` timestamp takes ``default_timestamp``. Builders never read a
clock: callers pass timestamps.
"""

from __future__ import annotations

import inspect
import struct
from collections.abc import Iterable, Sequence
from typing import Final

from kafka_wire.errors import EncodeError, ValueOutOfRangeError
from kafka_wire.records.batch import V2_HEADER
from kafka_wire.records.compression import codec_id, compress
from kafka_wire.records.constants import (
    ATTRIBUTES_OFFSET,
    CODEC_NONE,
    CONTROL_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_MASK,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    TimestampType,
)
from kafka_wire.records.crc import crc32c_update as _crc32c
from kafka_wire.records.legacy import build_message_set
from kafka_wire.records.loops import encode_records_v2, record_fields

_CRC: Final = struct.Struct(">I")
_INT64_MAX: Final = 0x7FFFFFFFFFFFFFFF
_INT32_MAX: Final = 0x7FFFFFFF


def _check_v2_producer_fields(
    producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool, is_control: bool
) -> None:
    """The rules Kafka's ``MemoryRecordsBuilder`` applies to idempotent/transactional batches."""
    if is_transactional and producer_id == NO_PRODUCER_ID:
        raise EncodeError("a transactional batch needs a producer id")
    if producer_id != NO_PRODUCER_ID:
        if producer_epoch == NO_PRODUCER_EPOCH:
            raise EncodeError("a batch with a producer id needs a producer epoch")
        if base_sequence < 0 and not is_control:
            raise EncodeError("a batch with a producer id needs a base sequence (>= 0)")


def _check_offset_deltas(deltas: Sequence[int]) -> None:
    previous = -1
    for delta in deltas:
        if not previous < delta <= _INT32_MAX:
            raise ValueOutOfRangeError(
                f"offset deltas must increase within 0..2**31-1 (got {delta} after {previous})"
            )
        previous = delta


def build_batch(
    records: Iterable[object],
    *,
    magic: int = 2,
    compression: str = "none",
    compression_level: int | None = None,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: int = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    default_timestamp: int = NO_TIMESTAMP,
    max_timestamp: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
) -> bytes:
    """Build one v2 batch (``magic=2``) or one legacy message set (``magic`` 0 or 1).

    v2: the base timestamp is the first record's timestamp (or ``delete_horizon_ms``, which
    also sets the delete-horizon flag); ``max_timestamp`` defaults to ``log_append_time`` for
    LogAppendTime batches and to the largest record timestamp otherwise; offset deltas are
    ``0..n-1`` unless given; ``last_offset_delta`` defaults to the last offset delta (-1 for an
    empty batch).

    Legacy: one message per record, or with compression one wrapper whose inner offsets are
    absolute (v0) or relative (v1); v1 wrappers carry the max timestamp (the log append time for
    LogAppendTime) and need a base offset of 0 or more (no negative one reads back). v2-only
    fields must keep their defaults.
    """
    codec = codec_id(compression)
    items = records if isinstance(records, list | tuple) else list(records)
    if magic != MAGIC_V2:
        if (
            is_transactional
            or is_control
            or producer_id != NO_PRODUCER_ID
            or producer_epoch != NO_PRODUCER_EPOCH
            or base_sequence != NO_SEQUENCE
            or partition_leader_epoch != NO_PARTITION_LEADER_EPOCH
            or delete_horizon_ms is not None
            or offset_deltas is not None
            or last_offset_delta is not None
            or max_timestamp is not None
        ):
            raise EncodeError(
                f"magic v{magic} has no producer, control, epoch, horizon or offset-delta fields"
            )
        try:
            return build_message_set(
                items,
                magic=magic,
                codec=codec,
                base_offset=base_offset,
                timestamp_type=timestamp_type,
                default_timestamp=default_timestamp,
                log_append_time=log_append_time,
                level=compression_level,
            )
        except (TypeError, ValueError, struct.error) as e:
            raise EncodeError(f"cannot encode record: {e}") from None
    _check_v2_producer_fields(producer_id, producer_epoch, base_sequence, is_transactional, is_control)
    if offset_deltas is not None:
        _check_offset_deltas(offset_deltas)
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    elif items:
        first_ts = record_fields(items[0])[3]
        base_timestamp = default_timestamp if first_ts is None else first_ts
    else:
        base_timestamp = default_timestamp
    if type(base_timestamp) is not int or not (
        base_timestamp == NO_TIMESTAMP or 0 <= base_timestamp <= _INT64_MAX
    ):
        raise ValueOutOfRangeError(f"invalid base timestamp {base_timestamp!r} (must be -1 or 0..2**63-1)")
    count = len(items)
    attributes = codec
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
        if max_timestamp is None and log_append_time is not None:
            max_timestamp = log_append_time
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    if last_offset_delta is None:
        if offset_deltas is None:
            last_offset_delta = count - 1
        else:
            last_offset_delta = offset_deltas[-1] if offset_deltas else -1
    try:
        body, min_ts, max_ts = encode_records_v2(items, base_timestamp, default_timestamp, offset_deltas)
    except (TypeError, ValueError) as e:
        raise EncodeError(f"cannot encode record: {e}") from None
    if min_ts < NO_TIMESTAMP or max_ts > _INT64_MAX or max_ts - base_timestamp > _INT64_MAX:
        raise ValueOutOfRangeError(f"record timestamps must be -1 or 0..2**63-1 (got {min_ts}..{max_ts})")
    if codec != CODEC_NONE:
        body = compress(codec, body, magic=MAGIC_V2, level=compression_level)
    batch_length = len(body) + RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
    if batch_length > _INT32_MAX:
        raise ValueOutOfRangeError(
            f"batch of {batch_length + LOG_OVERHEAD} bytes exceeds the int32 size field"
        )
    header = bytearray(RECORD_BATCH_OVERHEAD)
    try:
        V2_HEADER.pack_into(
            header,
            0,
            base_offset,
            batch_length,
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_ts if max_timestamp is None else max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    except struct.error as e:
        raise ValueOutOfRangeError(f"batch header field out of range: {e}") from None
    # CRC-32C over attributes .. end: the header's tail, then the body, without joining them first
    _CRC.pack_into(header, CRC_OFFSET, _crc32c(body, _crc32c(memoryview(header)[ATTRIBUTES_OFFSET:])))
    return b"".join((header, body))


_BUILD_OPTIONS: Final = frozenset(inspect.signature(build_batch).parameters) - {"records"}


class BatchBuilder:
    """Accumulate records, then :meth:`build` one batch with :func:`build_batch`'s options.

    ``estimated_size`` is an upper bound of the uncompressed batch size (as a producer uses to
    decide when a batch is full).
    """

    __slots__ = ("_options", "_records", "estimated_size")

    def __init__(self, **options: object) -> None:
        unknown = set(options) - _BUILD_OPTIONS
        if unknown:
            raise TypeError(f"unknown build_batch option(s): {', '.join(sorted(unknown))}")
        self._options = options
        self._records: list[tuple[object, object, object, int | None]] = []
        self.estimated_size = RECORD_BATCH_OVERHEAD

    def append(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
    ) -> int:
        """Add a record; returns its offset delta."""
        self._records.append((key, value, headers, timestamp))
        size = 21 + (0 if key is None else len(key)) + (0 if value is None else len(value))
        for hk, hv in headers:
            size += 10 + len(hk) * 3 + (0 if hv is None else len(hv))
        self.estimated_size += size
        return len(self._records) - 1

    def __len__(self) -> int:
        return len(self._records)

    def build(self) -> bytes:
        return build_batch(self._records, **self._options)  # type: ignore[arg-type]  # options are build_batch's keywords
