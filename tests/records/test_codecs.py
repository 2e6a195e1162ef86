"""Codec details: xerial snappy, Kafka's lz4 framing and its magic-0 quirk, gzip, zstd, size caps."""

from __future__ import annotations

import struct
import tracemalloc
import zlib
from collections.abc import Callable

import lz4.frame  # type: ignore[import-untyped]
import pytest
import snappy  # type: ignore[import-untyped]
import zstandard

from kafka_wire.errors import DecodeError, EncodeError, InvalidValueError, LimitExceededError
from kafka_wire.records import ReadConfig, build_batch, compress, decompress, read_batches
from kafka_wire.records.codec_lz4 import header_checksum
from kafka_wire.records.codec_snappy import XERIAL_HEADER, snappy_compress_raw

DATA = b"".join(b"record %d of something compressible; " % i for i in range(3000))  # ~110 KB


def test_header_checksum_is_lz4s_own() -> None:
    """The header checksum byte (xxhash's XXH32) equals what the lz4 library writes, for each
    descriptor it produces; magic v0 hashes the frame magic too, as Kafka's old writers did."""
    for kwargs in ({}, {"block_checksum": True}, {"content_checksum": True}, {"store_size": True}):
        frame = lz4.frame.compress(DATA, block_linked=False, **kwargs)
        hc = 6 + (8 if frame[4] & 0x08 else 0)
        assert frame[hc] == header_checksum(frame[4:hc])
    assert compress(3, DATA, magic=0)[6] == header_checksum(compress(3, DATA, magic=0)[0:6])


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_codec_round_trip(codec: int, magic: int) -> None:
    if codec == 4 and magic < 2:
        with pytest.raises(DecodeError):
            decompress(codec, compress(codec, DATA, magic=2), magic=magic, max_bytes=1 << 20)
        return
    packed = compress(codec, DATA, magic=magic)
    assert len(packed) < len(DATA)
    assert decompress(codec, packed, magic=magic, max_bytes=len(DATA)) == DATA
    assert decompress(codec, memoryview(packed), magic=magic, max_bytes=len(DATA)) == DATA
    with pytest.raises(LimitExceededError):
        decompress(codec, packed, magic=magic, max_bytes=len(DATA) - 1)


# -- snappy ---------------------------------------------------------------------------------------


def test_snappy_writes_xerial_framing() -> None:
    packed = compress(2, DATA, magic=2)
    assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) == XERIAL_HEADER
    pos, blocks, total = 16, 0, 0
    while pos < len(packed):
        (length,) = struct.unpack_from(">i", packed, pos)
        chunk = snappy.uncompress(packed[pos + 4 : pos + 4 + length])
        assert len(chunk) <= 32 * 1024
        total += len(chunk)
        blocks += 1
        pos += 4 + length
    assert total == len(DATA) and blocks == -(-len(DATA) // (32 * 1024))


def test_snappy_reads_raw_and_concatenated_streams() -> None:
    raw = snappy_compress_raw(DATA)
    assert raw[:8] != b"\x82SNAPPY\x00"
    assert decompress(2, raw, magic=2, max_bytes=len(DATA)) == DATA
    twice = compress(2, DATA[:5000], magic=1) + compress(2, DATA[5000:], magic=1)
    assert decompress(2, twice, magic=1, max_bytes=len(DATA)) == DATA


@pytest.mark.parametrize(
    "blob",
    [
        XERIAL_HEADER[:12],
        XERIAL_HEADER + b"\x00\x00",
        XERIAL_HEADER + struct.pack(">i", -5) + b"abc",
        XERIAL_HEADER + struct.pack(">i", 100) + b"abc",
        XERIAL_HEADER + struct.pack(">i", 3) + b"\xff\xff\xff",
        b"\xff\xff\xff\xff\xff\xff",
        b"\x05\x00",
        b"",
    ],
)
def test_snappy_errors(blob: bytes) -> None:
    with pytest.raises(InvalidValueError):
        decompress(2, blob, magic=2, max_bytes=1 << 20)


def test_snappy_declared_length_is_checked_before_inflating() -> None:
    bomb = b"\x80\x80\x80\x80\x08" + b"\x00" * 10  # declares 2 GiB
    with pytest.raises(LimitExceededError):
        decompress(2, bomb, magic=2, max_bytes=1 << 20)
    with pytest.raises(LimitExceededError):
        decompress(2, XERIAL_HEADER + struct.pack(">i", len(bomb)) + bomb, magic=2, max_bytes=1 << 20)


# -- lz4 ------------------------------------------------------------------------------------------


def _wrapper_value(message_set: bytes) -> bytes:
    """The value of the single legacy wrapper message in ``message_set``."""
    magic = message_set[16]
    pos = 22 if magic == 0 else 30
    (klen,) = struct.unpack_from(">i", message_set, pos - 4)
    pos += max(klen, 0)
    (vlen,) = struct.unpack_from(">i", message_set, pos)
    return message_set[pos + 4 : pos + 4 + vlen]


def test_lz4_frame_layout_for_v1_and_v2() -> None:
    frame = compress(3, DATA, magic=2)
    assert frame[:4] == b"\x04\x22\x4d\x18" and frame[4] == 0x60 and frame[5] == 0x40
    assert frame[6] == header_checksum(frame[4:6])
    assert frame[-4:] == b"\x00\x00\x00\x00"  # end mark, no content checksum
    assert lz4.frame.decompress(frame) == DATA


def test_lz4_magic0_broken_header_checksum() -> None:
    message_set = build_batch([(b"k", DATA, (), None)], magic=0, compression="lz4")
    frame = _wrapper_value(message_set)
    broken, correct = header_checksum(frame[0:6]), header_checksum(frame[4:6])
    assert broken != correct and frame[6] == broken
    with pytest.raises(RuntimeError):  # a standard reader rejects it, as a Kafka v1+ reader would
        lz4.frame.decompress(frame)
    assert [r.value for b in read_batches(message_set) for r in b] == [DATA]
    # magic-0 readers ignore the checksum byte: a correctly checksummed v0 frame reads too
    fixed = bytearray(frame)
    fixed[6] = correct
    inner = decompress(3, frame, magic=0, max_bytes=1 << 20)
    assert decompress(3, bytes(fixed), magic=0, max_bytes=1 << 20) == inner and inner.endswith(DATA)
    # and v1/v2 readers check it
    with pytest.raises(InvalidValueError, match="checksum"):
        decompress(3, frame, magic=1, max_bytes=1 << 20)


@pytest.mark.parametrize(
    "options",
    [
        {"store_size": True},
        {"content_checksum": True},
        {"block_checksum": True},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB},
    ],
)
def test_lz4_optional_frame_fields_are_read(options: dict[str, object]) -> None:
    frame = lz4.frame.compress(DATA, block_linked=False, **options)
    assert decompress(3, frame, magic=2, max_bytes=len(DATA)) == DATA


