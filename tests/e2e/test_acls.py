"""ACLs end to end, against ``kafka-wire serve`` (one node, and a cluster of three) and Apache
Kafka 4.4 configured the same way: SASL_SSL with PLAIN users (the brokers' certificates signed by
a test authority the clients trust), the StandardAuthorizer, ``super.users=User:admin``. The same
confluent-kafka script (``acl_client.py``) runs against each and must see the same things: a user
without ACLs sees no topic and gets TOPIC_AUTHORIZATION_FAILED; after the super user adds ACLs with
``create_acls`` it produces and consumes in a group; a PREFIXED ACL and a DENY rule behave as on
Kafka; Metadata lists only the topics it may describe; DescribeAcls and DeleteAcls with a MATCH
filter answer the same bindings. The Java 4.4 client (``java/AclProbe.java``) sees the same.

The cluster's nodes log in to each other over their SASL_SSL listener (the inter-broker one) as
``admin``; their controller listeners are PLAINTEXT, as the Kafka node's is. ``kafka_wire_secured``
and ``kafka_secured`` without an authority are the SASL_PLAINTEXT brokers of
``test_acl_answers.py`` (raw requests over plain sockets)."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.harness import HOST, LocalCluster, listener_port
from tests.e2e.acl_client import wait_described
from tests.e2e.apache_kafka import apache_kafka
from tests.e2e.brokers import BrokerProcess, kafka_wire
from tests.e2e.certs import Pki, make_pki
from tests.e2e.tls_brokers import pem_tls
from tests.interop.harness import java_command

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

EXPECTED: dict[str, Any] = {
    "alice sees before": [],
    "alice produces before": "TOPIC_AUTHORIZATION_FAILED",
    "acls": [
        "GROUP g1 LITERAL User:alice * READ ALLOW",
        "TOPIC orders LITERAL User:alice * READ ALLOW",
        "TOPIC orders LITERAL User:alice * WRITE ALLOW",
        "TOPIC pay- PREFIXED User:alice * ALL ALLOW",
        "TOPIC pay-eu LITERAL User:alice * WRITE DENY",
    ],
    "alice sees after": ["orders", "pay-eu"],
    "alice produces orders": None,
    "alice consumes orders in g1": "got value",
    "alice produces pay-eu (DENY WRITE)": "TOPIC_AUTHORIZATION_FAILED",
    "alice consumes orders in g2 (no group ACL)": "GROUP_AUTHORIZATION_FAILED",
    "alice produces secret": "TOPIC_AUTHORIZATION_FAILED",
    "alice consumes orders in g2 (consumer protocol, no group ACL)": "GROUP_AUTHORIZATION_FAILED",
    "alice transaction as tx-alice": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "alice transaction as tx-alice after WRITE on tx-": None,
    "alice creates acls": "CLUSTER_AUTHORIZATION_FAILED",
    "deleted by a MATCH filter on pay-eu": ["pay- PREFIXED ALL ALLOW", "pay-eu LITERAL WRITE DENY"],
}


#: Delegation tokens on (test_acl_answers.py asks for some, KIP-373).
TOKENS = {"delegation.token.secret.key": "acl-token-secret"}


def _jaas() -> str:
    """The PLAIN JAAS entry of every broker's SASL listener: every user, and the login a node
    uses on its inter-broker listener."""
    users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{USERS["admin"]}" {users};'
    )


def kafka_wire_secured(workdir: Path, pki: Pki | None = None) -> BrokerProcess:
    """``kafka-wire serve`` with the authorizer: SASL_SSL when ``pki`` is given, else SASL_PLAINTEXT."""
    settings = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin", **TOKENS}
    if pki is None:
        settings |= {f"sasl.users.PLAIN.{user}": password for user, password in USERS.items()}
        return kafka_wire(workdir, settings=settings)
    broker = kafka_wire(workdir, settings=settings)
    broker.settings |= {
        "listeners": f"SASL_SSL://{broker.address.bootstrap}",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": _jaas(),
        **pem_tls(pki),
    }
    return broker


def kafka_secured(workdir: Path, pki: Pki | None = None) -> BrokerProcess:
    """Kafka 4.4 with the authorizer, its client and inter-broker listener SASL_SSL when ``pki``
    is given, else SASL_PLAINTEXT."""
    node = apache_kafka(workdir)
    host, port = node.address
    protocol = "SASL_PLAINTEXT" if pki is None else "SASL_SSL"
    node.overrides = {
        "listeners": f"{protocol}://{host}:{port},CONTROLLER://{host}:{node.controller_port}",
        "advertised.listeners": f"{protocol}://{host}:{port},CONTROLLER://{host}:{node.controller_port}",
        "inter.broker.listener.name": protocol,
        "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,{protocol}:{protocol}",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        f"listener.name.{protocol.lower()}.plain.sasl.jaas.config": _jaas(),
        "authorizer.class.name": STANDARD_AUTHORIZER,
        # the controller listener is PLAINTEXT: the node talks to its controller as ANONYMOUS
        "super.users": "User:admin;User:ANONYMOUS",
        **TOKENS,
        **({} if pki is None else pem_tls(pki)),
    }
    if pki is not None:
        node.probe_tls = ssl.create_default_context(cafile=pki.ca)
    return node


class SecuredCluster:
    """Three ``kafka-wire serve`` nodes, each with a SASL_SSL listener (PLAIN; the inter-broker
    listener, the clients' too) beside its PLAINTEXT one (the harness's readiness probes, which
    no user's ACL allows anything) and its PLAINTEXT controller listener; the authorizer on."""

    def __init__(self, workdir: Path, pki: Pki) -> None:
        self.cluster = LocalCluster(workdir)
        self.ports: list[int] = []
        for node in self.cluster.nodes.values():
            port = listener_port()
            self.ports.append(port)
            props = node.properties
            props["listeners"] += f",SASL_SSL://{HOST}:{port}"
            props["advertised.listeners"] += f",SASL_SSL://{HOST}:{port}"
            props["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL"
            props |= {
                "inter.broker.listener.name": "SASL_SSL",
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "listener.name.sasl_ssl.plain.sasl.jaas.config": _jaas(),
                "authorizer.class.name": STANDARD_AUTHORIZER,
                # the controller listeners are PLAINTEXT: the nodes talk to their controllers as
                # ANONYMOUS, which needs CLUSTER_ACTION there (as on the Kafka node)
                "super.users": "User:admin;User:ANONYMOUS",
                **pem_tls(pki),
            }

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{port}" for port in self.ports)

    def start(self) -> None:
        self.cluster.start_all()

    def close(self) -> None:
        self.cluster.close()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("acl-pki"))


@pytest.fixture(params=["kafka_wire", "apache_kafka", "kafka_wire_cluster"])
def broker(
    request: pytest.FixtureRequest, tmp_path: Path, pki: Pki
) -> Iterator[BrokerProcess | SecuredCluster]:
    server: BrokerProcess | SecuredCluster
    if request.param == "kafka_wire":
        server = kafka_wire_secured(tmp_path, pki)
    elif request.param == "apache_kafka":
        server = kafka_secured(tmp_path, pki)
    else:
        server = SecuredCluster(tmp_path, pki)
    server.start()
    yield server
    server.close()


def test_acls_as_kafka_enforces_them(broker: BrokerProcess | SecuredCluster, pki: Pki) -> None:
    run = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "acl_client.py"), broker.bootstrap, str(pki.ca)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen == EXPECTED


