"""Connection creation rates (KIP-612), the pure part the acceptor asks: the broker-wide
``max.connection.creation.rate`` delays accepting, an IP's ``connection_creation_rate`` has its
connection closed after the throttle time and taken back from every rate."""

from __future__ import annotations

from kafka_wire.broker.controller.quotas_image import IP, ClientQuotasImage
from kafka_wire.broker.quotas.connection_rate import ConnectionRates

NOW = 1_700_000_000_000


def test_the_broker_rate_delays_the_connection_over_it() -> None:
    rates = ConnectionRates(
        window_num=2,
        window_size_seconds=1,
        max_rate=2,
        protected_listener="INTERNAL",
        controller_listeners=frozenset({"CONTROLLER"}),
    )
    assert [rates.accept_delay_ms("PLAINTEXT", NOW) for _ in range(2)] == [0, 0]  # 2 over 1 s
    assert rates.accept_delay_ms("PLAINTEXT", NOW) == 500  # 3 over 1 s: (3 - 2) / 2 of 1 s
    assert rates.accept_delay_ms("PLAINTEXT", NOW + 2500) == 0  # the windows expired
    # The inter-broker listener of a node with several listeners counts on its own rate only.
    assert [rates.accept_delay_ms("INTERNAL", NOW + 2500) for _ in range(2)] == [0, 0]
    # A controller listener has its own total (Kafka's controller has a socket server of its own).
    assert [rates.accept_delay_ms("CONTROLLER", NOW + 2500) for _ in range(2)] == [0, 0]
    assert rates.accept_delay_ms("PLAINTEXT", NOW + 2500) == 0  # the second of the client listeners
    assert rates.accept_delay_ms("PLAINTEXT", NOW + 2500) > 0


def test_an_ip_over_its_rate_is_throttled_and_taken_back() -> None:
    image = ClientQuotasImage()
    image.quotas[((IP, "127.0.0.1"),)] = {"connection_creation_rate": 1.0}
    image.quotas[((IP, None),)] = {"connection_creation_rate": 5.0}
    rates = ConnectionRates(window_num=2, window_size_seconds=1, values=image)
    assert rates.ip_limit("127.0.0.1") == 1.0
    assert rates.ip_limit("10.0.0.1") == 5.0  # the default IP's
    assert rates.ip_throttle_ms("PLAINTEXT", "127.0.0.1", NOW) == 0
    assert rates.ip_throttle_ms("PLAINTEXT", "127.0.0.1", NOW) == 1000  # 2 over 1 s: one window at most
    # The refused one was taken back: the next window still sees the first one, then it expires.
    assert rates.ip_throttle_ms("PLAINTEXT", "127.0.0.1", NOW + 1000) == 1000
    assert rates.ip_throttle_ms("PLAINTEXT", "127.0.0.1", NOW + 2001) == 0
    assert rates.ip_throttle_ms("PLAINTEXT", "10.0.0.1", NOW) == 0
