"""ACLs end to end, against ``kafka-wire serve`` and Apache Kafka 4.4 configured the same way:
SASL_PLAINTEXT with PLAIN users, the StandardAuthorizer, ``super.users=User:admin``. The same
confluent-kafka script (``acl_client.py``) runs against both and must see the same things: a user
without ACLs sees no topic and gets TOPIC_AUTHORIZATION_FAILED; after the super user adds ACLs with
``create_acls`` it produces and consumes in a group; a PREFIXED ACL and a DENY rule behave as on
Kafka; Metadata lists only the topics it may describe; DescribeAcls and DeleteAcls with a MATCH
filter answer the same bindings. The Java 4.4 client (``java/AclProbe.java``) sees the same."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.apache_kafka import apache_kafka
from tests.e2e.brokers import BrokerProcess, kafka_wire
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


def kafka_wire_secured(workdir: Path) -> BrokerProcess:
    settings = {f"sasl.users.PLAIN.{user}": password for user, password in USERS.items()}
    settings |= {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin", **TOKENS}
    return kafka_wire(workdir, settings=settings)


def kafka_secured(workdir: Path) -> BrokerProcess:
    node = apache_kafka(workdir)
    host, port = node.address
    users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    jaas = (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        f'password="{USERS["admin"]}" {users};'
    )
    node.overrides = {
        "listeners": f"SASL_PLAINTEXT://{host}:{port},CONTROLLER://{host}:{node.controller_port}",
        "advertised.listeners": f"SASL_PLAINTEXT://{host}:{port},CONTROLLER://{host}:{node.controller_port}",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        "authorizer.class.name": STANDARD_AUTHORIZER,
        # the controller listener is PLAINTEXT: the node talks to its controller as ANONYMOUS
        "super.users": "User:admin;User:ANONYMOUS",
        **TOKENS,
    }
    return node


@pytest.fixture(params=["kafka_wire", "apache_kafka"])
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerProcess]:
    server = kafka_wire_secured(tmp_path) if request.param == "kafka_wire" else kafka_secured(tmp_path)
    server.start()
    yield server
    server.close()


def test_acls_as_kafka_enforces_them(broker: BrokerProcess) -> None:
    run = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "acl_client.py"), broker.bootstrap],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.splitlines()[-1])
    assert seen == EXPECTED


PROBE = Path(__file__).resolve().parent / "java" / "AclProbe.java"
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


def test_the_java_client_sees_the_same_acls(broker: BrokerProcess) -> None:
    run = subprocess.run(
        java_command(PROBE, broker.bootstrap, client="java4"), capture_output=True, text=True, timeout=300
    )
    lines = run.stdout.splitlines()
    assert run.returncode == 0, (lines, run.stderr[-3000:])
    seen = dict(line.split(" ", 1) for line in lines)
    assert seen == JAVA_EXPECTED
