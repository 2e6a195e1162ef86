"""``partition.metadata``: the file in each partition directory that names the topic's id.

Kafka writes two lines, ``version: 0`` and ``topic_id: <id>``, the id in Kafka's text form of a
Uuid (URL-safe base64 of its 16 bytes, without padding). The file is read as Java properties (as
Kafka's ``PartitionMetadataFile`` writes ``key: value``): the ``topic_id`` entry is looked up by
name, and an id that does not decode to 16 bytes reads as no id.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Final

from kafka_wire.logformat.properties import parse_properties

PARTITION_METADATA: Final = "partition.metadata"
PARTITION_METADATA_VERSION: Final = 0


def kafka_uuid_text(value: uuid.UUID) -> str:
    """Kafka's text form of a Uuid: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID | None:
    """The Uuid of Kafka's text form; None when ``text`` is not one."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return uuid.UUID(bytes=raw) if len(raw) == 16 else None


def format_partition_metadata(topic_id: uuid.UUID) -> bytes:
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {kafka_uuid_text(topic_id)}\n".encode("ascii")


def parse_partition_metadata(text: str) -> uuid.UUID | None:
    """The topic id of a ``partition.metadata`` file's text; None when it names none."""
    value = parse_properties(text).get("topic_id")
    return parse_kafka_uuid(value) if value else None
