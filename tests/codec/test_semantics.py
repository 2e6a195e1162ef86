"""Kafka's codec rules, pinned one by one (PROTOCOL-NOTES sections 4-5)."""

from __future__ import annotations

import json
import subprocess
import sys
from uuid import UUID

import pytest

import kafka_wire
from kafka_wire.codec import interp
from kafka_wire.codegen.error_codes import ERROR_CODES
from kafka_wire.codegen.error_descriptions import DESCRIPTIONS
from kafka_wire.errors import (
    EncodeError,
    FieldNotInVersionError,
    InvalidValueError,
    UnsupportedApiError,
    UnsupportedVersionError,
    ValueOutOfRangeError,
)
from kafka_wire.messages import (
    ApiKey,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ControlledShutdownRequest,
    CreateTopicsRequest,
    ErrorCode,
    FetchRequest,
    FetchResponse,
    FetchResponseFetchableTopicResponse,
    FetchResponsePartitionData,
    FetchResponseSnapshotId,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    RequestHeader,
    ResponseHeader,
    catalog,
)
from kafka_wire.protocol.framing import request_header_version, response_header_version
from tests.conftest import ROOT


def test_catalog_shape() -> None:
    entries = catalog()
    assert [e.api_key for e in entries] == list(range(95))
    produce = entries[0]
    assert produce.name == "Produce" and produce.request is ProduceRequest
    assert produce.versions == tuple(range(14))  # v0-2 from the older snapshot, v3-13 from the latest
    assert entries[ApiKey.LEADER_AND_ISR].versions == tuple(range(8))
    assert entries[74].name == "ListConfigResources" and entries[74].versions == (0, 1)
    assert all(e.versions == tuple(sorted(e.versions)) and e.versions for e in entries)


def test_header_versions() -> None:
    assert (
        request_header_version(ApiKey.CREATE_TOPICS, 4),
        response_header_version(ApiKey.CREATE_TOPICS, 4),
    ) == (1, 0)
    assert (
        request_header_version(ApiKey.CREATE_TOPICS, 5),
        response_header_version(ApiKey.CREATE_TOPICS, 5),
    ) == (2, 1)
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 1) == 1
    for v in ApiVersionsResponse.VERSIONS:
        assert response_header_version(ApiKey.API_VERSIONS, v) == 0


def test_controlled_shutdown_v0_has_an_eight_byte_header() -> None:
    frame = kafka_wire.encode_request(
        RequestHeader(correlation_id=9, client_id="c"), ControlledShutdownRequest(broker_id=1), 0
    )
    assert frame == bytes.fromhex("0000000c000700000000000900000001")
    header, body = kafka_wire.decode_request(frame)
    assert (
        header.correlation_id == 9
        and header.client_id == ""
        and body == ControlledShutdownRequest(broker_id=1)
    )


def test_flexible_request_header_keeps_classic_client_id() -> None:
    frame = kafka_wire.encode_request(
        RequestHeader(correlation_id=1, client_id="ab"), ApiVersionsRequest(), 3
    )
    # size, key 18, version 3, correlation 1, client id as int16 length + bytes, empty tag block, then body
    assert frame[4:17] == bytes.fromhex("00120003000000010002616200")


def test_api_versions_response_uses_header_v0_even_when_flexible() -> None:
    body = ApiVersionsResponse(error_code=0)
    frame = kafka_wire.encode_response(ResponseHeader(correlation_id=5), body, 3)
    assert (
        frame[4:8] == b"\x00\x00\x00\x05" and frame[8:10] == b"\x00\x00"
    )  # no tag block after correlation id
    header, decoded = kafka_wire.decode_response(frame, ApiKey.API_VERSIONS, 3)
    assert header.correlation_id == 5 and decoded == body


def test_non_default_value_in_missing_version_raises() -> None:
    # MetadataRequest.AllowAutoTopicCreation arrived in v4 and is not ignorable.
    with pytest.raises(FieldNotInVersionError) as info:
        MetadataRequest(topics=[], allow_auto_topic_creation=False).encode(3)
    assert "AllowAutoTopicCreation" in str(info.value)
    assert MetadataRequest(topics=[], allow_auto_topic_creation=True).encode(3) == b"\x00\x00\x00\x00"