def test_lz4_content_size_and_checksum_are_not_checked_as_kafka() -> None:
    """Deliberate leniency, as Kafka's reader: content size skipped, content checksum unverified."""
    sized = bytearray(lz4.frame.compress(DATA, block_linked=False, store_size=True, content_checksum=True))
    assert sized[4] & 0x0C == 0x0C
    struct.pack_into("<Q", sized, 6, 12345)  # wrong content size
    sized[14] = header_checksum(sized[4:14])
    sized[-1] ^= 0xFF  # wrong content checksum
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(bytes(sized))
    assert decompress(3, bytes(sized), magic=2, max_bytes=len(DATA)) == DATA
    # block checksums are verified
    checked = bytearray(lz4.frame.compress(DATA, block_linked=False, block_checksum=True, store_size=False))
    (size,) = struct.unpack_from("<I", checked, 7)
    checked[11 + (size & 0x7FFFFFFF)] ^= 0xFF
    with pytest.raises(InvalidValueError):
        decompress(3, bytes(checked), magic=2, max_bytes=len(DATA))


def _patched(frame: bytes, index: int, value: int) -> bytes:
    out = bytearray(frame)
    out[index] = value
    out[6] = header_checksum(out[4:6])
    return bytes(out)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f: lz4.frame.compress(DATA, block_linked=True, store_size=False), "linked"),
        (lambda f: _patched(f, 4, 0xA0), "version"),
        (lambda f: _patched(f, 4, 0x62), "reserved"),
        (lambda f: _patched(f, 4, 0x61), "reserved"),
        (lambda f: _patched(f, 5, 0xC0), "reserved"),
        (lambda f: _patched(f, 5, 0x30), "block size"),
        (lambda f: b"\x05" + f[1:], "magic"),
        (lambda f: f[:-4], "end mark"),
        (lambda f: f[:40], "inside a block"),
        (lambda f: f[:6], "short"),
    ],
)
def test_lz4_rejections(mutate: Callable[[bytes], bytes], message: str) -> None:
    frame = compress(3, DATA, magic=2)
    with pytest.raises(InvalidValueError, match=message):
        decompress(3, mutate(frame), magic=2, max_bytes=1 << 20)


def test_lz4_corrupt_block_is_a_decode_error() -> None:
    frame = bytearray(compress(3, DATA, magic=2))
    (size,) = struct.unpack_from("<I", frame, 7)
    frame[11 : 11 + size] = b"\xff" * size  # literal-length bytes that run past the block
    with pytest.raises(InvalidValueError):
        decompress(3, bytes(frame), magic=2, max_bytes=1 << 20)


# -- gzip -----------------------------------------------------------------------------------------


