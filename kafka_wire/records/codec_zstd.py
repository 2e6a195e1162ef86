"""zstd (RecordBatch v2 only): standard zstd frames, as zstd-jni writes them for Kafka.

Before inflating, the frames are walked (header, block headers, checksum) to reject truncated
input and to bound the output: a raw or RLE block inflates to its stated size, a compressed
block to at most 128 KiB. Input whose bound exceeds the cap is inflated block by block so a
decompression bomb stops at the cap instead of filling memory.
"""

from __future__ import annotations

from typing import Final

import zstandard

from kafka_wire.errors import InvalidValueError, LimitExceededError
from kafka_wire.records.record import BufferLike

DEFAULT_ZSTD_LEVEL: Final = 3
"""zstd's own default level, which Kafka uses unless configured."""
_ZSTD_MAGIC: Final = 0xFD2FB528
_SKIPPABLE_MASK: Final = 0xFFFFFFF0
_SKIPPABLE_MAGIC: Final = 0x184D2A50
_BLOCK_MAX: Final = 128 * 1024
_MAX_WINDOW: Final = 1 << 27
"""zstd's default decoder window limit (``ZSTD_WINDOWLOG_LIMIT_DEFAULT`` = 27), as zstd-jni."""
_FCS_SIZES: Final = (0, 2, 4, 8)
_DID_SIZES: Final = (0, 1, 2, 4)


def zstd_compress(data: BufferLike, level: int | None = None) -> bytes:
    """One zstd frame."""
    out: bytes = zstandard.ZstdCompressor(level=DEFAULT_ZSTD_LEVEL if level is None else level).compress(data)
    return out


def _walk(view: memoryview) -> tuple[list[tuple[int, int, list[int]]], int]:
    """Frames as ``(start, end, block ends)`` plus the output bound; skippable frames are dropped."""
    n = len(view)
    pos = 0
    frames: list[tuple[int, int, list[int]]] = []
    bound = 0
    while pos < n:
        if n - pos < 4:
            raise InvalidValueError("zstd data ends inside a frame magic")
        magic = int.from_bytes(view[pos : pos + 4], "little")
        if magic & _SKIPPABLE_MASK == _SKIPPABLE_MAGIC:
            if n - pos < 8:
                raise InvalidValueError("zstd skippable frame is truncated")
            pos += 8 + int.from_bytes(view[pos + 4 : pos + 8], "little")
            if pos > n:
                raise InvalidValueError("zstd skippable frame is truncated")
            continue
        if magic != _ZSTD_MAGIC:
            raise InvalidValueError(f"not a zstd frame (magic 0x{magic:08x})")
        start = pos
        if n - pos < 5:
            raise InvalidValueError("zstd frame header is truncated")
        fhd = view[pos + 4]
        if fhd & 0x08:
            raise InvalidValueError("zstd frame header has its reserved bit set")
        single_segment = bool(fhd & 0x20)
        fcs = _FCS_SIZES[fhd >> 6] or (1 if single_segment else 0)
        pos += 5 + (0 if single_segment else 1) + _DID_SIZES[fhd & 0x03] + fcs
        blocks: list[int] = []
        while True:
            if n - pos < 3:
                raise InvalidValueError("zstd frame ends before its last block")
            header = view[pos] | (view[pos + 1] << 8) | (view[pos + 2] << 16)
            pos += 3
            kind = (header >> 1) & 0x03
            size = header >> 3
            if kind == 3:
                raise InvalidValueError("zstd block type 3 is reserved")
            if size > _BLOCK_MAX:
                raise InvalidValueError(f"zstd block of {size} bytes exceeds 128 KiB")
            pos += 1 if kind == 1 else size
            if pos > n:
                raise InvalidValueError("zstd frame ends inside a block")
            bound += _BLOCK_MAX if kind == 2 else size
            blocks.append(pos)
            if header & 1:
                break
        if fhd & 0x04:
            pos += 4
            if pos > n:
                raise InvalidValueError("zstd frame ends inside its checksum")
        frames.append((start, pos, blocks))
    return frames, bound


def zstd_decompress(data: BufferLike, max_bytes: int) -> bytes:
    """Inflate concatenated zstd frames, producing at most ``max_bytes``."""
    view = memoryview(data).cast("B")
    frames, bound = _walk(view)
    if not frames:
        raise InvalidValueError("zstd data holds no frame")
    parts: list[bytes] = []
    total = 0
    try:
        decompressor = zstandard.ZstdDecompressor(max_window_size=_MAX_WINDOW)
        for start, end, blocks in frames:
            dobj = decompressor.decompressobj()
            if bound <= max_bytes:
                parts.append(dobj.decompress(view[start:end]))
            else:
                prev = start
                for block_end in [*blocks, end]:
                    if block_end == prev:
                        continue
                    chunk = dobj.decompress(view[prev:block_end])
                    prev = block_end
                    total += len(chunk)
                    if total > max_bytes:
                        raise LimitExceededError(f"zstd data inflates past the {max_bytes}-byte cap")
                    parts.append(chunk)
            if not dobj.eof:
                raise InvalidValueError("zstd frame is incomplete")
    except zstandard.ZstdError as e:
        raise InvalidValueError(f"zstd data is invalid: {e}") from None
    return parts[0] if len(parts) == 1 else b"".join(parts)
