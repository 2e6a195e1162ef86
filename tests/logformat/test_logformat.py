"""Kafka's on-disk format: names, index entries, batch headers, checkpoints, partition.metadata."""

from __future__ import annotations

import uuid

import pytest

from kafka_wire.errors import CorruptBatchError, DecodeError
from kafka_wire.logformat import (
    BatchHeader,
    CheckpointError,
    check_batch,
    decode_offset_entries,
    decode_time_entries,
    encode_offset_entry,
    encode_time_entry,
    file_prefix,
    format_epoch_checkpoint,
    format_offset_file,
    format_partition_checkpoint,
    format_partition_metadata,
    parse_epoch_checkpoint,
    parse_header,
    parse_offset_file,
    parse_partition_checkpoint,
    parse_partition_dir,
    parse_partition_metadata,
    parse_segment_name,
    partition_dir,
    segment_file_name,
)
from kafka_wire.logformat.meta_properties import MetaProperties, format_meta_properties, parse_meta_properties
from kafka_wire.logformat.partition_metadata import kafka_uuid_text, parse_kafka_uuid
from kafka_wire.records import NewRecord, build_batch


# -- names --------------------------------------------------------------------------------------------
def test_segment_names_round_trip() -> None:
    assert file_prefix(42) == "00000000000000000042"
    assert segment_file_name(42, ".timeindex") == "00000000000000000042.timeindex"
    assert parse_segment_name("00000000000000000042.log") == (42, ".log")
    assert parse_segment_name("00000000000000000042.log.swap") == (42, ".log.swap")
    assert parse_segment_name(segment_file_name(2**63 - 1, ".index")) == (2**63 - 1, ".index")


@pytest.mark.parametrize(
    "name",
    [
        "0000000000000000042.log",
        "00000000000000000042",
        "leader-epoch-checkpoint",
        "0000000000000000004².log",
        "",
    ],
)
def test_not_segment_names(name: str) -> None:
    assert parse_segment_name(name) is None


def test_partition_dirs() -> None:
    assert partition_dir("orders", 3) == "orders-3"
    assert parse_partition_dir("orders-3") == ("orders", 3)
    assert parse_partition_dir("my-topic-10") == ("my-topic", 10)
    for name in (
        "orders-03",
        "orders-3.abc-delete",
        "orders-3-future",
        "orders-",
        "-3",
        "orders-²",
        "orders",
    ):
        assert parse_partition_dir(name) is None, name


# -- index entries ------------------------------------------------------------------------------------
def test_index_entries_round_trip_and_stop_at_zero_tail() -> None:
    entries = [(0, 0), (5, 4096), (9, 8200)]
    data = b"".join(encode_offset_entry(r, p) for r, p in entries)
    assert decode_offset_entries(data + bytes(8 * 3) + b"\x01\x02") == entries
    times = [(1000, 0), (1005, 5), (2000, 9)]
    tdata = b"".join(encode_time_entry(t, r) for t, r in times)
    assert decode_time_entries(memoryview(tdata + bytes(12))) == times


def test_index_entries_stop_at_first_that_does_not_increase() -> None:
    offsets = b"".join(encode_offset_entry(r, p) for r, p in [(1, 10), (2, 5), (3, 20)])
    assert decode_offset_entries(offsets) == [(1, 10)]  # position went back
    times = b"".join(encode_time_entry(t, r) for t, r in [(10, 1), (10, 2)])
    assert decode_time_entries(times) == [(10, 1)]  # timestamp did not grow


# -- batch headers ------------------------------------------------------------------------------------
def test_v2_header_of_a_built_batch() -> None:
    raw = build_batch(
        [NewRecord(key=None, value=b"a", timestamp=5), NewRecord(key=None, value=b"b", timestamp=9)],
        base_offset=40,
    )
    header = parse_header(b"junk" + raw, 4, 1000)
    assert header == BatchHeader(1000, len(raw), 2, 40, 41, 9, header.attributes if header else 0, 2, -1)
    assert header is not None and header.next_offset == 42 and header.end == 1000 + len(raw)
    assert not header.is_control and not header.is_transactional and not header.compressed
    check_batch(raw, header)
    assert parse_header(raw[:60], 0, 0) is None  # the v2 header is not complete yet
    assert parse_header(raw[:16], 0, 0) is None


