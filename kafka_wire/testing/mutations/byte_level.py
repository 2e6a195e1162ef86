"""Byte-level mutations: the fallback for input that does not decode."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from kafka_wire.testing.mutations.primitives import (
    INTERESTING_8,
    INTERESTING_16,
    INTERESTING_32,
    U32,
)

if TYPE_CHECKING:
    from kafka_wire.testing.mutator import Mutator


def _bit_flip(m: Mutator, data: bytearray) -> None:
    if data:
        data[m.rng.randrange(len(data))] ^= 1 << m.rng.randrange(8)


def _byte_interesting(m: Mutator, data: bytearray) -> None:
    if not data:
        data.append(m.rng.choice(INTERESTING_8))
        return
    width = m.rng.choice((1, 2, 4))
    at = m.rng.randrange(len(data))
    if width == 1:
        data[at] = m.rng.choice(INTERESTING_8)
    elif width == 2:
        data[at : at + 2] = struct.pack(">H", m.rng.choice(INTERESTING_16))
    else:
        data[at : at + 4] = U32.pack(m.rng.choice(INTERESTING_32))


def _insert(m: Mutator, data: bytearray) -> None:
    at = m.rng.randint(0, len(data))
    data[at:at] = m.rng.randbytes(m.rng.choice((1, 1, 2, 4, 8, 64)))


def _erase(m: Mutator, data: bytearray) -> None:
    if data:
        at = m.rng.randrange(len(data))
        del data[at : at + m.rng.choice((1, 1, 2, 4, 16, len(data)))]


def _copy_chunk(m: Mutator, data: bytearray) -> None:
    """A chunk of the input copied (inserted) elsewhere in it: the self-splice."""
    if data:
        start = m.rng.randrange(len(data))
        chunk = data[start : start + m.rng.randint(1, 32)]
        at = m.rng.randint(0, len(data))
        if m.rng.random() < 0.5:
            data[at:at] = chunk
        else:
            data[at : at + len(chunk)] = chunk


def _truncate(m: Mutator, data: bytearray) -> None:
    if data:
        del data[m.rng.randrange(len(data)) :]


#: The byte-level fallback.
BYTES_MUTATIONS: Final[dict[str, Callable[[Mutator, bytearray], None]]] = {
    "bit_flip": _bit_flip,
    "byte_interesting": _byte_interesting,
    "insert": _insert,
    "erase": _erase,
    "copy_chunk": _copy_chunk,
    "truncate": _truncate,
}
