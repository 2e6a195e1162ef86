"""Builder input handling: accepted shapes and the EncodeErrors for everything else."""

from __future__ import annotations

import array
from typing import Any

import pytest

from kafka_wire.errors import EncodeError, ValueOutOfRangeError
from kafka_wire.records import build_batch, read_batches


def _keys(data: bytes) -> list[Any]:
    return [(r.key, r.value, list(r.headers)) for b in read_batches(data) for r in b]


def test_bytes_like_inputs() -> None:
    ints = array.array("i", [1, 2])
    data = build_batch(
        [(bytearray(b"k"), memoryview(b"vv"), [("h", bytearray(b"x"))], 1), (ints, None, (), 2)]
    )
    assert _keys(data) == [(b"k", b"vv", [("h", b"x")]), (ints.tobytes(), None, [])]
    legacy = build_batch([(bytearray(b"k"), memoryview(ints), (), 1)], magic=1)
    assert _keys(legacy) == [(b"k", ints.tobytes(), [])]


@pytest.mark.parametrize(
    "records",
    [
        [("key", b"v")],
        [(b"k", "value")],
        [(b"k", b"v", [(b"h", b"x")])],
        [(b"k", b"v", [("h", "x")])],
        [(b"k", b"v", [("h", b"x", b"y")])],
        [(b"k", b"v", [("\udc80", b"x")])],
        [(b"k", b"v", (), 1.5)],
        [(b"k", b"v", (), "1")],
        [(b"k",)],
        [(b"k", b"v", (), 1, 2)],
        [object()],
        [12],
    ],
)
def test_bad_records(records: list[Any]) -> None:
    with pytest.raises(EncodeError):
        build_batch(records)


@pytest.mark.parametrize(
    "options",
    [
        {"compression": "brotli"},
        {"base_offset": 2**63},
        {"partition_leader_epoch": 2**31},
        {"producer_id": 1, "producer_epoch": 2**15, "base_sequence": 0},
        {"is_transactional": True},
        {"producer_id": 5},
        {"producer_id": 5, "producer_epoch": 0},
        {"offset_deltas": [0, 0]},
        {"offset_deltas": [-1, 0]},
        {"offset_deltas": [0, 2**31]},
        {"offset_deltas": [0, 1, 2]},
        {"default_timestamp": -2},
        {"delete_horizon_ms": -5},
        {"max_timestamp": 2**63},
    ],
)
def test_bad_options(options: dict[str, Any]) -> None:
    with pytest.raises(EncodeError):
        build_batch([(b"k", b"v"), (b"k2", b"v2")], **options)


@pytest.mark.parametrize("base_offset", [-1, -2, -3])
def test_a_compressed_magic_1_wrapper_refuses_a_negative_base_offset(base_offset: int) -> None:
    # Found by the records fuzz harness: base -1 of two records built wrapper offset 0, which
    # readers (Kafka's too) take as base 0, so the records read back at offsets 0 and 1.
    records = [(b"k", b"v"), (b"k2", b"v2")]
    with pytest.raises(ValueOutOfRangeError):
        build_batch(records, magic=1, compression="gzip", base_offset=base_offset)
    for magic, compression in ((0, "gzip"), (1, "none")):
        data = build_batch(records, magic=magic, compression=compression, base_offset=base_offset)
        assert [r.offset for b in read_batches(data) for r in b] == [base_offset, base_offset + 1]


def test_timestamp_ranges() -> None:
    with pytest.raises(ValueOutOfRangeError):
        build_batch([(b"k", b"v", (), 5), (b"k", b"v", (), -3)])
    with pytest.raises(ValueOutOfRangeError):
        build_batch([(b"k", b"v", (), 2**63)])
    with pytest.raises(ValueOutOfRangeError):
        build_batch([(b"k", b"v", (), -1), (b"k", b"v", (), 2**63 - 1)])
    # -1 (no timestamp) mixes with real ones, and deltas may be negative
    data = build_batch([(b"a", None, (), 10**12), (b"b", None, (), -1), (b"c", None, (), 5)])
    assert [r.timestamp for b in read_batches(data) for r in b] == [10**12, -1, 5]


def test_control_batches_may_omit_the_sequence() -> None:
    data = build_batch(
        [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")], producer_id=3, producer_epoch=1, is_control=True
    )
    [batch] = list(read_batches(data))
    assert batch.is_control and batch.base_sequence == -1


def test_generators_are_accepted() -> None:
    data = build_batch((b"k%d" % i, b"v", (), 7) for i in range(3))
    assert [r.key for b in read_batches(data) for r in b] == [b"k0", b"k1", b"k2"]


def test_large_varints() -> None:
    big = b"x" * 70000  # lengths past the two-byte varint table
    data = build_batch(
        [(big, big, [("h" * 300, big)], 2**40)], offset_deltas=[2**30], last_offset_delta=2**30
    )
    [batch] = list(read_batches(data))
    [record] = list(batch)
    assert record.key == big and record.value == big and record.headers == (("h" * 300, big),)
    assert record.offset == 2**30
