"""TLS against ``kafka-wire serve`` and Apache Kafka 4.4, configured the same way (``tls_brokers``).

Every test runs against both brokers: confluent-kafka, kafka-python, aiokafka, kafkajs and the
Java 4.4 client (on Kafka, confluent-kafka and the Java client) create a topic, produce and
consume over SSL (mutual TLS) and over SASL_SSL (SCRAM-SHA-512); the client certificate's subject becomes the principal its connection carries
(both brokers log it: kafka-wire at INFO, Kafka in its request log); a certificate no mapping rule
applies to, a TLS handshake of garbage, a missing client certificate and one from an unknown
authority each close their own connection while the broker goes on serving the others; and
kafka_wire's own client (``KafkaClient``) connects over TLS and SASL_SSL. The certificates are
made at test time (``certs.py``).
"""

from __future__ import annotations

import asyncio
import re
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.client import TopicPartition
from kafka_wire.messages import CreateTopicsRequest, CreateTopicsRequestCreatableTopic, MetadataRequest
from kafka_wire.protocol.sasl import ScramClient
from kafka_wire.records import build_batch
from kafka_wire.spark import live
from kafka_wire.spark.access import ClusterAccess
from kafka_wire.spark.ranges import OptionError
from tests.e2e.brokers import BrokerProcess, kafka_wire_cli
from tests.e2e.certs import Pki, make_pki
from tests.e2e.tls_brokers import (
    SCRAM_MECHANISM,
    SCRAM_USER,
    apache_kafka_tls,
    client_context,
    kafka_wire_sasl_ssl,
    kafka_wire_ssl,
    refused,
    security,
)
from tests.interop.harness import Address, Client, DriverOptions, run_driver

CLIENTS: list[Client] = ["confluent", "kafka_python", "aiokafka", "kafkajs", "java4"]
#: How long a client's whole run (create, produce, consume) may take.
RUN_TIMEOUT_S = 40.0
#: How long a broker may take to write a connection's log line.
LOG_TIMEOUT_S = 10.0


