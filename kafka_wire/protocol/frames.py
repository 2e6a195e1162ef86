"""Cutting a byte stream into size-prefixed frames, whatever the chunking.

The 4-byte size is checked against the limit as soon as it is complete, before the body is
buffered. Consumed bytes are dropped in amortised O(1): the buffer is compacted only once the
consumed prefix is at least half of it, so no byte is copied more than a constant number of times.
"""

from __future__ import annotations

import enum
import struct
from typing import Final

from kafka_wire.errors import InvalidValueError, LimitExceededError, TruncatedError

#: Kafka's broker refuses requests over ``socket.request.max.bytes`` (100 MiB by default); we use
#: the same default for both directions (a client's ``fetch.max.bytes`` default is 50 MiB).
DEFAULT_MAX_FRAME_BYTES: Final = 100 * 1024 * 1024

_SIZE: Final = struct.Struct(">i")

Buffer = bytes | bytearray | memoryview


class EndOfStream(enum.Enum):
    END = "END"


#: The peer closed the stream between frames.
END: Final = EndOfStream.END


class FrameReader:
    """Accumulates received bytes and returns whole frames."""

    __slots__ = ("_buf", "_start", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._start = 0
        #: The largest frame accepted; may be changed between frames (e.g. after authentication).
        self.max_frame_bytes = max_frame_bytes

    def feed(self, data: Buffer) -> None:
        """Keep ``data``; once a frame's size is known to be bad, nothing more is kept."""
        if self.buffered >= 4:
            size = _SIZE.unpack_from(self._buf, self._start)[0]
            if not 0 <= size <= self.max_frame_bytes:
                return  # next_frame() raises for it; do not grow the buffer meanwhile
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as a frame."""
        return len(self._buf) - self._start

    def declared_size(self) -> int | None:
        """The size of the next frame if its prefix is complete, checked against the limit."""
        if len(self._buf) - self._start < 4:
            return None
        size: int = _SIZE.unpack_from(self._buf, self._start)[0]
        if size < 0:
            raise InvalidValueError(f"negative frame size {size}", offset=0)
        if size > self.max_frame_bytes:
            raise LimitExceededError(
                f"frame of {size} bytes is over the {self.max_frame_bytes}-byte limit", offset=0
            )
        return size

    def next_frame(self) -> bytes | None:
        """The next whole frame, size prefix included, or None when more bytes are needed."""
        return self._next()

    def next_frame_before(self, eof: bool) -> bytes | EndOfStream | None:
        """Like :meth:`next_frame`; after the peer's EOF (``eof``) with nothing left, ``END``.

        Raises :class:`TruncatedError` when the stream ended in the middle of a frame.
        """
        frame = self._next()
        if frame is not None or not eof:
            return frame
        if self.buffered:
            raise TruncatedError(
                f"connection closed in the middle of a frame ({self.buffered} bytes buffered)"
            )
        return END

    def _next(self) -> bytes | None:
        size = self.declared_size()
        if size is None:
            return None
        begin = self._start + 4
        end = begin + size
        if end > len(self._buf):
            return None
        with memoryview(self._buf) as view:  # one copy (a bytearray slice would copy twice)
            frame = bytes(view[self._start : end])
        self._start = end
        if self._start * 2 >= len(self._buf):
            del self._buf[: self._start]
            self._start = 0
        return frame
