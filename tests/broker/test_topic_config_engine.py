"""Topic configuration through the engine: Kafka 4.0's keys and defaults, broker-level defaults
(Kafka's synonym table) and how DescribeConfigs reports them."""

from __future__ import annotations

import json

import pytest

from kafka_wire.broker import BrokerConfig
from kafka_wire.broker.effects import Fsync
from kafka_wire.broker.legacy_import import METADATA_FILE
from kafka_wire.broker.log import PartitionLog
from kafka_wire.broker.log.config import REMOVED_CONFIGS
from kafka_wire.broker.server_properties import load_server_properties
from kafka_wire.broker.topic_synonyms import DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG
from kafka_wire.messages import (
    DescribeConfigsRequest,
    DescribeConfigsRequestResource,
    DescribeConfigsResponse,
    ErrorCode,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    ProduceResponse,
)
from kafka_wire.records import build_batch
from tests.broker.engine import Client, Engine, legacy_storage
from tests.broker.test_engine import create, produce
from tests.broker.test_engine_groups import find_coordinator

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


def test_stored_overrides_that_kafka_4_removed_are_dropped_when_an_old_directory_is_imported() -> None:
    storage = legacy_storage()
    # an old single node's directory written before 4.0's removals, with overrides of the removed keys
    document = json.loads(storage.read(METADATA_FILE, 0, storage.size(METADATA_FILE) or 0))
    [topic] = [t for t in document["topics"] if t["name"] == "events"]
    topic["configs"].update({"message.format.version": "2.8", "message.downconversion.enable": "false"})
    storage.files[METADATA_FILE] = bytearray(json.dumps(document).encode())
    restarted = Engine(BrokerConfig(), storage=storage)
    restarted.advance(1)
    info = restarted.broker.state.topic_named("events")
    assert info is not None and info.configs == {"cleanup.policy": "compact"}
    again = Client(restarted, 1)
    reply = produce(again, "events", build_batch([(b"k", b"v", (), restarted.now_ms)]))
    assert reply is not None and reply.responses[0].partition_responses[0].error_code == ErrorCode.NONE


# -- broker properties that set topic defaults, and the others issue 13 found refused -------------


def engine_with(**props: str) -> Engine:
    """An engine configured as ``kafka-wire serve`` would be by these Kafka properties (idle
    connections kept: these tests move the clock by hours between two requests of one client)."""
    loaded = load_server_properties(
        {"group.initial.rebalance.delay.ms": "0", "connections.max.idle.ms": "-1", **props}
    )
    assert [n for n in loaded.notes if n.level == "warning"] == []
    return Engine(loaded.config)


def _log(engine: Engine, topic: str = "t") -> PartitionLog:
    return engine.broker.state.partitions[topic, 0].log


def _error(reply: ProduceResponse | None) -> int:
    assert reply is not None
    return reply.responses[0].partition_responses[0].error_code


def _fsyncs(engine: Engine, since: int) -> list[str]:
    return [e.path for e in engine.log[since:] if isinstance(e, Fsync) and e.path.endswith(".log")]


def test_log_flush_interval_messages_fsyncs_every_message() -> None:
    for props, expected in (({}, 0), ({"log.flush.interval.messages": "1"}, 2)):
        engine = engine_with(**{k.replace("_", "."): v for k, v in props.items()})
        client = Client(engine, 1)
        create(client, "t")
        since = len(engine.log)
        for _ in range(2):
            assert (
                _error(produce(client, "t", build_batch([(b"k", b"v", (), engine.now_ms)]))) == ErrorCode.NONE
            )
        assert len(_fsyncs(engine, since)) == expected


def test_log_flush_interval_ms_fsyncs_after_that_long() -> None:
    engine = engine_with(**{"log.flush.interval.ms": "1000"})
    client = Client(engine, 1)
    create(client, "t")
    produce(client, "t", build_batch([(b"k", b"v", (), engine.now_ms)]))
    since = len(engine.log)
    engine.advance(999)
    assert _fsyncs(engine, since) == []
    engine.advance(1)
    assert _fsyncs(engine, since) == ["t-0/00000000000000000000.log"]


