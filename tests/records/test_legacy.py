"""Legacy MessageSet v0/v1 semantics (PROTOCOL-NOTES §6.3), on hand-made messages."""

from __future__ import annotations

import struct
import zlib

import pytest

from kafka_wire.errors import CorruptBatchError, EncodeError, InvalidValueError
from kafka_wire.records import LegacyBatch, ReadConfig, TimestampType, build_batch, read_batches


def _bytes(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def msg(offset: int, magic: int, attrs: int, ts: int, key: bytes | None, value: bytes | None) -> bytes:
    body = (
        struct.pack(">bb", magic, attrs)
        + (struct.pack(">q", ts) if magic else b"")
        + _bytes(key)
        + _bytes(value)
    )
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def gz(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def wrapper(offset: int, magic: int, inner: bytes, *, ts: int = 0, lat: bool = False) -> bytes:
    return msg(offset, magic, 1 | (8 if lat else 0), ts, None, gz(inner))


def read(
    data: bytes, *, verify_crc: bool | None = None, config: ReadConfig | None = None
) -> list[tuple[int, int, bytes | None]]:
    return [
        (r.offset, r.timestamp, r.value) for b in read_batches(data, config, verify_crc=verify_crc) for r in b
    ]


def test_v1_relative_inner_offsets() -> None:
    inner = b"".join(msg(i, 1, 0, 100 + i, None, b"v%d" % i) for i in range(3))
    assert read(wrapper(52, 1, inner)) == [(50, 100, b"v0"), (51, 101, b"v1"), (52, 102, b"v2")]
    [batch] = list(read_batches(wrapper(52, 1, inner)))
    assert isinstance(batch, LegacyBatch)
    assert (batch.base_offset, batch.last_offset, batch.record_count, batch.last_offset_delta) == (
        50,
        52,
        3,
        2,
    )
    assert batch.next_offset == 53 and batch.compression == "gzip"


def test_v1_wrapper_offset_zero_means_base_zero() -> None:
    inner = b"".join(msg(i, 1, 0, 7, None, b"x") for i in (4, 5, 6))
    assert [o for o, _, _ in read(wrapper(0, 1, inner))] == [4, 5, 6]


def test_v1_wrapper_offset_below_last_inner_is_corrupt() -> None:
    inner = b"".join(msg(i, 1, 0, 7, None, b"x") for i in (4, 5, 6))
    with pytest.raises(CorruptBatchError, match="below its last inner offset"):
        read(wrapper(5, 1, inner))


def test_v0_inner_offsets_are_absolute() -> None:
    inner = b"".join(msg(i, 0, 0, 0, b"k", b"x") for i in (10, 11))
    assert read(wrapper(11, 0, inner)) == [(10, -1, b"x"), (11, -1, b"x")]
    assert [o for o, _, _ in read(wrapper(99, 0, inner))] == [10, 11]
    [batch] = list(read_batches(wrapper(11, 0, inner)))
    assert batch.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE and batch.max_timestamp == -1


def test_inner_timestamps_follow_the_wrapper_only_for_log_append_time() -> None:
    inner = b"".join(msg(i, 1, 0, 100 + i, None, b"v") for i in range(2))
    assert [t for _, t, _ in read(wrapper(1, 1, inner, ts=5555))] == [100, 101]
    assert [t for _, t, _ in read(wrapper(1, 1, inner, ts=5555, lat=True))] == [5555, 5555]
    [batch] = list(read_batches(wrapper(1, 1, inner, ts=5555, lat=True)))
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME


def test_inner_magic_mismatch() -> None:
    inner = msg(0, 0, 0, 0, None, b"a") + msg(1, 1, 0, 9, None, b"b")
    assert read(wrapper(1, 1, inner, ts=3, lat=True)) == [(0, -1, b"a"), (1, 3, b"b")]
    with pytest.raises(CorruptBatchError, match="differs from wrapper magic"):
        read(wrapper(1, 1, inner), config=ReadConfig(strict_inner_magic=True))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (wrapper(0, 1, msg(0, 1, 1, 0, None, gz(msg(0, 1, 0, 0, None, b"x")))), "itself compressed"),
        (wrapper(0, 1, b""), "no messages"),
        (msg(0, 1, 1, 0, None, None), "null value"),
        (wrapper(1, 1, msg(0, 1, 0, 0, None, b"x") + b"\x00\x01"), "at least 26 bytes"),
    ],
)
def test_wrapper_rejections(data: bytes, message: str) -> None:
    with pytest.raises(CorruptBatchError, match=message):
        read(data)


