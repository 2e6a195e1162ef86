"""Differential tests: batches kafka-python and aiokafka build read back identically here, and ours there.

Magic-0 lz4 (Kafka's old frame with the header checksum over the magic too) is read and written
by kafka-python (with the ``xxhash`` package, a dependency of kafka_wire); aiokafka refuses lz4
for magic 0 both ways, so that pair runs with kafka-python only.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from kafka_wire.records import build_batch
from tests.records.helpers import (
    CODEC_IDS,
    CODECS_LEGACY,
    CODECS_V2,
    EXAMPLES,
    legacy_records,
    our_contents,
    peer_contents,
    v2_records,
)
from tests.records.peers import (
    AioBuilder,
    AioLegacyBuilder,
    AioMemoryRecords,
    KpBuilder,
    KpLegacyBuilder,
    KpMemoryRecords,
    KpMemoryRecordsBuilder,
)

PEER_V2_BUILDERS = {"kafka-python": KpBuilder, "aiokafka": AioBuilder}
PEER_LEGACY_BUILDERS = {"kafka-python": KpLegacyBuilder, "aiokafka": AioLegacyBuilder}
PEER_READERS = {"kafka-python": KpMemoryRecords, "aiokafka": AioMemoryRecords}


def _peer_v2(builder: type, records: list[tuple[Any, ...]], codec: str, **state: Any) -> bytes:
    b = builder(
        magic=2,
        compression_type=CODEC_IDS[codec],
        is_transactional=state.get("is_transactional", 0),
        producer_id=state.get("producer_id", -1),
        producer_epoch=state.get("producer_epoch", -1),
        base_sequence=state.get("base_sequence", -1),
        batch_size=1 << 30,
    )
    for i, (key, value, headers, ts) in enumerate(records):
        b.append(i, timestamp=ts, key=key, value=value, headers=list(headers))
    return bytes(b.build())


def _peer_legacy(builder: type, records: list[tuple[Any, ...]], codec: str, magic: int) -> bytes:
    b = builder(magic=magic, compression_type=CODEC_IDS[codec], batch_size=1 << 30)
    for i, (key, value, _, ts) in enumerate(records):
        b.append(i, timestamp=ts if magic else None, key=key, value=value)
    return bytes(b.build())


#: (peer, magic, codec) of the legacy cases: every pair, magic-0 lz4 with kafka-python only
#: (aiokafka refuses it: see the module docstring and test_aiokafka_refuses_magic0_lz4).
LEGACY_CASES = [
    pytest.param(peer, magic, codec, id=f"{peer}-{codec}-magic{magic}")
    for peer in ("aiokafka", "kafka-python")
    for magic in (0, 1)
    for codec in CODECS_LEGACY
    if (peer, magic, codec) != ("aiokafka", 0, "lz4")
]


def _expected(records: list[tuple[Any, ...]], magic: int, base_offset: int = 0) -> list[tuple[Any, ...]]:
    return [
        (base_offset + i, ts if magic else -1, key, value, [(k, v) for k, v in headers])
        for i, (key, value, headers, ts) in enumerate(records)
    ]


@pytest.mark.parametrize("peer", sorted(PEER_V2_BUILDERS))
@pytest.mark.parametrize("codec", CODECS_V2)
@settings(max_examples=EXAMPLES // 2)
@given(records=v2_records(max_size=8))
def test_peer_v2_batches_read_back(peer: str, codec: str, records: list[tuple[Any, ...]]) -> None:
    records = [(k, v, h, ts if ts >= 0 else 0) for k, v, h, ts in records]
    data = _peer_v2(PEER_V2_BUILDERS[peer], records, codec)
    assert our_contents(data) == _expected(records, 2)
    assert our_contents(data, zero_copy=True) == _expected(records, 2)


@pytest.mark.parametrize("peer", sorted(PEER_READERS))
@pytest.mark.parametrize("codec", CODECS_V2)
@settings(max_examples=EXAMPLES // 2)
# Not empty: the peers' readers stop at an empty batch's missing records in different ways.
@given(records=v2_records(max_size=8).filter(bool))
def test_our_v2_batches_read_back_in_peers(peer: str, codec: str, records: list[tuple[Any, ...]]) -> None:
    records = [(k, v, h, ts if ts >= 0 else 0) for k, v, h, ts in records]
    data = build_batch(records, compression=codec, base_offset=7)
    assert peer_contents(PEER_READERS[peer], data) == _expected(records, 2, base_offset=7)


@pytest.mark.parametrize(("peer", "magic", "codec"), LEGACY_CASES)
@settings(max_examples=EXAMPLES // 3)
@given(records=legacy_records())
def test_peer_legacy_batches_read_back(
    peer: str, magic: int, codec: str, records: list[tuple[Any, ...]]
) -> None:
    data = _peer_legacy(PEER_LEGACY_BUILDERS[peer], records, codec, magic)
    assert our_contents(data) == _expected(records, magic)


@pytest.mark.parametrize(("peer", "magic", "codec"), LEGACY_CASES)
@settings(max_examples=EXAMPLES // 3)
@given(records=legacy_records())
def test_our_legacy_batches_read_back_in_peers(
    peer: str, magic: int, codec: str, records: list[tuple[Any, ...]]
) -> None:
    data = build_batch(records, magic=magic, compression=codec, base_offset=3)
    assert peer_contents(PEER_READERS[peer], data) == _expected(records, magic, base_offset=3)


def test_aiokafka_refuses_magic0_lz4() -> None:
    """Pins the one pair LEGACY_CASES leaves out: aiokafka writes and reads no magic-0 lz4."""
    data = build_batch([(b"k", b"v" * 50, (), None)], magic=0, compression="lz4")
    with pytest.raises(Exception):  # noqa: B017  # aiokafka's own error type
        peer_contents(AioMemoryRecords, data)


@pytest.mark.parametrize("peer", sorted(PEER_V2_BUILDERS))
def test_peer_idempotent_and_transactional_batches(peer: str) -> None:
    records: list[tuple[Any, ...]] = [(b"k%d" % i, b"v%d" % i, [], 1_700_000_000_000 + i) for i in range(5)]
    data = _peer_v2(
        PEER_V2_BUILDERS[peer],
        records,
        "none",
        is_transactional=1,
        producer_id=4321,
        producer_epoch=7,
        base_sequence=100,
    )
    ours = build_batch(records, producer_id=4321, producer_epoch=7, base_sequence=100, is_transactional=True)
    from kafka_wire.records import read_batches

    [theirs] = list(read_batches(data))
    [mine] = list(read_batches(ours))
    for name in (
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "last_offset_delta",
        "record_count",
    ):
        assert getattr(theirs, name) == getattr(mine, name), name
    assert (mine.producer_id, mine.producer_epoch, mine.base_sequence, mine.last_sequence) == (
        4321,
        7,
        100,
        104,
    )


def test_memory_records_builder_multi_batch_payload() -> None:
    """Several batches back to back (kafka-python's MemoryRecordsBuilder) read as separate batches."""
    payload = b""
    offset = 0
    for codec in CODECS_V2:
        b = KpMemoryRecordsBuilder(
            magic=2, compression_type=CODEC_IDS[codec], batch_size=1 << 20, offset=offset
        )
        for i in range(4):
            b.append(timestamp=1_700_000_000_000 + i, key=b"key", value=codec.encode() * (50 + i), headers=[])
        b.close()
        payload += bytes(b.buffer())
        offset += 4
    from kafka_wire.records import read_batches

    batches = list(read_batches(payload))
    assert [b.compression for b in batches] == list(CODECS_V2)
    assert [r.offset for b in batches for r in b] == list(range(20))
    assert (
        our_contents(payload)
        == peer_contents(KpMemoryRecords, payload)
        == peer_contents(AioMemoryRecords, payload)
    )
