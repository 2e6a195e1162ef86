"""The records of the ``__cluster_metadata`` log, framed as Kafka's ``MetadataRecordSerde`` frames
them in the value of each log record: an unsigned varint frame version (1), an unsigned varint
record type (the record's ``apiKey``), an unsigned varint record version, then the record.

The record classes are generated from ``schemas/metadata/`` (Kafka's
``metadata/src/main/resources/common/metadata/*.json``); ``RECORD_TYPES`` maps each record type to
its class. Bytes that are not a known record decode to a typed :class:`DecodeError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kafka_wire.codec.runtime import read_uvarint, write_uvarint
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, InvalidValueError, TruncatedError
from kafka_wire.messages import (
    AccessControlEntryRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)

#: ``MetadataRecordSerde``'s default frame version (``AbstractApiMessageSerde.DEFAULT_FRAME_VERSION``).
FRAME_VERSION: Final = 1

#: Record type (the schema's ``apiKey``) -> record class.
RECORD_TYPES: Final[dict[int, type[Message]]] = {
    cls.API_KEY: cls  # type: ignore[misc]
    for cls in (
        RegisterBrokerRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        ConfigRecord,
        PartitionChangeRecord,
        FenceBrokerRecord,
        UnfenceBrokerRecord,
        RemoveTopicRecord,
        FeatureLevelRecord,
        ProducerIdsRecord,
        BrokerRegistrationChangeRecord,
        NoOpRecord,
        BeginTransactionRecord,
        EndTransactionRecord,
        AccessControlEntryRecord,
        RemoveAccessControlEntryRecord,
        ClientQuotaRecord,
        UserScramCredentialRecord,
        RemoveUserScramCredentialRecord,
        DelegationTokenRecord,
        RemoveDelegationTokenRecord,
    )
}

#: The version each record is written at when none is asked for. Kafka 3.9 (metadata version
#: 3.9-IV0) writes these: RegisterBrokerRecord v3 (log dirs), PartitionRecord and
#: PartitionChangeRecord v0 unless ELR is enabled (v2), BrokerRegistrationChangeRecord v2.
#: ELR (KIP-966) is tracked here, so the partition records are written at v2.
DEFAULT_VERSIONS: Final[dict[type[Message], int]] = {cls: cls.VERSIONS[-1] for cls in RECORD_TYPES.values()}


def record_type(record: Message) -> int:
    """The record type of ``record`` (its class's ``API_KEY``)."""
    key = type(record).API_KEY
    if key is None or RECORD_TYPES.get(key) is not type(record):
        raise TypeError(f"{type(record).__name__} is not a metadata record")
    return key


def encode_record(record: Message, version: int | None = None) -> bytes:
    """The framed bytes of ``record`` (at ``version``, else its newest version)."""
    key = record_type(record)
    if version is None:
        version = DEFAULT_VERSIONS[type(record)]
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, key)
    write_uvarint(out, version)
    record.encode_into(out, version)
    return bytes(out)


def _uvarint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    try:
        return read_uvarint(data, pos)
    except IndexError:
        raise TruncatedError(f"input ends inside the {what}", offset=pos, message="metadata record") from None
    except DecodeError as exc:
        raise exc.located(message="metadata record") from None


def decode_record(data: bytes | bytearray | memoryview) -> Message:
    """The record framed in ``data``; :class:`DecodeError` on anything else (an unknown frame
    version, record type or version, a malformed body, or bytes left after it)."""
    buf = bytes(data)
    frame, pos = _uvarint(buf, 0, "frame version")
    if frame != FRAME_VERSION:
        raise InvalidValueError(f"unknown frame version {frame}", offset=0, message="metadata record")
    start = pos
    key, pos = _uvarint(buf, pos, "record type")
    cls = RECORD_TYPES.get(key)
    if cls is None:
        raise InvalidValueError(
            f"unknown metadata record type {key}", offset=start, message="metadata record"
        )
    start = pos
    version, pos = _uvarint(buf, pos, "record version")
    if version not in cls.VERSIONS:
        raise InvalidValueError(
            f"unsupported {cls.__name__} version {version}", offset=start, message="metadata record"
        )
    try:
        record: Message = cls.decode(buf[pos:], version, strict=True)
    except DecodeError as exc:
        raise exc.located(offset_base=pos, message=cls.__name__, version=version) from None
    return record


def decode_records(values: Iterable[bytes | bytearray | memoryview]) -> list[Message]:
    """The records of a committed batch (each log record's value), in order."""
    return [decode_record(v) for v in values]
