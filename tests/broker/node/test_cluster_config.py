"""KRaft-mode properties: read into ClusterSettings and checked as Kafka checks them."""

from __future__ import annotations

import pytest

from kafka_wire.broker.cluster_settings import Voter
from kafka_wire.broker.cluster_view import Endpoint
from kafka_wire.broker.config import BrokerConfig, BrokerConfigError
from kafka_wire.broker.sasl_config import ListenerSasl
from kafka_wire.broker.server_properties import load_server_properties, parse_bootstrap_servers, parse_voters

VOTERS = "1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097"


def combined(node_id: int = 1, **extra: str) -> dict[str, str]:
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": VOTERS,
        "listeners": f"PLAINTEXT://:{9090 + 2 * node_id},CONTROLLER://:{9091 + 2 * node_id}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    }
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    return props


def test_a_combined_node() -> None:
    loaded = load_server_properties(
        combined(advertised_listeners="PLAINTEXT://node1.example:9092", min_insync_replicas="2")
    )
    cluster = loaded.config.cluster
    assert cluster is not None
    assert cluster.is_broker and cluster.is_controller
    assert cluster.voters == (
        Voter(1, "127.0.0.1", 9093),
        Voter(2, "127.0.0.1", 9095),
        Voter(3, "127.0.0.1", 9097),
    )
    assert cluster.listeners == (
        Endpoint("PLAINTEXT", "127.0.0.1", 9092),
        Endpoint("CONTROLLER", "127.0.0.1", 9093),
    )
    assert cluster.advertised("PLAINTEXT") == Endpoint("PLAINTEXT", "node1.example", 9092)
    assert cluster.advertised("CONTROLLER") == Endpoint("CONTROLLER", "127.0.0.1", 9093)
    assert cluster.controller_listener == "CONTROLLER" and cluster.inter_broker_listener == "PLAINTEXT"
    assert (loaded.config.host, loaded.config.port) == ("node1.example", 9092)
    assert loaded.config.min_insync_replicas == 2
    assert loaded.config.offsets_topic_replication_factor == 3  # Kafka's default: no clamp in a cluster
    assert not loaded.config.unclean_leader_election_enable
    # The quorum properties are read, not reported as ignored.
    assert not [n for n in loaded.notes if n.message.startswith("controller.quorum")]


def test_controller_listeners_default_to_plaintext_without_a_protocol_map() -> None:
    props = combined()
    del props["listener.security.protocol.map"]
    cluster = load_server_properties(props).config.cluster
    assert cluster is not None and cluster.controller_listener == "CONTROLLER"
    # Given a map, it must name them (Kafka's rule).
    with pytest.raises(BrokerConfigError, match="no security protocol for listener CONTROLLER"):
        load_server_properties(combined(listener_security_protocol_map="PLAINTEXT:PLAINTEXT"))


def test_replication_properties_parse() -> None:
    config = BrokerConfig.from_properties(
        {
            "replica.lag.time.max.ms": "5000",
            "replica.fetch.wait.max.ms": "100",
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            "controller.quorum.election.timeout.ms": "300",
            "leader.imbalance.check.interval.seconds": "10",
            "auto.leader.rebalance.enable": "false",
            "unclean.leader.election.enable": "true",
        }
    )
    assert config.replica_lag_time_max_ms == 5000 and config.replica_fetch_wait_max_ms == 100
    assert (config.broker_session_timeout_ms, config.broker_heartbeat_interval_ms) == (3000, 500)
    assert config.quorum_election_timeout_ms == 300
    assert config.leader_imbalance_check_interval_ms == 10_000
    assert not config.auto_leader_rebalance_enable and config.unclean_leader_election_enable


def test_broker_only_and_controller_only_nodes() -> None:
    broker = load_server_properties(
        {
            "process.roles": "broker",
            "node.id": "4",
            "controller.quorum.voters": VOTERS,
            "listeners": "PLAINTEXT://:9100",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        }
    ).config.cluster
    assert broker is not None and broker.is_broker and not broker.is_controller
    assert broker.inter_broker_listener == "PLAINTEXT" and broker.controller_listener == "CONTROLLER"
    controller = load_server_properties(
        {
            "process.roles": "controller",
            "node.id": "2",
            "controller.quorum.voters": VOTERS,
            "listeners": "CONTROLLER://:9095",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        }
    )
    assert controller.config.cluster is not None and controller.config.cluster.roles == {"controller"}
    assert controller.bind is None and controller.config.cluster.inter_broker_listener == ""


def test_without_voters_a_node_stays_single() -> None:
    props = combined()
    del props["controller.quorum.voters"]
    loaded = load_server_properties(props)
    assert loaded.config.cluster is None
    assert loaded.config.offsets_topic_replication_factor == 1


