"""The broker's table of topics (ids, partition counts, config overrides), which follows the
metadata log (``kafka_wire.broker.node`` applies each delta to it), and the rules for topic
names and ids.

``<topic>-<partition>/partition.metadata`` (Kafka's file naming the topic id) is written through
a storage effect, replaced atomically (written to a ``.tmp`` file, fsynced, renamed).
``meta.properties`` and the checks made at start are in :mod:`kafka_wire.broker.data_dir`.
"""

from __future__ import annotations

import random
import re
import uuid
from dataclasses import field
from typing import Final

from kafka_wire.broker.effects import StorageEffect
from kafka_wire.broker.log.files import replace_atomically
from kafka_wire.logformat.names import partition_dir
from kafka_wire.logformat.partition_metadata import PARTITION_METADATA, format_partition_metadata
from kafka_wire.quick_dataclass import dataclass

OFFSETS_TOPIC: Final = "__consumer_offsets"
#: Kafka's rule for topic names (``Topic.validate``): at most 249 of ``[a-zA-Z0-9._-]``.
_LEGAL_TOPIC: Final = r"[a-zA-Z0-9._-]{1,249}"  # compiled (and kept) by ``re`` on first use


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` is not a legal topic name, or None."""
    if name in ("", ".", ".."):
        return f"topic name {name!r} is illegal"
    if not re.fullmatch(_LEGAL_TOPIC, name):
        return f"topic name {name!r} is illegal: use at most 249 of ASCII letters, digits, '.', '_' and '-'"
    return None


def random_uuid(rng: random.Random) -> uuid.UUID:
    """A version-4 UUID from the injected generator (never the all-zero or reserved ids)."""
    while True:
        value = uuid.UUID(int=rng.getrandbits(128), version=4)
        if value.int not in (0, 1):
            return value


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    #: Topic config overrides, by Kafka property name.
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class ClusterMetadata:
    cluster_id: str
    node_id: int
    topics: dict[str, TopicInfo] = field(default_factory=dict)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None


def partition_metadata_effects(topic: TopicInfo, partition: int) -> list[StorageEffect]:
    """Kafka's ``partition.metadata`` file for one partition directory."""
    data = format_partition_metadata(topic.topic_id)
    return replace_atomically(f"{partition_dir(topic.name, partition)}/{PARTITION_METADATA}", data)
