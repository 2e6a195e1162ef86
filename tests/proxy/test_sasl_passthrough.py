"""SASL passed through ``kafka-wire proxy`` unchanged: librdkafka authenticates with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512 to a ``kafka-wire serve`` that requires them, through the proxy,
and a wrong password is refused by the broker as it is without the proxy (the same client script
and users as ``tests/e2e/test_sasl.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.brokers import kafka_wire
from tests.e2e.test_sasl import USERS, SaslBroker, produce
from tests.proxy.harness import ProxyProcess, proxy


@pytest.fixture(scope="module")
def sasl_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    plain = kafka_wire(tmp_path_factory.mktemp("sasl"))
    broker = SaslBroker(plain.name, plain.address, plain.data_dir, plain.log_path, persistent=True)
    process = proxy(tmp_path_factory.mktemp("proxy-sasl"), broker.bootstrap)
    try:
        broker.start()
        process.start()
        yield process
    finally:
        process.close()
        broker.close()


@pytest.mark.parametrize("mechanism", list(USERS))
def test_librdkafka_authenticates_through_the_proxy(sasl_proxy: ProxyProcess, mechanism: str) -> None:
    user, password = USERS[mechanism]
    assert produce(sasl_proxy, mechanism, user, password) == {"delivered": [None], "errors": []}


def test_a_wrong_password_is_refused_through_the_proxy(sasl_proxy: ProxyProcess) -> None:
    result = produce(sasl_proxy, "SCRAM-SHA-256", "bob", "not-bobs")
    assert result["delivered"] and result["delivered"][0] is not None
    [error] = result["errors"]
    assert error is not None and "Authentication failed" in error
    assert sasl_proxy.running()  # the refused connection is closed; the proxy goes on