@pytest.mark.parametrize(
    ("change", "key", "reason"),
    [
        ({"process.roles": None}, "process.roles", "must be set when controller.quorum.voters is"),
        ({"process.roles": "broker,admin"}, "process.roles", "must be broker, controller"),
        ({"node.id": None}, "node.id", "must be set when process.roles is"),
        ({"controller.listener.names": None}, "controller.listener.names", "must be set in KRaft mode"),
        ({"listeners": None}, "listeners", "must be set in KRaft mode"),
        ({"controller.quorum.voters": "1@h"}, "controller.quorum.voters", "not id@host:port"),
        ({"controller.quorum.voters": "1@h:1,1@h:2"}, "controller.quorum.voters", "once"),
        ({"node.id": "5"}, "controller.quorum.voters", "node.id 5 must be among the voters"),
        (
            {
                "listeners": "PLAINTEXT://:9092,OTHER://:9093",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
            },
            "controller.listener.names",
            "must appear in listeners",
        ),
        (
            {"process.roles": "broker"},
            "controller.quorum.voters",
            "must not be a voter when process.roles has only the broker role",
        ),
        (
            {"process.roles": "controller"},
            "listeners",
            "controller-only node listens on controller listeners only",
        ),
        (
            {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL"},
            "listeners",
            "PLAINTEXT and SSL, and SASL_PLAINTEXT and SASL_SSL on broker listeners",
        ),
        (
            {"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"},
            "ssl.keystore.location",
            "listener PLAINTEXT uses TLS",
        ),
        ({"advertised.listeners": "PLAINTEXT://0.0.0.0:1"}, "advertised.listeners", "cannot connect"),
        ({"advertised.listeners": "NOPE://h:1"}, "advertised.listeners", "not among the listeners"),
        ({"inter.broker.listener.name": "CONTROLLER"}, "inter.broker.listener.name", "controller listener"),
        (
            {"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"},
            "sasl.enabled.mechanisms",
            "GSSAPI is not served",
        ),
        (
            {
                "listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            },
            "sasl.mechanism.inter.broker.protocol",
            "GSSAPI must be included in sasl.enabled.mechanisms",
        ),
        (
            {
                "listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            },
            "sasl.mechanism.inter.broker.protocol",
            "PLAIN only",
        ),
        (
            {
                "listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";',
            },
            "sasl.jaas.config",
            "needs the username and password options",
        ),
        ({"broker.heartbeat.interval.ms": "9000"}, "broker.heartbeat.interval.ms", "less than"),
    ],
)
def test_inconsistent_sets_are_refused(change: dict[str, str | None], key: str, reason: str) -> None:
    props = combined()
    for k, v in change.items():
        if v is None:
            props.pop(k, None)
        else:
            props[k] = v
    with pytest.raises(BrokerConfigError, match=reason) as failure:
        load_server_properties(props)
    assert failure.value.key == key


def test_a_broker_only_node_opens_no_controller_listener() -> None:
    with pytest.raises(BrokerConfigError, match="opens no controller listener") as failure:
        load_server_properties(combined(node_id=4, process_roles="broker"))
    assert failure.value.key == "listeners"


def test_voters_and_bootstrap_servers_parse_as_kafka_writes_them() -> None:
    assert parse_voters("1@localhost:9093, 2@[::1]:9095,3@h:1") == (
        Voter(1, "localhost", 9093),
        Voter(2, "::1", 9095),
        Voter(3, "h", 1),
    )
    for bad in ("", "1@localhost", "x@h:1", "1@h:1,1@h:2", "-1@h:1", "1@h:99999", "1@:1"):
        with pytest.raises(BrokerConfigError):
            parse_voters(bad)
    assert parse_bootstrap_servers("a:1,b:2") == (("a", 1), ("b", 2))
    with pytest.raises(BrokerConfigError):
        parse_bootstrap_servers("a")


def test_sasl_listeners_of_a_cluster_node() -> None:
    """A SASL_PLAINTEXT client listener gets its gate; a SASL inter-broker listener also gives the
    node its PLAIN login to the other nodes (the username/password of its JAAS entry)."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="n" password="p" user_n="p";'
    props = combined(listeners="PLAINTEXT://:9092,CONTROLLER://:9093,CLIENT://:9094")
    props |= {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config": jaas,
    }
    config = load_server_properties(props).config
    assert config.sasl_listeners == {"CLIENT": ListenerSasl(mechanisms=("PLAIN",), plain_users={"n": "p"})}
    assert config.cluster is not None and config.cluster.logins() == {}
    props["listener.security.protocol.map"] = (
        "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT,CLIENT:SASL_PLAINTEXT"
    )
    props["sasl.mechanism.inter.broker.protocol"] = "PLAIN"
    props["listener.name.plaintext.plain.sasl.jaas.config"] = jaas
    config = load_server_properties(props).config
    assert set(config.sasl_listeners) == {"PLAINTEXT", "CLIENT"}
    assert config.cluster is not None and config.cluster.logins() == {"PLAINTEXT": ("n", "p")}
