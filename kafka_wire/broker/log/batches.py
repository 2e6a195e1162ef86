"""Walking the batches of a stored segment through storage reads.

:class:`BatchScanner` reads a segment through a :class:`PendingFile` in chunks, parses each
batch's header (:func:`kafka_wire.logformat.parse_header`, any magic) without decoding records,
and can hand out each batch's bytes for CRC checks or decoding.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from kafka_wire.broker.log.files import PendingFile
from kafka_wire.broker.storage import StorageReader
from kafka_wire.errors import DecodeError
from kafka_wire.logformat.batch_header import MAX_HEADER_BYTES, BatchHeader, parse_header

DEFAULT_SCAN_CHUNK: Final = 256 * 1024
"""Bytes read per storage call while walking a segment (batches larger than this are read whole)."""


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
        buf = self._fill(MAX_HEADER_BYTES)
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
