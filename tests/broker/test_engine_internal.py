"""Internal topics belong to the broker: clients cannot create, delete, write, trim, re-partition
or reconfigure ``__consumer_offsets``; the broker makes it its own way, takes over one a client
made under an older kafka_wire, places groups by its actual partition count, and skips what it
cannot read at start-up instead of failing."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.group import partition_for_group
from kafka_wire.broker.group.records import OffsetCommitValue, offset_commit_record
from kafka_wire.broker.legacy_import import METADATA_FILE
from kafka_wire.broker.metadata import OFFSETS_TOPIC
from kafka_wire.broker.offsets_topic import MAX_SKIPPED_LOGGED
from kafka_wire.logformat.meta_properties import META_PROPERTIES, format_meta_properties
from kafka_wire.logformat.partition_metadata import format_partition_metadata
from kafka_wire.messages import (
    AlterConfigsRequest,
    AlterConfigsRequestAlterableConfig,
    AlterConfigsRequestResource,
    AlterConfigsResponse,
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
    CreatePartitionsResponse,
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    ErrorCode,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
    IncrementalAlterConfigsResponse,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from kafka_wire.records import NewRecord, build_batch
from kafka_wire.testing.memory_storage import MemoryStorage
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, produce
from tests.broker.test_engine_groups import commit, committed

#: The key of the issue's reproducer: version 1 (an offset commit key) with a null group string.
POISON_KEY = b"\x00\x01\xff\xff\xff"


def metadata(client: Client, name: str, *, auto_create: bool = True) -> MetadataResponse:
    reply = client.request(
        MetadataRequest(topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=auto_create), 9
    )
    assert isinstance(reply.body, MetadataResponse)
    return reply.body


def topic_configs(client: Client, name: str) -> dict[str, str | None]:
    reply = client.request(
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequestResource(resource_type=2, resource_name=name, configuration_keys=None)
            ]
        )
    )
    assert isinstance(reply.body, DescribeConfigsResponse)
    return {c.name: c.value for c in reply.body.results[0].configs}


def test_clients_cannot_create_delete_write_trim_repartition_or_reconfigure_internal_topics() -> None:
    engine = Engine(BrokerConfig(offsets_topic_num_partitions=3))
    client = Client(engine, 1)
    # Kafka answers INVALID_REQUEST for the internal topic its controller refuses to create.
    for name in (OFFSETS_TOPIC, "__transaction_state", "__share_group_state", "__cluster_metadata"):
        refused = create(client, name).topics[0]
        assert (refused.error_code, refused.error_message) == (
            ErrorCode.INVALID_REQUEST,
            f"Creation of internal topic {name} is prohibited.",
        )
    assert OFFSETS_TOPIC not in engine.broker.state.metadata.topics
    client.request(FindCoordinatorRequest(key="g", key_type=0), 3)  # the broker makes it
    assert engine.broker.state.metadata.topics[OFFSETS_TOPIC].partitions == 3
    assert create(client, OFFSETS_TOPIC).topics[0].error_code == ErrorCode.INVALID_REQUEST

    written = produce(
        client, OFFSETS_TOPIC, build_batch([NewRecord(POISON_KEY, b"x")], default_timestamp=engine.now_ms)
    )
    assert written is not None
    [answer] = written.responses[0].partition_responses
    assert answer.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION

    deleted = client.request(DeleteTopicsRequest(topic_names=[OFFSETS_TOPIC], timeout_ms=100), 5)
    assert isinstance(deleted.body, DeleteTopicsResponse)
    assert deleted.body.responses[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION

    trimmed = client.request(
        DeleteRecordsRequest(
            topics=[
                DeleteRecordsRequestTopic(
                    name=OFFSETS_TOPIC,
                    partitions=[DeleteRecordsRequestPartition(partition_index=0, offset=-1)],
                )
            ],
            timeout_ms=100,
        )
    )
    assert isinstance(trimmed.body, DeleteRecordsResponse)
    assert trimmed.body.topics[0].partitions[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION

    grown = client.request(
        CreatePartitionsRequest(
            topics=[CreatePartitionsRequestTopic(name=OFFSETS_TOPIC, count=10)], timeout_ms=100
        )
    )
    assert isinstance(grown.body, CreatePartitionsResponse)
    assert grown.body.results[0].error_code == ErrorCode.INVALID_REQUEST

    altered = client.request(
        AlterConfigsRequest(
            resources=[
                AlterConfigsRequestResource(
                    resource_type=2,
                    resource_name=OFFSETS_TOPIC,
                    configs=[AlterConfigsRequestAlterableConfig(name="cleanup.policy", value="delete")],
                )
            ]
        )
    )
    assert isinstance(altered.body, AlterConfigsResponse)
    assert altered.body.responses[0].error_code == ErrorCode.INVALID_REQUEST
    incremental = client.request(
        IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequestAlterConfigsResource(
                    resource_type=2,
                    resource_name=OFFSETS_TOPIC,
                    configs=[
                        IncrementalAlterConfigsRequestAlterableConfig(
                            name="retention.ms", config_operation=0, value="1000"
                        )
                    ],
                )
            ]
        )
    )
    assert isinstance(incremental.body, IncrementalAlterConfigsResponse)
    assert incremental.body.responses[0].error_code == ErrorCode.INVALID_REQUEST

    # Nothing changed: three partitions, the broker's configs, no record written by the client.
    topic = engine.broker.state.metadata.topics[OFFSETS_TOPIC]
    assert topic.partitions == 3
    assert topic_configs(client, OFFSETS_TOPIC)["cleanup.policy"] == "compact"
    assert all(engine.broker.state.partitions[OFFSETS_TOPIC, p].log_end_offset == 0 for p in range(3))


def test_metadata_auto_creation_makes_the_offsets_topic_the_brokers_way() -> None:
    engine = Engine(BrokerConfig(offsets_topic_num_partitions=4, offsets_topic_segment_bytes=2_000_000))
    client = Client(engine, 1)
    [asked] = metadata(client, OFFSETS_TOPIC).topics
    assert (asked.error_code, asked.is_internal) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        True,
    )  # Kafka's answer
    [listed] = metadata(client, OFFSETS_TOPIC).topics
    assert (listed.error_code, listed.is_internal, len(listed.partitions)) == (ErrorCode.NONE, True, 4)
    configs = topic_configs(client, OFFSETS_TOPIC)
    assert (configs["cleanup.policy"], configs["compression.type"], configs["segment.bytes"]) == (
        "compact",
        "producer",
        "2000000",
    )
    # The transaction and share coordinators' topics are auto-created the same way (Kafka's
    # AutoTopicCreationManager makes all three).
    [other] = metadata(client, "__transaction_state").topics
    assert (other.error_code, other.is_internal) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True)
    [shares] = metadata(client, "__share_group_state").topics
    assert (shares.error_code, shares.is_internal) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True)
    [shares] = metadata(client, "__share_group_state").topics
    assert (shares.error_code, shares.is_internal, len(shares.partitions)) == (ErrorCode.NONE, True, 50)
    assert topic_configs(client, "__share_group_state")["cleanup.policy"] == "compact"


def test_the_poison_produce_is_refused_and_the_broker_restarts() -> None:
    """The issue's reproducer: a producer auto-creating ``__consumer_offsets`` and writing a key the
    coordinator cannot parse stopped every later start."""
    engine = Engine()
    client = Client(engine, 1)
    create(client, "orders")
    metadata(client, OFFSETS_TOPIC)  # what a producer asks first: the old code made an ordinary topic
    written = produce(
        client, OFFSETS_TOPIC, build_batch([NewRecord(POISON_KEY, b"x")], default_timestamp=engine.now_ms)
    )
    assert written is not None
    assert written.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert commit(client, "billing", "orders", {0: 7}) == [ErrorCode.NONE]

    again = Client(Engine(storage=engine.storage), 1)
    assert committed(again, "billing", "orders", [0]) == {0: 7}


def _old_data_dir(partitions: int) -> MemoryStorage:
    """A data directory as an older kafka_wire single node left it (``kafka-wire-metadata.json``,
    no metadata log): ``__consumer_offsets`` made by a client (an ordinary topic with its own
    configs) holding a committed offset and client records."""
    storage = MemoryStorage()
    cluster_id = "b2xkLXNpbmdsZS1ub2RlAA"
    storage.files[META_PROPERTIES] = bytearray(
        format_meta_properties(node_id=1, cluster_id=cluster_id, directory_id="ZGlyZWN0b3J5LWlkLTAwMA")
    )
    ids = {"orders": uuid.UUID(int=11), OFFSETS_TOPIC: uuid.UUID(int=12)}
    counts = {"orders": 1, OFFSETS_TOPIC: partitions}
    configs = {"orders": {}, OFFSETS_TOPIC: {"cleanup.policy": "delete", "retention.ms": "60000"}}
    # Older kafka_wire versions stored an "internal" flag per topic; a client-made topic had false.
    document = {
        "version": 1,
        "cluster_id": cluster_id,
        "node_id": 1,
        "next_producer_id": 0,
        "topics": [
            {
                "name": n,
                "topic_id": str(ids[n]),
                "partitions": counts[n],
                "configs": configs[n],
                "internal": False,
            }
            for n in ids
        ],
    }
    storage.files[METADATA_FILE] = bytearray(json.dumps(document).encode())
    for name, topic_id in ids.items():
        for index in range(counts[name]):
            storage.files[f"{name}-{index}/partition.metadata"] = bytearray(
                format_partition_metadata(topic_id)
            )
            storage.files[f"{name}-{index}/{'0' * 20}.log"] = bytearray()
    now = 1_700_000_000_000
    good = offset_commit_record("billing", "orders", 0, OffsetCommitValue(41, "", now))
    records = [
        NewRecord(POISON_KEY, b"x"),  # a null group name: DecodeError
        NewRecord(None, b"no key"),
        NewRecord(b"\x7f\x00", b"an unknown key version"),
        NewRecord(good[0], b"\x00\x63garbage"),  # an offset commit value of an unknown version
        NewRecord(*good),
    ]
    log = f"{OFFSETS_TOPIC}-{partition_for_group('billing', partitions)}/{'0' * 20}.log"
    storage.files[log] = bytearray(build_batch(records, default_timestamp=now))
    for path, data in storage.files.items():
        storage._durable[path] = bytes(data)
    return storage


def test_an_ordinary_offsets_topic_from_an_older_broker_is_taken_over(
    caplog: pytest.LogCaptureFixture,
) -> None:
    storage = _old_data_dir(partitions=1)
    logger = logging.getLogger("tests.broker.internal")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        engine = Engine(storage=storage, logger=logger)  # imported; the old code raised here
        client = Client(engine, 1)
        assert committed(client, "billing", "orders", [0]) == {0: 41}  # the readable record loaded
    skipped = [r.getMessage() for r in caplog.records if "skipped at load" in r.getMessage()]
    assert len(skipped) == 4, skipped
    assert all(m.startswith(f"{OFFSETS_TOPIC}-0 offset ") for m in skipped)
    assert "a record without a key" in skipped[1] and "unknown key version 32512" in skipped[2]
    assert any("takes it over as an internal topic" in r.getMessage() for r in caplog.records)

    topic = engine.broker.state.metadata.topics[OFFSETS_TOPIC]
    assert topic.partitions == 1
    assert topic_configs(client, OFFSETS_TOPIC)["cleanup.policy"] == "compact"
    assert "retention.ms" not in topic.configs
    # One partition: every group goes to partition 0 (the old code asserted on a 50-partition count).
    assert commit(client, "billing", "orders", {0: 42}) == [ErrorCode.NONE]
    assert commit(client, "audit", "orders", {0: 3}) == [ErrorCode.NONE]
    again = Client(Engine(storage=engine.storage), 1)
    assert committed(again, "billing", "orders", [0]) == {0: 42}
    assert committed(again, "audit", "orders", [0]) == {0: 3}


def test_groups_are_placed_by_the_partition_count_the_topic_has() -> None:
    group = next(g for g in (f"group-{i}" for i in range(100)) if partition_for_group(g, 5) >= 3)
    engine = Engine(BrokerConfig(offsets_topic_num_partitions=3, group_initial_rebalance_delay_ms=0))
    client = Client(engine, 1)
    create(client, "orders")
    assert commit(client, group, "orders", {0: 5}) == [ErrorCode.NONE]
    # The setting changed between runs: the existing topic keeps its 3 partitions and places groups.
    bigger = BrokerConfig(offsets_topic_num_partitions=5, group_initial_rebalance_delay_ms=0)
    restarted = Engine(bigger, storage=engine.storage)
    again = Client(restarted, 1)
    assert committed(again, group, "orders", [0]) == {0: 5}
    assert commit(again, group, "orders", {0: 6}) == [ErrorCode.NONE]
    placed = restarted.broker.state.partitions[OFFSETS_TOPIC, partition_for_group(group, 3)]
    assert placed.log_end_offset == 2
    third = Client(Engine(bigger, storage=restarted.storage), 1)
    assert committed(third, group, "orders", [0]) == {0: 6}


def test_many_unreadable_records_are_logged_in_a_summary(caplog: pytest.LogCaptureFixture) -> None:
    storage = _old_data_dir(partitions=1)
    log = f"{OFFSETS_TOPIC}-0/{'0' * 20}.log"
    junk = build_batch([NewRecord(None, b"junk")] * 25, default_timestamp=1_700_000_000_000, base_offset=5)
    storage.files[log] += junk
    storage._durable[log] = bytes(storage.files[log])
    logger = logging.getLogger("tests.broker.internal.many")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        engine = Engine(storage=storage, logger=logger)
        client = Client(engine, 1)
        assert committed(client, "billing", "orders", [0]) == {0: 41}
    lines = [r.getMessage() for r in caplog.records if "skipped at load" in r.getMessage()]
    assert len(lines) == MAX_SKIPPED_LOGGED + 1
    assert lines[-1] == f"{OFFSETS_TOPIC}-0: 29 records skipped at load in all"
