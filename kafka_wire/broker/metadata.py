"""Cluster metadata kept by the broker: topics (ids, partition counts, config overrides) and the
next producer id, persisted in the data directory.

Files (all written through storage effects, each replaced atomically: written to a ``.tmp`` file,
fsynced, renamed):
- ``<topic>-<partition>/partition.metadata``: Kafka's file naming the topic id.
- ``kafka-wire-metadata.json``: what Kafka keeps in its metadata log.
``meta.properties`` and the checks made at start are in :mod:`kafka_wire.broker.data_dir`.
Topic config overrides that Kafka 4.0 removed (``message.format.version`` ..., stored by older
versions) are dropped when it is read, as Kafka drops them when it replays its metadata log.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.broker.effects import StorageEffect
from kafka_wire.broker.log.config import REMOVED_CONFIGS
from kafka_wire.broker.log.files import replace_atomically
from kafka_wire.broker.storage import StorageReader
from kafka_wire.logformat.names import partition_dir
from kafka_wire.logformat.partition_metadata import PARTITION_METADATA, format_partition_metadata

METADATA_FILE: Final = "kafka-wire-metadata.json"
OFFSETS_TOPIC: Final = "__consumer_offsets"
#: Kafka's rule for topic names (``Topic.validate``): at most 249 of ``[a-zA-Z0-9._-]``.
_LEGAL_TOPIC: Final = re.compile(r"[a-zA-Z0-9._-]{1,249}")
#: Producer ids Kafka hands out start at 0 in blocks; ours count up from here.
FIRST_PRODUCER_ID: Final = 0


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` is not a legal topic name, or None."""
    if name in ("", ".", ".."):
        return f"topic name {name!r} is illegal"
    if not _LEGAL_TOPIC.fullmatch(name):
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
    next_producer_id: int = FIRST_PRODUCER_ID
    #: Topics the file marks ``"internal": false`` (the files of older kafka_wire versions had
    #: that flag): an internal name among them was made by a client, and ``adopt`` says so. Whether
    #: a topic is internal is decided by its name alone (``internal_topics.is_internal``).
    marked_ordinary: set[str] = field(default_factory=set)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None

    @classmethod
    def load(cls, storage: StorageReader, *, node_id: int) -> ClusterMetadata:
        """Read the metadata file; ``ValueError`` says what is wrong with a damaged one."""
        size = storage.size(METADATA_FILE) or 0
        try:
            document = json.loads(storage.read(METADATA_FILE, 0, size))
            meta = cls(cluster_id=str(document["cluster_id"]), node_id=node_id)
            meta.next_producer_id = int(document.get("next_producer_id", FIRST_PRODUCER_ID))
            for entry in document.get("topics", []):
                topic = TopicInfo(
                    name=str(entry["name"]),
                    topic_id=uuid.UUID(str(entry["topic_id"])),
                    partitions=int(entry["partitions"]),
                    configs={
                        str(k): str(v)
                        for k, v in entry.get("configs", {}).items()
                        if k not in REMOVED_CONFIGS
                    },
                )
                if entry.get("internal") is False:
                    meta.marked_ordinary.add(topic.name)
                if topic_name_problem(topic.name) is not None or topic.partitions < 1:
                    raise ValueError(f"topic entry {topic.name!r} with {topic.partitions} partitions")
                meta.topics[topic.name] = topic
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            what = f"no {exc}" if isinstance(exc, KeyError) else str(exc) or type(exc).__name__
            raise ValueError(what.splitlines()[0]) from None
        return meta

    def persist(self) -> list[StorageEffect]:
        """Effects that replace the metadata file atomically."""
        document = {
            "version": 1,
            "cluster_id": self.cluster_id,
            "node_id": self.node_id,
            "next_producer_id": self.next_producer_id,
            "topics": [
                {
                    "name": t.name,
                    "topic_id": str(t.topic_id),
                    "partitions": t.partitions,
                    "configs": dict(sorted(t.configs.items())),
                }
                for t in sorted(self.topics.values(), key=lambda t: t.name)
            ],
        }
        return replace_atomically(METADATA_FILE, json.dumps(document, indent=1, sort_keys=True).encode())


def partition_metadata_effects(topic: TopicInfo, partition: int) -> list[StorageEffect]:
    """Kafka's ``partition.metadata`` file for one partition directory."""
    data = format_partition_metadata(topic.topic_id)
    return replace_atomically(f"{partition_dir(topic.name, partition)}/{PARTITION_METADATA}", data)
