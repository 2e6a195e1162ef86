"""The records of the ``__cluster_metadata`` log, framed as Kafka's ``MetadataRecordSerde`` frames
them in the value of each log record: an unsigned varint frame version (1), an unsigned varint
record type (the record's ``apiKey``), an unsigned varint record version, then the record.

The record classes are generated from ``schemas/metadata/`` (Kafka's
``metadata/src/main/resources/common/metadata/*.json``); ``RECORD_TYPES`` maps each record type to
its class. Bytes that are not a known record decode to a typed :class:`DecodeError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from kafka_wire import messages
from kafka_wire.codec.runtime import read_uvarint, write_uvarint
from kafka_wire.codec.structs import Message
from kafka_wire.errors import DecodeError, InvalidValueError, TruncatedError

#: ``MetadataRecordSerde``'s default frame version (``AbstractApiMessageSerde.DEFAULT_FRAME_VERSION``).
FRAME_VERSION: Final = 1

#: Record type (the schema's ``apiKey``) -> the name of its class in :mod:`kafka_wire.messages`.
RECORD_NAMES: Final[dict[int, str]] = {
    0: "RegisterBrokerRecord",
    1: "UnregisterBrokerRecord",
    2: "TopicRecord",
    3: "PartitionRecord",
    4: "ConfigRecord",
    5: "PartitionChangeRecord",
    7: "FenceBrokerRecord",
    8: "UnfenceBrokerRecord",
    9: "RemoveTopicRecord",
    10: "DelegationTokenRecord",
    11: "UserScramCredentialRecord",
    12: "FeatureLevelRecord",
    14: "ClientQuotaRecord",
    15: "ProducerIdsRecord",
    17: "BrokerRegistrationChangeRecord",
    18: "AccessControlEntryRecord",
    19: "RemoveAccessControlEntryRecord",
    20: "NoOpRecord",
    22: "RemoveUserScramCredentialRecord",
    23: "BeginTransactionRecord",
    24: "EndTransactionRecord",
    26: "RemoveDelegationTokenRecord",
}


class _RecordTypes(Mapping[int, type[Message]]):
    """Record type -> record class, each class's module loaded when it is first looked up (a
    start uses four of the 22 record types; each module costs about 0.8 M instructions)."""

    __slots__ = ()

    def __getitem__(self, key: int) -> type[Message]:
        cls: type[Message] = getattr(messages, RECORD_NAMES[key])
        return cls

    def __iter__(self) -> Iterator[int]:
        return iter(RECORD_NAMES)

    def __len__(self) -> int:
        return len(RECORD_NAMES)


#: Record type (the schema's ``apiKey``) -> record class.
RECORD_TYPES: Final[Mapping[int, type[Message]]] = _RecordTypes()

# Kafka 3.9 (metadata version 3.9-IV0) writes RegisterBrokerRecord v3 (log dirs), PartitionRecord
# and PartitionChangeRecord v0 unless ELR is enabled (v2), BrokerRegistrationChangeRecord v2. ELR
# (KIP-966) is tracked here, so the partition records are written at v2: every record is written
# at its newest version when none is asked for.


def record_type(record: Message) -> int:
    """The record type of ``record`` (its class's ``API_KEY``)."""
    key = type(record).API_KEY
    if key is None or RECORD_NAMES.get(key) != type(record).__name__ or RECORD_TYPES[key] is not type(record):
        raise TypeError(f"{type(record).__name__} is not a metadata record")
    return key


def encode_record(record: Message, version: int | None = None) -> bytes:
    """The framed bytes of ``record`` (at ``version``, else its newest version)."""
    key = record_type(record)
    if version is None:
        version = type(record).VERSIONS[-1]
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
    cls = RECORD_TYPES[key] if key in RECORD_NAMES else None
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
