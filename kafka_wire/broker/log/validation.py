"""Checking appended records and giving them offsets, as Kafka's ``LogValidator`` does.

Checks, in Kafka's order per batch: framing (a partial trailing batch is refused rather than
trimmed), size against ``max.message.bytes`` (MESSAGE_TOO_LARGE), CRC (CORRUPT_MESSAGE), then
for appends that assign offsets (leader appends): a client's v2 batch must have base offset 0,
clients may not write control batches, a transactional batch needs a producer id, the record
count must match the offset range and the records must decode with offset deltas 0..n-1
(INVALID_RECORD / CORRUPT_MESSAGE), every record of a compacted topic needs a key
(INVALID_RECORD), and CreateTime timestamps must lie within
``message.timestamp.before/after.max.ms`` of the broker clock (INVALID_TIMESTAMP). Failures come
back as a :class:`Rejection` (an error code with a message and per-record errors), never raised.

Decompression is bounded by ``max.message.bytes``: a compressed batch whose records inflate past
``max.message.bytes`` minus the 61-byte batch header is refused with MESSAGE_TOO_LARGE, and the
codec stops inflating there, so a decompression bomb costs at most that much. Kafka itself checks
``max.message.bytes`` against the batch it stores after recompressing (``UnifiedLog.append``,
RecordTooLargeException, which the Produce response carries as MESSAGE_TOO_LARGE without record
errors); it inflates a batch kept in its own codec without a bound. Here both hold: a batch
stored recompressed is checked again after recompression.

Offsets: a v2 batch kept in its codec is patched in place (base offset, partition leader epoch,
and for LogAppendTime the attributes, max timestamp and CRC). The topic's ``compression.type``
decides, as Kafka's ``LogValidator``: ``producer`` keeps the batch's codec; any other value
(``uncompressed``, ``gzip``, ``snappy``, ``lz4``, ``zstd``) that differs from the batch's codec
rebuilds the batch with it, at the topic's ``compression.<codec>.level``: same records
(timestamps, keys, values, headers), offsets assigned from the log end, the producer id, epoch,
base sequence and transactional flag kept, the topic's timestamp type. Control batches are kept
as they are. Legacy messages: an uncompressed message gets its offset (and, for LogAppendTime on
v1, timestamp and CRC-32); a v1 compressed wrapper with inner offsets 0..n-1 gets its wrapper
offset (and timestamp); a v0 compressed wrapper (whose inner offsets are absolute) or a v1 wrapper
with other inner offsets is rebuilt with the same codec (legacy messages keep their codec).

Work: each result says how much decoding it did (``work_bytes``: per record decoded, plus the
bytes inflated and recompressed), which the broker counts against its per-call budget
(``kafka_wire.broker.work``).
"""

from __future__ import annotations

import struct
from operator import attrgetter
from typing import Final, Literal

from kafka_wire.broker.log.config import LogConfig
from kafka_wire.broker.work import RECORD_WORK_BYTES
from kafka_wire.errors import CorruptBatchError, DecodeError, EncodeError, LimitExceededError
from kafka_wire.logformat.batch_header import BatchHeader, parse_header
from kafka_wire.messages import ErrorCode
from kafka_wire.quick_dataclass import dataclass
from kafka_wire.records import (
    LegacyBatch,
    RecordBatch,
    RecordsReader,
    build_batch,
    read_batches,
    reoffset_batch_in_place,
    validate_batch,
)
from kafka_wire.records.constants import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_ZSTD,
    COMPRESSION_IDS,
    COMPRESSION_MASK,
    COMPRESSION_NAMES,
    CONTROL_MASK,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    TimestampType,
)
from kafka_wire.records.crc import crc32
from kafka_wire.records.loops import summarize_records_v2
from kafka_wire.records.record import Record

AppendOrigin = Literal["client", "coordinator", "replication"]
"""Who appends: clients may not write control batches; replication keeps offsets as given."""

