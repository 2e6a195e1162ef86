"""Metadata records framed as Kafka's MetadataRecordSerde: every record and version round-trips;
bytes that are no record give a typed DecodeError."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.broker.controller.records import RECORD_TYPES, decode_record, encode_record
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, InvalidValueError, TruncatedError
from kafka_wire.messages import PartitionRecord, TopicRecord
from kafka_wire.testing.strategies import messages

CASES = [(key, cls, v) for key, cls in sorted(RECORD_TYPES.items()) for v in cls.VERSIONS]


def test_the_record_types_are_kafkas() -> None:
    names = {key: cls.__name__ for key, cls in RECORD_TYPES.items()}
    assert names == {
        0: "RegisterBrokerRecord", 1: "UnregisterBrokerRecord", 2: "TopicRecord", 3: "PartitionRecord",
        4: "ConfigRecord", 5: "PartitionChangeRecord", 7: "FenceBrokerRecord", 8: "UnfenceBrokerRecord",
        9: "RemoveTopicRecord", 10: "DelegationTokenRecord", 11: "UserScramCredentialRecord", 12: "FeatureLevelRecord",
        14: "ClientQuotaRecord", 15: "ProducerIdsRecord", 17: "BrokerRegistrationChangeRecord",
        18: "AccessControlEntryRecord", 19: "RemoveAccessControlEntryRecord", 20: "NoOpRecord",
        22: "RemoveUserScramCredentialRecord", 23: "BeginTransactionRecord",
        24: "EndTransactionRecord", 26: "RemoveDelegationTokenRecord",
    }  # fmt: skip


@pytest.mark.parametrize(("key", "cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for _, c, v in CASES])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_every_record_round_trips(key: int, cls: type[Message], version: int, data: st.DataObject) -> None:
    record = data.draw(messages(cls, version, unknown_tags=False))
    framed = encode_record(record, version)
    assert framed[:3] == bytes([1, key, version])  # frame version 1, record type, record version
    assert decode_record(framed) == record


def test_known_bytes_of_a_topic_record() -> None:
    record = TopicRecord(name="t", topic_id=uuid.UUID(int=1))
    framed = encode_record(record)
    # frame 1, type 2, version 0; compact string "t"; uuid; no tagged fields
    assert framed == bytes([1, 2, 0, 2, ord("t")]) + uuid.UUID(int=1).bytes + b"\x00"


def test_default_version_is_the_newest() -> None:
    assert encode_record(PartitionRecord())[:3] == bytes([1, 3, 2])


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", TruncatedError),
        (b"\x02\x02\x00", InvalidValueError),  # frame version 2
        (b"\x01\x63\x00", InvalidValueError),  # record type 99
        (b"\x01\x02\x05", InvalidValueError),  # TopicRecord v5
        (b"\x01\x02\x00\x02", DecodeError),  # truncated body
        (b"\x01\xff\xff\xff\xff\xff", InvalidValueError),  # varint too long
        (encode_record(TopicRecord(name="t")) + b"!", DecodeError),  # bytes left after the record
    ],
)
def test_garbage_is_a_typed_decode_error(data: bytes, error: type[DecodeError]) -> None:
    with pytest.raises(error):
        decode_record(data)


def test_encoding_a_non_metadata_message_is_a_type_error() -> None:
    from kafka_wire.messages import ApiVersionsRequest

    with pytest.raises(TypeError):
        encode_record(ApiVersionsRequest())