def test_log_roll_hours_rolls_the_segment() -> None:
    engine = engine_with(**{"log.roll.hours": "1"})
    client = Client(engine, 1)
    create(client, "t")
    produce(client, "t", build_batch([(b"k", b"v", (), engine.now_ms)]))
    engine.advance(HOUR - 1)
    assert _log(engine).segment_count == 1
    engine.advance(1)
    produce(client, "t", build_batch([(b"k", b"v", (), engine.now_ms)]))
    assert _log(engine).segment_count == 2


def test_log_retention_hours_and_log_segment_delete_delay_ms() -> None:
    engine = engine_with(
        **{
            "log.retention.hours": "1",
            "log.roll.ms": "1000",
            "log.segment.delete.delay.ms": "2000",
            "log.retention.check.interval.ms": "1000",
        }
    )
    client = Client(engine, 1)
    create(client, "t")
    produce(client, "t", build_batch([(b"k", b"old", (), engine.now_ms)]))
    engine.advance(1000)
    produce(client, "t", build_batch([(b"k", b"new", (), engine.now_ms + HOUR)]))  # rolls; far from expiring
    assert _log(engine).log_start_offset == 0
    engine.advance(HOUR)
    assert _log(engine).log_start_offset == 1
    deleted = [name for name in engine.storage.list_dir("t-0") if name.endswith(".deleted")]
    assert deleted  # renamed, and removed log.segment.delete.delay.ms later
    engine.advance(2000)
    assert not [name for name in engine.storage.list_dir("t-0") if name.endswith(".deleted")]


def test_message_max_bytes_limits_batches() -> None:
    engine = engine_with(**{"message.max.bytes": "2000"})
    client = Client(engine, 1)
    create(client, "t")
    assert (
        _error(produce(client, "t", build_batch([(b"k", b"v" * 1800, (), engine.now_ms)]))) == ErrorCode.NONE
    )
    big = build_batch([(b"k", b"v" * 2000, (), engine.now_ms)])
    assert _error(produce(client, "t", big)) == ErrorCode.MESSAGE_TOO_LARGE


def test_min_insync_replicas_is_capped_by_the_replication_factor() -> None:
    """Kafka's ``effectiveMinIsr``: min(min.insync.replicas, replicas). A single node's topics have
    one replica, so acks=all is accepted whatever the setting."""
    engine = engine_with(**{"min.insync.replicas": "2"})
    client = Client(engine, 1)
    create(client, "t")
    batch = build_batch([(b"k", b"v", (), engine.now_ms)])
    assert _error(produce(client, "t", batch, acks=-1)) == ErrorCode.NONE
    assert _error(produce(client, "t", batch, acks=1)) == ErrorCode.NONE


def _join(client: Client, member_id: str = "") -> JoinGroupResponse:
    find_coordinator(client, "g")
    reply = client.request(
        JoinGroupRequest(
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        ),
        3,
    )
    assert isinstance(reply.body, JoinGroupResponse)
    return reply.body


def test_group_max_size_caps_a_group() -> None:
    engine = engine_with(**{"group.max.size": "1"})
    assert _join(Client(engine, 1)).error_code == ErrorCode.NONE
    assert _join(Client(engine, 2)).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    unlimited = engine_with()
    assert _join(Client(unlimited, 1)).error_code == ErrorCode.NONE
    second = Client(unlimited, 2)
    second.send(
        JoinGroupRequest(
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range")],
        ),
        3,
    )
    assert second.responses() == []  # admitted: held for the rebalance, not refused


def test_stock_settings_kafka_wire_ignores_or_clamps_start_a_working_broker() -> None:
    engine = engine_with(
        **{"num.network.threads": "3", "offsets.topic.replication.factor": "1", "num.io.threads": "8"}
    )
    client = Client(engine, 1)
    create(client, "t")
    assert _error(produce(client, "t", build_batch([(b"k", b"v", (), engine.now_ms)]))) == ErrorCode.NONE
    assert _join(client).error_code == ErrorCode.NONE


