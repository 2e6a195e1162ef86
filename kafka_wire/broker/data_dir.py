"""What the data directory must hold before the broker serves from it, checked at start.

``meta.properties`` (Kafka's KRaft file: ``version=1``, ``node.id``, ``cluster.id``,
``directory.id``) says whose directory it is. It is written once, when the directory is first
used; later starts refuse a directory of another node or, when ``cluster.id`` is configured, of
another cluster. A new directory needs ``cluster.id`` (every node of a cluster must share it,
which Kafka ensures by formatting each directory with ``kafka-storage format``), unless the node
is the only voter of its quorum (a cluster of its own, such as ``kafka-wire serve`` without
``controller.quorum.voters``): it makes up its id.

The node learns its topics from the metadata log (``__cluster_metadata-0``), not from the
directory: which partition directories it serves is known once the log is replayed. A directory
of an older single node (``kafka-wire-metadata.json``) is imported into that log once
(:mod:`kafka_wire.broker.legacy_import`, loaded only when :func:`may_hold_legacy_data` says so).

Problems the operator must solve raise :class:`DataDirError`, whose message names the file and
what to do; everything else found is reported in ``warnings``.
"""

from __future__ import annotations

import random
import re
import uuid
from dataclasses import field
from typing import Final

from kafka_wire.broker.effects import StorageEffect
from kafka_wire.broker.log.files import replace_atomically
from kafka_wire.broker.metadata import ClusterMetadata, random_uuid
from kafka_wire.broker.raft.config import METADATA_DIRECTORY, METADATA_TOPIC
from kafka_wire.broker.storage import StorageReader
from kafka_wire.errors import KafkaWireError
from kafka_wire.logformat.meta_properties import (
    META_PROPERTIES,
    format_meta_properties,
    parse_meta_properties,
)
from kafka_wire.logformat.partition_metadata import (
    PARTITION_METADATA,
    kafka_uuid_text,
    parse_kafka_uuid,
    parse_partition_metadata,
)
from kafka_wire.logformat.properties import parse_properties
from kafka_wire.quick_dataclass import dataclass

_PARTITION_DIR: Final = r"(.+)-(\d{1,9})"  # compiled (and kept) by ``re`` on first use
_MAX_SMALL_FILE: Final = 64 * 1024

#: The metadata file of an older single node (:mod:`kafka_wire.broker.legacy_import`).
LEGACY_METADATA_FILE: Final = "kafka-wire-metadata.json"


class DataDirError(KafkaWireError):
    """The data directory cannot be served as it is; the message names the file and what to do."""


@dataclass(slots=True)
class DataDir:
    """The outcome of opening a data directory: its identity (with no topics yet), the effects
    that finish the opening (meta.properties when new), and warnings for the operator."""

    metadata: ClusterMetadata
    effects: list[StorageEffect] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: ``directory.id`` of ``meta.properties`` (a new one for a new directory; None for a file of
    #: an older kafka_wire without it).
    directory_id: uuid.UUID | None = None

    @classmethod
    def open(
        cls,
        storage: StorageReader,
        *,
        node_id: int,
        cluster_id: str | None,
        rng: random.Random,
        sole_voter: bool = False,
    ) -> DataDir:
        """Check and load the data directory, or raise :class:`DataDirError`."""
        text = read_text(storage, META_PROPERTIES)
        if not sole_voter and text is None and cluster_id is None:
            raise DataDirError(
                f"this data directory has no {META_PROPERTIES} and cluster.id is not set: a node of a cluster "
                "needs the cluster's id (the same on every node; `kafka-wire cluster` sets it): set cluster.id"
            )
        identity = None if text is None else parse_meta_properties(text)
        stored_node = identity.node_id if identity is not None else None
        stored_cluster = identity.cluster_id if identity is not None else None
        if text is not None:
            if identity is None:
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
        opened = cls(
            ClusterMetadata(
                cluster_id=stored_cluster or cluster_id or kafka_uuid_text(random_uuid(rng)), node_id=node_id
            )
        )
        if identity is not None and identity.directory_id:
            opened.directory_id = parse_kafka_uuid(identity.directory_id)
        opened._write_meta_properties(text, rng)
        return opened

    def _write_meta_properties(self, text: str | None, rng: random.Random) -> None:
        if text is None:
            self.directory_id = random_uuid(rng)
            data = format_meta_properties(
                node_id=self.metadata.node_id,
                cluster_id=self.metadata.cluster_id,
                directory_id=kafka_uuid_text(self.directory_id),
            )
            self.effects += replace_atomically(META_PROPERTIES, data)


def partition_dirs(storage: StorageReader) -> dict[str, list[tuple[int, uuid.UUID | None]]]:
    """Partition directories in the data directory: per topic name, (partition, topic id or None)."""
    found: dict[str, list[tuple[int, uuid.UUID | None]]] = {}
    for entry in storage.list_dir(""):
        match = re.fullmatch(_PARTITION_DIR, entry)
        if match is None or storage.size(entry) is not None:
            continue  # not a partition directory name, or a file
        names = storage.list_dir(entry)
        if PARTITION_METADATA not in names and not any(n.endswith(".log") for n in names):
            continue  # not a partition directory
        found.setdefault(match.group(1), []).append((int(match.group(2)), read_topic_id(storage, entry)))
    for partitions in found.values():
        partitions.sort(key=lambda p: p[0])
    return found


def has_metadata_log(storage: StorageReader) -> bool:
    """Whether ``__cluster_metadata-0`` holds records or a snapshot."""
    for name in storage.list_dir(METADATA_DIRECTORY):
        if name.endswith(".checkpoint") or (
            name.endswith(".log") and (storage.size(f"{METADATA_DIRECTORY}/{name}") or 0) > 0
        ):
            return True
    return False


def may_hold_legacy_data(storage: StorageReader) -> bool:
    """Whether :meth:`kafka_wire.broker.legacy_import.LegacyImport.find` can find anything: the
    old node's metadata file is there, or partition directories are and no metadata log is (a
    directory with neither, such as a new one, is answered without loading that module)."""
    if storage.size(LEGACY_METADATA_FILE) is not None:
        return True
    if has_metadata_log(storage):
        return False
    return any(name != METADATA_TOPIC for name in partition_dirs(storage))


def read_topic_id(storage: StorageReader, directory: str) -> uuid.UUID | None:
    """The topic id in ``<directory>/partition.metadata`` (Kafka's ``topic_id: <base64>`` line)."""
    text = read_text(storage, f"{directory}/{PARTITION_METADATA}")
    return None if text is None else parse_partition_metadata(text)


def read_text(storage: StorageReader, path: str) -> str | None:
    """A small text file of the data directory; None when it is missing.

    A file too large or not text raises :class:`DataDirError`.
    """
    size = storage.size(path)
    if size is None:
        return None
    if size > _MAX_SMALL_FILE:
        raise DataDirError(f"{path} is {size} bytes, too large for what it should hold: restore it")
    try:
        return storage.read(path, 0, size).decode("utf-8")
    except UnicodeDecodeError:
        raise DataDirError(f"{path} is not text: restore it") from None


def read_properties(storage: StorageReader, path: str) -> dict[str, str] | None:
    """A small properties file of the data directory (Java's format); None when it is missing.

    A file too large or not text raises :class:`DataDirError`.
    """
    text = read_text(storage, path)
    return None if text is None else parse_properties(text)