@dataclass
class TlsTarget:
    """One broker's TLS listeners and how it logs a connection's principal."""

    name: str
    ssl: Address
    sasl_ssl: Address
    logs: Callable[[], str]
    #: ``{}`` is the principal's name: kafka-wire's INFO line, Kafka's request log field.
    principal_mark: str

    def wait_for_principal(self, name: str) -> None:
        mark = self.principal_mark.format(name)
        deadline = time.monotonic() + LOG_TIMEOUT_S
        while mark not in self.logs():
            assert time.monotonic() < deadline, f"{self.name} never logged {mark!r}"
            time.sleep(0.05)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _running(broker: BrokerProcess) -> Iterator[BrokerProcess]:
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="module")
def kafka_wire_target(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[TlsTarget]:
    ssl_broker = kafka_wire_ssl(tmp_path_factory.mktemp("kw-ssl"), pki)
    sasl_broker = kafka_wire_sasl_ssl(tmp_path_factory.mktemp("kw-sasl-ssl"), pki)
    for _ in _running(ssl_broker):
        for _ in _running(sasl_broker):
            yield TlsTarget(
                "kafka_wire",
                ssl_broker.address,
                sasl_broker.address,
                lambda: ssl_broker.log() + sasl_broker.log(),
                "principal User:{}\n",
            )


@pytest.fixture(scope="module")
def apache_kafka_target(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[TlsTarget]:
    node = apache_kafka_tls(tmp_path_factory.mktemp("kafka-tls"), pki)
    for _ in _running(node):
        yield TlsTarget(
            "apache_kafka", node.ssl_address, node.sasl_ssl_address, node.log, '"principal":"User:{}"'
        )


@pytest.fixture(scope="module", params=["kafka_wire", "apache_kafka"])
def target(request: pytest.FixtureRequest) -> TlsTarget:
    found: TlsTarget = request.getfixturevalue(f"{request.param}_target")
    return found


#: Every client against kafka-wire; against Kafka 4.4 (the reference: it checks the test, the
#: certificates and the drivers' TLS settings) one C client and the Java one.
TARGET_CLIENTS: list[tuple[str, Client]] = [("kafka_wire", c) for c in CLIENTS] + [
    ("apache_kafka", c) for c in ("confluent", "java4")
]


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
@pytest.mark.parametrize(("target", "client"), TARGET_CLIENTS, indirect=["target"])
def test_clients_produce_and_consume_over_tls(
    target: TlsTarget, pki: Pki, client: Client, protocol: str
) -> None:
    address = target.ssl if protocol == "SSL" else target.sasl_ssl
    options = DriverOptions(security=security(pki, protocol, "alice" if protocol == "SSL" else None))
    run = run_driver(
        client,
        address.bootstrap,
        "create,produce,consume",
        topic=f"tls-{protocol.lower()}-{client}",
        timeout_s=RUN_TIMEOUT_S,
        options=options,
    ).check()
    values = run.event("consumed")["values"]
    assert [v.rsplit("-", 1)[1] for v in values] == ["0", "1", "2"], run.describe()
    assert run.event("produced")["offsets"] == [0, 1, 2]


def test_mutual_tls_maps_the_certificate_subject_to_the_principal(target: TlsTarget, pki: Pki) -> None:
    """``CN=alice,OU=clients,O=kafka-wire tests,C=US`` is ``User:alice`` by the mapping rule
    (not the whole distinguished name, as ``DEFAULT`` would give); SASL's principal is the user's."""
    for name in ("alice", "bob"):
        options = DriverOptions(security=security(pki, "SSL", name))
        run_driver("confluent", target.ssl.bootstrap, "metadata", options=options).check()
        target.wait_for_principal(name)
    run_driver(
        "confluent",
        target.sasl_ssl.bootstrap,
        "metadata",
        options=DriverOptions(security=security(pki, "SASL_SSL")),
    ).check()
    target.wait_for_principal(SCRAM_USER[0])
    assert "User:CN=" not in target.logs()


def test_a_certificate_no_rule_maps_is_refused(target: TlsTarget, pki: Pki) -> None:
    """``OU=services`` matches no rule: Kafka fails the authentication and closes the connection,
    and so does kafka-wire; the broker serves the next client."""
    options = DriverOptions(security=security(pki, "SSL", "svc"))
    run = run_driver("confluent", target.ssl.bootstrap, "metadata", timeout_s=8.0, options=options)
    assert run.returncode != 0 and run.events and run.events[-1]["event"] == "error", run.describe()
    assert not re.search(r"User:svc\b", target.logs())
    run_driver(
        "confluent",
        target.ssl.bootstrap,
        "metadata",
        options=DriverOptions(security=security(pki, "SSL", "alice")),
    ).check()


def test_bad_tls_closes_that_connection_only(target: TlsTarget, pki: Pki) -> None:
    """A handshake of garbage (a plaintext request, random bytes), no client certificate and a
    certificate from an authority the broker does not trust each end their own connection with
    no answer; a client with a good certificate is served meanwhile and afterwards."""
    good = asyncio.run(_metadata(target.ssl, pki, "alice"))
    ended = {
        "plaintext request": refused(target.ssl, None),
        "random bytes": refused(target.ssl, None, secrets.token_bytes(512)),
        "no client certificate": refused(target.ssl, client_context(pki, None)),
        "unknown authority": refused(target.ssl, client_context(pki, "mallory")),
    }
    assert all(ended.values()), ended
    assert asyncio.run(_metadata(target.ssl, pki, "alice")) == good


def test_kafka_wire_client_connects_over_tls(target: TlsTarget, pki: Pki) -> None:
    """``KafkaClient.connect(ssl=...)``: mutual TLS, then SASL_SSL with SCRAM-SHA-512. The
    brokers it is told of are on the listener it asked on."""
    assert target.ssl.port in asyncio.run(_metadata(target.ssl, pki, "alice"))
    assert target.sasl_ssl.port in asyncio.run(_metadata(target.sasl_ssl, pki, None, sasl=True))


async def _connect(address: Address, pki: Pki, client: str | None, *, sasl: bool = False) -> KafkaClient:
    user, password = SCRAM_USER
    mechanism = ScramClient(SCRAM_MECHANISM, user, password, secrets.token_urlsafe(18)) if sasl else None
    return await KafkaClient.connect(
        address.host, address.port, ssl=client_context(pki, client), sasl=mechanism, timeout_ms=15_000
    )


async def _metadata(address: Address, pki: Pki, client: str | None, *, sasl: bool = False) -> list[int]:
    """The ports of the brokers a Metadata request over TLS names."""
    connection = await _connect(address, pki, client, sasl=sasl)
    try:
        response = await connection.request(MetadataRequest(topics=[]))
    finally:
        await connection.close()
    return sorted(broker.port for broker in response.brokers)


async def _create_topic(address: Address, pki: Pki, topic: str, *, sasl: bool) -> int:
    connection = await _connect(address, pki, None if sasl else "alice", sasl=sasl)
    try:
        response = await connection.request(
            CreateTopicsRequest(
                topics=[
                    CreateTopicsRequestCreatableTopic(name=topic, num_partitions=1, replication_factor=1)
                ],
                timeout_ms=15_000,
            )
        )
    finally:
        await connection.close()
    return response.topics[0].error_code


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_the_spark_live_mode_writes_and_reads_over_tls(target: TlsTarget, pki: Pki, protocol: str) -> None:
    """The Spark source's live mode (``kafka_wire.spark.live``, what its tasks call) with Kafka's
    client options: ``kafka.security.protocol``, ``kafka.ssl.truststore.*``, a PEM keystore for
    mutual TLS, SCRAM-SHA-512 for SASL_SSL."""
    sasl = protocol == "SASL_SSL"
    address = target.sasl_ssl if sasl else target.ssl
    options = {
        "kafka.bootstrap.servers": address.bootstrap,
        "kafka.security.protocol": protocol,
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(pki.ca),
    }
    if sasl:
        user, password = SCRAM_USER
        options |= {
            "kafka.sasl.mechanism": SCRAM_MECHANISM,
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password}";',
        }
    else:
        options |= {
            "kafka.ssl.keystore.type": "PEM",
            "kafka.ssl.keystore.location": str(pki.clients["alice"].pem),
        }
    access = ClusterAccess.from_options(options)
    assert access is not None and access.tls is not None
    topic = f"tls-spark-{protocol.lower()}"
    assert asyncio.run(_create_topic(address, pki, topic, sasl=sasl)) == 0
    tp = TopicPartition(topic, 0)
    now_ms = int(time.time() * 1000)
    values = [b"spark-%d" % i for i in range(50)]
    batch = build_batch([(None, v, (), now_ms + i) for i, v in enumerate(values)])
    assert live.produce(access, {tp: [batch, batch]}) == {tp: 0}
    got = [r.value for _, records in live.fetch_range(access, tp, 0, 100) for r in records]
    assert got == values * 2


def test_the_spark_live_mode_refuses_what_it_cannot_read(pki: Pki) -> None:
    base = {"kafka.bootstrap.servers": "127.0.0.1:9093", "kafka.security.protocol": "SSL"}
    with pytest.raises(OptionError, match="JKS"):
        ClusterAccess.from_options({**base, "kafka.ssl.truststore.location": "trust.jks"})
    with pytest.raises(OptionError, match=r"kafka\.ssl\.truststore\.location"):
        ClusterAccess.from_options(
            {**base, "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": "/none"}
        )
    with pytest.raises(OptionError, match=r"kafka\.security\.protocol"):
        ClusterAccess.from_options({**base, "kafka.security.protocol": "SSLV3"})


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"ssl.keystore.location": "broker.jks"}, "ssl.keystore.type: JKS"),
        (
            {"ssl.keystore.type": "PEM", "ssl.keystore.location": "encrypted", "ssl.key.password": "wrong"},
            "ssl.keystore.location",
        ),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "missing.pem"}, "cannot read"),
    ],
    ids=["jks", "wrong key password", "missing keystore"],
)
def test_an_unusable_keystore_stops_the_start(
    pki: Pki, tmp_path: Path, settings: dict[str, str], named: str
) -> None:
    """One line on stderr naming the property, exit status 2, no traceback."""
    if settings.get("ssl.keystore.location") == "encrypted":
        settings = {**settings, "ssl.keystore.location": str(pki.broker_encrypted_pem)}
    sets = [
        arg
        for key, value in {"listeners": "SSL://127.0.0.1:0", **settings}.items()
        for arg in ("--set", f"{key}={value}")
    ]
    done = subprocess.run(
        [str(kafka_wire_cli()), "serve", "--data-dir", str(tmp_path / "data"), *sets],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