def test_gzip_members_and_trailing_bytes() -> None:
    two = compress(1, DATA[:1000], magic=2) + compress(1, DATA[1000:], magic=2)
    assert decompress(1, two, magic=2, max_bytes=len(DATA)) == DATA
    # deliberate leniency, as GZIPInputStream: bytes after a member that do not start one are ignored
    assert decompress(1, compress(1, DATA, magic=2) + b"junk", magic=2, max_bytes=len(DATA)) == DATA


@pytest.mark.parametrize("blob", [b"", b"\x1f\x8b", b"not gzip at all", None])
def test_gzip_errors(blob: bytes | None) -> None:
    if blob is None:
        blob = compress(1, DATA, magic=2)[:-12]  # cut inside the stream
    with pytest.raises(InvalidValueError):
        decompress(1, blob, magic=2, max_bytes=1 << 20)


# -- zstd -----------------------------------------------------------------------------------------


def test_zstd_frames() -> None:
    a = zstandard.ZstdCompressor(write_content_size=False).compress(DATA[:7000])
    b = zstandard.ZstdCompressor(write_checksum=True).compress(DATA[7000:])
    skippable = struct.pack("<II", 0x184D2A53, 3) + b"xyz"
    assert decompress(4, a + skippable + b, magic=2, max_bytes=len(DATA)) == DATA


@pytest.mark.parametrize("cut", [1, 3, 5, 9, 30])
def test_zstd_truncated(cut: int) -> None:
    frame = compress(4, DATA, magic=2)
    with pytest.raises(InvalidValueError):
        decompress(4, frame[:-cut], magic=2, max_bytes=1 << 20)


def test_zstd_rejections() -> None:
    frame = compress(4, DATA, magic=2)
    for blob in (b"", frame + b"garbage", b"\x28\xb5\x2f\xfd\x08" + frame[5:], frame[:4] + b"\xff" * 20):
        with pytest.raises(InvalidValueError):
            decompress(4, blob, magic=2, max_bytes=1 << 20)


def test_zstd_in_a_legacy_wrapper_is_rejected() -> None:
    with pytest.raises(EncodeError):
        build_batch([(b"k", b"v", (), 1)], magic=1, compression="zstd")
    message_set = bytearray(build_batch([(b"k", DATA, (), 1)], magic=1, compression="gzip"))
    message_set[17] = (message_set[17] & ~7) | 4
    struct.pack_into(">I", message_set, 12, zlib.crc32(message_set[16:]))
    [wrapper] = list(read_batches(bytes(message_set)))
    with pytest.raises(InvalidValueError, match="zstd"):
        wrapper.records()


# -- decompression bombs --------------------------------------------------------------------------

BOMB_MB = 96


def _gzip_bomb() -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    return b"".join(c.compress(zeros) for _ in range(BOMB_MB)) + c.flush()


def _zstd_bomb() -> bytes:
    c = zstandard.ZstdCompressor(level=1).compressobj()
    zeros = bytes(1 << 20)
    return b"".join(c.compress(zeros) for _ in range(BOMB_MB)) + c.flush()


def _lz4_bomb() -> bytes:
    c = lz4.frame.LZ4FrameCompressor(block_linked=False, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    zeros = bytes(1 << 20)
    frame: bytes = c.begin() + b"".join(c.compress(zeros) for _ in range(BOMB_MB)) + c.flush()
    return frame


def _snappy_bomb() -> bytes:
    block: bytes = snappy.compress(bytes(32 * 1024))
    return XERIAL_HEADER + (struct.pack(">i", len(block)) + block) * (BOMB_MB * 32)


@pytest.mark.parametrize(
    ("codec", "make"), [(1, _gzip_bomb), (2, _snappy_bomb), (3, _lz4_bomb), (4, _zstd_bomb)]
)
def test_bombs_stop_at_the_cap_with_bounded_memory(codec: int, make: Callable[[], bytes]) -> None:
    bomb = make()
    assert len(bomb) < 8 << 20
    # a v2 batch whose records inflate to 96 MiB: the reader stops at the cap
    batch = bytearray(build_batch([(b"k", b"v", (), 1)]))
    batch = batch[:61] + bomb
    batch[22] = codec  # low byte of the int16 attributes
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    tracemalloc.start()
    try:
        [view] = list(
            read_batches(bytes(batch), ReadConfig(verify_crc=False, max_decompressed_bytes=2 << 20))
        )
        with pytest.raises(LimitExceededError):
            view.records()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(batch) + (8 << 20)
    # the default cap (64 MiB) catches it too
    with pytest.raises(LimitExceededError):
        decompress(codec, bomb, magic=2, max_bytes=64 << 20)


def test_unknown_codec_id() -> None:
    data = bytearray(build_batch([(b"k", b"v", (), 1)]))
    data[22] |= 5
    [batch] = list(read_batches(bytes(data), verify_crc=False))
    assert batch.compression == "unknown(5)"
    with pytest.raises(InvalidValueError, match="unknown compression"):
        batch.records()
