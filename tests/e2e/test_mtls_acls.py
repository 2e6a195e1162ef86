"""ACLs for client certificates: over an SSL listener requiring client certificates, with
``ssl.principal.mapping.rules`` mapping ``CN=<name>,OU=clients,...`` to ``User:<name>`` and the
StandardAuthorizer (``super.users`` naming ``bob``'s mapped principal), ``alice``'s certificate
gets TOPIC_AUTHORIZATION_FAILED until ``bob`` grants ``User:alice`` WRITE with ``create_acls``;
then it produces. The same against ``kafka-wire serve`` and Apache Kafka 4.4
(``tls_brokers``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.brokers import KafkaWireBroker
from tests.e2e.certs import Pki, make_pki
from tests.e2e.tls_brokers import apache_kafka_tls, kafka_wire_ssl
from tests.interop.harness import Address

AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:bob;User:ANONYMOUS",  # (Kafka's inter-broker and controller listeners: PLAINTEXT)
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(params=["kafka_wire", "apache_kafka"])
def ssl_address(request: pytest.FixtureRequest, tmp_path: Path, pki: Pki) -> Iterator[Address]:
    if request.param == "kafka_wire":
        broker: KafkaWireBroker = kafka_wire_ssl(tmp_path, pki)
        broker.settings |= AUTHORIZER
        broker.start()
        try:
            yield broker.address
        finally:
            broker.close()
    else:
        node = apache_kafka_tls(tmp_path, pki)
        node.extra = dict(AUTHORIZER)
        node.log_requests = False
        node.start()
        try:
            yield node.ssl_address
        finally:
            node.close()


def test_a_certificates_principal_is_what_acls_name(ssl_address: Address, pki: Pki) -> None:
    bob, alice = pki.clients["bob"], pki.clients["alice"]
    run = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).parent / "mtls_acl_client.py"),
            ssl_address.bootstrap,
            str(pki.ca),
            str(bob.cert),
            str(bob.key),
            str(alice.cert),
            str(alice.key),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.splitlines()[-1]) == {
        "alice before": "TOPIC_AUTHORIZATION_FAILED",
        "alice after": None,
    }
