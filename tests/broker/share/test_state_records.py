"""``__share_group_state`` records (Kafka's ShareSnapshot / ShareUpdate layouts): round trips, the
merge of updates, Kafka's key placement, and bad bytes as ``DecodeError``."""

from __future__ import annotations

import uuid

import pytest

from kafka_wire.broker.share.state_records import (
    SNAPSHOT,
    UPDATE,
    ShareState,
    ShareStateKey,
    decode_key,
    decode_value,
    encode_key,
    encode_snapshot,
    merge_batches,
)
from kafka_wire.errors import DecodeError

KEY = ShareStateKey("g", uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"), 3)


def test_snapshot_round_trip() -> None:
    state = ShareState(
        state_epoch=1,
        leader_epoch=4,
        start_offset=10,
        snapshot_epoch=2,
        create_timestamp_ms=5,
        write_timestamp_ms=6,
        batches=[(10, 12, 0, 1), (13, 13, 4, 5)],
    )
    assert decode_key(encode_key(KEY)) == (SNAPSHOT, KEY)
    assert decode_key(encode_key(KEY, UPDATE)) == (UPDATE, KEY)
    assert decode_value(SNAPSHOT, encode_snapshot(state)) == state
    # Key: int16 type, int16-length group, 16-byte topic id, int32 partition (not flexible).
    assert encode_key(KEY) == b"\x00\x00" + b"\x00\x01g" + KEY.topic_id.bytes + b"\x00\x00\x00\x03"


def test_kafkas_coordinator_key_names_the_topic_id_in_base64() -> None:
    assert KEY.coordinator_key() == "g:Dx4tPEtaaXiHlqW0w9Lh8A:3"


def test_merge_overwrites_by_offset_and_drops_what_precedes_the_start() -> None:
    old = [(0, 9, 0, 1)]
    assert merge_batches(old, [(3, 4, 2, 1)], 2) == [(2, 2, 0, 1), (3, 4, 2, 1), (5, 9, 0, 1)]


@pytest.mark.parametrize(
    "data", [b"", b"\x00\x07\x00\x01g", b"\x00\x00\x00\x05ab", encode_key(KEY) + b"\x00"]
)
def test_bad_keys_are_decode_errors(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_key(data)


def test_bad_values_are_decode_errors() -> None:
    good = encode_snapshot(ShareState(batches=[(0, 0, 0, 1)]))
    for data in (b"", b"\x00\x01" + good[2:], good[:-3], good + b"\x00"):
        with pytest.raises(DecodeError):
            decode_value(SNAPSHOT, data)


def test_merge_works_by_ranges_whatever_their_span() -> None:
    huge = 1 << 60
    merged = merge_batches([(0, huge, 0, 1)], [(5, 6, 2, 1)], 0)
    assert merged == [(0, 4, 0, 1), (5, 6, 2, 1), (7, huge, 0, 1)]
    assert merge_batches(merged, [(0, huge, 4, 3)], 10) == [(10, huge, 4, 3)]
