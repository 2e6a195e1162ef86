"""Broker configuration from Kafka's property names: the synonym table, ``server.properties`` and
how ``kafka-wire serve`` reads them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kafka_wire.broker import BrokerConfig, BrokerConfigError
from kafka_wire.broker.kafka_properties import KAFKA_BROKER_PROPERTIES
from kafka_wire.broker.log.config import CONFIG_KEYS, LONG_MAX, LogConfig
from kafka_wire.broker.sasl_config import PLAIN_LOGIN_MODULE as PLAIN_MODULE
from kafka_wire.broker.sasl_config import SCRAM_LOGIN_MODULE as SCRAM_MODULE
from kafka_wire.broker.sasl_config import ListenerSasl
from kafka_wire.broker.server_properties import Endpoint, Note, load_server_properties, parse_endpoints
from kafka_wire.broker.topic_synonyms import (
    DEFAULT_CONFIG,
    STATIC_BROKER_CONFIG,
    TOPIC_CONFIG_OF,
    TOPIC_CONFIG_SYNONYMS,
    describe_synonyms,
)
from kafka_wire.cli.serve import _properties, describe_error, endpoints, read_properties_file

STOCK = Path(__file__).parent.parent / "data" / "kafka-4.0-server.properties"


def test_properties_file_and_flags(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n! another\nnum.partitions=3\nlog.segment.bytes : 1048576\nauto.create.topics.enable false\n"
        "log.dirs=/somewhere\nlisteners = PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\n",
        encoding="utf-8",
    )
    props, origins = _properties(
        path, ["node.id=7", "sasl.jaas.config=x=y", "sasl.users.PLAIN.alice=s3cret=x"]
    )
    assert props["listeners"] == "PLAINTEXT://:9092,CONTROLLER://:9093"  # a continued line
    assert origins["num.partitions"] == str(path) and origins["node.id"] == "--set"
    config = BrokerConfig.from_properties(props)
    assert (config.num_partitions, config.node_id, config.auto_create_topics) == (3, 7, False)
    assert config.topic_default_properties == {"log.segment.bytes": "1048576"}
    assert config.topic_defaults == {"segment.bytes": "1048576"}
    assert props["sasl.jaas.config"] == "x=y"  # split at the first =
    assert config.sasl_users == {"PLAIN": {"alice": "s3cret=x"}}


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"num.partitions": "zero"}, "num.partitions"),
        ({"num.partitions": "0"}, "num.partitions"),
        ({"auto.create.topics.enable": "maybe"}, "auto.create.topics.enable"),
        ({"group.max.size": "0"}, "group.max.size"),
        ({"offsets.retention.minutes": "soon"}, "offsets.retention.minutes"),
        ({"node.id": "-1"}, "node.id"),
        # broker properties that set topic defaults are checked by the topic config's rules
        ({"log.segment.bytes": "1000"}, "log.segment.bytes"),  # below Kafka 4.0's 1 MiB
        ({"log.roll.hours": "0"}, "log.roll.hours"),
        ({"log.roll.hours": "an hour"}, "log.roll.hours"),
        ({"log.roll.jitter.hours": "-1"}, "log.roll.jitter.hours"),
        ({"log.retention.minutes": "99999999999"}, "log.retention.minutes"),
        ({"message.max.bytes": "-1"}, "message.max.bytes"),
        ({"log.cleanup.policy": "shred"}, "log.cleanup.policy"),
        ({"log.cleaner.min.cleanable.ratio": "2"}, "log.cleaner.min.cleanable.ratio"),
        ({"min.insync.replicas": "0"}, "min.insync.replicas"),
        ({"compression.type": "brotli"}, "compression.type"),
        # KIP-848 groups: Kafka's GroupCoordinatorConfig bounds
        ({"group.consumer.heartbeat.interval.ms": "1000"}, "group.consumer.heartbeat.interval.ms"),
        ({"group.consumer.heartbeat.interval.ms": "20000"}, "group.consumer.heartbeat.interval.ms"),
        ({"group.consumer.min.heartbeat.interval.ms": "20000"}, "group.consumer.max.heartbeat.interval.ms"),
        ({"group.consumer.session.timeout.ms": "6000"}, "group.consumer.session.timeout.ms"),
        ({"group.consumer.max.session.timeout.ms": "30000"}, "group.consumer.max.session.timeout.ms"),
        (
            {
                "group.consumer.min.session.timeout.ms": "1000",
                "group.consumer.session.timeout.ms": "1000",
                "group.consumer.min.heartbeat.interval.ms": "1000",
                "group.consumer.heartbeat.interval.ms": "1000",
            },
            "group.consumer.heartbeat.interval.ms",
        ),
    ],
)
def test_bad_values_name_their_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(BrokerConfigError) as failure:
        load_server_properties(props)
    assert failure.value.key == key


def test_a_flag_without_a_value_is_refused() -> None:
    with pytest.raises(BrokerConfigError):
        _properties(None, ["num.partitions"])


# -- Kafka's synonym table -----------------------------------------------------------------------


def test_every_topic_config_has_its_broker_synonyms() -> None:
    assert set(CONFIG_KEYS) <= set(TOPIC_CONFIG_SYNONYMS)
    for topic, synonyms in TOPIC_CONFIG_SYNONYMS.items():
        # Kafka's default of the topic config is its last defaulted synonym's, converted
        last = [s for s in synonyms if s.default is not None][-1]
        if topic in CONFIG_KEYS:
            converted = int(last.default) * last.ms_per_unit if last.ms_per_unit != 1 else last.default  # type: ignore[arg-type]
            assert str(converted) == CONFIG_KEYS[topic].default, topic
        for synonym in synonyms:
            assert synonym.name in KAFKA_BROKER_PROPERTIES or synonym.name.startswith(("log.", "message."))


@pytest.mark.parametrize(
    ("prop", "value", "topic", "expected"),
    [
        ("log.segment.bytes", "2097152", "segment.bytes", "2097152"),
        ("log.roll.ms", "60000", "segment.ms", "60000"),
        ("log.roll.hours", "2", "segment.ms", "7200000"),
        ("log.roll.jitter.ms", "5", "segment.jitter.ms", "5"),
        ("log.roll.jitter.hours", "1", "segment.jitter.ms", "3600000"),
        ("log.index.size.max.bytes", "4096", "segment.index.bytes", "4096"),
        ("log.flush.interval.messages", "10000", "flush.messages", "10000"),
        ("log.flush.interval.ms", "1000", "flush.ms", "1000"),
        ("log.flush.scheduler.interval.ms", "3000", "flush.ms", "3000"),
        ("log.retention.bytes", "1073741824", "retention.bytes", "1073741824"),
        ("log.retention.ms", "1000", "retention.ms", "1000"),
        ("log.retention.minutes", "3", "retention.ms", "180000"),
        ("log.retention.hours", "168", "retention.ms", "604800000"),
        ("log.retention.hours", "-1", "retention.ms", "-1"),
        ("log.retention.minutes", "-5", "retention.ms", "-1"),  # any negative: no limit, as Kafka
        ("message.max.bytes", "2097152", "max.message.bytes", "2097152"),
        ("log.index.interval.bytes", "100", "index.interval.bytes", "100"),
        ("log.cleaner.delete.retention.ms", "10", "delete.retention.ms", "10"),
        ("log.cleaner.min.compaction.lag.ms", "10", "min.compaction.lag.ms", "10"),
        ("log.cleaner.max.compaction.lag.ms", "10", "max.compaction.lag.ms", "10"),
        ("log.segment.delete.delay.ms", "0", "file.delete.delay.ms", "0"),
        ("log.cleaner.min.cleanable.ratio", "0.1", "min.cleanable.dirty.ratio", "0.1"),
        ("log.cleanup.policy", "compact,delete", "cleanup.policy", "compact,delete"),
        ("unclean.leader.election.enable", "true", "unclean.leader.election.enable", "true"),
        ("min.insync.replicas", "2", "min.insync.replicas", "2"),
        ("compression.type", "zstd", "compression.type", "zstd"),
        ("compression.gzip.level", "5", "compression.gzip.level", "5"),
        ("compression.lz4.level", "1", "compression.lz4.level", "1"),
        ("compression.zstd.level", "7", "compression.zstd.level", "7"),
        ("log.preallocate", "true", "preallocate", "true"),
        ("log.message.timestamp.type", "LogAppendTime", "message.timestamp.type", "LogAppendTime"),
        ("log.message.timestamp.before.max.ms", "100", "message.timestamp.before.max.ms", "100"),
        ("log.message.timestamp.after.max.ms", "100", "message.timestamp.after.max.ms", "100"),
    ],
)
def test_each_synonym_sets_its_topic_default(prop: str, value: str, topic: str, expected: str) -> None:
    config = BrokerConfig.from_properties({prop: value})
    assert config.topic_defaults == {topic: expected}
    log = LogConfig.from_properties(config.topic_defaults)
    assert CONFIG_KEYS[topic].render(getattr(log, CONFIG_KEYS[topic].attribute)) == expected
    assert config.resolved_topic_defaults()[topic].source == prop


@pytest.mark.parametrize(
    ("props", "topic", "expected", "source"),
    [
        (
            {"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "3"},
            "retention.ms",
            "3",
            "log.retention.ms",
        ),
        (
            {"log.retention.hours": "1", "log.retention.minutes": "2"},
            "retention.ms",
            "120000",
            "log.retention.minutes",
        ),
        ({"log.roll.hours": "1", "log.roll.ms": "5"}, "segment.ms", "5", "log.roll.ms"),
        (
            {"log.roll.jitter.hours": "1", "log.roll.jitter.ms": "5"},
            "segment.jitter.ms",
            "5",
            "log.roll.jitter.ms",
        ),
        (
            {"log.flush.scheduler.interval.ms": "7", "log.flush.interval.ms": "9"},
            "flush.ms",
            "9",
            "log.flush.interval.ms",
        ),
    ],
)
def test_the_first_synonym_set_wins(props: dict[str, str], topic: str, expected: str, source: str) -> None:
    default = BrokerConfig.from_properties(props).resolved_topic_defaults()[topic]
    assert (default.value, default.source) == (expected, source)


def test_only_topic_configs_kafka_wire_has_get_defaults() -> None:
    config = BrokerConfig.from_properties({"log.local.retention.ms": "5", "log.segment.bytes": "2097152"})
    assert config.topic_defaults == {"segment.bytes": "2097152"}  # tiered storage: known, no topic config
    assert TOPIC_CONFIG_OF["log.local.retention.ms"] == "local.retention.ms"


def test_describe_synonyms_as_kafka_reports_them() -> None:
    hours = ("log.retention.hours", "168", DEFAULT_CONFIG)
    # nothing set: retention.ms's first synonym (log.retention.ms) has no default, so none is listed
    assert describe_synonyms("retention.ms", {}) == []
    assert describe_synonyms("retention.ms", {"log.retention.hours": "1"}) == []
    assert describe_synonyms("retention.ms", {"log.retention.ms": "5", "log.retention.hours": "1"}) == [
        ("log.retention.ms", "5", STATIC_BROKER_CONFIG),
        ("log.retention.hours", "1", STATIC_BROKER_CONFIG),
        hours,
    ]
    assert describe_synonyms("segment.bytes", {}) == [("log.segment.bytes", "1073741824", DEFAULT_CONFIG)]
    assert describe_synonyms("max.message.bytes", {"message.max.bytes": "2000"}) == [
        ("message.max.bytes", "2000", STATIC_BROKER_CONFIG),
        ("message.max.bytes", "1048588", DEFAULT_CONFIG),
    ]
    assert describe_synonyms("flush.messages", {}) == [
        ("log.flush.interval.messages", str(LONG_MAX), DEFAULT_CONFIG)
    ]


# -- server.properties ---------------------------------------------------------------------------


def test_kafka_4_stock_server_properties_load() -> None:
    props = read_properties_file(STOCK)
    assert props["process.roles"] == "broker,controller" and "listeners" in props
    loaded = load_server_properties(props)
    assert loaded.bind == Endpoint("PLAINTEXT", "127.0.0.1", 9092)
    assert loaded.advertised == Endpoint("PLAINTEXT", "localhost", 9092)
    assert (loaded.config.host, loaded.config.port) == ("localhost", 9092)
    assert loaded.data_dir == "/tmp/kraft-combined-logs"
    assert loaded.config.node_id == 1 and loaded.config.num_partitions == 1
    assert loaded.config.max_frame_bytes == 104857600
    assert loaded.config.topic_defaults == {"retention.ms": "604800000", "segment.bytes": "1073741824"}
    assert [n for n in loaded.notes if n.level == "warning"] == []
    infos = [n.message for n in loaded.notes if n.level == "info"]
    assert any("CONTROLLER" in m and "not opened" in m for m in infos)
    assert any(m.startswith("process.roles") for m in infos)
    ignored = {n.message.split(":")[0] for n in loaded.notes if n.level == "debug"}
    assert {
        "num.network.threads",
        "num.io.threads",
        "socket.send.buffer.bytes",
        "controller.quorum.bootstrap.servers",
    } <= ignored
    # The share coordinator's topic settings are applied (__share_group_state).
    assert loaded.config.share_coordinator_state_topic_replication_factor == 1
    assert loaded.config.share_coordinator_state_topic_min_isr == 1
    assert loaded.config.transaction_state_log_min_isr == 1  # read now: the stock file sets it


def test_unknown_and_removed_properties_are_one_warning_each() -> None:
    loaded = load_server_properties(
        {
            "num.partitions": "2",
            "no.such.thing": "1",
            "zookeeper.connect": "zk:2181",
            "log.message.format.version": "3.0",
            "num.io.threads": "8",
            "listener.name.internal.ssl.keystore.type": "PEM",
        }
    )
    assert loaded.config.num_partitions == 2
    assert [n for n in loaded.notes if n.level == "warning"] == [
        Note("warning", "no.such.thing: unknown broker property; ignored"),
        Note("warning", "zookeeper.connect: removed in Kafka 4.0; ignored"),
        Note("warning", "log.message.format.version: removed in Kafka 4.0; ignored"),
    ]
    debug = [n.message.split(":")[0] for n in loaded.notes if n.level == "debug"]
    assert debug == ["num.io.threads", "listener.name.internal.ssl.keystore.type"]


@pytest.mark.parametrize(
    "key",
    [
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.retention.hours",
        "log.roll.hours",
        "log.segment.delete.delay.ms",
        "message.max.bytes",
        "num.network.threads",
        "offsets.topic.replication.factor",
        "group.max.size",
        "min.insync.replicas",
    ],
)
def test_the_properties_that_used_to_stop_the_start_load(key: str) -> None:
    """Issue 13 "Why" 6: each of these stopped ``kafka-wire serve``."""
    value = {"log.segment.delete.delay.ms": "1000", "offsets.topic.replication.factor": "1"}.get(key, "2")
    loaded = load_server_properties({key: value})
    assert [n for n in loaded.notes if n.level == "warning"] == []


def test_log_dirs() -> None:
    assert load_server_properties({"log.dirs": " /a "}).data_dir == "/a"
    assert load_server_properties({"log.dir": "/b"}).data_dir == "/b"
    assert load_server_properties({"log.dirs": "/a", "log.dir": "/b"}).data_dir == "/a"
    assert load_server_properties({}).data_dir is None
    with pytest.raises(BrokerConfigError, match="one log directory; this lists 2") as failure:
        load_server_properties({"log.dirs": "/a,/b"})
    assert failure.value.key == "log.dirs"


def test_listeners() -> None:
    assert parse_endpoints("listeners", "plaintext://[::1]:9092, SASL_PLAINTEXT://host.example:0") == [
        Endpoint("PLAINTEXT", "::1", 9092),
        Endpoint("SASL_PLAINTEXT", "host.example", 0),
    ]
    loaded = load_server_properties(
        {
            "listeners": "CONTROLLER://:9093,CLIENT://0.0.0.0:19092,OTHER://:7",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,CLIENT:PLAINTEXT,OTHER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "advertised.listeners": "CLIENT://broker.example:29092",
        }
    )
    assert loaded.bind == Endpoint(
        "CLIENT", "0.0.0.0", 19092
    )  # the first listener that is not the controller's
    assert loaded.advertised == Endpoint("CLIENT", "broker.example", 29092)
    assert any("OTHER is not opened" in n.message for n in loaded.notes)
    named = load_server_properties(
        {
            "listeners": "A://:1,B://:2",
            "inter.broker.listener.name": "b",
            "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT",
        }
    )
    assert named.bind == Endpoint("B", "127.0.0.1", 2) == named.advertised  # empty host: loopback
    only_advertised = load_server_properties({"advertised.listeners": "PLAINTEXT://:9999"})
    assert only_advertised.bind is None and only_advertised.advertised == Endpoint(
        "PLAINTEXT", "127.0.0.1", 9999
    )


@pytest.mark.parametrize(
    ("props", "key", "reason"),
    [
        ({"listeners": "SSL://:9093"}, "ssl.keystore.location", "uses TLS: set ssl.keystore.location"),
        ({"listeners": "SASL_SSL://:9093"}, "sasl.enabled.mechanisms", "GSSAPI is not served"),
        (
            {"listeners": "SSL://:9093", "sasl.users.PLAIN.a": "b"},
            "listeners",
            r"sasl.users.\* are set \(SASL_SSL\)",
        ),
        ({"listeners": "PLAINTEXT://:9093", "sasl.users.PLAIN.a": "b"}, "listeners", "sasl.users"),
        ({"listeners": "SASL_PLAINTEXT://:9093"}, "sasl.enabled.mechanisms", "GSSAPI is not served"),
        (
            {"listeners": "SASL_PLAINTEXT://:9093", "sasl.enabled.mechanisms": "PLAIN"},
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "no JAAS configuration",
        ),
        (
            {
                "listeners": "SASL_PLAINTEXT://:9093",
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "sasl.jaas.config": f"{SCRAM_MODULE} required;",
            },
            "sasl.mechanism.inter.broker.protocol",
            "GSSAPI must be included in sasl.enabled.mechanisms",
        ),
        (
            {
                "listeners": "SASL_PLAINTEXT://:9093",
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"{SCRAM_MODULE} required;",
            },
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "PLAIN needs",
        ),
        (
            {"listeners": "CLIENT://:9093"},
            "listener.security.protocol.map",
            "no security protocol for listener CLIENT",
        ),
        ({"listeners": "PLAINTEXT://9092"}, "listeners", "not NAME://host:port"),
        ({"listeners": "PLAINTEXT://:70000"}, "listeners", "not a TCP port"),
        ({"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"}, "listeners", "once"),
        (
            {"listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"},
            "listeners",
            "no broker listener",
        ),
        (
            {"listeners": "PLAINTEXT://:1", "inter.broker.listener.name": "OTHER"},
            "inter.broker.listener.name",
            "not among",
        ),
        ({"listeners": "PLAINTEXT://0.0.0.0:1"}, "listeners", "cannot connect to 0.0.0.0"),
        ({"advertised.listeners": "PLAINTEXT://0.0.0.0:1"}, "advertised.listeners", "cannot connect"),
        ({"listener.security.protocol.map": "PLAINTEXT"}, "listener.security.protocol.map", "NAME:PROTOCOL"),
        ({"process.roles": "controller"}, "process.roles", "must include broker"),
        ({"process.roles": "broker,leader"}, "process.roles", "must include broker"),
        ({"node.id": "1", "broker.id": "2"}, "broker.id", "must equal node.id"),
        (
            {"offsets.topic.replication.factor": "0"},
            "offsets.topic.replication.factor",
            "between 1 and 32767",
        ),
    ],
)
def test_server_properties_refused(props: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(BrokerConfigError, match=reason) as failure:
        load_server_properties(props)
    assert failure.value.key == key


def test_roles_ids_and_the_offsets_replication_factor() -> None:
    loaded = load_server_properties(
        {
            "process.roles": "broker",
            "broker.id": "4",
            "offsets.topic.replication.factor": "3",
            "group.max.size": "5",
        }
    )
    assert loaded.config.node_id == 4 and loaded.config.group_max_size == 5
    assert loaded.notes == (
        Note(
            "warning",
            "offsets.topic.replication.factor=3: this is one node; __consumer_offsets gets 1 replica",
        ),
    )
    sasl = load_server_properties(
        {
            "listeners": "SASL_PLAINTEXT://:9093",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                f'{PLAIN_MODULE} required username="admin" password="a" user_admin="a" user_bob="b\\"c";'
            ),
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": f"{SCRAM_MODULE} required;",
        }
    )
    assert sasl.bind == Endpoint("SASL_PLAINTEXT", "127.0.0.1", 9093)
    assert sasl.config.sasl_listeners == {
        "PLAINTEXT": ListenerSasl(
            mechanisms=("PLAIN", "SCRAM-SHA-256"), plain_users={"admin": "a", "bob": 'b"c'}
        )
    }
    assert dict(sasl.config.sasl_listeners["PLAINTEXT"].plain_users) == {"admin": "a", "bob": 'b"c'}
    assert not [n for n in sasl.notes if "sasl" in n.message]  # read, not reported as ignored
    shortcut = load_server_properties(
        {"listeners": "SASL_PLAINTEXT://:9093", "sasl.users.SCRAM-SHA-256.bob": "pw"}
    )
    assert shortcut.config.sasl_listeners == {"PLAINTEXT": ListenerSasl(mechanisms=("SCRAM-SHA-256",))}
    assert load_server_properties({"offsets.retention.minutes": "2"}).config.offsets_retention_ms == 120_000


# -- kafka-wire serve ----------------------------------------------------------------------------


def _args(**kw: object) -> argparse.Namespace:
    return argparse.Namespace(**{"host": None, "port": None, "data_dir": None, **kw})


def test_command_line_wins_over_properties_over_defaults() -> None:
    stock = load_server_properties(read_properties_file(STOCK))
    assert endpoints(_args(), load_server_properties({})) == ("127.0.0.1", 9092, None, None)
    assert endpoints(_args(), stock) == ("127.0.0.1", 9092, "localhost", 9092)
    assert endpoints(_args(port=0), stock) == ("127.0.0.1", 0, "localhost", None)  # advertise the bound port
    assert endpoints(_args(host="127.0.0.2", port=5), stock) == ("127.0.0.2", 5, "127.0.0.2", None)


def test_an_error_is_one_line_naming_the_file_key_and_value(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("log.roll.hours=0\n", encoding="utf-8")
    props, origins = _properties(path, ["num.partitions=x"])
    with pytest.raises(BrokerConfigError) as failure:
        load_server_properties(props)
    assert (
        describe_error(failure.value, props, origins)
        == "kafka-wire serve: --set: num.partitions=x: invalid value 'x'"
    )
    del props["num.partitions"]
    with pytest.raises(BrokerConfigError) as failure:
        load_server_properties(props)
    line = describe_error(failure.value, props, origins)
    assert line == f"kafka-wire serve: {path}: log.roll.hours=0: '0' is below the minimum 1"


def test_offsets_topic_and_group_properties() -> None:
    config = BrokerConfig.from_properties(
        {
            "group.max.size": "5",
            "offsets.topic.segment.bytes": "2000000",
            "offsets.topic.compression.codec": "4",
        }
    )
    assert (
        config.group_max_size,
        config.offsets_topic_segment_bytes,
        config.offsets_topic_compression_codec,
    ) == (
        5,
        2_000_000,
        4,
    )
    defaults = BrokerConfig()  # Kafka's defaults
    assert (
        defaults.group_max_size,
        defaults.offsets_topic_segment_bytes,
        defaults.offsets_topic_compression_codec,
    ) == (
        2**31 - 1,
        100 * 1024 * 1024,
        0,
    )
    for key, value in (
        ("group.max.size", "0"),
        ("offsets.topic.segment.bytes", "10"),
        ("offsets.topic.compression.codec", "5"),
    ):
        with pytest.raises(BrokerConfigError) as failure:
            BrokerConfig.from_properties({key: value})
        assert failure.value.key == key


def test_consumer_group_intervals_within_their_bounds() -> None:
    config = BrokerConfig.from_properties(
        {"group.consumer.min.heartbeat.interval.ms": "500", "group.consumer.heartbeat.interval.ms": "1000"}
    )
    assert (config.group_consumer_heartbeat_interval_ms, config.group_consumer_session_timeout_ms) == (
        1000,
        45_000,
    )


def test_connection_limits_by_kafka_name_with_kafkas_defaults() -> None:
    defaults = BrokerConfig()
    assert (defaults.max_connections, defaults.max_connections_per_ip) == (2**31 - 1, 2**31 - 1)
    assert (defaults.connections_max_idle_ms, defaults.queued_max_requests) == (600_000, 500)
    assert (defaults.failed_authentication_delay_ms, defaults.fetch_session_eviction_ms) == (100, 120_000)
    assert defaults.request_receive_timeout_ms == 30_000 and defaults.max_connections_per_ip_overrides == {}
    config = BrokerConfig.from_properties(
        {
            "max.connections": "100",
            "max.connections.per.ip": "10",
            "max.connections.per.ip.overrides": "broker-host:100, 127.0.0.1:200,::1:3",
            "connections.max.idle.ms": "1000",
            "kafka.wire.request.receive.timeout.ms": "2000",
            "queued.max.requests": "7",
            "connection.failed.authentication.delay.ms": "0",
            "min.incremental.fetch.session.eviction.ms": "5",
            "connections.max.reauth.ms": "60000",
        }
    )
    assert defaults.connections_max_reauth_ms == 0 and config.connections_max_reauth_ms == 60_000
    assert (config.max_connections, config.max_connections_per_ip, config.queued_max_requests) == (100, 10, 7)
    assert config.max_connections_per_ip_overrides == {"broker-host": 100, "127.0.0.1": 200, "::1": 3}
    assert (config.connections_max_idle_ms, config.request_receive_timeout_ms) == (1000, 2000)
    assert (config.failed_authentication_delay_ms, config.fetch_session_eviction_ms) == (0, 5)


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"max.connections.per.ip.overrides": "no-count"}, "max.connections.per.ip.overrides"),
        ({"max.connections.per.ip.overrides": "host:-1"}, "max.connections.per.ip.overrides"),
        ({"max.connections": "-1"}, "max.connections"),
        ({"queued.max.requests": "0"}, "queued.max.requests"),
        ({"kafka.wire.request.receive.timeout.ms": "0"}, "kafka.wire.request.receive.timeout.ms"),
        ({"connection.failed.authentication.delay.ms": "-5"}, "connection.failed.authentication.delay.ms"),
        ({"connections.max.reauth.ms": "-1"}, "connections.max.reauth.ms"),
    ],
)
def test_bad_connection_limits_name_their_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(BrokerConfigError) as failure:
        BrokerConfig.from_properties(props)
    assert failure.value.key == key and "unknown" not in str(failure.value)
