"""Broker configuration from Kafka's property names, as ``kafka-wire serve`` reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_wire.broker import BrokerConfig, BrokerConfigError
from kafka_wire.serve_cli import _properties


def test_properties_file_and_flags(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n! another\nnum.partitions=3\nlog.segment.bytes : 1048576\nauto.create.topics.enable false\n"
        "log.dirs=/ignored\n",
        encoding="utf-8",
    )
    props = _properties(path, ["node.id=7", "sasl.users.PLAIN.alice=s3cret=x"])
    config = BrokerConfig.from_properties(props)
    assert (config.num_partitions, config.node_id, config.auto_create_topics) == (3, 7, False)
    assert config.topic_defaults == {"segment.bytes": "1048576"}
    assert config.sasl_users == {"PLAIN": {"alice": "s3cret=x"}}


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"num.partitions": "zero"}, "num.partitions"),
        ({"num.partitions": "0"}, "num.partitions"),
        ({"auto.create.topics.enable": "maybe"}, "auto.create.topics.enable"),
        ({"no.such.property": "1"}, "no.such.property"),
        ({"sasl.users.GSSAPI.bob": "x"}, "sasl.enabled.mechanisms"),
    ],
)
def test_bad_properties_name_their_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(BrokerConfigError) as failure:
        BrokerConfig.from_properties(props)
    assert failure.value.key == key


def test_a_flag_without_a_value_is_refused() -> None:
    with pytest.raises(BrokerConfigError):
        _properties(None, ["num.partitions"])


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
        }
    )
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
    ],
)
def test_bad_connection_limits_name_their_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(BrokerConfigError) as failure:
        BrokerConfig.from_properties(props)
    assert failure.value.key == key and "unknown" not in str(failure.value)