# -- DescribeConfigs -----------------------------------------------------------------------------


def _describe(
    client: Client, resource_type: int, name: str
) -> dict[str, tuple[str | None, int, list[tuple[str, str | None, int]]]]:
    reply = client.request(
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequestResource(
                    resource_type=resource_type, resource_name=name, configuration_keys=None
                )
            ],
            include_synonyms=True,
        )
    )
    assert isinstance(reply.body, DescribeConfigsResponse)
    [result] = reply.body.results
    assert result.error_code == ErrorCode.NONE
    return {
        c.name: (c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms])
        for c in result.configs
    }


def test_describe_configs_reports_broker_defaults_as_kafka_does() -> None:
    engine = engine_with(**{"log.retention.hours": "1", "message.max.bytes": "2000", "log.roll.ms": "60000"})
    client = Client(engine, 1)
    create(client, "t", cleanup_policy="compact", min_cleanable_dirty_ratio="0.50")
    described = _describe(client, 2, "t")
    # the value is what the log runs with; log.retention.ms is unset, so Kafka lists no synonym
    assert described["retention.ms"] == (str(HOUR), DEFAULT_CONFIG, [])
    assert _log(engine).config.retention_ms == HOUR
    assert described["max.message.bytes"] == (
        "2000",
        STATIC_BROKER_CONFIG,
        [
            ("message.max.bytes", "2000", STATIC_BROKER_CONFIG),
            ("message.max.bytes", "1048588", DEFAULT_CONFIG),
        ],
    )
    assert described["segment.ms"] == (
        "60000",
        STATIC_BROKER_CONFIG,
        [("log.roll.ms", "60000", STATIC_BROKER_CONFIG), ("log.roll.hours", "168", DEFAULT_CONFIG)],
    )
    assert described["segment.bytes"] == (
        "1073741824",
        DEFAULT_CONFIG,
        [("log.segment.bytes", "1073741824", DEFAULT_CONFIG)],
    )
    assert described["cleanup.policy"] == (
        "compact",
        DYNAMIC_TOPIC_CONFIG,
        [
            ("cleanup.policy", "compact", DYNAMIC_TOPIC_CONFIG),
            ("log.cleanup.policy", "delete", DEFAULT_CONFIG),
        ],
    )
    assert described["message.timestamp.after.max.ms"][0] == "3600000"
    assert described["min.cleanable.dirty.ratio"][2][0] == (
        "min.cleanable.dirty.ratio",
        "0.5",
        DYNAMIC_TOPIC_CONFIG,
    )
    broker = _describe(client, 4, "1")
    assert broker["message.max.bytes"][0] == "2000" and broker["log.retention.hours"][0] == "1"


def test_describe_configs_resources_as_kafka_answers_them() -> None:
    """An empty key list is every config; the cluster-default broker resource lists no static
    configs; a resource type Kafka does not define fails every resource of the request (found by
    tests/differential)."""
    engine = Engine()
    client = Client(engine, 1)
    create(client, "t")

    def describe(*resources: tuple[int, str, list[str] | None]) -> DescribeConfigsResponse:
        reply = client.request(
            DescribeConfigsRequest(
                resources=[
                    DescribeConfigsRequestResource(resource_type=t, resource_name=n, configuration_keys=k)
                    for t, n, k in resources
                ]
            ),
            4,
        ).body
        assert isinstance(reply, DescribeConfigsResponse)
        return reply

    every = describe((2, "t", []), (2, "t", None), (4, "", None), (4, "1", []))
    assert len(every.results[0].configs) == len(every.results[1].configs) > 20
    assert every.results[2].error_code == 0 and every.results[2].configs == []
    assert len(every.results[3].configs) > 10
    refused = describe((2, "t", None), (99, "x", None))
    assert [r.error_code for r in refused.results] == [42, 42]