def test_ignorable_field_is_dropped() -> None:
    # ProduceResponse.ThrottleTimeMs (v1+) is ignorable: silently dropped at v0.
    body = ProduceResponse(throttle_time_ms=100)
    assert ProduceResponse.decode(body.encode(0), 0).throttle_time_ms == 0
    # CreateTopicsRequest.ValidateOnly (v1+) is not: losing it is an error.
    with pytest.raises(FieldNotInVersionError, match="validateOnly"):
        CreateTopicsRequest(validate_only=True).encode(0)


def test_nested_field_error_has_a_path() -> None:
    body = MetadataRequest(topics=[MetadataRequestTopic(name="a"), MetadataRequestTopic(name=None)])
    with pytest.raises(ValueOutOfRangeError) as info:
        body.encode(9)  # Name is nullable only from v10
    assert info.value.path == ("topics", 1, "name")
    assert "MetadataRequest v9 (topics[1].name)" in str(info.value)


def test_int_range_and_string_length_are_checked() -> None:
    with pytest.raises(ValueOutOfRangeError, match="outside int16"):
        ProduceRequest(acks=1 << 15).encode(3)
    with pytest.raises(ValueOutOfRangeError, match="longer than 32767"):
        RequestHeader(client_id="x" * 0x8000).encode(1)
    with pytest.raises(UnsupportedVersionError):
        ProduceRequest().encode(99)


def test_tagged_fields_sorted_and_defaults_omitted() -> None:
    part = FetchResponsePartitionData(partition_index=0, records=None)
    base = FetchResponse(
        responses=[FetchResponseFetchableTopicResponse(topic="t", partitions=[part])]
    ).encode(12)
    part.snapshot_id = FetchResponseSnapshotId(end_offset=7, epoch=3)
    with_tag = FetchResponse(
        responses=[FetchResponseFetchableTopicResponse(topic="t", partitions=[part])]
    ).encode(12)
    # The snapshot id (tag 2) is written only when it differs from its default.
    # tag 2, size 13, then the struct: int64 + int32 + its own empty tag block.
    assert len(with_tag) == len(base) + 1 + 1 + 13
    again = FetchResponse.decode(with_tag, 12)
    assert again.responses[0].partitions[0].snapshot_id == FetchResponseSnapshotId(end_offset=7, epoch=3)


def test_unknown_tags_are_kept_and_re_emitted_in_order() -> None:
    body = ApiVersionsRequest(unknown_tagged_fields=((2, b"\x01\x02\x03"), (5, b"\x04\x05")))
    encoded = body.encode(3)
    assert encoded.endswith(bytes.fromhex("02020301020 3".replace(" ", "") + "05020405"))
    assert ApiVersionsRequest.decode(encoded, 3) == body
    with pytest.raises(EncodeError, match="tagged fields cannot be written"):
        body.encode(2)
    with pytest.raises(EncodeError, match="collides"):
        FetchRequest(unknown_tagged_fields=((0, b"\x00"),)).encode(12)


def test_tag_valid_only_in_another_version_is_rejected() -> None:
    # FetchRequest tag 1 (ReplicaState) exists from v15; at v12 it must not appear.
    plain = FetchRequest().encode(12)
    assert plain.endswith(b"\x00")  # empty top-level tag block
    tampered = plain[:-1] + bytes.fromhex("01010d") + b"\x00" * 13
    with pytest.raises(InvalidValueError, match="tag 1 is not valid in version 12"):
        FetchRequest.decode(tampered, 12)
    assert FetchRequest.decode(plain[:-1] + bytes.fromhex("01090100"), 12).unknown_tagged_fields == (
        (9, b"\x00"),
    )


# Found by fuzz/fuzz_requests.py and fuzz/fuzz_responses.py: a tag block with the same tag twice
# decoded, and the message could not be encoded again (EncodeError: tag used twice).
_ASCENDING_TAGS = "000000150012000300000001000163{tags}0261023100"  # ApiVersions v3


