"""Importing the data directory of a single node of earlier kafka_wire releases, once.

Before the single node was a one-voter KRaft node, it kept its topics (name, id, partition count,
config overrides) and its next producer id in ``kafka-wire-metadata.json``, and had no metadata
log. At the first start of such a directory (it has no ``__cluster_metadata-0`` records yet) on a
node that is the only voter of its quorum, :meth:`LegacyImport.find` reads what the old node
read at start and :meth:`LegacyImport.records` turns it into the metadata records the controller
writes as the log's first batch, with ``metadata.version``: per topic a TopicRecord (its id
kept), a ConfigRecord per override and a PartitionRecord per partition (this node the only
replica, the leader, in epoch 0: the epoch the old node's batches carry); the next producer id
block (a ProducerIdsRecord, so no id is handed out twice). The file is then renamed
``kafka-wire-metadata.json.imported`` (after that batch is written); the partition directories,
their records, offsets and committed group offsets are served as they are.

What the old node did at each start is done here once, with the same messages:

- a damaged file stops the start (:class:`~kafka_wire.broker.data_dir.DataDirError`); one of
  another cluster than ``meta.properties`` says too;
- a missing file in a directory with partition directories: the topics are rebuilt from them
  (ids from each ``partition.metadata``; their config overrides are lost, with a warning);
- partition directories the file does not name are strays, renamed ``<dir>.<id>-stray``; one
  holding another topic id than the file's topic of that name stops the start;
- internal topics get the broker's configs for them (a client-made one is taken over, with a
  warning), as the old node's ``adopt`` did;
- config overrides Kafka 4.0 removed (``message.format.version``, ...) are dropped.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from dataclasses import dataclass, field
from typing import Final

from kafka_wire import messages
from kafka_wire.broker.config import BrokerConfig
from kafka_wire.broker.controller.configs_image import ConfigResourceType
from kafka_wire.broker.data_dir import LEGACY_METADATA_FILE, DataDirError, has_metadata_log, partition_dirs
from kafka_wire.broker.effects import Rename, StorageEffect
from kafka_wire.broker.internal_topics import CLUSTER_METADATA_TOPIC, INTERNAL_TOPICS, internal_topic_specs
from kafka_wire.broker.log.config import REMOVED_CONFIGS
from kafka_wire.broker.metadata import random_uuid, topic_name_problem
from kafka_wire.broker.storage import StorageReader
from kafka_wire.codec.structs import Message
from kafka_wire.logformat.meta_properties import META_PROPERTIES
from kafka_wire.logformat.partition_metadata import PARTITION_METADATA, kafka_uuid_text

#: The old single node's metadata file, and the name it keeps once imported.
METADATA_FILE: Final = LEGACY_METADATA_FILE
IMPORTED_FILE: Final = f"{METADATA_FILE}.imported"


@dataclass(slots=True)
class LegacyTopic:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)
    #: The file marked it ``"internal": false`` (older releases' flag): a client made it.
    marked_ordinary: bool = False


@dataclass(slots=True)
class LegacyImport:
    """What an old single node's directory holds, to be written as metadata records."""

    topics: dict[str, LegacyTopic]
    next_producer_id: int = 0
    #: Strays to move aside, then the file's rename (after the records are written).
    effects: list[StorageEffect] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Whether the file is to be renamed once the records are written (it was read; else the
    #: topics were rebuilt from the partition directories).
    rename_after: bool = True

    @classmethod
    def find(cls, storage: StorageReader, *, cluster_id: str, rng: random.Random) -> LegacyImport | None:
        """What to import from the data directory, or None: it has metadata records already, or
        nothing of an old node. A file left after an import (the process stopped between the
        records and the rename) is renamed now."""
        found = partition_dirs(storage)
        found.pop(CLUSTER_METADATA_TOPIC, None)  # the metadata log's own directory
        has_file = storage.size(METADATA_FILE) is not None
        if has_metadata_log(storage):
            if has_file:
                return cls({}, effects=[Rename(METADATA_FILE, IMPORTED_FILE)], rename_after=False)
            return None
        if has_file:
            topics, next_producer_id = read_metadata_file(storage, cluster_id)
            imported = cls(topics, next_producer_id)
        elif found:
            imported = cls(rebuilt(found), rename_after=False)
            if imported.topics:
                imported.warnings.append(
                    f"{METADATA_FILE} was missing: rebuilt {len(imported.topics)} topic(s) from their "
                    f"partition directories ({', '.join(sorted(imported.topics))}); their config "
                    "overrides were lost"
                )
        else:
            return None
        imported._move_strays(found, rng)
        return imported

    def adopt_internal_topics(self, config: BrokerConfig, log: logging.Logger) -> None:
        """Internal topics get the broker's configs for them (their partition count stays:
        groups are placed by it)."""
        specs = internal_topic_specs(config)
        for name in sorted(INTERNAL_TOPICS):
            topic = self.topics.get(name)
            spec = specs.get(name)
            if topic is None or spec is None or topic.configs == dict(spec.configs):
                continue
            if topic.marked_ordinary:
                log.warning(
                    "%s was an ordinary topic (made by a client): the broker takes it over as an internal "
                    "topic; configs %s replaced by %s",
                    name,
                    topic.configs,
                    dict(spec.configs),
                )
            else:
                log.info("internal topic %s: configs set to %s", name, dict(spec.configs))
            topic.configs = dict(spec.configs)

    def records(self, node_id: int) -> list[Message]:
        """The metadata records of what was found (this node leads every partition, epoch 0)."""
        out: list[Message] = []
        for name in sorted(self.topics):
            topic = self.topics[name]
            out.append(messages.TopicRecord(name=name, topic_id=topic.topic_id))
            out += [
                messages.ConfigRecord(
                    resource_type=ConfigResourceType.TOPIC, resource_name=name, name=k, value=v
                )
                for k, v in sorted(topic.configs.items())
            ]
            out += [
                messages.PartitionRecord(
                    partition_id=p, topic_id=topic.topic_id, replicas=[node_id], isr=[node_id],
                    leader=node_id, leader_epoch=0, partition_epoch=0,
                )
                for p in range(topic.partitions)
            ]  # fmt: skip
        if self.next_producer_id > 0:
            out.append(
                messages.ProducerIdsRecord(
                    broker_id=node_id, broker_epoch=-1, next_producer_id=self.next_producer_id
                )
            )
        return out

    def renamed(self) -> list[StorageEffect]:
        """The file's rename, once the records are written."""
        return [Rename(METADATA_FILE, IMPORTED_FILE)] if self.rename_after else []

    def _move_strays(self, found: dict[str, list[tuple[int, uuid.UUID | None]]], rng: random.Random) -> None:
        for name, partitions in found.items():
            topic = self.topics.get(name)
            for index, topic_id in partitions:
                directory = f"{name}-{index}"
                if topic is not None and index < topic.partitions:
                    if topic_id not in (topic.topic_id, None):
                        raise DataDirError(
                            f"{directory}/{PARTITION_METADATA} names topic id {kafka_uuid_text(topic_id)}, but "
                            f"{METADATA_FILE} says topic {name} has id {kafka_uuid_text(topic.topic_id)}: move "
                            f"{directory} out of the data directory (it holds another topic's records)"
                        )
                    continue
                target = f"{directory}.{random_uuid(rng).hex}-stray"
                self.effects.append(Rename(directory, target))
                self.warnings.append(
                    f"{directory} belongs to no topic the metadata names: moved aside to {target}"
                )


def read_metadata_file(storage: StorageReader, cluster_id: str) -> tuple[dict[str, LegacyTopic], int]:
    """The topics and the next producer id of ``kafka-wire-metadata.json``; a damaged file, or
    one of another cluster, raises :class:`DataDirError` saying what to do."""
    size = storage.size(METADATA_FILE) or 0
    try:
        document = json.loads(storage.read(METADATA_FILE, 0, size))
        stored_cluster = str(document["cluster_id"])
        next_producer_id = int(document.get("next_producer_id", 0))
        topics: dict[str, LegacyTopic] = {}
        for entry in document.get("topics", []):
            topic = LegacyTopic(
                name=str(entry["name"]),
                topic_id=uuid.UUID(str(entry["topic_id"])),
                partitions=int(entry["partitions"]),
                configs={
                    str(k): str(v) for k, v in entry.get("configs", {}).items() if k not in REMOVED_CONFIGS
                },
                marked_ordinary=entry.get("internal") is False,
            )
            if topic_name_problem(topic.name) is not None or topic.partitions < 1:
                raise ValueError(f"topic entry {topic.name!r} with {topic.partitions} partitions")
            topics[topic.name] = topic
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        what = f"no {exc}" if isinstance(exc, KeyError) else str(exc) or type(exc).__name__
        raise DataDirError(
            f"{METADATA_FILE} is damaged ({what.splitlines()[0]}): restore it from a backup, or delete it to "
            "rebuild the topic list from the partition directories (topic configs are then lost)"
        ) from None
    if stored_cluster != cluster_id:
        raise DataDirError(
            f"{METADATA_FILE} belongs to cluster.id={stored_cluster} but {META_PROPERTIES} to "
            f"cluster.id={cluster_id}: the two files come from different data directories"
        )
    return topics, max(next_producer_id, 0)


def rebuilt(found: dict[str, list[tuple[int, uuid.UUID | None]]]) -> dict[str, LegacyTopic]:
    """Topics from partition directories whose ``partition.metadata`` agree on one topic id."""
    topics: dict[str, LegacyTopic] = {}
    for name, partitions in found.items():
        ids = {topic_id for _, topic_id in partitions if topic_id is not None}
        if len(ids) != 1:
            continue  # no id, or several incarnations mixed: left to the stray check
        topic_id = ids.pop()
        indexes = {index for index, tid in partitions if tid == topic_id}
        topics[name] = LegacyTopic(name=name, topic_id=topic_id, partitions=max(indexes) + 1)
    return topics