def test_header_errors_are_decode_errors() -> None:
    raw = bytearray(build_batch([NewRecord(key=None, value=b"a")], base_offset=0))
    raw[16] = 7
    with pytest.raises(CorruptBatchError, match="unknown magic 7"):
        parse_header(bytes(raw), 0, 0)
    small = (0).to_bytes(8, "big") + (3).to_bytes(4, "big") + bytes(10)
    with pytest.raises(CorruptBatchError, match="below the 14-byte minimum"):
        parse_header(small, 0, 0)
    good = build_batch([NewRecord(key=None, value=b"a")], base_offset=0)
    header = parse_header(good, 0, 0)
    assert header is not None
    damaged = bytearray(good)
    damaged[-1] ^= 0xFF
    with pytest.raises(DecodeError):
        check_batch(bytes(damaged), header)


# -- checkpoints --------------------------------------------------------------------------------------
def test_offset_files() -> None:
    assert format_offset_file(42) == b"42\n"
    assert parse_offset_file(b"42\n") == 42
    for bad in (b"", b"-1\n", b"x\n", b"1" * 20, b" " * 40 + b"1"):
        assert parse_offset_file(bad) is None, bad


def test_partition_checkpoint_round_trip() -> None:
    entries = {("orders", 1): 7, ("orders", 0): 50, ("a-b", 12): 0}
    text = format_partition_checkpoint(entries)
    assert text == "0\n3\na-b 12 0\norders 0 50\norders 1 7\n"
    assert parse_partition_checkpoint(text) == entries
    assert parse_partition_checkpoint("") == {}
    assert parse_partition_checkpoint("0\n") == {}
    assert parse_partition_checkpoint("0\n0\n") == {}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1\n0\n", "version"),
        ("garbage", "version"),
        ("0\nx\n", "count"),
        ("0\n2\norders 0 5\n", "expected 2 entries but found 1"),
        ("0\n1\norders 0\n", "malformed line"),
        ("0\n1\norders x 5\n", "malformed line"),
        ("0\n1\norders 0 99999999999999999999\n", "malformed line"),
    ],
)
def test_partition_checkpoint_refused(text: str, why: str) -> None:
    with pytest.raises(CheckpointError, match=why):
        parse_partition_checkpoint(text)


def test_leader_epoch_checkpoint() -> None:
    entries = [(0, 0), (3, 120), (4, 500)]
    text = format_epoch_checkpoint(entries)
    assert text == "0\n3\n0 0\n3 120\n4 500\n"
    assert parse_epoch_checkpoint(text) == entries
    with pytest.raises(CheckpointError, match="malformed line") as caught:
        parse_epoch_checkpoint("0\n2\n0 0\n3 x\n")
    assert caught.value.offset == len("0\n2\n0 0\n")


# -- partition.metadata -------------------------------------------------------------------------------
def test_partition_metadata_round_trip() -> None:
    topic_id = uuid.UUID("0f7a9c2e-1b3d-4e5f-8a6b-7c8d9e0f1a2b")
    data = format_partition_metadata(topic_id)
    assert data == f"version: 0\ntopic_id: {kafka_uuid_text(topic_id)}\n".encode()
    assert "=" not in kafka_uuid_text(topic_id) and len(kafka_uuid_text(topic_id)) == 22
    assert parse_partition_metadata(data.decode()) == topic_id
    assert parse_kafka_uuid(kafka_uuid_text(topic_id)) == topic_id


def test_partition_metadata_without_an_id() -> None:
    assert parse_partition_metadata("version: 0\n") is None
    assert parse_partition_metadata("version: 0\ntopic_id: AAAA\n") is None  # 3 bytes, not 16
    assert parse_partition_metadata("version: 0\ntopic_id: !!\n") is None


# -- meta.properties ----------------------------------------------------------------------------------
def test_meta_properties_round_trip() -> None:
    data = format_meta_properties(
        node_id=3, cluster_id="MkU3OEVBNTcwNTJENDM2Qg", directory_id="AAAAAAAAAAAAAAAAAAAAAA"
    )
    assert (
        data
        == b"version=1\nnode.id=3\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n"
    )
    assert parse_meta_properties(data.decode()) == MetaProperties(
        "3", "MkU3OEVBNTcwNTJENDM2Qg", "AAAAAAAAAAAAAAAAAAAAAA"
    )
    # Kafka's own file: a comment line with the date, then the keys in any order
    kafka = "#\n#Tue Nov 25 12:00:00 UTC 2026\ncluster.id=abc\nnode.id=1\nversion=1\n"
    assert parse_meta_properties(kafka) == MetaProperties("1", "abc", None)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage\n",
        "version=0\nnode.id=1\ncluster.id=abc\n",
        "version=1\ncluster.id=abc\n",
        "version=1\nnode.id=1\ncluster.id=\n",
    ],
)
def test_meta_properties_that_are_not_kraft(text: str) -> None:
    assert parse_meta_properties(text) is None
