"""RecordBatch v2: a view over one batch's bytes with its header fields, records decoded on demand.

The header is unpacked once (one ``struct`` call) when the view is made; records are decoded,
and decompressed if need be, each time the batch is iterated. Nothing is copied up front: the
view keeps the caller's buffer.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Final, Generic

from kafka_wire.errors import CorruptBatchError, DecodeError, InvalidValueError
from kafka_wire.records.compression import decompress
from kafka_wire.records.config import ReadConfig
from kafka_wire.records.constants import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    COMPRESSION_NAMES,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    TimestampType,
)
from kafka_wire.records.crc import crc32c
from kafka_wire.records.crc import crc32c_update as _crc32c
from kafka_wire.records.loops import decode_records_v2, iterate_records_v2, v2_iter
from kafka_wire.records.record import B, Record

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

V2_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
"""The 61-byte v2 header: base offset .. record count, in wire order."""
_OFFSET_SIZE: Final = struct.Struct(">qi")


def relocate(error: DecodeError, *, offset: int, note: str, message: str) -> DecodeError:
    """A copy of ``error`` (same class) at ``offset`` with ``note`` appended to its reason."""
    return type(error)(f"{error.reason} {note}", offset=offset, message=message)


def wrap_decode_failure(exc: Exception, offset: int) -> DecodeError:
    """Turn an ``IndexError`` / ``UnicodeDecodeError`` escaping a hot loop into a DecodeError."""
    if isinstance(exc, UnicodeDecodeError):
        return InvalidValueError("header key is not valid UTF-8", offset=offset)
    return CorruptBatchError("record data ends inside a field", offset=offset)


class RecordBatch(Generic[B]):
    """One v2 batch: header fields as attributes; iterate it for its records.

    ``position`` is the batch's byte position in the payload it was read from.
    """

    __slots__ = (
        "_buf",
        "_config",
        "_start",
        "_zero_copy",
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "position",
        "producer_epoch",
        "producer_id",
        "record_count",
    )

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    def __init__(
        self, buf: bytes | memoryview, start: int, position: int, config: ReadConfig, zero_copy: bool
    ) -> None:
        """Make a view of the batch at ``buf[start:]``; the caller has checked that it is complete.

        Checks the size against the v2 overhead and, if ``config.verify_crc``, the CRC-32C.
        """
        self._buf = buf if isinstance(buf, bytes) or buf.readonly else buf.toreadonly()
        self._start = start
        self._config = config
        self._zero_copy = zero_copy
        self.position = position
        if len(buf) - start >= RECORD_BATCH_OVERHEAD:
            (
                self.base_offset,
                batch_length,
                self.partition_leader_epoch,
                self.magic,
                self.crc,
                self.attributes,
                self.last_offset_delta,
                self.base_timestamp,
                self.max_timestamp,
                self.producer_id,
                self.producer_epoch,
                self.base_sequence,
                self.record_count,
            ) = V2_HEADER.unpack_from(buf, start)
            self.batch_length = batch_length
            base_offset = self.base_offset
        else:
            base_offset, batch_length = _OFFSET_SIZE.unpack_from(buf, start)
        if batch_length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD or len(buf) - start < RECORD_BATCH_OVERHEAD:
            raise CorruptBatchError(
                f"batch size {batch_length + LOG_OVERHEAD} is below the v2 overhead of 61 bytes"
                f" (batch base offset {base_offset})",
                offset=position,
                message="RecordBatch",
            )
        if config.verify_crc:
            end = start + batch_length + LOG_OVERHEAD
            # small batches: slicing bytes beats making a memoryview
            actual = _crc32c(
                buf[start + ATTRIBUTES_OFFSET : end]
                if batch_length < 4096
                else memoryview(buf)[start + ATTRIBUTES_OFFSET : end]
            )
            if actual != self.crc:
                raise CorruptBatchError(
                    f"CRC-32C mismatch: stored 0x{self.crc:08x}, computed 0x{actual:08x}"
                    f" (batch base offset {self.base_offset})",
                    offset=position,
                    message="RecordBatch",
                )

    # -- derived header values -------------------------------------------------------------------
    @property
    def compression_id(self) -> int:
        """Codec id from the attributes (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
        return self.attributes & COMPRESSION_MASK

    @property
    def compression(self) -> str:
        """Codec name: ``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd`` (``unknown(N)`` otherwise)."""
        return COMPRESSION_NAMES[self.attributes & COMPRESSION_MASK]

    @property
    def timestamp_type(self) -> TimestampType:
        """CREATE_TIME or LOG_APPEND_TIME."""
        return (
            TimestampType.LOG_APPEND_TIME
            if self.attributes & TIMESTAMP_TYPE_MASK
            else TimestampType.CREATE_TIME
        )

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon (held in the base timestamp field) when the flag is set."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_MASK else None

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (wrapping after int32 max), or -1 without a base sequence."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    def sequence_of(self, offset: int) -> int:
        """The producer sequence of the record at ``offset`` (-1 without a base sequence).

        ``base_sequence + (offset - base_offset)``, wrapping after int32 max as Kafka's
        ``incrementSequence``.
        """
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + offset - self.base_offset) & 0x7FFFFFFF

    @property
    def size_in_bytes(self) -> int:
        """The whole batch, offset and size fields included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def buffer(self) -> memoryview:
        """The batch's bytes (a view; nothing is copied)."""
        start = self._start
        return memoryview(self._buf)[start : start + self.batch_length + LOG_OVERHEAD]

    def compute_crc(self) -> int:
        """CRC-32C over attributes .. end of batch."""
        start = self._start
        return crc32c(
            memoryview(self._buf)[start + ATTRIBUTES_OFFSET : start + self.batch_length + LOG_OVERHEAD]
        )

    def is_valid(self) -> bool:
        """Whether the stored CRC matches the batch's bytes."""
        return self.compute_crc() == self.crc

    # -- records ---------------------------------------------------------------------------------
    def _where(self, shift: int | None) -> str:
        """The batch named in error messages (its decompressed records when ``shift`` is None)."""
        where = f"(batch base offset {self.base_offset})"
        return where if shift is not None else f"{where} in its decompressed records"

    def _source(self) -> tuple[bytes, memoryview | None, int, int, int | None, int | None]:
        """Where the records are: ``(data, view, pos, end, shift, log_append_time)``.

        ``data`` is ``bytes``: the batch's buffer, a copy of its records part, or its
        decompressed records; ``view`` is a view of the same bytes for zero-copy reads (records
        then slice it), else ``None``. ``shift`` turns a position in ``data`` into one in the
        payload (``None`` for decompressed data).
        """
        count = self.record_count
        if count < 0:
            raise CorruptBatchError(
                f"negative record count {count} {self._where(0)}", offset=self.position, message="RecordBatch"
            )
        buf = self._buf
        start = self._start
        end = start + self.batch_length + LOG_OVERHEAD
        attributes = self.attributes
        codec = attributes & COMPRESSION_MASK
        log_append_time = self.max_timestamp if attributes & TIMESTAMP_TYPE_MASK else None
        if codec == 0:
            if type(buf) is bytes:
                view = memoryview(buf) if self._zero_copy else None
                return buf, view, start + RECORD_BATCH_OVERHEAD, end, self.position - start, log_append_time
            records = memoryview(buf)[start + RECORD_BATCH_OVERHEAD : end]
            data = bytes(records)
            view = records if self._zero_copy else None
            return data, view, 0, len(data), self.position + RECORD_BATCH_OVERHEAD, log_append_time
        try:
            raw = decompress(
                codec,
                memoryview(buf)[start + RECORD_BATCH_OVERHEAD : end],
                magic=2,
                max_bytes=self._config.max_decompressed_bytes,
            )
        except DecodeError as e:
            raise relocate(e, offset=self.position, note=self._where(0), message="RecordBatch") from None
        view = memoryview(raw) if self._zero_copy else None
        return raw, view, 0, len(raw), None, log_append_time

    def _failure(self, e: Exception, shift: int | None) -> DecodeError:
        """The error to raise for ``e`` escaping a records loop over :meth:`_source`'s data."""
        note = self._where(shift)
        if isinstance(e, DecodeError):
            at = self.position if shift is None else e.offset + shift
            return relocate(e, offset=at, note=note, message="RecordBatch")
        return relocate(wrap_decode_failure(e, 0), offset=self.position, note=note, message="RecordBatch")

    def _left_over(self, pos: int, end: int, shift: int | None) -> CorruptBatchError:
        return CorruptBatchError(
            f"{end - pos} bytes left after the declared {self.record_count} records {self._where(shift)}",
            offset=self.position if shift is None else pos + shift,
            message="RecordBatch",
        )

    def records(self) -> list[Record[B]]:
        """Decode (and decompress) every record of the batch."""
        records: list[Record[B]] = self._decode(decode_records_v2)
        return records

    def _iterate(self) -> Iterator[Record[B]]:
        """The records, decoded (and decompressed) when iteration starts (``__iter__``).

        A corrupt batch raises before the first record, in both flavours: every record is checked
        first (the compiled flavour then makes the records as they are asked for).
        """
        records: Iterator[Record[B]] = self._decode(iterate_records_v2)
        return records

    # compiled: a C method that makes the common case's records without a Python call, and
    # calls _iterate for everything else
    __iter__ = _iterate if TYPE_CHECKING or v2_iter is None else v2_iter

    def _decode(self, loop: Callable[..., tuple[Any, int]]) -> Any:
        """The records ``loop`` (``decode_records_v2`` or ``iterate_records_v2``) returns for this
        batch; bad input (a ``DecodeError``, or an ``IndexError`` / ``UnicodeDecodeError`` from
        bytes that end inside a field or a header key that is not UTF-8) raises a ``DecodeError``
        at the batch's position."""
        data, view, pos, end, shift, log_append_time = self._source()
        try:
            records, pos = loop(
                data,
                view,
                pos,
                end,
                self.record_count,
                self.base_offset,
                self.base_timestamp,
                log_append_time,
            )
        except (DecodeError, IndexError, UnicodeDecodeError) as e:
            raise self._failure(e, shift) from None
        if pos != end:
            raise self._left_over(pos, end, shift)
        return records

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"count={self.record_count}, magic=2, compression={self.compression}, "
            f"size={self.batch_length + LOG_OVERHEAD}, position={self.position})"
        )