_I64: Final = struct.Struct(">q")
_U32: Final = struct.Struct(">I")

#: ``compression.lz4.level``'s default, at which Kafka uses lz4's fast compressor.
_LZ4_FAST_LEVEL: Final = 9


def stored_codec(config: LogConfig, codec: int) -> int:
    """The codec a batch written in ``codec`` is stored in on a topic with ``config``."""
    if config.compression_type == "producer":
        return codec
    # The topic names codecs as the records do, but for ``uncompressed``.
    return COMPRESSION_IDS["none" if config.compression_type == "uncompressed" else config.compression_type]


def compression_level(config: LogConfig, codec: int) -> int | None:
    """The topic's level for ``codec`` as the codecs take it (None: the codec's default)."""
    if codec == CODEC_GZIP:
        return None if config.compression_gzip_level == -1 else config.compression_gzip_level
    if codec == CODEC_LZ4:
        return None if config.compression_lz4_level == _LZ4_FAST_LEVEL else config.compression_lz4_level
    if codec == CODEC_ZSTD:
        return config.compression_zstd_level
    return None


def max_inflated_bytes(config: LogConfig) -> int:
    """What one batch's records may inflate to: ``max.message.bytes`` less the batch header."""
    return max(0, config.max_message_bytes - RECORD_BATCH_OVERHEAD)


@dataclass(frozen=True, slots=True)
class RecordError:
    """One rejected record: its index inside its batch, and why (ProduceResponse ``record_errors``)."""

    batch_index: int
    message: str | None


@dataclass(frozen=True, slots=True)
class Rejection:
    error_code: int
    message: str
    record_errors: tuple[RecordError, ...] = ()
    work_bytes: int = 0
    """Decoding done before the refusal (see :class:`ValidRecords`)."""


@dataclass(frozen=True, slots=True)
class ValidRecords:
    """Records ready to append: their bytes (offsets assigned) and each batch's header."""

    data: bytes
    headers: tuple[BatchHeader, ...]
    log_append_time: int
    work_bytes: int = 0
    """Decoding done beyond reading the bytes: per record decoded, bytes inflated, bytes recompressed."""

    @property
    def first_offset(self) -> int:
        first = self.headers[0]
        return first.base_offset if first.magic == 2 or not first.compressed else first.last_offset

    @property
    def last_offset(self) -> int:
        return self.headers[-1].last_offset


@dataclass(frozen=True, slots=True)
class _Decoded:
    """A batch the leader checked, with its records decoded for recompression (``None``: the batch
    is kept as it is, its records were checked without being made)."""

    batch: RecordBatch[bytes] | LegacyBatch[bytes]
    records: list[Record[bytes]] | None
    work_bytes: int


def _frame(data: bytes, config: LogConfig) -> list[BatchHeader] | Rejection:
    headers: list[BatchHeader] = []
    pos = 0
    while pos < len(data):
        try:
            header = parse_header(data, pos, pos)
        except DecodeError as e:
            return Rejection(ErrorCode.CORRUPT_MESSAGE, f"batch at byte {pos}: {e.reason}")
        if header is None or header.end > len(data):
            return Rejection(ErrorCode.CORRUPT_MESSAGE, f"the records end inside a batch at byte {pos}")
        if header.size > config.max_message_bytes:
            return Rejection(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"batch of {header.size} bytes is larger than max.message.bytes ({config.max_message_bytes})",
            )
        headers.append(header)
        pos = header.end
    return headers


