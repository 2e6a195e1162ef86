"""What the data directory must hold before the broker serves from it, checked at start.

- ``meta.properties`` (Kafka's file: ``version=1``, ``node.id``, ``cluster.id``,
  ``directory.id``) says whose directory it is. It is written once, when the directory is first
  used; later starts refuse a directory of another node or, when ``cluster.id`` is configured, of
  another cluster.
- ``kafka-wire-metadata.json`` lists the topics (:class:`~kafka_wire.broker.metadata.ClusterMetadata`).
  A damaged one stops the start with what to do. A missing one in a directory that still holds
  partition directories is rebuilt from them (topic ids from each ``partition.metadata``; topic
  configs are lost and say so).
- Partition directories that the metadata does not name are strays: renamed ``<dir>.<id>-stray``
  as Kafka does, never adopted by a topic and never deleted. One that holds another topic id than
  the metadata's topic of that name stops the start (the operator moves it away).

Problems the operator must solve raise :class:`DataDirError`, whose message names the file and
what to do; everything else found is reported in ``warnings``.
"""

from __future__ import annotations

import base64
import binascii
import random
import re
import uuid
from dataclasses import dataclass, field
from typing import Final

from kafka_wire.broker.effects import Rename, StorageEffect
from kafka_wire.broker.java_properties import parse_properties
from kafka_wire.broker.log.files import replace_atomically
from kafka_wire.broker.metadata import (
    METADATA_FILE,
    PARTITION_METADATA,
    ClusterMetadata,
    TopicInfo,
    kafka_uuid_text,
    random_uuid,
)
from kafka_wire.broker.storage import StorageReader
from kafka_wire.errors import KafkaWireError

META_PROPERTIES: Final = "meta.properties"
_PARTITION_DIR: Final = re.compile(r"(.+)-(\d{1,9})")
_MAX_SMALL_FILE: Final = 64 * 1024


class DataDirError(KafkaWireError):
    """The data directory cannot be served as it is; the message names the file and what to do."""


