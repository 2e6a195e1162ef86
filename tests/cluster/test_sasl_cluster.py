"""SASL in a replicated cluster: three ``kafka-wire serve`` nodes, each with a SASL_PLAINTEXT
client listener beside its PLAINTEXT inter-broker and controller listeners, configured with
Kafka's SASL properties. A SCRAM-SHA-512 user created through one node (confluent-kafka's
AdminClient, forwarded to the active controller) logs in on every node, after a node's restart
too; confluent-kafka produces with it through the SASL listeners; a wrong password fails. A
delegation token created through one node (its request sent to the active controller in an
Envelope naming the client) logs in on every node, after the restart too."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from kafka_wire.adapters.asyncio import KafkaClient
from kafka_wire.broker.controller.tokens_image import token_hmac
from kafka_wire.errors import AuthenticationError, ProtocolError
from kafka_wire.messages import CreateDelegationTokenRequest, MetadataRequest, MetadataResponse
from kafka_wire.protocol.sasl import PlainClient, ScramClient
from tests.cluster.conftest import ClusterFactory
from tests.cluster.harness import HOST, LocalCluster, listener_port, wait_until
from tests.e2e.sasl_setup import ADMIN, client_settings, create_scram_users, sasl_properties

pytestmark = pytest.mark.cluster

USER: Final = ("erin", "erin-secret")
TOKEN_SECRET: Final = "cluster-token-secret"


def with_sasl_listeners(cluster: LocalCluster) -> dict[int, int]:
    """Give every node a SASL_PLAINTEXT client listener; their ports by node id."""
    ports = {}
    for node in cluster.nodes.values():
        port = ports[node.node_id] = listener_port()
        props = node.properties
        props["listeners"] += f",SASL_PLAINTEXT://{HOST}:{port}"
        props["advertised.listeners"] += f",SASL_PLAINTEXT://{HOST}:{port}"
        props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        props |= sasl_properties() | {"delegation.token.secret.key": TOKEN_SECRET}
        del props["sasl.mechanism.inter.broker.protocol"]  # the inter-broker listener is PLAINTEXT
    return ports


async def _scram_login(
    port: int, password: str, user: str = USER[0], extensions: dict[str, str] | None = None
) -> list[tuple[int, int]]:
    """Log in on one node's SASL listener; the brokers its Metadata names (id, port)."""
    sasl = ScramClient("SCRAM-SHA-512", user, password, "cluster-test-nonce", extensions=extensions or {})
    async with await KafkaClient.connect(HOST, port, sasl=sasl) as client:
        answer = await client.request(MetadataRequest(topics=[]))
        assert isinstance(answer, MetadataResponse)
        return sorted((b.node_id, b.port) for b in answer.brokers)


def logs_in(port: int, password: str = USER[1]) -> list[tuple[int, int]]:
    return asyncio.run(_scram_login(port, password))


PRODUCE: Final = """
import json, sys
import confluent_kafka as ck
bootstrap, settings = sys.argv[1], json.loads(sys.argv[2])
errors = []
producer = ck.Producer({"bootstrap.servers": bootstrap, **settings, "message.timeout.ms": 20000,
    "error_cb": lambda e: errors.append(e.str())})
delivered = []
for i in range(3):
    producer.produce("sasl-cluster", b"v%d" % i, callback=lambda err, msg: delivered.append(None if err is None else str(err)))
producer.flush(30)
print(json.dumps({"delivered": delivered, "errors": errors[:1]}))
"""


def test_scram_users_log_in_on_every_node_of_a_cluster(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory()
    ports = with_sasl_listeners(cluster)
    cluster.start_all()
    sasl_bootstrap = ",".join(f"{HOST}:{port}" for port in ports.values())
    create_scram_users(f"{HOST}:{ports[1]}", {"SCRAM-SHA-512": USER})
    everyone = sorted(ports.items())
    token = asyncio.run(_create_token(ports[2]))
    # Each node applies the credential and token records when its metadata catches up.
    for port in ports.values():
        wait_until("a SCRAM login", lambda p=port: _try(p, everyone), 30)  # type: ignore[misc]
        wait_until("a token login", lambda p=port: _try(p, everyone, token), 30)  # type: ignore[misc]
    with pytest.raises(AuthenticationError):
        logs_in(ports[2], "wrong")
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            PRODUCE,
            sasl_bootstrap,
            json.dumps(client_settings("SCRAM-SHA-512", *USER)),
        ],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1]) == {"delivered": [None] * 3, "errors": []}
    # A restarted node reads the credential back from its metadata log.
    cluster.terminate(3)
    cluster.start(3)
    wait_until("a SCRAM login after a restart", lambda: _try(ports[3], everyone), 60)
    wait_until("a token login after a restart", lambda: _try(ports[3], everyone, token), 30)


