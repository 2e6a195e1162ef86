"""Fuzz-style tests: random and mutated bytes give records or DecodeError subclasses, nothing else,
with bounded memory."""

from __future__ import annotations

import random
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.errors import DecodeError
from kafka_wire.records import (
    ControlRecordType,
    ReadConfig,
    RecordsReader,
    build_batch,
    build_commit_marker,
    build_control_batch,
    decode_control_key,
    decode_end_txn_marker,
    reoffset_batch,
    validate_batch,
)
from tests.conftest import CAPTURES
from tests.records.helpers import CODECS_LEGACY, CODECS_V2, EXAMPLES, produce_records

SMALL_CAP = ReadConfig(verify_crc=False, max_decompressed_bytes=1 << 20)


def _corpus() -> list[bytes]:
    records = [
        (b"key-%d" % i, b"value-%d" % i * (1 + i * 7), [(f"h{i}", b"x")] * (i % 3), 1000 + i)
        for i in range(5)
    ]
    out = [build_batch(records, compression=c) for c in CODECS_V2]
    out += [
        build_batch([r[:2] for r in records], magic=m, compression=c) for m in (0, 1) for c in CODECS_LEGACY
    ]
    out.append(build_commit_marker(producer_id=1, producer_epoch=0, coordinator_epoch=3))
    out.append(build_control_batch(ControlRecordType.LEADER_CHANGE, b"\x00\x01\x02"))
    for path in sorted(CAPTURES.glob("*-produce-v*.hex"))[::4]:
        out += [rec for _, _, rec in produce_records(bytes.fromhex(path.read_text().strip()))]
    return out


CORPUS = _corpus()


def consume(data: bytes | bytearray, config: ReadConfig = SMALL_CAP, *, zero_copy: bool = False) -> int:
    """Read everything a reader offers; returns the number of records, or -1 after a DecodeError."""
    n = 0
    try:
        reader: RecordsReader[bytes] | RecordsReader[memoryview] = (
            RecordsReader(data, config, zero_copy=True) if zero_copy else RecordsReader(data, config)
        )
        for batch in reader:
            _ = (
                batch.base_offset,
                batch.last_offset,
                batch.record_count,
                batch.compression,
                batch.timestamp_type,
            )
            _ = (batch.producer_id, batch.base_sequence, batch.is_control, batch.is_valid())
            for r in batch:
                _ = (r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers])
                if batch.is_control:
                    key = decode_control_key(r.key)
                    if key.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                        decode_end_txn_marker(r.value)
                n += 1
        reader.truncated_tail  # noqa: B018
        try:
            validate_batch(data, verify_crc=False)
            reoffset_batch(data, 5, 6, log_append_time=7)
        except DecodeError:
            pass
    except DecodeError:
        return -1
    return n


@settings(max_examples=EXAMPLES * 5, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    consume(data)
    consume(data, ReadConfig())


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "byte", "int32", "truncate", "insert", "delete"]))
        if not data:
            break
        pos = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            data[pos] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
        elif kind == "int32" and pos + 4 <= len(data):
            value = draw(st.sampled_from([0x7FFFFFFF, -1, -(2**31), 0, 1 << 24, 61, 14]))
            struct.pack_into(">i", data, pos, value)
        elif kind == "truncate":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 8))]
    return bytes(data)


@settings(max_examples=EXAMPLES * 10, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_batches(data: bytes) -> None:
    n = consume(data)
    consume(data, ReadConfig())
    assert consume(bytearray(data), zero_copy=True) == n


@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_every_single_bit_flip(index: int) -> None:
    base = CORPUS[index]
    rng = random.Random(index)
    positions = range(len(base)) if len(base) <= 160 else sorted(rng.sample(range(len(base)), 160))
    for pos in positions:
        for bit in (0, 3, 7):
            data = bytearray(base)
            data[pos] ^= 1 << bit
            consume(bytes(data))
            # with CRCs on, a flip anywhere the CRC covers must be caught
            if pos >= 21 and data[16] == 2 and index < len(CODECS_V2):
                assert consume(bytes(data), ReadConfig()) == -1


def test_varint_and_count_bombs() -> None:
    """Huge declared counts and lengths allocate nothing: they fail on the bytes that are there."""
    good = bytearray(build_batch([(b"k", b"v", [("h", b"x")], 1)]))
    for offset, value in [(57, 0x7FFFFFFF), (57, 1 << 30)]:
        data = bytearray(good)
        struct.pack_into(">i", data, offset, value)
        assert consume(bytes(data)) == -1
    # a record whose header count varint claims 2**31 - 1 headers
    data = (
        bytearray(good[:61])
        + bytes([0x20, 0, 0, 0, 2, ord("k"), 2, ord("v")])
        + b"\xfe\xff\xff\xff\x0f"
        + b"\x00" * 5
    )
    struct.pack_into(">i", data, 8, len(data) - 12)
    assert consume(bytes(data)) == -1
    # ten-byte and eleven-byte varints
    data = bytearray(good[:61]) + b"\xff" * 11
    struct.pack_into(">i", data, 8, len(data) - 12)
    assert consume(bytes(data)) == -1


def test_memory_stays_bounded() -> None:
    """Peak Python allocation for reading small hostile inputs stays far below their claims."""
    rng = random.Random(7)
    inputs = [bytes(rng.randbytes(rng.randrange(1, 400))) for _ in range(200)]
    for base in CORPUS:
        for _ in range(20):
            data = bytearray(base)
            pos = rng.randrange(8, min(len(data), 70))
            struct.pack_into(">i", data, pos - pos % 4, rng.choice([0x7FFFFFFF, 0x40000000, -2]))
            inputs.append(bytes(data))
    tracemalloc.start()
    try:
        for item in inputs:
            consume(item)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024
