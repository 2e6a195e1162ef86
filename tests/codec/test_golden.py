"""Frames captured from real clients decode and re-encode byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

import kafka_wire
import kafka_wire.errors
from kafka_wire.messages import ApiVersionsRequest, MetadataRequest, ProduceRequest
from tests.conftest import REFERENCE

CAPTURES = sorted((REFERENCE / "captures").glob("*.hex"))


def test_captures_are_present() -> None:
    # The capture set is part of ../shared; an empty glob would make the test below vacuous.
    assert len(CAPTURES) >= 35


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_capture_round_trips(path: Path) -> None:
    frame = bytes.fromhex(path.read_text().strip())
    decoded = kafka_wire.decode_request_frame(frame)
    header, body = decoded.header, decoded.body
    version = header.request_api_version
    assert kafka_wire.encode_request(header, body, version, trailing=decoded.trailing) == frame
    # Without the trailing bytes the frame is what Kafka would re-serialize.
    assert kafka_wire.decode_request(kafka_wire.encode_request(header, body, version)) == (header, body)
    client = path.stem.split("-")[0]
    expected_client = {"aiokafka": "aiokafka", "confluent": "rdkafka", "kafka": "kafka-python"}[client]
    assert header.client_id is not None and header.client_id.startswith(expected_client)
    if isinstance(body, ProduceRequest):
        assert [t.name for t in body.topic_data] == ["t1"]
        (partition,) = body.topic_data[0].partition_data
        assert partition.index == 0
        assert partition.records is not None and len(partition.records) > 61
    elif isinstance(body, ApiVersionsRequest):
        software = {"aiokafka": "aiokafka", "confluent": "confluent-kafka-python", "kafka": "kafka-python"}[client]
        assert version == 0 or body.client_software_name == software
    else:
        assert isinstance(body, MetadataRequest)


def test_librdkafka_metadata_trailing_bytes_are_kept() -> None:
    # librdkafka sends three bytes after this Metadata v12 body; Kafka accepts them, strict mode does not.
    frame = bytes.fromhex((REFERENCE / "captures" / "confluent-kafka-metadata-v12-2.hex").read_text().strip())
    decoded = kafka_wire.decode_request_frame(frame)
    assert decoded.trailing == bytes.fromhex("010000")
    with pytest.raises(kafka_wire.errors.InvalidValueError, match="3 bytes left"):
        kafka_wire.decode_request(frame, strict=True)
