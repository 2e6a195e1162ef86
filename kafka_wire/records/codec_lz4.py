"""lz4 as Kafka uses it: the LZ4 frame format with independent 64 KiB blocks.

Kafka writes FLG ``0x60`` (version 1, independent blocks, no checksums, no content size), BD
``0x40`` (64 KiB blocks), a header checksum byte, blocks and an end mark. Two quirks:

* magic v0 writers hash the descriptor from the frame start (magic + FLG + BD) instead of FLG +
  BD, and magic v0 readers ignore the header checksum; v1/v2 compute and check it properly;
* readers reject linked (block-dependent) frames, versions other than 1 and set reserved bits.

Frames are checked here (header, block walk, size bound), then inflated by ``lz4.frame``.
"""

from __future__ import annotations

import struct
from typing import Final

import lz4.frame  # type: ignore[import-untyped]  # the lz4 package ships no type information
import xxhash

from kafka_wire.errors import InvalidValueError, LimitExceededError
from kafka_wire.records.record import BufferLike

LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"
_U32: Final = struct.Struct("<I")
_FLG_VERSION_MASK: Final = 0xC0
_FLG_VERSION_1: Final = 0x40
_FLG_INDEPENDENT: Final = 0x20
_FLG_BLOCK_CHECKSUM: Final = 0x10
_FLG_CONTENT_SIZE: Final = 0x08
_FLG_CONTENT_CHECKSUM: Final = 0x04
_FLG_SKIPPED: Final = _FLG_CONTENT_SIZE | _FLG_CONTENT_CHECKSUM
"""Frame fields Kafka's reader passes over without checking."""
_FLG_RESERVED: Final = 0x03
"""Bit 1 is reserved; bit 0 (dictionary id) is treated as reserved by Kafka too."""
_BD_RESERVED: Final = 0x8F
_BLOCK_SIZES: Final = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_UNCOMPRESSED_BIT: Final = 0x80000000


def header_checksum(descriptor: BufferLike) -> int:
    """The frame header checksum byte: second byte of XXH32(descriptor, seed 0) (the ``xxhash`` package)."""
    return (xxhash.xxh32_intdigest(descriptor) >> 8) & 0xFF


def lz4_compress(data: BufferLike, *, magic: int, level: int | None = None) -> bytes:
    """A Kafka lz4 frame; for magic v0 with the header checksum computed the broken way."""
    frame: bytes = lz4.frame.compress(
        data,
        compression_level=0 if level is None else level,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        block_checksum=False,
        store_size=False,
    )
    if magic == 0:
        fixed = bytearray(frame)
        fixed[6] = header_checksum(fixed[0:6])
        return bytes(fixed)
    return frame


def _check_frame(view: memoryview, magic: int) -> tuple[int, int, int]:
    """Validate the frame header and walk its blocks: ``(checksum byte position, end mark end, bound)``.

    The bound is the most the blocks can inflate to (block maximum per compressed block, the
    stored size for uncompressed ones).
    """
    n = len(view)
    if n < 7 or bytes(view[0:4]) != LZ4_MAGIC:
        raise InvalidValueError("not an lz4 frame (bad magic or too short)")
    flg = view[4]
    bd = view[5]
    if flg & _FLG_VERSION_MASK != _FLG_VERSION_1:
        raise InvalidValueError(f"lz4 frame version {flg >> 6} is not supported")
    if flg & _FLG_RESERVED or bd & _BD_RESERVED:
        raise InvalidValueError("lz4 frame has reserved bits set (or a dictionary id)")
    if not flg & _FLG_INDEPENDENT:
        raise InvalidValueError("lz4 frames with linked (dependent) blocks are not supported")
    block_max = _BLOCK_SIZES.get((bd >> 4) & 0x07)
    if block_max is None:
        raise InvalidValueError(f"lz4 block size id {(bd >> 4) & 0x07} is invalid")
    hc_pos = 6 + (8 if flg & _FLG_CONTENT_SIZE else 0)
    if n <= hc_pos:
        raise InvalidValueError("lz4 frame header is truncated")
    if magic != 0 and view[hc_pos] != header_checksum(view[4:hc_pos]):
        raise InvalidValueError("lz4 frame header checksum mismatch")
    block_extra = 4 if flg & _FLG_BLOCK_CHECKSUM else 0
    pos = hc_pos + 1
    bound = 0
    while True:
        if n - pos < 4:
            raise InvalidValueError("lz4 frame ends before its end mark")
        (word,) = _U32.unpack_from(view, pos)
        pos += 4
        if word == 0:
            break
        size = word & ~_UNCOMPRESSED_BIT
        if size > block_max:
            raise InvalidValueError(f"lz4 block of {size} bytes exceeds the frame's {block_max}-byte blocks")
        pos += size + block_extra
        if pos > n:
            raise InvalidValueError("lz4 frame ends inside a block")
        bound += size if word & _UNCOMPRESSED_BIT else block_max
    if flg & _FLG_CONTENT_CHECKSUM and n - pos < 4:
        raise InvalidValueError("lz4 frame ends inside its content checksum")
    return hc_pos, pos, bound


def lz4_decompress(data: BufferLike, *, magic: int, max_bytes: int) -> bytes:
    """Inflate a Kafka lz4 frame, producing at most ``max_bytes``; bytes after the frame are ignored.

    As Kafka's reader: the content size is skipped, a content checksum is not verified, block
    checksums are, and magic v0 ignores the header checksum.
    """
    view = memoryview(data).cast("B")
    hc_pos, blocks_end, bound = _check_frame(view, magic)
    flg = view[4]
    frame: BufferLike
    if magic == 0 or flg & _FLG_SKIPPED:
        # Kafka skips the content size and does not verify the content checksum (and magic v0
        # ignores the header checksum): hand lz4 a frame without them, checksummed properly.
        descriptor = bytes((flg & ~_FLG_SKIPPED, view[5]))
        frame = b"".join(
            (LZ4_MAGIC, descriptor, bytes((header_checksum(descriptor),)), view[hc_pos + 1 : blocks_end])
        )
    else:
        frame = view[:blocks_end]
    limit = min(bound, max_bytes) + 1
    try:
        d = lz4.frame.LZ4FrameDecompressor()
        out: bytes = d.decompress(frame, max_length=limit)
        eof: bool = d.eof
    except Exception as e:  # lz4 raises RuntimeError / ValueError / its own errors
        raise InvalidValueError(f"lz4 data is invalid: {e}") from None
    if len(out) > max_bytes:
        raise LimitExceededError(f"lz4 data inflates past the {max_bytes}-byte cap")
    if not eof:
        raise InvalidValueError("lz4 frame is incomplete")
    return out
