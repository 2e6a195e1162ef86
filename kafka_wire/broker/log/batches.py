"""Batch headers of a stored segment: parsed from the first bytes of each batch, any magic.

The log walks a segment batch by batch without decoding records: the 12-byte prefix gives the
size, byte 16 the magic, and the v2 header (61 bytes) or legacy message header (22 or 26 bytes)
the offsets and the largest timestamp. :class:`BatchScanner` reads through a
:class:`PendingFile` in chunks and can hand out each batch's bytes for CRC checks or decoding.

Offsets of legacy messages: an uncompressed message has one offset; a compressed wrapper carries
the offset of its *last* inner message, and its first offset is only known after inflating it, so
``base_offset`` of a wrapper header is its last offset. The log only relies on ``last_offset``
for such batches (as Kafka's ``FileRecords.searchForOffsetWithSize`` does).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from kafka_wire.broker.log.files import PendingFile
from kafka_wire.broker.storage import StorageReader
from kafka_wire.errors import CorruptBatchError, DecodeError
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

_PREFIX: Final = struct.Struct(">qi")
_LEGACY_V1_TIMESTAMP: Final = struct.Struct(">q")
_LEGACY_V1_TIMESTAMP_AT: Final = 18
DEFAULT_SCAN_CHUNK: Final = 256 * 1024
"""Bytes read per storage call while walking a segment (batches larger than this are read whole)."""
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


def parse_header(buf: bytes | memoryview, at: int, position: int) -> BatchHeader | None:
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


def check_batch(data: bytes | memoryview, header: BatchHeader) -> None:
    """Verify the CRC (and v2 framing) of one whole stored batch; raises a DecodeError subclass."""
    if header.magic == 2:
        validate_batch(data)
        return
    for _ in read_batches(data):
        return
    raise CorruptBatchError("legacy message is incomplete", offset=header.position, message=_MSG)


class BatchScanner:
    """Walk the batches of a segment file from ``start``.

    Iterating yields ``(header, data)``; ``data`` is the batch's bytes when ``with_data`` (else
    ``None``). Iteration stops quietly at the end of the file, at an incomplete batch or at a
    header that cannot be parsed; then ``position`` is where it stopped and ``error`` says why
    (None at a clean end).
    """

    __slots__ = (
        "_buf",
        "_buf_start",
        "_chunk",
        "_end",
        "_file",
        "_storage",
        "_with_data",
        "error",
        "position",
    )

    def __init__(
        self,
        file: PendingFile,
        storage: StorageReader,
        start: int = 0,
        *,
        with_data: bool = False,
        end: int | None = None,
        chunk: int = DEFAULT_SCAN_CHUNK,
    ) -> None:
        self._file = file
        self._storage = storage
        self._with_data = with_data
        self._end = file.size if end is None else min(end, file.size)
        self._chunk = chunk
        self._buf = b""
        self._buf_start = start
        self.position = start
        self.error: str | None = None

    def __iter__(self) -> Iterator[tuple[BatchHeader, bytes | None]]:
        return self

    def _fill(self, need: int) -> bytes:
        """The buffer, refilled at ``position`` if it holds fewer than ``need`` bytes from there."""
        at = self.position - self._buf_start
        if len(self._buf) - at < need:
            want = max(self._chunk, need)
            self._buf = self._file.read(self._storage, self.position, min(want, self._end - self.position))
            self._buf_start = self.position
        return self._buf

    def __next__(self) -> tuple[BatchHeader, bytes | None]:
        pos = self.position
        if pos >= self._end:
            raise StopIteration
        buf = self._fill(RECORD_BATCH_OVERHEAD)
        at = pos - self._buf_start
        try:
            header = parse_header(buf, at, pos)
        except DecodeError as e:
            self.error = e.reason
            raise StopIteration from None
        if header is None:
            self.error = "incomplete batch header"
            raise StopIteration
        if header.end > self._end:
            self.error = f"batch of {header.size} bytes runs past the end of the file"
            raise StopIteration
        data: bytes | None = None
        if self._with_data:
            if header.size > self._chunk:
                data = self._file.read(self._storage, pos, header.size)
            else:
                buf = self._fill(header.size)
                at = pos - self._buf_start
                data = buf[at : at + header.size]
            if len(data) != header.size:
                self.error = "storage returned fewer bytes than the file holds"
                raise StopIteration
        self.position = header.end
        return header, data
