"""Batch iteration rules (PROTOCOL-NOTES §6): framing errors, the quiet stop, the truncated tail."""

from __future__ import annotations

import struct

import pytest

from kafka_wire.errors import CorruptBatchError, DecodeError, LimitExceededError
from kafka_wire.records import ReadConfig, RecordsReader, build_batch, read_batches


def _payload() -> tuple[bytes, list[int]]:
    """Batches of every magic and a few codecs back to back, and the offsets where each ends."""
    parts = [
        build_batch([(b"a", b"1" * 30, [("h", b"x")], 100)]),
        build_batch([(b"b", b"2" * 40, (), 101), (None, b"3", (), 102)], compression="gzip", base_offset=1),
        build_batch([(b"c", b"4", (), 103)], magic=1, base_offset=3),
        build_batch([(b"d", b"5", (), 104)], magic=0, base_offset=4),
        build_batch(
            [(b"e", b"6" * 70, (), 105), (b"f", None, (), 106)], magic=1, compression="snappy", base_offset=5
        ),
        build_batch([(b"g", b"7" * 90, (), 107)], compression="zstd", base_offset=7),
    ]
    ends = []
    total = 0
    for p in parts:
        total += len(p)
        ends.append(total)
    return b"".join(parts), ends


def _records(data: bytes) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.key) for b in read_batches(data) for r in b]


def test_every_cut_yields_complete_batches_and_a_tail() -> None:
    payload, ends = _payload()
    full = _records(payload)
    assert [o for o, _ in full] == list(range(8))
    for cut in range(len(payload) + 1):
        reader = RecordsReader(payload[:cut])
        batches = list(reader)
        complete = [e for e in ends if e <= cut]
        assert len(batches) == len(complete), cut
        boundary = complete[-1] if complete else 0
        assert reader.position == boundary
        assert reader.truncated_tail == cut - boundary
        assert bytes(reader.tail) == payload[boundary:cut]
        seen = [(r.offset, r.key) for b in batches for r in b]
        assert seen == full[: len(seen)]
        # read_batches stops quietly at the same place
        assert len(list(read_batches(payload[:cut]))) == len(batches)


def test_byte_at_a_time_resume() -> None:
    """Feeding a growing buffer and resuming at ``position`` finds every batch exactly once."""
    payload, ends = _payload()
    seen: list[int] = []
    buffer = b""
    for i in range(len(payload)):
        buffer += payload[i : i + 1]
        reader = RecordsReader(buffer)
        for batch in reader:
            seen.append(batch.position)
        buffer = bytes(reader.tail)
    assert buffer == b""
    assert len(seen) == len(ends)


def test_trailing_data_after_complete_batches() -> None:
    payload, _ = _payload()
    one = build_batch([(b"x", b"y", (), 1)])
    reader = RecordsReader(payload + one[:20])
    assert len(list(reader)) == 6 and reader.truncated_tail == 20


def test_size_below_minimum_is_corrupt() -> None:
    bad = struct.pack(">qi", 0, 13) + b"\x00" * 13
    with pytest.raises(CorruptBatchError) as info:
        list(read_batches(bad))
    assert info.value.offset == 8
    # even when the batch is incomplete: the size is checked first, as Kafka does
    with pytest.raises(CorruptBatchError):
        list(read_batches(struct.pack(">qi", 0, 5)))


@pytest.mark.parametrize("magic", [3, 0x7F, 0x80, 0xFF])
def test_unknown_magic_is_corrupt(magic: int) -> None:
    data = bytearray(build_batch([(b"k", b"v", (), 1)]))
    data[16] = magic
    with pytest.raises(CorruptBatchError, match="magic"):
        list(read_batches(bytes(data)))
    # with fewer than 17 bytes the magic is not looked at: a quiet stop
    reader = RecordsReader(bytes(data[:16]))
    assert list(reader) == [] and reader.truncated_tail == 16


def test_max_batch_bytes_cap() -> None:
    data = build_batch([(b"k", b"v" * 100, (), 1)])
    with pytest.raises(LimitExceededError):
        list(read_batches(data, ReadConfig(max_batch_bytes=50)))
    assert len(list(read_batches(data, ReadConfig(max_batch_bytes=len(data))))) == 1


def test_short_v2_batch_is_corrupt() -> None:
    data = bytearray(build_batch([(b"k", b"v", (), 1)]))
    struct.pack_into(">i", data, 8, 40)  # below the 49 a v2 header needs after the size field
    with pytest.raises(CorruptBatchError, match="overhead"):
        list(read_batches(bytes(data[:52])))


def test_records_beyond_count_or_short_of_it() -> None:
    data = bytearray(build_batch([(b"k", b"v" * 20, (), 1), (b"k", b"w" * 20, (), 1)]))
    struct.pack_into(">i", data, 57, 1)  # one record declared, two present
    [batch] = list(read_batches(bytes(data), verify_crc=False))
    with pytest.raises(CorruptBatchError, match="left after"):
        batch.records()
    struct.pack_into(">i", data, 57, 3)  # three declared, two present
    [batch] = list(read_batches(bytes(data), verify_crc=False))
    with pytest.raises(CorruptBatchError, match="2 of 3"):
        batch.records()
    struct.pack_into(">i", data, 57, 9)  # more than the bytes could ever hold
    [batch] = list(read_batches(bytes(data), verify_crc=False))
    with pytest.raises(CorruptBatchError, match="cannot fit"):
        batch.records()
    struct.pack_into(">i", data, 57, -1)
    [batch] = list(read_batches(bytes(data), verify_crc=False))
    with pytest.raises(CorruptBatchError, match="negative record count"):
        batch.records()


def test_errors_name_the_batch() -> None:
    data = bytearray(build_batch([(b"k", b"v", (), 1)], base_offset=4242))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptBatchError) as info:
        list(read_batches(bytes(data)))
    assert "4242" in str(info.value) and info.value.offset == 0
    assert isinstance(info.value, DecodeError)


def test_record_length_must_match_exactly() -> None:
    good = build_batch([(b"key", b"value", (), 1)])
    # record length varint at byte 61: grow it by one (zigzag +2) so the fields end early
    data = bytearray(good)
    data[61] += 2
    struct.pack_into(">i", data, 8, len(data) - 12 + 1)
    data += b"\x00"
    [batch] = list(read_batches(bytes(data), verify_crc=False))
    with pytest.raises(CorruptBatchError, match="fields end"):
        batch.records()


def test_position_and_repr() -> None:
    payload, ends = _payload()
    batches = list(read_batches(payload))
    assert [b.position for b in batches] == [0, *ends[:-1]]
    assert "RecordBatch(" in repr(batches[0]) and "LegacyBatch(" in repr(batches[2])
    assert [b.size_in_bytes for b in batches] == [e - s for s, e in zip([0, *ends[:-1]], ends, strict=True)]