@dataclass(slots=True)
class DataDir:
    """The outcome of opening a data directory: its metadata, the effects that finish the
    opening (meta.properties when new, strays renamed), and warnings for the operator."""

    metadata: ClusterMetadata
    effects: list[StorageEffect] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, storage: StorageReader, *, node_id: int, cluster_id: str | None, rng: random.Random) -> DataDir:
        """Check and load the data directory, or raise :class:`DataDirError`."""
        identity = read_properties(storage, META_PROPERTIES)
        stored_node = identity.get("node.id") if identity is not None else None
        stored_cluster = identity.get("cluster.id") if identity is not None else None
        if identity is not None:
            if identity.get("version") != "1" or stored_node is None or not stored_cluster:
                raise DataDirError(
                    f"{META_PROPERTIES} is not a Kafka KRaft meta.properties (version=1 with node.id and cluster.id): "
                    "restore it, or move the data directory aside to start empty"
                )
            if stored_node != str(node_id):
                raise DataDirError(
                    f"{META_PROPERTIES} says this data directory belongs to node.id={stored_node}, but this broker is "
                    f"node.id={node_id}: set node.id={stored_node}, or use another data directory"
                )
            if cluster_id is not None and stored_cluster != cluster_id:
                raise DataDirError(
                    f"{META_PROPERTIES} says this data directory belongs to cluster.id={stored_cluster}, but this broker "
                    f"is configured with cluster.id={cluster_id}: remove cluster.id or set it to {stored_cluster}, or use "
                    "another data directory"
                )
        found = partition_dirs(storage)
        opened = cls(ClusterMetadata(cluster_id=stored_cluster or cluster_id or kafka_uuid_text(random_uuid(rng)), node_id=node_id))
        if storage.size(METADATA_FILE) is not None:
            try:
                opened.metadata = ClusterMetadata.load(storage, node_id=node_id)
            except ValueError as exc:
                raise DataDirError(
                    f"{METADATA_FILE} is damaged ({exc}): restore it from a backup, or delete it to rebuild the topic "
                    "list from the partition directories (topic configs are then lost)"
                ) from None
            if stored_cluster is not None and opened.metadata.cluster_id != stored_cluster:
                raise DataDirError(
                    f"{METADATA_FILE} belongs to cluster.id={opened.metadata.cluster_id} but {META_PROPERTIES} to "
                    f"cluster.id={stored_cluster}: the two files come from different data directories"
                )
        elif found:
            opened._rebuild(found)
        opened._move_strays(found, rng)
        if identity is None:
            directory_id = kafka_uuid_text(random_uuid(rng))
            text = (
                f"version=1\nnode.id={node_id}\ncluster.id={opened.metadata.cluster_id}\ndirectory.id={directory_id}\n"
            )
            opened.effects += replace_atomically(META_PROPERTIES, text.encode("ascii"))
        return opened

    def _rebuild(self, found: dict[str, list[tuple[int, uuid.UUID | None]]]) -> None:
        """Topics from partition directories whose ``partition.metadata`` agree on one topic id."""
        for name, partitions in found.items():
            ids = {topic_id for _, topic_id in partitions if topic_id is not None}
            if len(ids) != 1:
                continue  # no id, or several incarnations mixed: left to the stray check
            topic_id = ids.pop()
            indexes = {index for index, tid in partitions if tid == topic_id}
            self.metadata.topics[name] = TopicInfo(name=name, topic_id=topic_id, partitions=max(indexes) + 1)
        if self.metadata.topics:
            self.warnings.append(
                f"{METADATA_FILE} was missing: rebuilt {len(self.metadata.topics)} topic(s) from their partition "
                f"directories ({', '.join(sorted(self.metadata.topics))}); their config overrides were lost"
            )

    def _move_strays(self, found: dict[str, list[tuple[int, uuid.UUID | None]]], rng: random.Random) -> None:
        for name, partitions in found.items():
            topic = self.metadata.topics.get(name)
            for index, topic_id in partitions:
                directory = f"{name}-{index}"
                if topic is not None and index < topic.partitions:
                    if topic_id not in (topic.topic_id, None):
                        raise DataDirError(
                            f"{directory}/{PARTITION_METADATA} names topic id {kafka_uuid_text(topic_id)}, but the "
                            f"metadata says topic {name} has id {kafka_uuid_text(topic.topic_id)}: move {directory} "
                            "out of the data directory (it holds another topic's records)"
                        )
                    continue
                target = f"{directory}.{random_uuid(rng).hex}-stray"
                self.effects.append(Rename(directory, target))
                self.warnings.append(f"{directory} belongs to no topic the metadata names: moved aside to {target}")


def partition_dirs(storage: StorageReader) -> dict[str, list[tuple[int, uuid.UUID | None]]]:
    """Partition directories in the data directory: per topic name, (partition, topic id or None)."""
    found: dict[str, list[tuple[int, uuid.UUID | None]]] = {}
    for entry in storage.list_dir(""):
        match = _PARTITION_DIR.fullmatch(entry)
        if match is None or storage.size(entry) is not None:
            continue  # not a partition directory name, or a file
        names = storage.list_dir(entry)
        if PARTITION_METADATA not in names and not any(n.endswith(".log") for n in names):
            continue  # not a partition directory
        found.setdefault(match.group(1), []).append((int(match.group(2)), read_topic_id(storage, entry)))
    for partitions in found.values():
        partitions.sort(key=lambda p: p[0])
    return found


def read_topic_id(storage: StorageReader, directory: str) -> uuid.UUID | None:
    """The topic id in ``<directory>/partition.metadata`` (Kafka's ``topic_id: <base64>`` line)."""
    properties = read_properties(storage, f"{directory}/{PARTITION_METADATA}")
    text = None if properties is None else properties.get("topic_id")
    if not text:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return uuid.UUID(bytes=raw) if len(raw) == 16 else None


def read_properties(storage: StorageReader, path: str) -> dict[str, str] | None:
    """A small properties file of the data directory (Java's format); None when it is missing.

    A file too large or not text raises :class:`DataDirError`.
    """
    size = storage.size(path)
    if size is None:
        return None
    if size > _MAX_SMALL_FILE:
        raise DataDirError(f"{path} is {size} bytes, too large for what it should hold: restore it")
    try:
        text = storage.read(path, 0, size).decode("utf-8")
    except UnicodeDecodeError:
        raise DataDirError(f"{path} is not text: restore it") from None
    return parse_properties(text)
