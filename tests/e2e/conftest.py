"""Fixtures of the end-to-end suite: real clients against a real broker process.

``target`` is the broker the e2e tests run against, once per param: ``apache_kafka`` (Apache
Kafka 4.4, the reference: every assertion of a target test holds on it), ``tansu`` (Tansu with
memory storage) and ``kafka_wire`` (``kafka-wire serve``). ``disk_target`` is the same for the
tests that read a broker's data directory or ask it about its log directories: Kafka 4.4 and
``kafka-wire serve`` (Tansu keeps its partitions in memory). Each param's broker is one process
for the whole session (the ``*_node`` fixtures, started when first asked for), shared by every
test of that param, which therefore use their own topic and group names; the Kafka node is the
session's ``apache_kafka_node`` (``tests/conftest.py``), shared with the interop tests. Kafka and
``kafka-wire serve`` run with ``brokers.QUICK_GROUPS`` (no initial rebalance delay).

``kafka_wire_broker`` (and its alias ``broker``, the fixture the restart tests are written
against) is a fresh ``kafka-wire serve`` per test, with its own data dir, that the test may stop,
kill and restart (see ``brokers.BrokerProcess``).

Pointing the suite at another broker is one function in ``brokers.py``, one session fixture and
one param here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.brokers import QUICK_GROUPS, BrokerProcess, kafka_wire, tansu
from tests.interop.harness import UNSERVED

TARGETS = [
    pytest.param("apache_kafka", id="apache_kafka"),
    pytest.param("tansu", id="tansu"),
    pytest.param("kafka_wire", id="kafka_wire"),
]
#: The targets that keep their partitions on disk, in Kafka's log format, under ``data_dir``.
DISK_TARGETS = [pytest.param("apache_kafka", id="apache_kafka"), pytest.param("kafka_wire", id="kafka_wire")]
#: The session fixture of each target's broker.
NODES = {"apache_kafka": "apache_kafka_node", "tansu": "tansu_node", "kafka_wire": "kafka_wire_node"}


def _running(broker: BrokerProcess) -> Iterator[BrokerProcess]:
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="session")
def tansu_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The session's Tansu broker (memory storage)."""
    yield from _running(tansu(tmp_path_factory.mktemp("tansu")))


@pytest.fixture(scope="session")
def kafka_wire_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The session's ``kafka-wire serve``, with ``QUICK_GROUPS`` as the Kafka node."""
    yield from _running(kafka_wire(tmp_path_factory.mktemp("kafka_wire"), settings=QUICK_GROUPS))


@pytest.fixture(scope="session", params=TARGETS)
def target(request: pytest.FixtureRequest) -> BrokerProcess:
    """The broker under test, once per param: that target's session broker."""
    broker: BrokerProcess = request.getfixturevalue(NODES[request.param])
    return broker


@pytest.fixture(scope="session", params=DISK_TARGETS)
def disk_target(request: pytest.FixtureRequest) -> BrokerProcess:
    """Kafka 4.4 and ``kafka-wire serve``, once each: the same session brokers as ``target``'s."""
    broker: BrokerProcess = request.getfixturevalue(NODES[request.param])
    return broker


@pytest.fixture
def kafka_wire_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A fresh ``kafka-wire serve`` for one test, with its own port and data dir."""
    yield from _running(kafka_wire(tmp_path_factory.mktemp("kafka_wire")))


@pytest.fixture
def broker(kafka_wire_broker: BrokerProcess) -> BrokerProcess:
    """The restartable broker of the restart tests: ``kafka-wire serve`` (Tansu keeps no data
    across a restart: it has only memory storage)."""
    return kafka_wire_broker


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the (target, client) pairs the target cannot serve at all (``UNSERVED``; each
    reason has a strict xfail of its own): deselected, so no run reports them as skipped or passed."""
    unserved: list[pytest.Item] = []
    kept: list[pytest.Item] = []
    for item in items:
        params = getattr(item, "callspec", None)
        pair = (params.params.get("target"), params.params.get("client")) if params is not None else None
        (unserved if pair in UNSERVED else kept).append(item)
    if unserved:
        config.hook.pytest_deselected(items=unserved)
        items[:] = kept
