"""``FrameReader``: the same frames whatever the chunking, copies only where a frame needs them,
and a bad size prefix refused before its body is kept."""

from __future__ import annotations

import struct

import pytest

from kafka_wire.errors import InvalidValueError, LimitExceededError, TruncatedError
from kafka_wire.protocol.frames import END, FrameReader
from tests.protocol.chunking import CHUNKINGS, split


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


#: Small frames, an empty one, and frames larger than the reader's small-chunk gathering.
FRAMES = [frame(b"a"), frame(b""), frame(bytes(range(256)) * 40), frame(b"xyz" * 30_000), frame(b"q")]


def read_all(chunks: list[bytes | bytearray | memoryview]) -> list[bytes]:
    reader = FrameReader()
    out = []
    for chunk in chunks:
        reader.feed(chunk)
        while (f := reader.next_frame()) is not None:
            out.append(f)
    assert reader.next_frame_before(True) is END
    assert reader.buffered == 0
    return out


@pytest.mark.parametrize("how", CHUNKINGS)
def test_every_chunking_gives_the_same_frames(how: str) -> None:
    data = b"".join(FRAMES)
    chunks: list[bytes | bytearray | memoryview] = list(split(data, how))
    assert read_all(chunks) == FRAMES
    assert all(type(f) is bytes for f in read_all(chunks))


def test_reused_buffers_are_copied() -> None:
    """A caller's bytearray or memoryview may be overwritten after ``feed``."""
    reader = FrameReader()
    scratch = bytearray(FRAMES[3][:50_000])
    reader.feed(memoryview(scratch))
    scratch[:] = bytes(len(scratch))
    reader.feed(bytearray(FRAMES[3][50_000:]))
    assert reader.next_frame() == FRAMES[3]


def test_a_chunk_that_is_one_frame_is_not_copied() -> None:
    reader = FrameReader()
    chunk = FRAMES[3]
    reader.feed(chunk)
    assert reader.next_frame() is chunk


def test_bad_sizes_are_refused_before_the_body_is_kept() -> None:
    reader = FrameReader(max_frame_bytes=100)
    for piece in (b"\x00\x00", b"\x01\x00", b"x" * 10_000):  # 256 bytes declared, over the limit
        reader.feed(piece)
    assert reader.buffered == 4
    with pytest.raises(LimitExceededError):
        reader.next_frame()
    negative = FrameReader()
    negative.feed(struct.pack(">i", -1))
    with pytest.raises(InvalidValueError):
        negative.next_frame()


def test_a_stream_cut_inside_a_frame_is_truncated() -> None:
    reader = FrameReader()
    reader.feed(FRAMES[2][:-1])
    assert reader.next_frame_before(False) is None
    with pytest.raises(TruncatedError):
        reader.next_frame_before(True)