def test_inner_crc_checked_unless_disabled() -> None:
    inner = bytearray(msg(0, 1, 0, 0, None, b"value"))
    inner[-1] ^= 1
    with pytest.raises(CorruptBatchError, match="inner message CRC"):
        read(wrapper(0, 1, bytes(inner)))
    assert read(wrapper(0, 1, bytes(inner)), verify_crc=False) == [(0, 0, b"valud")]


def test_message_layout_rejections() -> None:
    short = bytearray(msg(0, 1, 0, 1, b"key", b"value"))
    struct.pack_into(">i", short, 26, 50)  # key length past the message
    with pytest.raises(CorruptBatchError, match="key length"):
        read(bytes(short), verify_crc=False)
    trailing = bytearray(msg(0, 1, 0, 1, b"k", None)) + b"\x00"
    struct.pack_into(">i", trailing, 8, len(trailing) - 12)
    with pytest.raises(CorruptBatchError, match="value length"):
        read(bytes(trailing), verify_crc=False)
    tiny = struct.pack(">qiIbb", 0, 14, 0, 1, 0) + b"\x00" * 8
    with pytest.raises(CorruptBatchError, match="below its overhead"):
        read(tiny, verify_crc=False)


def test_crc32_mismatch_names_the_message() -> None:
    data = bytearray(msg(77, 0, 0, 0, b"k", b"v"))
    data[-1] ^= 0x40
    with pytest.raises(CorruptBatchError, match="message offset 77"):
        read(bytes(data))
    [batch] = list(read_batches(bytes(data), verify_crc=False))
    assert not batch.is_valid()


def test_builder_writes_what_the_rules_expect() -> None:
    records = [(b"k%d" % i, b"v%d" % i, (), 1000 + i) for i in range(3)]
    data = build_batch(records, magic=1, compression="gzip", base_offset=40)
    # one wrapper at the last offset, inner offsets relative, wrapper timestamp = max
    offset, size, _, magic, attrs, ts = struct.unpack_from(">qiIbbq", data)
    assert (offset, magic, attrs, ts, len(data)) == (42, 1, 1, 1002, size + 12)
    [batch] = list(read_batches(data))
    assert [r.offset for r in batch] == [40, 41, 42]
    v0 = build_batch(records, magic=0, compression="gzip", base_offset=40)
    assert struct.unpack_from(">q", v0)[0] == 42
    lat = build_batch(records, magic=1, compression="gzip", timestamp_type=1, log_append_time=9)
    assert [r.timestamp for b in read_batches(lat) for r in b] == [9, 9, 9]
    plain_lat = build_batch(records, magic=1, timestamp_type=1, log_append_time=9)
    assert [r.timestamp for b in read_batches(plain_lat) for r in b] == [9, 9, 9]


@pytest.mark.parametrize(
    "options",
    [
        {"producer_id": 1},
        {"is_transactional": True},
        {"is_control": True},
        {"partition_leader_epoch": 3},
        {"delete_horizon_ms": 1},
        {"offset_deltas": [0]},
    ],
)
def test_legacy_builder_rejects_v2_fields(options: dict[str, object]) -> None:
    with pytest.raises(EncodeError):
        build_batch([(b"k", b"v")], magic=1, **options)  # type: ignore[arg-type]


def test_legacy_builder_rejections() -> None:
    with pytest.raises(EncodeError, match="headers"):
        build_batch([(b"k", b"v", [("h", b"x")])], magic=1)
    with pytest.raises(EncodeError, match="at least one record"):
        build_batch([], magic=1, compression="gzip")
    with pytest.raises(EncodeError):
        build_batch([(b"k", b"v", (), -5)], magic=1)
    with pytest.raises(EncodeError):
        build_batch([(b"k", b"v")], magic=3)
    assert build_batch([], magic=0) == b""


def test_zstd_codec_in_legacy_batch_reads_as_invalid() -> None:
    data = bytearray(msg(0, 1, 4, 0, None, b"anything"))
    with pytest.raises(InvalidValueError, match="zstd"):
        read(bytes(data), verify_crc=False)
