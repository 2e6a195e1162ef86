"""Fixtures of the proxy tests: upstreams shared by the module that uses them (one start each),
and a proxy in front of each.

``upstream`` is parametrised over the four upstreams of the issue: ``kafka-wire serve`` (one
node), a 3-node kafka_wire cluster (:class:`~tests.cluster.harness.LocalCluster`), Apache Kafka
4.4 (``make peers``) and Tansu. ``serve_upstream`` is the one-node ``kafka-wire serve`` the filter
tests share.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster.harness import LocalCluster
from tests.e2e.apache_kafka import apache_kafka
from tests.e2e.brokers import BrokerProcess, kafka_wire, tansu


@dataclass
class Upstream:
    name: str
    bootstrap: str
    #: The data directories of its nodes (to look into segment files).
    data_dirs: list[Path]


def _process(name: str, workdir: Path) -> BrokerProcess:
    if name == "tansu":
        return tansu(workdir)
    if name == "apache_kafka":
        return apache_kafka(workdir)
    return kafka_wire(workdir)


def _start(name: str, workdir: Path) -> Iterator[Upstream]:
    if name == "kafka_wire_cluster":
        # The drivers create topics with one replica: min.insync.replicas 1 lets acks=all write.
        cluster = LocalCluster(workdir, size=3, overrides={"min.insync.replicas": "1"})
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


@pytest.fixture(scope="module", params=UPSTREAMS)
def upstream(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    if request.param == "kafka_wire":  # the one the filter tests share
        shared: Upstream = request.getfixturevalue("serve_upstream")
        yield shared
        return
    yield from _start(request.param, tmp_path_factory.mktemp(request.param))


@pytest.fixture(scope="session")
def serve_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    yield from _start("kafka_wire", tmp_path_factory.mktemp("serve"))
