"""Fixtures of the end-to-end suite: real clients against a real broker process.

``target`` is the broker the e2e tests run against, once per param: ``tansu`` (Tansu with memory
storage, the reference we validate the suite on) and ``kafka_wire`` (``kafka-wire serve``). Both
are session-scoped and shared by the tests of that param, which therefore use their own topic and
group names.

``kafka_wire_broker`` (and its alias ``broker``, the fixture the restart tests are written
against) is a fresh ``kafka-wire serve`` per test, with its own data dir, that the test may stop,
kill and restart (see ``brokers.BrokerProcess``).

Pointing the suite at another broker is one function in ``brokers.py`` and one param here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.brokers import BrokerProcess, kafka_wire, tansu

TARGETS = [pytest.param("tansu", id="tansu"), pytest.param("kafka_wire", id="kafka_wire")]


def _start(name: str, tmp_path_factory: pytest.TempPathFactory) -> BrokerProcess:
    workdir = tmp_path_factory.mktemp(name)
    broker = tansu(workdir) if name == "tansu" else kafka_wire(workdir)
    broker.start()
    return broker


@pytest.fixture(scope="session", params=TARGETS)
def target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess]:
    """The broker under test for the session (one per param), stopped at the end."""
    broker = _start(request.param, tmp_path_factory)
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture
def kafka_wire_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A fresh ``kafka-wire serve`` for one test, with its own port and data dir."""
    broker = _start("kafka_wire", tmp_path_factory)
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture
def broker(kafka_wire_broker: BrokerProcess) -> BrokerProcess:
    """The restartable broker of the restart tests: ``kafka-wire serve`` (Tansu keeps no data
    across a restart: it has only memory storage)."""
    return kafka_wire_broker
