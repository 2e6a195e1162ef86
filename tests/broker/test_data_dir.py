"""What the broker checks in its data directory at start (kafka_wire.broker.data_dir), and the
one-time import of an older single node's directory (kafka_wire.broker.legacy_import), on the
directory that release wrote (tests/data/legacy-single-node)."""

from __future__ import annotations

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.data_dir import DataDirError, read_properties
from kafka_wire.broker.legacy_import import IMPORTED_FILE, METADATA_FILE, LegacyTopic, read_metadata_file
from kafka_wire.broker.raft.config import METADATA_DIRECTORY
from kafka_wire.logformat.meta_properties import META_PROPERTIES
from kafka_wire.logformat.partition_metadata import format_partition_metadata
from kafka_wire.records import NewRecord, build_batch
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.engine import Client, Engine, legacy_storage
from tests.broker.test_engine import create, fetch, produce, records_of

#: What tests/data/legacy-single-node holds (tools/make_legacy_data_dir.py).
LEGACY_TOPICS = {"__consumer_offsets": 5, "events": 1, "orders": 3}


def written(**config: object) -> tuple[MemoryStorage, Engine]:
    engine = Engine(BrokerConfig(group_initial_rebalance_delay_ms=0, **config))  # type: ignore[arg-type]
    client = Client(engine, 1)
    create(client, "kept", 2, retention_ms="123456")
    produce(
        client, "kept", build_batch([NewRecord(b"k", b"v")], default_timestamp=engine.now_ms), partition=1
    )
    return engine.storage, engine


def settled(engine: Engine) -> Engine:
    """Every partition of the metadata opened (the replica manager opens them in slices)."""
    engine.advance(1)
    return engine


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
    assert METADATA_DIRECTORY in storage.list_dir("") and METADATA_FILE not in storage.list_dir("")
    again = Engine(storage=storage)  # the stored cluster id is kept, the file is not rewritten
    assert again.broker.state.metadata.cluster_id == properties["cluster.id"]
    assert read_properties(storage, META_PROPERTIES) == properties
    assert settled(again).broker.state.topic_named("kept") is not None, "the topics come from the log"


def test_a_directory_of_another_node_or_cluster_is_refused() -> None:
    storage, _ = written()
    with pytest.raises(DataDirError, match=r"node.id=1, but this broker is node.id=2: set node.id=1"):
        Engine(BrokerConfig(node_id=2), storage=storage)
    with pytest.raises(DataDirError, match=r"configured with cluster.id=other"):
        Engine(BrokerConfig(cluster_id="other"), storage=storage)
    storage.files[META_PROPERTIES] = bytearray(b"garbage\n")
    with pytest.raises(DataDirError, match=r"not a Kafka KRaft meta\.properties"):
        Engine(storage=storage)


def test_an_old_single_nodes_directory_is_imported_once() -> None:
    storage = legacy_storage()
    old_ids = {t.name: t.topic_id for t in _legacy_topics()}
    engine = settled(Engine(storage=storage))
    names = storage.list_dir("")
    assert IMPORTED_FILE in names and METADATA_FILE not in names and METADATA_DIRECTORY in names
    state = engine.broker.state
    for name, partitions in LEGACY_TOPICS.items():
        topic = state.topic_named(name)
        assert topic is not None and topic.partitions == partitions and topic.topic_id == old_ids[name]
    assert state.topic_named("orders").configs == {  # type: ignore[union-attr]
        "max.message.bytes": "500000",
        "retention.ms": "3153600000000",
    }
    client = Client(engine, 1)
    assert [v for _, v in records_of(fetch(client, "events", 0))] == [
        f"events-{i}".encode() for i in range(5)
    ]
    # Started again: the metadata log holds it all, nothing is imported twice.
    again = settled(Engine(storage=storage))
    assert again.broker.state.topic_named("orders").topic_id == old_ids["orders"]  # type: ignore[union-attr]


def test_a_metadata_file_left_after_the_import_is_renamed() -> None:
    storage = legacy_storage()
    original = bytes(storage.files[METADATA_FILE])
    Engine(storage=storage)
    storage.files[METADATA_FILE] = bytearray(original)  # as if stopped between the records and the rename
    engine = settled(Engine(storage=storage))
    assert METADATA_FILE not in storage.list_dir("") and IMPORTED_FILE in storage.list_dir("")
    assert engine.broker.state.topic_named("orders") is not None


@pytest.mark.parametrize(
    "damage", [b"", b'{"cluster_id": "x", "topics": [{"name": ', b'{"topics": []}', b"[1]", b"\xff\xfe"]
)
def test_a_damaged_metadata_file_stops_the_start_with_what_to_do(damage: bytes) -> None:
    storage = legacy_storage()
    storage.files[METADATA_FILE] = bytearray(damage)
    with pytest.raises(
        DataDirError, match=f"{METADATA_FILE} is damaged .*: restore it from a backup, or delete it"
    ):
        Engine(storage=storage)


def test_a_missing_metadata_file_is_rebuilt_from_the_partition_directories() -> None:
    storage = legacy_storage()
    topic_id = {t.name: t.topic_id for t in _legacy_topics()}["orders"]
    del storage.files[METADATA_FILE]
    engine = settled(Engine(storage=storage))
    topic = engine.broker.state.topic_named("orders")
    assert topic is not None and topic.topic_id == topic_id and topic.partitions == 3
    assert topic.configs == {}, "config overrides are lost, and the warning says so"
    assert len(records_of(fetch(Client(engine, 1), "orders", 0))) > 0


def test_partition_directories_of_no_topic_are_moved_aside() -> None:
    storage = legacy_storage()
    for name in [n for n in storage.files if n.startswith("events-0/")]:
        storage.files["gone-0/" + name.split("/", 1)[1]] = storage.files[name]
    engine = settled(Engine(storage=storage))
    names = storage.list_dir("")
    assert "gone-0" not in names and [n for n in names if n.startswith("gone-0.") and n.endswith("-stray")]
    client = Client(engine, 1)
    create(client, "gone")
    assert records_of(fetch(client, "gone", 0)) == [], "a new topic of that name starts empty"


def test_a_partition_directory_of_another_topic_id_stops_the_start() -> None:
    storage = legacy_storage()
    storage.files["orders-0/partition.metadata"] = bytearray(
        format_partition_metadata(_legacy_topics()[1].topic_id)  # events' id
    )
    with pytest.raises(DataDirError, match="move orders-0 out of the data directory"):
        Engine(storage=storage)


def _legacy_topics() -> list[LegacyTopic]:
    storage = legacy_storage()
    cluster_id = (read_properties(storage, META_PROPERTIES) or {})["cluster.id"]
    topics, _ = read_metadata_file(storage, cluster_id)
    return [topics[name] for name in sorted(topics)]
