"""Frames recorded from real clients (tests/data/captures, ``make captures``) decode and re-encode
byte for byte."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Final

import pytest

import kafka_wire
import kafka_wire.errors
from kafka_wire.codec.runtime import ZERO_UUID
from kafka_wire.messages import ApiVersionsRequest, InitProducerIdRequest, MetadataRequest, ProduceRequest
from tests.conftest import CAPTURES as CAPTURES_DIR
from tests.interop.recording_server import TOPIC_ID

CAPTURES = sorted(CAPTURES_DIR.glob("*.hex"))

#: File prefix -> (the client id its driver sets, the ApiVersions software name it sends from v3 on).
CLIENTS: Final = {
    "aiokafka": ("kw-interop-aiokafka", "aiokafka"),
    "confluent-kafka": ("kw-interop-confluent", "confluent-kafka-python"),
    "java": ("kw-interop-java", "apache-kafka-java"),
    "java4": ("kw-interop-java4", "apache-kafka-java"),
    "kafka-python": ("kw-interop-kafka-python", "kafka-python"),
    "kafkajs": ("kw-interop-kafkajs", "kafkajs"),
}
#: What tools/record_captures.py recorded, per client: (ApiVersions, Metadata, InitProducerId,
#: Produce) frames. Produce: one per codec at the client's newest version, and as many again at v8
#: for the clients whose newest is flexible. The 4.4 Java client's second ApiVersions (v5) carries
#: the cluster id and node id it learned from Metadata (KIP-1242).
EXPECTED: Final = {
    "aiokafka": (1, 3, 0, 5),
    "confluent-kafka": (1, 3, 0, 10),
    "java": (1, 3, 1, 10),
    "java4": (2, 3, 1, 10),
    "kafka-python": (1, 4, 1, 10),
    "kafkajs": (1, 2, 0, 5),
}
KINDS: Final = ("apiversions", "metadata", "initproducerid", "produce")


def client_of(path: Path) -> str:
    return next(prefix for prefix in CLIENTS if path.name.startswith(prefix + "-"))


def test_every_client_is_recorded() -> None:
    # Each file is named <client>-<api>-v<version>...; an empty or partial folder fails here.
    counts = Counter(
        (client_of(path), path.name[len(client_of(path)) + 1 :].split("-")[0]) for path in CAPTURES
    )
    got = {client: tuple(counts[client, kind] for kind in KINDS) for client in CLIENTS}
    assert got == EXPECTED
    assert len(CAPTURES) == sum(map(sum, EXPECTED.values()))


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_capture_round_trips(path: Path) -> None:
    frame = bytes.fromhex(path.read_text().strip())
    decoded = kafka_wire.decode_request_frame(frame)
    header, body = decoded.header, decoded.body
    version = header.request_api_version
    assert kafka_wire.encode_request(header, body, version, trailing=decoded.trailing) == frame
    # Without the trailing bytes the frame is what Kafka would re-serialize.
    assert kafka_wire.decode_request(kafka_wire.encode_request(header, body, version)) == (header, body)
    client_id, software = CLIENTS[client_of(path)]
    assert header.client_id == client_id
    assert f"-v{version}" in path.stem
    if isinstance(body, ProduceRequest):
        # Produce v13+ names the topic by its id alone (the recording server's TOPIC_ID).
        assert [(t.name, t.topic_id) for t in body.topic_data] == (
            [("", TOPIC_ID)] if version >= 13 else [("t1", ZERO_UUID)]
        )
        (partition,) = body.topic_data[0].partition_data
        assert partition.index == 0
        assert partition.records is not None and len(partition.records) > 61
    elif isinstance(body, ApiVersionsRequest):
        assert body.client_software_name == (software if version >= 3 else "")
    elif isinstance(body, InitProducerIdRequest):
        assert body.transactional_id is None
    else:
        assert isinstance(body, MetadataRequest)


def test_librdkafka_metadata_trailing_bytes_are_kept() -> None:
    # librdkafka's admin client sends three bytes after this Metadata v13 body; Kafka accepts them,
    # strict mode does not.
    frame = bytes.fromhex((CAPTURES_DIR / "confluent-kafka-metadata-v13-2.hex").read_text().strip())
    decoded = kafka_wire.decode_request_frame(frame)
    assert decoded.trailing == bytes.fromhex("010000")
    with pytest.raises(kafka_wire.errors.InvalidValueError, match="3 bytes left"):
        kafka_wire.decode_request(frame, strict=True)


def test_only_librdkafka_sends_trailing_bytes() -> None:
    trailing = [
        p.name for p in CAPTURES if kafka_wire.decode_request_frame(bytes.fromhex(p.read_text())).trailing
    ]
    assert trailing == ["confluent-kafka-metadata-v13-2.hex"]
