"""Shared helpers of the records tests: record strategies, peer readers."""

from __future__ import annotations

import struct
import uuid
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from kafka_wire.records import build_batch

EXAMPLES = max(settings().max_examples, 40)
"""Examples per property test: the loaded profile's count, at least 40 (the records suite is fast)."""

CODECS_V2 = ("none", "gzip", "snappy", "lz4", "zstd")
CODECS_LEGACY = ("none", "gzip", "snappy", "lz4")
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

blobs = st.one_of(st.none(), st.binary(max_size=64), st.binary(min_size=100, max_size=300))
header_lists = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16))), max_size=3
)


@st.composite
def v2_records(draw: st.DrawFn, max_size: int = 12) -> list[tuple[Any, ...]]:
    """(key, value, headers, timestamp) tuples; timestamps near a random base, as producers make."""
    base = draw(st.integers(2**20, 2**50))
    stamps = st.one_of(st.integers(-(2**20), 2**20).map(lambda d: base + d), st.just(-1))
    n = draw(st.integers(0, max_size))
    return [(draw(blobs), draw(blobs), draw(header_lists), draw(stamps)) for _ in range(n)]


@st.composite
def legacy_records(draw: st.DrawFn, max_size: int = 8) -> list[tuple[Any, ...]]:
    base = draw(st.integers(0, 2**50))
    n = draw(st.integers(1, max_size))
    return [(draw(blobs), draw(blobs), (), base + draw(st.integers(0, 2**20))) for _ in range(n)]


def peer_contents(memory_records_cls: type, data: bytes) -> list[tuple[Any, ...]]:
    """``(offset, timestamp, key, value, headers)`` of every record, read by kafka-python/aiokafka."""
    out: list[tuple[Any, ...]] = []
    records = memory_records_cls(data)
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        for r in batch:
            ts = -1 if r.timestamp is None else r.timestamp
            out.append((r.offset, ts, _b(r.key), _b(r.value), [(k, _b(v)) for k, v in r.headers]))
    return out


def _b(x: Any) -> bytes | None:
    return None if x is None else bytes(x)


def our_contents(data: bytes, **kwargs: Any) -> list[tuple[Any, ...]]:
    from kafka_wire.records import read_batches

    return [
        (r.offset, r.timestamp, _b(r.key), _b(r.value), [(k, _b(v)) for k, v in r.headers])
        for batch in read_batches(data, **kwargs)
        for r in batch
    ]


# -- a minimal Produce request parser (v3-v11), enough to find the records bytes -----------------


class _Cursor:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, fmt: str) -> Any:
        s = struct.Struct(">" + fmt)
        (value,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return value

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()

    def bytes_(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def produce_records(frame: bytes) -> list[tuple[str, int, bytes]]:
    """``(topic, partition, records)`` of a size-prefixed Produce request frame (v3-v13; from v13
    topics are named by id: the topic is then the id's string form)."""
    c = _Cursor(frame)
    size = c.take("i")
    assert size == len(frame) - 4
    api_key, version, _correlation = c.take("h"), c.take("h"), c.take("i")
    assert api_key == 0 and 3 <= version <= 13, (api_key, version)
    flexible = version >= 9
    client_id_len = c.take("h")
    c.pos += max(client_id_len, 0)
    if flexible:
        c.skip_tags()
        n = c.uvarint() - 1  # transactional id
        c.pos += max(n, 0)
    else:
        n = c.take("h")
        c.pos += max(n, 0)
    c.take("h")  # acks
    c.take("i")  # timeout
    out = []
    topics = c.uvarint() - 1 if flexible else c.take("i")
    for _ in range(topics):
        if version >= 13:
            name = str(uuid.UUID(bytes=c.bytes_(16)))
        else:
            name = c.bytes_(c.uvarint() - 1 if flexible else c.take("h")).decode()
        partitions = c.uvarint() - 1 if flexible else c.take("i")
        for _ in range(partitions):
            index = c.take("i")
            length = c.uvarint() - 1 if flexible else c.take("i")
            out.append((name, index, c.bytes_(length)))
            if flexible:
                c.skip_tags()
        if flexible:
            c.skip_tags()
    if flexible:
        c.skip_tags()
    assert c.pos == len(frame)
    return out


def changed_batch(records: list[Any], changes: list[tuple[int, int]], cut: int) -> bytes:
    """A v2 batch of ``records`` with bytes changed past its header (``(position, byte)``, each
    position wrapped into the records) and cut after ``cut`` (wrapped), its length field following
    the cut (its CRC does not: read it without CRC checks)."""
    data = bytearray(build_batch(records))
    for at, byte in changes:
        data[61 + at % (len(data) - 61)] = byte
    size = 61 + cut % (len(data) - 60)
    return bytes(data[:8]) + (size - 12).to_bytes(4, "big") + bytes(data[12:size])
