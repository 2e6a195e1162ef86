"""Topic configuration through the engine: Kafka 4.0's keys and defaults, broker-level defaults
(Kafka's synonym table) and how DescribeConfigs reports them."""

from __future__ import annotations

import json

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.log.config import REMOVED_CONFIGS
from kafka_wire.broker.metadata import METADATA_FILE
from kafka_wire.broker.storage import MemoryStorage
from kafka_wire.messages import ErrorCode
from kafka_wire.records import build_batch
from tests.broker.engine import Client, Engine
from tests.broker.test_engine import create, produce

HOUR = 3_600_000


@pytest.mark.parametrize("key", sorted(REMOVED_CONFIGS))
def test_a_config_removed_in_kafka_4_is_invalid_config(key: str) -> None:
    client = Client(Engine(), 1)
    reply = create(client, "t", 1, **{key.replace(".", "_"): "true" if key.endswith("enable") else "0"})
    assert reply.topics[0].error_code == ErrorCode.INVALID_CONFIG
    assert key in (reply.topics[0].error_message or "")


def test_future_timestamps_are_refused_after_an_hour_by_default() -> None:
    engine = Engine()
    client = Client(engine, 1)
    assert create(client, "t").topics[0].error_code == ErrorCode.NONE
    now = engine.now_ms
    ok = produce(client, "t", build_batch([(b"k", b"v", (), now + HOUR)]))
    late = produce(client, "t", build_batch([(b"k", b"v", (), now + HOUR + 1)]))
    old = produce(client, "t", build_batch([(b"k", b"v", (), 0)]))  # before.max.ms: no limit
    assert ok is not None and late is not None and old is not None
    assert ok.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert late.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_TIMESTAMP
    assert old.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def test_stored_overrides_that_kafka_4_removed_are_dropped_at_start() -> None:
    storage = MemoryStorage()
    engine = Engine(storage=storage)
    client = Client(engine, 1)
    assert create(client, "old", retention_ms="1000").topics[0].error_code == ErrorCode.NONE
    # a data directory written before 4.0's removals, with overrides of the removed keys
    document = json.loads(storage.read(METADATA_FILE, 0, storage.size(METADATA_FILE) or 0))
    [topic] = [t for t in document["topics"] if t["name"] == "old"]
    topic["configs"].update({"message.format.version": "2.8", "message.downconversion.enable": "false"})
    storage.files[METADATA_FILE] = bytearray(json.dumps(document).encode())
    restarted = Engine(BrokerConfig(), storage=storage)
    info = restarted.broker.state.topic_named("old")
    assert info is not None and info.configs == {"retention.ms": "1000"}
    again = Client(restarted, 1)
    reply = produce(again, "old", build_batch([(b"k", b"v", (), restarted.now_ms)]))
    assert reply is not None and reply.responses[0].partition_responses[0].error_code == ErrorCode.NONE
