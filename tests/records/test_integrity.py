"""CRCs, header-only validation and re-offsetting (the broker's operations on v2 batches)."""

from __future__ import annotations

import struct
from typing import Any

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.errors import CorruptBatchError, InvalidValueError, TruncatedError, ValueOutOfRangeError
from kafka_wire.records import (
    ReadConfig,
    TimestampType,
    build_batch,
    read_batches,
    reoffset_batch,
    reoffset_batch_in_place,
    validate_batch,
)
from tests.records.helpers import CODECS_V2, EXAMPLES, our_contents, v2_records


def test_crc_is_crc32c_from_attributes_to_end() -> None:
    data = build_batch([(b"k", b"v", [("h", b"x")], 5)], compression="gzip")
    assert struct.unpack_from(">I", data, 17)[0] == crc32c.crc32c(data[21:])


@pytest.mark.parametrize("codec", CODECS_V2)
def test_corruption_anywhere_under_the_crc_is_caught(codec: str) -> None:
    data = build_batch(
        [(b"k%d" % i, b"value" * i, (), i) for i in range(5)], compression=codec, base_offset=31337
    )
    for pos in range(21, len(data)):
        bad = bytearray(data)
        bad[pos] ^= 0x10
        with pytest.raises(CorruptBatchError, match="31337") as info:
            list(read_batches(bytes(bad)))
        assert info.value.offset == 0 and "CRC-32C" in str(info.value)


def test_verification_can_be_switched_off() -> None:
    data = bytearray(build_batch([(b"k", b"v", (), 5)]))
    data[17] ^= 0xFF  # the stored CRC itself
    with pytest.raises(CorruptBatchError):
        list(read_batches(bytes(data)))
    [batch] = list(read_batches(bytes(data), verify_crc=False))
    assert not batch.is_valid() and [r.key for r in batch] == [b"k"]
    [batch] = list(read_batches(bytes(data), ReadConfig(verify_crc=False)))
    assert batch.crc != batch.compute_crc()


def test_validate_batch() -> None:
    data = build_batch([(b"k", b"v", (), 5)] * 3, base_offset=10)
    batch = validate_batch(data, require_dense=True)
    assert (batch.base_offset, batch.record_count, batch.last_offset) == (10, 3, 12)
    assert validate_batch(b"xx" + data, 2).position == 2
    assert validate_batch(bytearray(data)).record_count == 3

    def patched(offset: int, fmt: str, value: int) -> bytes:
        out = bytearray(data)
        struct.pack_into(fmt, out, offset, value)
        struct.pack_into(">I", out, 17, crc32c.crc32c(out[21:]))
        return bytes(out)

    with pytest.raises(TruncatedError):
        validate_batch(data[:60])
    with pytest.raises(TruncatedError):
        validate_batch(data[:-1])
    with pytest.raises(CorruptBatchError, match="magic"):
        validate_batch(patched(16, ">b", 1))
    with pytest.raises(CorruptBatchError, match="overhead"):
        validate_batch(patched(8, ">i", 40))
    flipped = data[:-1] + bytes([data[-1] ^ 1])
    with pytest.raises(CorruptBatchError, match="CRC"):
        validate_batch(flipped)
    assert validate_batch(flipped, verify_crc=False).record_count == 3
    with pytest.raises(InvalidValueError, match="negative"):
        validate_batch(patched(57, ">i", -1))
    with pytest.raises(InvalidValueError, match="offset range"):
        validate_batch(patched(57, ">i", 4))
    with pytest.raises(InvalidValueError, match="does not match"):
        validate_batch(patched(23, ">i", 5), require_dense=True)
    assert validate_batch(patched(23, ">i", 5)).record_count == 3  # compacted batches have gaps
    with pytest.raises(CorruptBatchError, match="cannot fit"):
        validate_batch(_many_count(data))
    with pytest.raises(InvalidValueError, match="compression"):
        validate_batch(patched(21, ">h", 6))


def _many_count(data: bytes) -> bytes:
    out = bytearray(data)
    struct.pack_into(">i", out, 23, 999)
    struct.pack_into(">i", out, 57, 999)
    struct.pack_into(">I", out, 17, crc32c.crc32c(out[21:]))
    return bytes(out)


@pytest.mark.parametrize("codec", CODECS_V2)
@settings(max_examples=EXAMPLES)
@given(
    records=v2_records(max_size=6),
    old_offset=st.integers(0, 2**40),
    new_offset=st.integers(0, 2**62),
    epoch=st.one_of(st.none(), st.integers(-1, 2**31 - 1)),
    append_time=st.one_of(st.none(), st.integers(0, 2**50)),
)
def test_reoffset_keeps_crc_and_records(
    codec: str,
    records: list[tuple[Any, ...]],
    old_offset: int,
    new_offset: int,
    epoch: int | None,
    append_time: int | None,
) -> None:
    data = build_batch(records, compression=codec, base_offset=old_offset, partition_leader_epoch=7)
    out = reoffset_batch(data, new_offset, epoch, log_append_time=append_time)
    assert len(out) == len(data)
    batch = validate_batch(out)  # CRC still valid
    assert batch.base_offset == new_offset
    assert batch.partition_leader_epoch == (7 if epoch is None else epoch)
    before = our_contents(data)
    after = our_contents(out)
    shift = new_offset - old_offset
    if append_time is None:
        assert out[21:] == data[21:]  # nothing under the CRC changed
        assert after == [(o + shift, t, k, v, h) for o, t, k, v, h in before]
    else:
        assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.max_timestamp == append_time
        assert after == [(o + shift, append_time, k, v, h) for o, _, k, v, h in before]
    # in place, on a bytearray inside a larger buffer
    buf = bytearray(b"\x00" * 5 + data + b"\x01" * 3)
    nxt = reoffset_batch_in_place(buf, new_offset, epoch, position=5, log_append_time=append_time)
    assert bytes(buf[5:-3]) == out and buf[:5] == b"\x00" * 5 and buf[-3:] == b"\x01" * 3
    assert nxt == new_offset + len(records)


def test_reoffset_rejections() -> None:
    data = build_batch([(b"k", b"v", (), 1)])
    with pytest.raises(CorruptBatchError, match="follow the batch"):
        reoffset_batch(data + b"x", 1)
    with pytest.raises(CorruptBatchError, match="magic"):
        reoffset_batch(build_batch([(b"k", b"v", (), 1)], magic=1) + b"\x00" * 40, 1)
    with pytest.raises(TruncatedError):
        reoffset_batch(data[:50], 1)
    with pytest.raises(ValueOutOfRangeError):
        reoffset_batch(data, 2**63)
    with pytest.raises(ValueOutOfRangeError):
        reoffset_batch(data, 0, 2**31)
    view = memoryview(bytearray(data))
    assert reoffset_batch_in_place(view, 100) == 101 and struct.unpack_from(">q", view)[0] == 100


def test_crc32c_extension_loaded_alone_is_the_package_function() -> None:
    # kafka_wire.records.crc loads the package's extension without its __init__ (a faster start).
    from kafka_wire.flavour import extension_alone

    module = extension_alone("crc32c", "_crc32c")
    assert module is not None  # the installed package's layout: the fast path is the one taken
    alone = module.crc32c
    for data, start in [(b"123456789", 0), (b"", 0), (bytes(range(256)) * 7, 0x1234_5678)]:
        assert alone(data, start) == crc32c.crc32c(data, start)
    assert alone(b"123456789", 0) == 0xE3069283  # the CRC-32C check value
