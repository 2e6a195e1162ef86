"""__consumer_offsets key and value layouts, byte for byte, and their decoders on bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.broker.coordinator_keys import java_string_hash, partition_for_group
from kafka_wire.broker.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_value,
)
from kafka_wire.errors import DecodeError, InvalidValueError, TruncatedError, UnsupportedVersionError


def test_key_layouts() -> None:
    assert encode_key(OffsetCommitKey("g", "t", 3)) == bytes.fromhex("0001 0001 67 0001 74 00000003")
    assert encode_key(GroupMetadataKey("g")) == bytes.fromhex("0002 0001 67")
    assert decode_key(bytes.fromhex("0000 0001 67 0001 74 00000003")) == OffsetCommitKey("g", "t", 3)
    assert decode_key(bytes.fromhex("0002 0001 67")) == GroupMetadataKey("g")
    assert decode_key(bytes.fromhex("0005 0001 67")) == UnknownKey(5)


def test_offset_commit_value_layouts() -> None:
    value = OffsetCommitValue(offset=5, metadata="m", commit_timestamp_ms=10, leader_epoch=2)
    assert encode_offset_commit_value(value) == bytes.fromhex(
        "0003 0000000000000005 00000002 0001 6d 000000000000000a"
    )
    expiring = OffsetCommitValue(offset=5, metadata="m", commit_timestamp_ms=10, expire_timestamp_ms=20)
    assert encode_offset_commit_value(expiring) == bytes.fromhex(
        "0001 0000000000000005 0001 6d 000000000000000a 0000000000000014"
    )
    assert encode_offset_commit_value(value, 4) == bytes.fromhex(
        "0004 0000000000000005 00000002 02 6d 000000000000000a 00"
    )
    assert encode_offset_commit_value(value, 0) == bytes.fromhex(
        "0000 0000000000000005 0001 6d 000000000000000a"
    )
    for version in range(5):
        back = decode_offset_commit_value(
            encode_offset_commit_value(expiring if version == 1 else value, version)
        )
        assert back.offset == 5 and back.metadata == "m" and back.commit_timestamp_ms == 10
        assert back.leader_epoch == (2 if version >= 3 else -1)
        assert back.expire_timestamp_ms == (20 if version == 1 else -1)
    with pytest.raises(UnsupportedVersionError):
        encode_offset_commit_value(value, 5)


MEMBER = MemberMetadata("m-1", "inst", "client", "/1.2.3.4", 30_000, 10_000, b"\x00\x00sub", b"\x00\x00asg")
GROUP = GroupMetadataValue("consumer", 7, "range", "m-1", 1234, (MEMBER,))


def test_group_metadata_value_layout_v3() -> None:
    expected = bytes.fromhex(
        "0003"
        "0008"
        + b"consumer".hex()
        + "00000007"
        + "0005"
        + b"range".hex()
        + "0003"
        + b"m-1".hex()
        + "00000000000004d2"
        "00000001"
        "0003"
        + b"m-1".hex()
        + "0004"
        + b"inst".hex()
        + "0006"
        + b"client".hex()
        + "0008"
        + b"/1.2.3.4".hex()
        + "00007530"
        + "00002710"
        + "00000005"
        + b"\x00\x00sub".hex()
        + "00000005"
        + b"\x00\x00asg".hex()
    )
    assert encode_group_metadata_value(GROUP) == expected
    assert decode_group_metadata_value(expected) == GROUP


@pytest.mark.parametrize("version", range(5))
def test_group_metadata_value_every_version(version: int) -> None:
    back = decode_group_metadata_value(encode_group_metadata_value(GROUP, version))
    member = back.members[0]
    assert (back.protocol_type, back.generation, back.protocol, back.leader) == (
        "consumer",
        7,
        "range",
        "m-1",
    )
    assert back.current_state_timestamp_ms == (1234 if version >= 2 else -1)
    assert member.group_instance_id == ("inst" if version >= 3 else None)
    assert member.rebalance_timeout_ms == (30_000 if version >= 1 else 10_000), "v0: the session timeout"
    assert (member.subscription, member.assignment) == (MEMBER.subscription, MEMBER.assignment)


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    empty = GroupMetadataValue("", 3, None, None, -1, ())
    data = encode_group_metadata_value(empty)
    assert data == bytes.fromhex("0003 0000 00000003 ffff ffff ffffffffffffffff 00000000")
    assert decode_group_metadata_value(data) == empty
    assert decode_group_metadata_value(encode_group_metadata_value(empty, 4)) == empty


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", TruncatedError),
        (bytes.fromhex("0001 0001 67 0001"), TruncatedError),
        (bytes.fromhex("0001 ffff"), InvalidValueError),
        (bytes.fromhex("0002 0001 ff"), InvalidValueError),
        (bytes.fromhex("0002 0001 67 00"), InvalidValueError),
    ],
)
def test_bad_keys(data: bytes, error: type[DecodeError]) -> None:
    with pytest.raises(error):
        decode_key(data)


def test_bad_values() -> None:
    with pytest.raises(InvalidValueError):
        decode_offset_commit_value(bytes.fromhex("0009"))
    with pytest.raises(TruncatedError):
        decode_offset_commit_value(bytes.fromhex("0003 00"))
    with pytest.raises(InvalidValueError):
        decode_group_metadata_value(bytes.fromhex("0003 0000 00000003 ffff ffff ffffffffffffffff 7fffffff"))
    with pytest.raises(InvalidValueError):
        decode_group_metadata_value(bytes.fromhex("0004 00 00000003 00 00 ffffffffffffffff ffffffffff00"))


@given(st.binary(max_size=64))
def test_decoders_raise_only_decode_errors(data: bytes) -> None:
    for decoder in (decode_key, decode_offset_commit_value, decode_group_metadata_value):
        try:
            decoder(data)
        except DecodeError:
            pass


def test_java_hash_and_partition() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for_group("polygenelubricants", 50) == 0  # Kafka's Utils.abs maps MIN_VALUE to 0
    assert partition_for_group("test", 50) == 3556498 % 50
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # UTF-16 surrogate pair
