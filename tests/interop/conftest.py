"""Fixtures for the interop tests: real brokers for kafka_wire's client (``peer``: Apache Kafka 4.4,
the session's ``apache_kafka_node`` from ``tests/conftest.py``, and Tansu) and a Tansu broker for
the real clients' drivers (see harness.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.interop.harness import Address, Tansu, start_tansu


@pytest.fixture(scope="session")
def tansu_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tansu]:
    """A Tansu broker with in-memory storage for the whole session, stopped (process group) at the end."""
    broker = start_tansu(tmp_path_factory.mktemp("tansu") / "tansu.log")
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def tansu(tansu_broker: Tansu) -> Address:
    """``(host, port)`` of the session's Tansu broker; ``.bootstrap`` is ``"host:port"``."""
    return tansu_broker.address


#: The brokers kafka_wire's own client is checked against: Kafka 4.4 (the reference) and Tansu.
PEERS = [pytest.param("apache_kafka", id="apache_kafka"), pytest.param("tansu", id="tansu")]


@pytest.fixture(scope="session", params=PEERS)
def peer(request: pytest.FixtureRequest) -> Address:
    """``(host, port)`` of a real broker for the session, once per param; both are shared with the
    other tests that use them (the Kafka node with the e2e suite)."""
    if request.param == "apache_kafka":
        address: Address = request.getfixturevalue("apache_kafka_node").address
        return address
    tansu_address: Address = request.getfixturevalue("tansu")
    return tansu_address