def validate_records(
    data: bytes,
    config: LogConfig,
    now_ms: int,
    *,
    next_offset: int,
    leader_epoch: int,
    assign_offsets: bool,
    origin: AppendOrigin,
    log_append_time: bool,
) -> ValidRecords | Rejection:
    """Check ``data`` and, with ``assign_offsets``, give its batches offsets from ``next_offset``."""
    if not data:
        return Rejection(ErrorCode.INVALID_RECORD, "the append holds no record batch")
    if len(data) > config.segment_bytes:
        return Rejection(
            ErrorCode.RECORD_LIST_TOO_LARGE,
            f"{len(data)} bytes of records are larger than segment.bytes ({config.segment_bytes})",
        )
    framed = _frame(data, config)
    if isinstance(framed, Rejection):
        return framed
    expected = next_offset
    decoded: list[_Decoded] = []
    for header in framed:
        view = memoryview(data)[header.position : header.end]
        if header.magic == 2:
            try:
                validate_batch(view, require_dense=assign_offsets)
            except CorruptBatchError as e:
                return Rejection(ErrorCode.CORRUPT_MESSAGE, f"batch at byte {header.position}: {e.reason}")
            except DecodeError as e:
                return Rejection(ErrorCode.INVALID_RECORD, f"batch at byte {header.position}: {e.reason}")
        if assign_offsets:
            checked = _check_for_leader(view, header, config, now_ms, origin, log_append_time)
            if isinstance(checked, Rejection):
                return checked
            decoded.append(checked)
        else:
            try:
                for _ in read_batches(view):  # checks a legacy message's CRC-32
                    break
            except DecodeError as e:
                return Rejection(ErrorCode.CORRUPT_MESSAGE, f"batch at byte {header.position}: {e.reason}")
            first = header.base_offset if header.magic == 2 else header.last_offset
            if first < expected:
                return Rejection(
                    ErrorCode.INVALID_RECORD,
                    f"batch offsets {first}..{header.last_offset} are not above the log end offset {expected}",
                )
            expected = header.next_offset
    if not assign_offsets:
        return ValidRecords(data, tuple(framed), -1)
    return _assign_offsets(
        data, framed, decoded, config, next_offset, leader_epoch, now_ms if log_append_time else None
    )


_OFFSET: Final = attrgetter("offset")
_TIMESTAMP: Final = attrgetter("timestamp")
_KEY: Final = attrgetter("key")
_VALUE: Final = attrgetter("value")


def _check_for_leader(
    view: memoryview,
    header: BatchHeader,
    config: LogConfig,
    now_ms: int,
    origin: AppendOrigin,
    log_append_time: bool,
) -> _Decoded | Rejection:
    where = f"batch at byte {header.position}"
    if header.magic == 2:
        if origin == "client" and header.base_offset != 0:
            return Rejection(ErrorCode.INVALID_RECORD, f"{where}: a client batch must have base offset 0")
        if origin == "client" and header.attributes & CONTROL_MASK:
            return Rejection(ErrorCode.INVALID_RECORD, f"{where}: clients may not write control batches")
        if header.attributes & TRANSACTIONAL_MASK and header.producer_id < 0:
            return Rejection(ErrorCode.INVALID_RECORD, f"{where}: a transactional batch needs a producer id")
    bound = max_inflated_bytes(config)
    if header.magic == 2 and summarize_records_v2 is not None:
        passed = _passes_as_is(view, header, config, now_ms, log_append_time, bound)
        if passed is not None:
            return passed
    try:
        batches = list(read_batches(view, max_decompressed_bytes=bound))
        records: list[Record[bytes]] = [r for b in batches for r in b.records()]
    except LimitExceededError:
        return Rejection(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"{where}: its records inflate past {bound} bytes, more than max.message.bytes "
            f"({config.max_message_bytes}) allows for a batch",
            work_bytes=bound,
        )
    except DecodeError as e:
        return Rejection(ErrorCode.CORRUPT_MESSAGE, f"{where}: {e.reason}")
    # The per-record checks run as C loops over the records' fields (map, min, max): a batch of
    # thousands of records is one step of a job, and the loop is held for all of it.
    work = RECORD_WORK_BYTES * len(records)
    if header.compressed:
        work += sum(map(len, filter(None, map(_KEY, records)))) + sum(
            map(len, filter(None, map(_VALUE, records)))
        )
    if header.magic == 2:
        base = header.base_offset
        offsets = list(map(_OFFSET, records))
        if offsets != list(range(base, base + len(offsets))):
            i = next(i for i, offset in enumerate(offsets) if offset != base + i)
            return Rejection(
                ErrorCode.INVALID_RECORD, f"{where}: record {i} has offset delta {offsets[i] - base}"
            )
    is_control = header.magic == 2 and bool(header.attributes & CONTROL_MASK)
    if config.compact and not is_control:
        missing = tuple(
            RecordError(i, "Compacted topic cannot accept message without key.")
            for i, record in enumerate(records)
            if record.key is None
        )
        if missing:
            return Rejection(
                ErrorCode.INVALID_RECORD, f"{where}: compacted topic record without key", missing, work
            )
    if not log_append_time and header.magic >= 1 and not is_control and records:
        low = now_ms - config.message_timestamp_before_max_ms
        high = now_ms + config.message_timestamp_after_max_ms
        timestamps = list(map(_TIMESTAMP, records))
        if low <= min(timestamps) and max(timestamps) <= high:
            return _Decoded(batches[0], records, work)
        late = tuple(
            RecordError(i, f"Timestamp {record.timestamp} of message with offset {i} is out of range.")
            for i, record in enumerate(records)
            if record.timestamp != -1 and not low <= record.timestamp <= high
        )
        if late:
            return Rejection(ErrorCode.INVALID_TIMESTAMP, f"{where}: timestamp out of range", late, work)
    return _Decoded(batches[0], records, work)