@pytest.mark.parametrize(
    ("tags", "message"), [("0200000000", "tag 0 after tag 0"), ("0205000300", "tag 3 after tag 5")]
)
def test_tags_that_do_not_ascend_are_rejected(tags: str, message: str) -> None:
    frame = bytes.fromhex(_ASCENDING_TAGS.format(tags=tags))  # in the request header's tag block
    with pytest.raises(InvalidValueError, match=message):
        kafka_wire.decode_request(frame)
    with pytest.raises(InvalidValueError, match=message):
        interp.decode(RequestHeader, frame, 4, 2)
    ascending = bytes.fromhex(_ASCENDING_TAGS.format(tags="0203000500"))
    header, _ = kafka_wire.decode_request(ascending)
    assert header.unknown_tagged_fields == ((3, b""), (5, b""))


def test_duplicate_tags_in_a_response_body_are_rejected() -> None:
    # SaslAuthenticateResponse v2 as the fuzzer found it (size put right): tag 0 twice in the body's tag block.
    frame = bytes.fromhex("00000018000000fa0000000101000000000303030303030000000000")
    with pytest.raises(InvalidValueError, match="tags must ascend"):
        kafka_wire.decode_response(frame, ApiKey.SASL_AUTHENTICATE, 2)


def test_null_in_non_nullable_field_is_a_decode_error() -> None:
    with pytest.raises(InvalidValueError, match="non-nullable") as info:
        MetadataResponse.decode(bytes.fromhex("ffffffffffffffff00000000"), 1)
    assert info.value.path == ("brokers",) and info.value.offset == 0


def test_bad_utf8_reports_offset() -> None:
    buf = bytes.fromhex("00030001000000070002") + b"\xff\xfe"
    with pytest.raises(InvalidValueError, match="UTF-8") as info:
        RequestHeader.decode(buf, 1)
    assert info.value.offset == 10 and info.value.path == ("client_id",)


def test_unknown_api_in_request_frame() -> None:
    frame = bytes.fromhex("0000000a0fa000000000002affff")
    with pytest.raises(UnsupportedApiError) as info:
        kafka_wire.decode_request(frame)
    assert info.value.correlation_id == 42 and info.value.api_key == 4000


def test_uuid_default_and_records_memoryview() -> None:
    partition = FetchResponsePartitionData(records=b"abc")
    decoded = FetchResponsePartitionData.decode(partition.encode(4), 4)
    assert isinstance(decoded.records, memoryview) and bytes(decoded.records) == b"abc"
    assert FetchResponseFetchableTopicResponse().topic_id == UUID(int=0)


def test_error_codes() -> None:
    assert ErrorCode.NONE == 0 and ErrorCode.UNKNOWN_SERVER_ERROR == -1  # type: ignore[comparison-overlap]  # IntEnum members equal their codes: the point here
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable
    assert not ErrorCode.INVALID_TOPIC_EXCEPTION.retriable
    assert all(code.description for code in ErrorCode)
    assert ErrorCode.lookup(6) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert ErrorCode.lookup(30000) == 30000 and type(ErrorCode.lookup(30000)) is int


def test_every_error_code_fact_has_one_description() -> None:
    assert list(DESCRIPTIONS) == [fact.name for fact in ERROR_CODES]


def test_schemas_and_generated_code_are_up_to_date() -> None:
    for module in ("kafka_wire.schema.importer", "kafka_wire.codegen"):
        result = subprocess.run(
            [sys.executable, "-m", module, "--check"], cwd=ROOT, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr


def test_decode_cli(tmp_path: object) -> None:
    frame = kafka_wire.encode_request(
        RequestHeader(correlation_id=3, client_id="cli"), MetadataRequest(topics=None), 12
    )
    result = subprocess.run(
        [sys.executable, "-m", "kafka_wire.cli", "decode", "--hex", "-"],
        input=frame.hex(), capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["message"] == "MetadataRequest" and record["header"]["client_id"] == "cli"
    assert record["body"]["topics"] is None
