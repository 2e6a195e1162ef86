"""Cutting a byte stream into size-prefixed frames, whatever the chunking.

The 4-byte size is checked against the limit as soon as it is complete, before the body is
buffered. Received chunks are kept as they came (a ``bytes`` chunk is not copied; another buffer
is copied once, as the caller may reuse it; small chunks are gathered into one ``bytearray``, so
a trickle of single bytes costs no object per byte) and a frame is cut from them when it is
complete: a chunk that is exactly one frame is that frame, uncopied; a frame inside one chunk is
one slice; a frame over several chunks is one join. So each large chunk's bytes are copied at
most once, and nothing is rescanned: the chunks are a queue, consumed from the front.
"""

from __future__ import annotations

import enum
import itertools
import struct
from collections import deque
from typing import Final

from kafka_wire.errors import InvalidValueError, LimitExceededError, TruncatedError

#: Kafka's broker refuses requests over ``socket.request.max.bytes`` (100 MiB by default); we use
#: the same default for both directions (a client's ``fetch.max.bytes`` default is 50 MiB).
DEFAULT_MAX_FRAME_BYTES: Final = 100 * 1024 * 1024

_SIZE: Final = struct.Struct(">i")

Buffer = bytes | bytearray | memoryview

#: Chunks shorter than this are gathered into one ``bytearray`` (up to ``_GATHER_LIMIT`` bytes)
#: rather than kept one object each.
_SMALL_CHUNK: Final = 4096
_GATHER_LIMIT: Final = 64 * 1024


class EndOfStream(enum.Enum):
    END = "END"


#: The peer closed the stream between frames.
END: Final = EndOfStream.END


class FrameReader:
    """Accumulates received bytes and returns whole frames."""

    __slots__ = ("_buffered", "_chunks", "_offset", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        #: Received chunks; the first is consumed up to ``_offset``.
        self._chunks: deque[bytes | bytearray] = deque()
        self._offset = 0
        self._buffered = 0
        #: The largest frame accepted; may be changed between frames (e.g. after authentication).
        self.max_frame_bytes = max_frame_bytes

    def feed(self, data: Buffer) -> None:
        """Keep ``data``; once a frame's size is known to be bad, nothing more is kept."""
        if self._buffered >= 4 and not 0 <= self._peek_size() <= self.max_frame_bytes:
            return  # next_frame() raises for it; do not grow the buffer meanwhile
        size = len(data)
        if not size:
            return
        chunks = self._chunks
        if not chunks or size >= _SMALL_CHUNK:
            chunks.append(data if type(data) is bytes else bytes(data))
        else:  # a small chunk after others: gathered with the last one when that is small too
            last = chunks[-1]
            if type(last) is bytearray and len(last) < _GATHER_LIMIT:
                last += data
            elif len(last) < _SMALL_CHUNK:
                chunks[-1] = bytearray(last) + data
            else:
                chunks.append(bytearray(data))
        self._buffered += size

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as a frame."""
        return self._buffered

    def _peek_size(self) -> int:
        """The next frame's size prefix (at least 4 bytes are buffered)."""
        first, offset = self._chunks[0], self._offset
        if len(first) - offset >= 4:
            size: int = _SIZE.unpack_from(first, offset)[0]
            return size
        head = bytearray(memoryview(first)[offset:])
        for chunk in itertools.islice(self._chunks, 1, None):  # at most 4 chunks: one byte each
            head += chunk[: 4 - len(head)]
            if len(head) == 4:
                break
        size = _SIZE.unpack(head)[0]
        return size

    def declared_size(self) -> int | None:
        """The size of the next frame if its prefix is complete, checked against the limit."""
        if self._buffered < 4:
            return None
        size = self._peek_size()
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
        if self._buffered:
            raise TruncatedError(
                f"connection closed in the middle of a frame ({self._buffered} bytes buffered)"
            )
        return END

    def _next(self) -> bytes | None:
        size = self.declared_size()
        if size is None or size + 4 > self._buffered:
            return None
        return self._take(size + 4)

    def _take(self, n: int) -> bytes:
        """The next ``n`` buffered bytes (all buffered already), with as few copies as can be."""
        chunks, offset = self._chunks, self._offset
        first = chunks[0]
        self._buffered -= n
        left = len(first) - offset
        if left >= n:
            if left == n:
                chunks.popleft()
                self._offset = 0
                if offset == 0 and type(first) is bytes:
                    return first
            else:
                self._offset = offset + n
            with memoryview(first) as view:
                return bytes(view[offset : offset + n])
        chunks.popleft()
        parts: list[Buffer] = [memoryview(first)[offset:]]
        need = n - left
        while need:
            chunk = chunks[0]
            if len(chunk) <= need:
                chunks.popleft()
                parts.append(chunk)
                need -= len(chunk)
                self._offset = 0
            else:
                parts.append(memoryview(chunk)[:need])
                self._offset = need
                need = 0
        frame = b"".join(parts)
        for part in parts:  # let go of the gathering bytearray at once (it may grow again)
            if isinstance(part, memoryview):
                part.release()
        return frame
