"""A cluster node's data directory: meta.properties checked, no topics from the JSON file, no strays."""

from __future__ import annotations

import random

import pytest

from kafka_wire.broker.data_dir import DataDir, DataDirError, read_properties
from kafka_wire.broker.effects import Rename, WriteAt
from kafka_wire.logformat.meta_properties import META_PROPERTIES, format_meta_properties
from kafka_wire.testing.memory_storage import MemoryStorage


def formatted(node_id: int = 1, cluster_id: str = "AAAAAAAAAAAAAAAAAAAAAA") -> MemoryStorage:
    storage = MemoryStorage()
    storage.files[META_PROPERTIES] = bytearray(
        format_meta_properties(node_id=node_id, cluster_id=cluster_id, directory_id="BBBBBBBBBBBBBBBBBBBBBB")
    )
    return storage


def test_a_new_cluster_directory_needs_the_cluster_id() -> None:
    with pytest.raises(
        DataDirError, match=r"cluster\.id is not set: a node of a cluster needs the cluster's id"
    ):
        DataDir.open(MemoryStorage(), node_id=1, cluster_id=None, rng=random.Random(0))
    opened = DataDir.open(
        MemoryStorage(), node_id=3, cluster_id="CCCCCCCCCCCCCCCCCCCCCC", rng=random.Random(0)
    )
    assert opened.metadata.cluster_id == "CCCCCCCCCCCCCCCCCCCCCC" and opened.metadata.topics == {}
    written = MemoryStorage()
    for effect in opened.effects:
        if isinstance(effect, WriteAt):
            written.files[effect.path] = bytearray(effect.data)
        elif isinstance(effect, Rename):
            written.files[effect.target] = written.files.pop(effect.source)
    properties = read_properties(written, META_PROPERTIES)
    assert properties is not None
    assert (properties["version"], properties["node.id"], properties["cluster.id"]) == (
        "1",
        "3",
        "CCCCCCCCCCCCCCCCCCCCCC",
    )


def test_a_directory_of_another_node_or_cluster_is_refused() -> None:
    with pytest.raises(DataDirError, match=r"belongs to node\.id=1, but this broker is node\.id=2"):
        DataDir.open(formatted(), node_id=2, cluster_id=None, rng=random.Random(0))
    with pytest.raises(DataDirError, match=r"belongs to cluster\.id=AAAAAAAAAAAAAAAAAAAAAA"):
        DataDir.open(formatted(), node_id=1, cluster_id="other", rng=random.Random(0))
    kept = DataDir.open(formatted(), node_id=1, cluster_id=None, rng=random.Random(0))
    assert kept.metadata.cluster_id == "AAAAAAAAAAAAAAAAAAAAAA" and kept.effects == []


def test_partition_directories_are_not_strays_in_a_cluster() -> None:
    storage = formatted()
    storage.files["orders-0/00000000000000000000.log"] = bytearray()
    storage.files["__cluster_metadata-0/00000000000000000000.log"] = bytearray()
    opened = DataDir.open(storage, node_id=1, cluster_id=None, rng=random.Random(0))
    assert opened.effects == [] and opened.warnings == []
