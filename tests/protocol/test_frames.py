"""``FrameReader``: the same frames whatever the chunking, copies only where a frame needs them,
and a bad size prefix refused before its body is kept."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


_BODIES = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.integers(0, 9_000).map(lambda n: bytes([n % 251]) * n),  # over the small-chunk gathering
    ),
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(bodies=_BODIES, data=st.data())
def test_any_split_of_any_frames_gives_the_same_frames(bodies: list[bytes], data: st.DataObject) -> None:
    """Cuts anywhere (inside a size prefix, several frames in one chunk, a chunk ending exactly at
    a frame's end), chunks of every buffer type, frames taken after each chunk or only at times:
    the same frames in the same order, and nothing left over."""
    frames = [frame(b) for b in bodies]
    stream = b"".join(frames)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=24), label="cuts"))
    pieces = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    n = len(pieces)
    kinds = data.draw(st.lists(st.sampled_from(("bytes", "bytearray", "memoryview")), min_size=n, max_size=n))
    drain = data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="drain")
    reader = FrameReader()
    out: list[bytes] = []
    fed = 0
    for piece, kind, take in zip(pieces, kinds, drain, strict=True):
        chunk: bytes | bytearray | memoryview = piece
        if kind == "bytearray":
            chunk = bytearray(piece)
        elif kind == "memoryview":
            chunk = memoryview(bytearray(piece))
        reader.feed(chunk)
        fed += len(piece)
        if isinstance(chunk, bytearray | memoryview):  # the caller may reuse its buffer
            with memoryview(chunk) as view:
                view.cast("B")[:] = bytes(len(piece))
        while take and (f := reader.next_frame()) is not None:
            out.append(f)
        assert reader.buffered == fed - sum(map(len, out))
    while (f := reader.next_frame()) is not None:
        out.append(f)
    assert out == frames
    assert reader.buffered == 0
    assert reader.next_frame_before(True) is END
