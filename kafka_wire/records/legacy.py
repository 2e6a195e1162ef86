"""Legacy MessageSet v0/v1: a batch view per shallow message, and the legacy builder.

A shallow message is either one plain record or a compressed wrapper whose value inflates to an
inner message set. Wrapper rules (PROTOCOL-NOTES §6.3): the wrapper offset is the last inner
offset; v0 inner offsets are absolute, v1 inner offsets are relative
(``wrapper offset - last inner offset + inner offset``) except that a wrapper offset of 0 means
base 0; a v1 inner record takes the wrapper timestamp when the wrapper is LogAppendTime; inner
messages may not be compressed; wrappers may not be empty, null or zstd.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, Generic, cast

from kafka_wire.errors import (
    CorruptBatchError,
    DecodeError,
    EncodeError,
    InvalidValueError,
    ValueOutOfRangeError,
)
from kafka_wire.records.batch import relocate, wrap_decode_failure
from kafka_wire.records.compression import compress, decompress
from kafka_wire.records.config import ReadConfig
from kafka_wire.records.constants import (
    CODEC_NONE,
    CODEC_ZSTD,
    COMPRESSION_MASK,
    COMPRESSION_NAMES,
    LEGACY_CRC_START,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
    TIMESTAMP_TYPE_MASK,
    TimestampType,
)
from kafka_wire.records.crc import crc32
from kafka_wire.records.loops import (
    LegacyMessage,
    decode_legacy_message,
    decode_legacy_message_set,
    encode_legacy_message,
    encode_legacy_plain,
    legacy_iter,
    legacy_record,
    record_fields,
)
from kafka_wire.records.record import EMPTY_HEADERS, B, Record

_crc32: Final = zlib.crc32
_HEAD: Final = struct.Struct(">qiIbb")
"""offset, size, crc, magic, attributes."""
_HEAD_V1: Final = struct.Struct(">qiIbbq")
"""offset, size, crc, magic, attributes, timestamp (magic 1)."""
_MSG: Final = "MessageSet"


class LegacyBatch(Generic[B]):
    """One shallow legacy message (magic 0 or 1), exposing the same fields as a v2 batch.

    For a compressed wrapper, ``base_offset``, ``record_count`` and ``last_offset_delta`` need the
    inner messages and are computed (by inflating the wrapper) on first access.
    """

    __slots__ = (
        "_buf",
        "_config",
        "_inner_summary",
        "_start",
        "_zero_copy",
        "attributes",
        "batch_length",
        "crc",
        "last_offset",
        "magic",
        "position",
        "timestamp",
    )

    last_offset: int
    batch_length: int
    crc: int
    magic: int
    attributes: int
    timestamp: int

    partition_leader_epoch: Final = NO_PARTITION_LEADER_EPOCH
    producer_id: Final = NO_PRODUCER_ID
    producer_epoch: Final = NO_PRODUCER_EPOCH
    base_sequence: Final = NO_SEQUENCE
    last_sequence: Final = NO_SEQUENCE
    is_transactional: Final = False
    is_control: Final = False
    has_delete_horizon: Final = False
    delete_horizon_ms: Final = None

    def __init__(
        self, buf: bytes | memoryview, start: int, position: int, config: ReadConfig, zero_copy: bool
    ) -> None:
        """View the complete message at ``buf[start:]``; checks its size and (if enabled) CRC-32."""
        self._buf = buf if type(buf) is bytes or buf.readonly else buf.toreadonly()  # type: ignore[union-attr]  # a memoryview
        self._start = start
        self._config = config
        self._zero_copy = zero_copy
        self._inner_summary: tuple[int, int] | None = None
        self.position = position
        if buf[start + 16] == 1 and len(buf) - start >= 26:
            offset, size, crc, magic, attributes, self.timestamp = _HEAD_V1.unpack_from(buf, start)
        else:
            offset, size, crc, magic, attributes = _HEAD.unpack_from(buf, start)
            self.timestamp = NO_TIMESTAMP
        self.last_offset = offset
        self.batch_length = size
        self.crc = crc
        self.magic = magic
        self.attributes = attributes
        if size < (RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1):
            raise CorruptBatchError(
                f"magic v{magic} message size {size} is below its overhead (message offset {offset})",
                offset=position,
                message=_MSG,
            )
        if config.verify_crc:
            end = start + LOG_OVERHEAD + size
            # small messages: slicing bytes beats making a memoryview
            actual = _crc32(
                buf[start + LEGACY_CRC_START : end] if size < 4096 else memoryview(buf)[start + 16 : end]
            )
            if actual != crc:
                raise CorruptBatchError(
                    f"CRC-32 mismatch: stored 0x{crc:08x}, computed 0x{actual:08x} (message offset {offset})",
                    offset=position,
                    message=_MSG,
                )

    # -- header values shaped like a v2 batch ----------------------------------------------------
    @property
    def compression_id(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def compression(self) -> str:
        return COMPRESSION_NAMES[self.attributes & COMPRESSION_MASK]

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return (
            TimestampType.LOG_APPEND_TIME
            if self.attributes & TIMESTAMP_TYPE_MASK
            else TimestampType.CREATE_TIME
        )

    @property
    def base_timestamp(self) -> int:
        return self.timestamp

    @property
    def max_timestamp(self) -> int:
        return self.timestamp

    @property
    def base_offset(self) -> int:
        if self.attributes & COMPRESSION_MASK == CODEC_NONE:
            return self.last_offset
        return self._summary()[0]

    @property
    def record_count(self) -> int:
        if self.attributes & COMPRESSION_MASK == CODEC_NONE:
            return 1
        return self._summary()[1]

    @property
    def last_offset_delta(self) -> int:
        return self.last_offset - self.base_offset

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def buffer(self) -> memoryview:
        start = self._start
        return memoryview(self._buf)[start : start + self.batch_length + LOG_OVERHEAD]

    def compute_crc(self) -> int:
        start = self._start
        return crc32(
            memoryview(self._buf)[start + LEGACY_CRC_START : start + self.batch_length + LOG_OVERHEAD]
        )

    def is_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def _summary(self) -> tuple[int, int]:
        if self._inner_summary is None:
            records = self.records()
            self._inner_summary = (records[0].offset, len(records))
        return self._inner_summary

    # -- records ---------------------------------------------------------------------------------
    def _message(self, data: bytes | memoryview, start: int) -> LegacyMessage:
        end = start + self.batch_length + LOG_OVERHEAD
        try:
            msg, _ = decode_legacy_message(cast(Any, data), start, end)
        except DecodeError as e:
            raise relocate(
                e, offset=self.position, note=f"(message offset {self.last_offset})", message=_MSG
            ) from None
        return msg

    def records(self) -> list[Record[B]]:
        """The message's record, or a wrapper's inner records with absolute offsets."""
        codec = self.attributes & COMPRESSION_MASK
        if codec != CODEC_NONE:
            return self._inner_records(codec)
        return [self._plain_record()]

    def _plain_record(self) -> Record[B]:
        """The record of an uncompressed message."""
        buf = self._buf
        start = self._start
        if not self._zero_copy and type(buf) is not bytes:
            buf = bytes(buf[start : start + self.batch_length + LOG_OVERHEAD])
            start = 0
        try:
            return legacy_record(
                buf,
                start + (18 if self.magic == 0 else 26),
                start + self.batch_length + LOG_OVERHEAD,
                self.last_offset,
                self.timestamp,
            )
        except DecodeError as e:
            raise relocate(
                e, offset=self.position, note=f"(message offset {self.last_offset})", message=_MSG
            ) from None

    def _iterate(self) -> Iterator[Record[B]]:
        """The message's record, or a wrapper's inner records (``__iter__``)."""
        if self.attributes & COMPRESSION_MASK == CODEC_NONE:
            return iter((self._plain_record(),))
        return iter(self.records())

    # compiled: a C method that makes a plain message's record without a Python call, and calls
    # _iterate for everything else
    __iter__ = _iterate if TYPE_CHECKING or legacy_iter is None else legacy_iter

    def _inner_records(self, codec: int) -> list[Record[B]]:
        where = f"(wrapper offset {self.last_offset})"
        if codec == CODEC_ZSTD:
            raise InvalidValueError(
                f"zstd-compressed magic v{self.magic} wrapper {where}", offset=self.position, message=_MSG
            )
        value = self._message(memoryview(self._buf), self._start)[6]
        if value is None:
            raise CorruptBatchError(
                f"compressed wrapper has a null value {where}", offset=self.position, message=_MSG
            )
        try:
            raw = decompress(codec, value, magic=self.magic, max_bytes=self._config.max_decompressed_bytes)
        except DecodeError as e:
            raise relocate(e, offset=self.position, note=where, message=_MSG) from None
        data = memoryview(raw) if self._zero_copy else raw
        note = f"{where} in its decompressed messages"
        try:
            inner = decode_legacy_message_set(cast(Any, data), 0, len(raw), self._config.verify_crc)
        except DecodeError as e:
            raise relocate(e, offset=self.position, note=note, message=_MSG) from None
        except IndexError as e:
            raise relocate(wrap_decode_failure(e, 0), offset=self.position, note=note, message=_MSG) from None
        if not inner:
            raise CorruptBatchError(
                f"compressed wrapper holds no messages {where}", offset=self.position, message=_MSG
            )
        wrapper_offset = self.last_offset
        if self.magic > 0:
            last_inner = inner[-1][0]
            if wrapper_offset == 0:
                base = 0
            elif wrapper_offset < last_inner:
                raise CorruptBatchError(
                    f"wrapper offset {wrapper_offset} is below its last inner offset {last_inner}",
                    offset=self.position,
                    message=_MSG,
                )
            else:
                base = wrapper_offset - last_inner
        else:
            base = 0
        log_append = self.magic > 0 and bool(self.attributes & TIMESTAMP_TYPE_MASK)
        strict = self._config.strict_inner_magic
        out: list[Record[B]] = []
        for offset, _, magic, attributes, timestamp, k, v, _ in inner:
            if attributes & COMPRESSION_MASK:
                raise CorruptBatchError(
                    f"inner message at offset {offset} is itself compressed {where}",
                    offset=self.position,
                    message=_MSG,
                )
            if strict and magic != self.magic:
                raise CorruptBatchError(
                    f"inner message magic v{magic} differs from wrapper magic v{self.magic} {where}",
                    offset=self.position,
                    message=_MSG,
                )
            if magic == 0:
                timestamp = NO_TIMESTAMP
            elif log_append:
                timestamp = self.timestamp
            out.append(Record(base + offset, timestamp, k, v, EMPTY_HEADERS))
        return out

    def __repr__(self) -> str:
        return (
            f"LegacyBatch(last_offset={self.last_offset}, magic={self.magic}, compression={self.compression}, "
            f"size={self.batch_length + LOG_OVERHEAD}, position={self.position})"
        )


# ------------------------------------------------------------------------------------------------
# building
# ------------------------------------------------------------------------------------------------


def build_message_set(
    records: Sequence[object],
    *,
    magic: int,
    codec: int,
    base_offset: int,
    timestamp_type: int,
    default_timestamp: int,
    log_append_time: int | None,
    level: int | None,
) -> bytes:
    """Build a legacy message set: one message per record, or one compressed wrapper."""
    if magic not in (0, 1):
        raise EncodeError(f"legacy magic must be 0 or 1, not {magic}")
    if codec == CODEC_ZSTD:
        raise EncodeError(f"zstd needs magic v2 (asked for magic v{magic})")
    ts_bit = TIMESTAMP_TYPE_MASK if magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME else 0
    if codec == CODEC_NONE and encode_legacy_plain is not None:
        lat = log_append_time if ts_bit else None
        built = encode_legacy_plain(records, magic, ts_bit, base_offset, default_timestamp, lat)
        if built is not None:
            return built
    fields = [record_fields(r) for r in records]
    timestamps: list[int] = []
    for _, _, headers, ts in fields:
        if headers:
            raise EncodeError(f"magic v{magic} records cannot carry headers")
        ts = default_timestamp if ts is None else ts
        if magic == 1 and not (ts == NO_TIMESTAMP or 0 <= ts <= 0x7FFFFFFFFFFFFFFF):
            raise ValueOutOfRangeError(f"invalid timestamp {ts}")
        timestamps.append(ts)
    out = bytearray()
    if codec == CODEC_NONE:
        if ts_bit and log_append_time is not None:
            timestamps = [log_append_time] * len(fields)
        for i, (key, value, _, _) in enumerate(fields):
            encode_legacy_message(out, base_offset + i, magic, ts_bit, timestamps[i], key, value)
        return bytes(out)
    if not fields:
        raise EncodeError("a compressed legacy wrapper needs at least one record")
    if magic == 1 and base_offset < 0:
        # Its inner offsets are relative to a wrapper offset of base + n - 1: a reader takes a
        # wrapper offset of 0 as base 0 and refuses one below the last inner offset, so no
        # negative base reads back.
        raise ValueOutOfRangeError(f"a compressed magic v1 wrapper cannot start at offset {base_offset}")
    inner = bytearray()
    for i, (key, value, _, _) in enumerate(fields):
        inner_offset = i if magic == 1 else base_offset + i
        encode_legacy_message(inner, inner_offset, magic, ts_bit, timestamps[i], key, value)
    wrapper_ts = NO_TIMESTAMP
    if magic == 1:
        wrapper_ts = log_append_time if ts_bit and log_append_time is not None else max(timestamps)
    encode_legacy_message(
        out,
        base_offset + len(fields) - 1,
        magic,
        codec | ts_bit,
        wrapper_ts,
        None,
        compress(codec, inner, magic=magic, level=level),
    )
    return bytes(out)
