"""What the broker checks in its data directory at start (kafka_wire.broker.data_dir)."""

from __future__ import annotations

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.data_dir import DataDirError, read_properties
from kafka_wire.broker.metadata import METADATA_FILE
from kafka_wire.broker.storage import MemoryStorage
from kafka_wire.logformat.meta_properties import META_PROPERTIES
from kafka_wire.records import NewRecord, build_batch
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, fetch, produce, records_of


def written(**config: object) -> tuple[MemoryStorage, Engine]:
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, **config))  # type: ignore[arg-type]
    client = Client(engine, 1)
    create(client, "kept", 2, retention_ms="123456")
    produce(
        client, "kept", build_batch([NewRecord(b"k", b"v")], default_timestamp=engine.now_ms), partition=1
    )
    return engine.storage, engine


def test_meta_properties_names_the_node_and_the_cluster() -> None:
    storage, engine = written()
    properties = read_properties(storage, META_PROPERTIES)
    assert properties is not None
    assert properties["version"] == "1" and properties["node.id"] == "1"
    assert (
        properties["cluster.id"] == engine.broker.state.metadata.cluster_id
        and len(properties["cluster.id"]) == 22
    )
    assert len(properties["directory.id"]) == 22
    again = Engine(storage=storage)  # the stored cluster id is kept, the file is not rewritten
    assert again.broker.state.metadata.cluster_id == properties["cluster.id"]
    assert read_properties(storage, META_PROPERTIES) == properties


def test_a_directory_of_another_node_or_cluster_is_refused() -> None:
    storage, _ = written()
    with pytest.raises(DataDirError, match=r"node.id=1, but this broker is node.id=2: set node.id=1"):
        Engine(BrokerConfig(node_id=2), storage=storage)
    with pytest.raises(DataDirError, match=r"configured with cluster.id=other"):
        Engine(BrokerConfig(cluster_id="other"), storage=storage)
    storage.files[META_PROPERTIES] = bytearray(b"garbage\n")
    with pytest.raises(DataDirError, match=r"not a Kafka KRaft meta\.properties"):
        Engine(storage=storage)


@pytest.mark.parametrize(
    "damage", [b"", b'{"cluster_id": "x", "topics": [{"name": ', b'{"topics": []}', b"[1]", b"\xff\xfe"]
)
def test_a_damaged_metadata_file_stops_the_start_with_what_to_do(damage: bytes) -> None:
    storage, _ = written()
    storage.files[METADATA_FILE] = bytearray(damage)
    with pytest.raises(
        DataDirError, match=f"{METADATA_FILE} is damaged .*: restore it from a backup, or delete it"
    ):
        Engine(storage=storage)


def test_a_deleted_metadata_file_is_rebuilt_from_the_partition_directories() -> None:
    storage, engine = written()
    topic_id = engine.broker.state.topic_named("kept").topic_id  # type: ignore[union-attr]
    del storage.files[METADATA_FILE]
    again = Engine(storage=storage)
    topic = again.broker.state.topic_named("kept")
    assert topic is not None and topic.topic_id == topic_id and topic.partitions == 2
    assert topic.configs == {}, "config overrides are lost, and the warning says so"
    assert [k for k, _ in records_of(fetch(Client(again, 1), "kept", 0, partition=1))] == [b"k"]


def test_partition_directories_of_no_topic_are_moved_aside() -> None:
    storage, _ = written()
    for name in [n for n in storage.files if n.startswith("kept-1/")]:
        storage.files["gone-0/" + name.split("/", 1)[1]] = storage.files[name]
    again = Engine(storage=storage)
    names = storage.list_dir("")
    assert "gone-0" not in names and [n for n in names if n.startswith("gone-0.") and n.endswith("-stray")]
    client = Client(again, 1)
    create(client, "gone")
    assert records_of(fetch(client, "gone", 0)) == [], "a new topic of that name starts empty"


def test_a_partition_directory_of_another_topic_id_stops_the_start() -> None:
    storage, _ = written()
    other = Engine(seed=8)
    create(Client(other, 1), "kept", 2)
    storage.files["kept-0/partition.metadata"] = other.storage.files["kept-0/partition.metadata"]
    with pytest.raises(DataDirError, match="move kept-0 out of the data directory"):
        Engine(storage=storage)