def _passes_as_is(
    view: memoryview, header: BatchHeader, config: LogConfig, now_ms: int, log_append_time: bool, bound: int
) -> _Decoded | None:
    """The common case of :func:`_check_for_leader` without a Python object per record: a v2 batch
    stored in its own codec (CRC checked before) whose records all pass, walked once in C. Any
    other outcome is ``None``, and the full check decides (with its errors and record errors)."""
    codec = header.attributes & COMPRESSION_MASK
    is_control = bool(header.attributes & CONTROL_MASK)
    if stored_codec(config, codec) != codec and not is_control:
        return None  # recompressed: the records are made for it
    assert summarize_records_v2 is not None, "the caller checked"
    try:
        batch = next(iter(RecordsReader(view, verify_crc=False, max_decompressed_bytes=bound)))
        assert isinstance(batch, RecordBatch), "magic 2"
        data, records_view, pos, end, _, lat = batch._source()
        count = batch.record_count
        after, low, high, gap, keyless, kv_bytes = summarize_records_v2(
            data, records_view, pos, end, count, batch.base_offset, batch.base_timestamp, lat
        )
    except (DecodeError, IndexError, UnicodeDecodeError, StopIteration):
        return None
    if after != end or gap >= 0 or (config.compact and not is_control and keyless >= 0):
        return None
    if not log_append_time and not is_control and low is not None and high is not None:
        if not (
            now_ms - config.message_timestamp_before_max_ms <= low
            and high <= now_ms + config.message_timestamp_after_max_ms
        ):
            return None
    work = RECORD_WORK_BYTES * count + (kv_bytes if header.compressed else 0)
    return _Decoded(batch, None, work)


