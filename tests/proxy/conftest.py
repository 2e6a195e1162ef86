"""Fixtures of the proxy tests: upstreams shared by the module that uses them (one start each),
and a proxy in front of each.

``upstream`` is parametrised over the four upstreams of the issue: ``kafka-wire serve`` (one
node), a 3-node kafka_wire cluster (:class:`~tests.cluster.harness.LocalCluster`), Apache Kafka
4.4 (``make peers``) and Tansu. ``serve_upstream`` (the one-node ``kafka-wire serve``) and
``apache_upstream`` (the session's Apache Kafka 4.4 node, ``apache_kafka_node`` of
``tests/conftest.py``, shared with the e2e and interop suites) are session-wide: the filter tests
use them as well. ``apache_tls_upstream`` is a Kafka 4.4 node of its own with an SSL listener
beside its PLAINTEXT one, for the TLS test only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster.harness import LocalCluster
from tests.e2e.apache_kafka import KafkaNode, apache_kafka
from tests.e2e.brokers import QUICK_GROUPS, BrokerProcess, kafka_wire, tansu
from tests.interop.harness import free_port
from tests.proxy.tls import Certificates, make_certificates


@dataclass
class Upstream:
    name: str
    bootstrap: str
    #: The data directories of its nodes (to look into segment files).
    data_dirs: list[Path]
    #: Apache Kafka's SSL listener ("host:port") and the CA that signed its certificate, if any.
    tls_bootstrap: str = ""
    tls: Certificates | None = None


def _process(name: str, workdir: Path) -> BrokerProcess:
    if name == "tansu":
        return tansu(workdir)
    return kafka_wire(workdir, settings=QUICK_GROUPS)


def _apache_with_tls(workdir: Path) -> Iterator[Upstream]:
    """Apache Kafka 4.4 with an SSL listener beside its PLAINTEXT one (a PEM keystore)."""
    certificates = make_certificates(workdir / "tls")
    node = apache_kafka(workdir)
    host, port = node.address
    tls = f"{host}:{free_port(host)}"
    controller = f"{host}:{node.controller_port}"
    node.overrides = {
        **QUICK_GROUPS,
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{controller},SSL://{tls}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{controller},SSL://{tls}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certificates.keystore),
    }
    try:
        node.start()
        yield Upstream("apache_kafka", node.bootstrap, [node.data_dir], tls, certificates)
    finally:
        node.close()


def _start(name: str, workdir: Path) -> Iterator[Upstream]:
    if name == "kafka_wire_cluster":
        # The drivers create topics with one replica: min.insync.replicas 1 lets acks=all write.
        cluster = LocalCluster(workdir, size=3, overrides={"min.insync.replicas": "1", **QUICK_GROUPS})
        try:
            cluster.start_all()
            yield Upstream(name, cluster.bootstrap, [n.data_dir for n in cluster.nodes.values()])
        finally:
            cluster.close()
        return
    broker = _process(name, workdir)
    try:
        broker.start()
        yield Upstream(name, broker.bootstrap, [broker.data_dir])
    finally:
        broker.close()


UPSTREAMS = ["kafka_wire", "kafka_wire_cluster", "apache_kafka", "tansu"]


#: The 3-node cluster runs with the other real-process clusters (marked ``cluster``: alone, after
#: the flavours' runs; see tools/test_flavours.py).
PARAMS = [
    pytest.param(name, marks=pytest.mark.cluster) if name == "kafka_wire_cluster" else pytest.param(name)
    for name in UPSTREAMS
]


@pytest.fixture(scope="module", params=PARAMS)
def upstream(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    if request.param in SHARED:  # the ones other modules use too
        shared: Upstream = request.getfixturevalue(SHARED[request.param])
        yield shared
        return
    yield from _start(request.param, tmp_path_factory.mktemp(request.param))


SHARED = {"kafka_wire": "serve_upstream", "apache_kafka": "apache_upstream"}


@pytest.fixture(scope="session")
def apache_upstream(apache_kafka_node: KafkaNode) -> Upstream:
    return Upstream("apache_kafka", apache_kafka_node.bootstrap, [apache_kafka_node.data_dir])


@pytest.fixture(scope="module")
def apache_tls_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    yield from _apache_with_tls(tmp_path_factory.mktemp("apache_kafka_tls"))


@pytest.fixture(scope="session")
def serve_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    yield from _start("kafka_wire", tmp_path_factory.mktemp("serve"))
