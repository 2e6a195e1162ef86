"""Reading a records payload: a lazy iterator of batches of any magic, and its truncated tail.

Iteration follows Kafka's ``ByteBufferLogInputStream``: with 12 bytes available read the size;
a size below 14 is corrupt (and so is one over the configured cap); with 17 bytes available read
the magic, which must be 0, 1 or 2; if the whole batch is not there, stop quietly. The bytes
left then are the *truncated tail*: normal at the end of a fetch response.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from typing import Final, Generic, Literal, overload

from kafka_wire.errors import CorruptBatchError, LimitExceededError
from kafka_wire.records.batch import RecordBatch
from kafka_wire.records.config import DEFAULT_READ_CONFIG, ReadConfig
from kafka_wire.records.constants import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORD_OVERHEAD_V0,
)
from kafka_wire.records.legacy import LegacyBatch
from kafka_wire.records.loops import batches, bind_views
from kafka_wire.records.record import B, BufferLike, Record

_SIZE: Final = struct.Struct(">i")

Batch = RecordBatch[B] | LegacyBatch[B]
"""What a reader yields: a v2 batch or a legacy (v0/v1) message, with the same header fields."""


def _config(
    config: ReadConfig | None, verify_crc: bool | None, max_decompressed_bytes: int | None
) -> ReadConfig:
    config = DEFAULT_READ_CONFIG if config is None else config
    changes: dict[str, object] = {}
    if verify_crc is not None:
        changes["verify_crc"] = verify_crc
    if max_decompressed_bytes is not None:
        changes["max_decompressed_bytes"] = max_decompressed_bytes
    return dataclasses.replace(config, **changes) if changes else config  # type: ignore[arg-type]  # checked fields


class RecordsReader(Generic[B]):
    """Iterate the batches of a records payload (a Produce/Fetch ``records`` field, a segment file).

    ``RecordsReader(buf)`` yields batches whose records carry ``bytes``; with ``zero_copy=True``
    keys, values and header values are ``memoryview`` slices of ``buf`` (or of the decompressed
    data), so nothing is copied. After iteration, ``truncated_tail`` is the number of trailing
    bytes that did not form a complete batch (0 when the payload ended on a batch boundary) and
    ``position`` is where the first incomplete batch starts.
    """

    __slots__ = ("_buf", "_config", "_end", "_max_batch_bytes", "_zero_copy", "position", "truncated_tail")

    @overload
    def __init__(
        self: RecordsReader[bytes],
        buf: BufferLike,
        config: ReadConfig | None = None,
        *,
        zero_copy: Literal[False] = False,
        verify_crc: bool | None = None,
        max_decompressed_bytes: int | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self: RecordsReader[memoryview],
        buf: BufferLike,
        config: ReadConfig | None = None,
        *,
        zero_copy: Literal[True],
        verify_crc: bool | None = None,
        max_decompressed_bytes: int | None = None,
    ) -> None: ...

    def __init__(
        self,
        buf: BufferLike,
        config: ReadConfig | None = None,
        *,
        zero_copy: bool = False,
        verify_crc: bool | None = None,
        max_decompressed_bytes: int | None = None,
    ) -> None:
        self._config = _config(config, verify_crc, max_decompressed_bytes)
        self._max_batch_bytes = self._config.max_batch_bytes
        self._zero_copy = zero_copy
        self._buf: bytes | memoryview = (
            buf if type(buf) is bytes and not zero_copy else memoryview(buf).cast("B").toreadonly()
        )
        self._end = len(self._buf)
        self.position = 0
        self.truncated_tail = 0

    def __iter__(self) -> Iterator[RecordBatch[B] | LegacyBatch[B]]:
        # compiled: an iterator that makes the common batches' views in C and moves position
        # on, calling __next__ below for everything else
        return self if batches is None else batches(self)

    def __next__(self) -> RecordBatch[B] | LegacyBatch[B]:
        buf = self._buf
        pos = self.position
        remaining = self._end - pos
        if remaining < LOG_OVERHEAD:
            self.truncated_tail = remaining
            raise StopIteration
        (size,) = _SIZE.unpack_from(buf, pos + 8)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptBatchError(
                f"batch size {size} is below the 14-byte minimum", offset=pos + 8, message="records"
            )
        if size > self._max_batch_bytes:
            raise LimitExceededError(
                f"batch size {size} exceeds the {self._max_batch_bytes}-byte cap",
                offset=pos + 8,
                message="records",
            )
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            self.truncated_tail = remaining
            raise StopIteration
        magic = buf[pos + MAGIC_OFFSET]
        if magic > 2:
            shown = magic - 256 if magic > 127 else magic
            raise CorruptBatchError(
                f"unknown magic {shown} (expected 0, 1 or 2)", offset=pos + MAGIC_OFFSET, message="records"
            )
        if remaining < size + LOG_OVERHEAD:
            self.truncated_tail = remaining
            raise StopIteration
        batch: RecordBatch[B] | LegacyBatch[B]
        if magic == 2:
            batch = RecordBatch(buf, pos, pos, self._config, self._zero_copy)
        else:
            batch = LegacyBatch(buf, pos, pos, self._config, self._zero_copy)
        self.position = pos + size + LOG_OVERHEAD
        return batch

    @property
    def tail(self) -> memoryview:
        """The bytes after the last complete batch read so far (empty when none are left)."""
        return memoryview(self._buf)[self.position :]


if bind_views is not None:
    bind_views(RecordsReader, RecordBatch, LegacyBatch)


@overload
def read_batches(
    buf: BufferLike,
    config: ReadConfig | None = None,
    *,
    zero_copy: Literal[False] = False,
    verify_crc: bool | None = None,
    max_decompressed_bytes: int | None = None,
) -> Iterator[RecordBatch[bytes] | LegacyBatch[bytes]]: ...


@overload
def read_batches(
    buf: BufferLike,
    config: ReadConfig | None = None,
    *,
    zero_copy: Literal[True],
    verify_crc: bool | None = None,
    max_decompressed_bytes: int | None = None,
) -> Iterator[RecordBatch[memoryview] | LegacyBatch[memoryview]]: ...


def read_batches(
    buf: BufferLike,
    config: ReadConfig | None = None,
    *,
    zero_copy: bool = False,
    verify_crc: bool | None = None,
    max_decompressed_bytes: int | None = None,
) -> (
    Iterator[RecordBatch[bytes] | LegacyBatch[bytes]]
    | Iterator[RecordBatch[memoryview] | LegacyBatch[memoryview]]
):
    """Lazily yield the complete batches of ``buf``; a trailing partial batch is skipped quietly.

    Use :class:`RecordsReader` to learn about the skipped tail.
    """
    if zero_copy:
        return RecordsReader(
            buf, config, zero_copy=True, verify_crc=verify_crc, max_decompressed_bytes=max_decompressed_bytes
        )
    return RecordsReader(buf, config, verify_crc=verify_crc, max_decompressed_bytes=max_decompressed_bytes)


def read_records(
    buf: BufferLike,
    config: ReadConfig | None = None,
    *,
    verify_crc: bool | None = None,
    max_decompressed_bytes: int | None = None,
) -> Iterator[Record[bytes]]:
    """Every record of every complete batch of ``buf``, in order (control records included)."""
    for batch in RecordsReader(
        buf, config, verify_crc=verify_crc, max_decompressed_bytes=max_decompressed_bytes
    ):
        yield from batch.records()