PROBE = Path(__file__).resolve().parent / "java" / "AclProbe.java"
#: The ACLs ``AclProbe`` creates (the brokers must describe them all before it goes on).
JAVA_EXPECTED_ACLS = 5
JAVA_EXPECTED = {
    "topics-before": "[]",
    "produce-before": "TopicAuthorizationException",
    "topics-after": "[jorders, jpay-eu]",
    "produce-jorders": "ok",
    "consume-jorders-jg1": "got value",
    "produce-jpay-eu": "TopicAuthorizationException",
    "consume-jorders-jg2": "GroupAuthorizationException",
    "produce-jsecret": "TopicAuthorizationException",
}


def test_the_java_client_sees_the_same_acls(broker: BrokerProcess | SecuredCluster, pki: Pki) -> None:
    lines = []
    with subprocess.Popen(
        java_command(PROBE, broker.bootstrap, str(pki.ca), client="java4"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as probe:
        assert probe.stdin is not None and probe.stdout is not None and probe.stderr is not None
        for line in probe.stdout:
            if line.strip() == "acls-created":
                wait_described(broker.bootstrap, JAVA_EXPECTED_ACLS, str(pki.ca))
                probe.stdin.write("\n")
                probe.stdin.flush()
            else:
                lines.append(line.rstrip("\n"))
        stderr = probe.stderr.read()
        assert probe.wait(300) == 0, (lines, stderr[-3000:])
    seen = dict(line.split(" ", 1) for line in lines)
    assert seen == JAVA_EXPECTED
