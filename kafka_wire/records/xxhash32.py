"""XXH32 in pure Python, for the LZ4 frame header checksum (a few bytes; never a hot path).

Written from the published XXH32 algorithm: five 32-bit primes, four accumulator lanes for
inputs of 16 bytes or more, then 4-byte and 1-byte tails and a final avalanche.
"""

from __future__ import annotations

from typing import Final

_P1: Final = 2654435761
_P2: Final = 2246822519
_P3: Final = 3266489917
_P4: Final = 668265263
_P5: Final = 374761393
_M: Final = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _M
    return (_rotl(acc, 13) * _P1) & _M


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """The 32-bit xxHash of ``data`` with ``seed``."""
    buf = bytes(data)
    n = len(buf)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M
        v2 = (seed + _P2) & _M
        v3 = seed & _M
        v4 = (seed - _P1) & _M
        limit = n - 16
        while pos <= limit:
            v1 = _round(v1, int.from_bytes(buf[pos : pos + 4], "little"))
            v2 = _round(v2, int.from_bytes(buf[pos + 4 : pos + 8], "little"))
            v3 = _round(v3, int.from_bytes(buf[pos + 8 : pos + 12], "little"))
            v4 = _round(v4, int.from_bytes(buf[pos + 12 : pos + 16], "little"))
            pos += 16
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
    else:
        acc = (seed + _P5) & _M
    acc = (acc + n) & _M
    while pos + 4 <= n:
        acc = (acc + int.from_bytes(buf[pos : pos + 4], "little") * _P3) & _M
        acc = (_rotl(acc, 17) * _P4) & _M
        pos += 4
    while pos < n:
        acc = (acc + buf[pos] * _P5) & _M
        acc = (_rotl(acc, 11) * _P1) & _M
        pos += 1
    acc ^= acc >> 15
    acc = (acc * _P2) & _M
    acc ^= acc >> 13
    acc = (acc * _P3) & _M
    acc ^= acc >> 16
    return acc