def _assign_offsets(
    data: bytes,
    headers: list[BatchHeader],
    decoded: list[_Decoded],
    config: LogConfig,
    next_offset: int,
    leader_epoch: int,
    log_append_time: int | None,
) -> ValidRecords | Rejection:
    out = bytearray()
    offset = next_offset
    work = 0
    for header, checked in zip(headers, decoded, strict=True):
        work += checked.work_bytes
        chunk = bytearray(memoryview(data)[header.position : header.end])
        codec = header.attributes & COMPRESSION_MASK
        target = stored_codec(config, codec)
        try:
            if header.magic == 2 and target != codec and not header.is_control:
                chunk = bytearray(_recompress(checked, target, config, offset, leader_epoch, log_append_time))
                work += len(chunk)
                if len(chunk) > config.max_message_bytes:
                    return Rejection(
                        ErrorCode.MESSAGE_TOO_LARGE,
                        f"batch at byte {header.position} is {len(chunk)} bytes once recompressed with "
                        f"{COMPRESSION_NAMES[target]}, larger than max.message.bytes ({config.max_message_bytes})",
                        work_bytes=work,
                    )
                offset += header.last_offset - header.base_offset + 1  # dense: checked
            elif header.magic == 2:
                offset = reoffset_batch_in_place(chunk, offset, leader_epoch, log_append_time=log_append_time)
            else:
                chunk, offset = _reoffset_legacy(chunk, header, offset, log_append_time)
        except (DecodeError, EncodeError) as e:
            return Rejection(
                ErrorCode.INVALID_RECORD, f"batch at byte {header.position}: {e}", work_bytes=work
            )
        out += chunk
    final = bytes(out)
    framed: list[BatchHeader] = []
    pos = 0
    while pos < len(final):
        parsed = parse_header(final, pos, pos)
        assert parsed is not None, "re-offset batches are complete"
        framed.append(parsed)
        pos = parsed.end
    return ValidRecords(final, tuple(framed), -1 if log_append_time is None else log_append_time, work)


def _recompress(
    checked: _Decoded,
    codec: int,
    config: LogConfig,
    offset: int,
    leader_epoch: int,
    log_append_time: int | None,
) -> bytes:
    """A v2 batch's records rebuilt in ``codec`` with offsets from ``offset`` (as Kafka's
    ``LogValidator.buildRecordsAndAssignOffsets``)."""
    batch = checked.batch
    assert isinstance(batch, RecordBatch), "only v2 batches are recompressed"
    assert checked.records is not None, "a batch to recompress has its records made"
    return build_batch(
        [(r.key, r.value, r.headers, r.timestamp) for r in checked.records],
        compression=COMPRESSION_NAMES[codec],
        compression_level=compression_level(config, codec),
        base_offset=offset,
        partition_leader_epoch=leader_epoch,
        timestamp_type=TimestampType.LOG_APPEND_TIME
        if log_append_time is not None
        else TimestampType.CREATE_TIME,
        log_append_time=log_append_time,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
    )


def _stamp_legacy(chunk: bytearray, log_append_time: int) -> None:
    """Set a v1 message's LogAppendTime attribute bit and timestamp, and recompute its CRC-32."""
    chunk[17] |= TIMESTAMP_TYPE_MASK
    _I64.pack_into(chunk, 18, log_append_time)
    _U32.pack_into(chunk, 12, crc32(memoryview(chunk)[16:]))


def _reoffset_legacy(
    chunk: bytearray, header: BatchHeader, offset: int, log_append_time: int | None
) -> tuple[bytearray, int]:
    codec = header.attributes & COMPRESSION_MASK
    if not codec:
        _I64.pack_into(chunk, 0, offset)
        if log_append_time is not None and header.magic == 1:
            _stamp_legacy(chunk, log_append_time)
        return chunk, offset + 1
    records = [r for b in read_batches(chunk) for r in b.records()]
    dense = all(r.offset == records[0].offset + i for i, r in enumerate(records))
    if (
        header.magic == 1
        and dense
        and records[0].offset == header.last_offset - len(records) + 1
        and offset + len(records) - 1 > 0  # a wrapper offset of 0 would read as base 0
    ):
        _I64.pack_into(chunk, 0, offset + len(records) - 1)
        if log_append_time is not None:
            _stamp_legacy(chunk, log_append_time)
        return chunk, offset + len(records)
    rebuilt = build_batch(
        [(r.key, r.value, (), r.timestamp) for r in records],
        magic=header.magic,
        compression=COMPRESSION_NAMES[codec],
        base_offset=offset,
        timestamp_type=TimestampType.LOG_APPEND_TIME
        if log_append_time is not None
        else TimestampType.CREATE_TIME,
        log_append_time=log_append_time,
    )
    return bytearray(rebuilt), offset + len(records)