async def _create_token(port: int) -> tuple[str, str]:
    """A delegation token created by the admin on one node: its id and password."""
    async with await KafkaClient.connect(HOST, port, sasl=PlainClient(*ADMIN)) as client:
        made = await client.request(CreateDelegationTokenRequest())
    assert made.error_code == 0 and made.hmac == token_hmac(made.token_id, TOKEN_SECRET)
    return made.token_id, base64.b64encode(made.hmac).decode()


def _try(port: int, brokers: list[tuple[int, int]], token: tuple[str, str] | None = None) -> bool | None:
    """Whether a SCRAM login on ``port`` (the user's, or ``token``'s) works and its Metadata lists
    ``brokers`` (None: not yet)."""
    try:
        if token is None:
            return logs_in(port) == brokers or None
        return asyncio.run(_scram_login(port, token[1], token[0], {"tokenauth": "true"})) == brokers or None
    except (AuthenticationError, OSError):
        return None


CREATE_AND_PRODUCE: Final = """
import json, sys
import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, settings = sys.argv[1], json.loads(sys.argv[2])
admin = AdminClient({"bootstrap.servers": bootstrap, **settings})
admin.create_topics([NewTopic("replicated", 1, 3)])["replicated"].result(30)
errors = []
producer = ck.Producer({"bootstrap.servers": bootstrap, **settings, "acks": "all",
    "message.timeout.ms": 30000, "error_cb": lambda e: errors.append(e.str())})
delivered = []
for i in range(3):
    producer.produce("replicated", b"v%d" % i, callback=lambda err, msg: delivered.append(None if err is None else str(err)))
producer.flush(40)
isr = sorted(admin.list_topics("replicated", timeout=10).topics["replicated"].partitions[0].isrs)
print(json.dumps({"delivered": delivered, "errors": errors[:1], "isr": isr}))
"""


def test_the_nodes_log_in_to_each_other_over_a_sasl_inter_broker_listener(
    cluster_factory: ClusterFactory,
) -> None:
    """The broker listener, the inter-broker one, is SASL_PLAINTEXT (the controller listener stays
    PLAINTEXT): followers fetch over PLAIN-authenticated links, so acks=all records are
    acknowledged by a three-replica ISR."""
    cluster = cluster_factory()
    for node in cluster.nodes.values():
        node.properties["listener.security.protocol.map"] = "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
        node.properties |= sasl_properties("PLAINTEXT")
    cluster.start_many(cluster.nodes)  # each answers ApiVersions (before authentication)
    ports = {node.node_id: node.port for node in cluster.nodes.values()}
    for port in ports.values():  # every broker registered, as each node's Metadata tells a PLAIN login
        wait_until("every broker", lambda p=port: _plain_metadata(p) == sorted(ports.items()) or None, 60)  # type: ignore[misc]
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            CREATE_AND_PRODUCE,
            cluster.bootstrap,
            json.dumps(client_settings("PLAIN", *ADMIN)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parent,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1]) == {
        "delivered": [None] * 3,
        "errors": [],
        "isr": [1, 2, 3],
    }


async def _plain_brokers(port: int) -> list[tuple[int, int]]:
    async with await KafkaClient.connect(HOST, port, sasl=PlainClient(*ADMIN)) as client:
        answer = await client.request(MetadataRequest(topics=[]))
        assert isinstance(answer, MetadataResponse)
        return sorted((b.node_id, b.port) for b in answer.brokers)


def _plain_metadata(port: int) -> list[tuple[int, int]] | None:
    try:
        return asyncio.run(_plain_brokers(port))
    except (ProtocolError, OSError):
        return None
