"""TLS on both sides of the proxy: confluent-kafka speaks TLS to ``kafka-wire proxy``, which speaks
TLS to Apache Kafka 4.4's SSL listener (certificates made by ``tests/proxy/tls.py``). The broker's
TLS answers carry its SSL listener's address; the client sees only the proxy's."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from tests.proxy.conftest import Upstream
from tests.proxy.harness import proxy


def test_tls_on_both_sides_to_apache_kafka(apache_tls_upstream: Upstream, tmp_path: Path) -> None:
    certificates = apache_tls_upstream.tls
    assert certificates is not None
    process = proxy(
        tmp_path,
        apache_tls_upstream.tls_bootstrap,
        extra=[
            "--client-tls",
            str(certificates.cert),
            str(certificates.key),
            "--upstream-tls",
            str(certificates.ca),
        ],
    )
    process.start()
    try:
        config: dict[str, str | int | float | bool] = {
            "bootstrap.servers": process.bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(certificates.ca),
        }
        admin = AdminClient(config)
        admin.create_topics([NewTopic("over-tls", 1, 1)])["over-tls"].result(30)
        brokers = admin.list_topics(timeout=10).brokers
        assert {(str(b.host), b.port) for b in brokers.values()} == {("127.0.0.1", process.address.port)}
        producer = Producer({**config, "compression.type": "zstd"})
        for i in range(5):
            producer.produce("over-tls", b"secret-%d" % i, partition=0)
        assert producer.flush(30) == 0
        consumer = Consumer({**config, "group.id": "tls", "enable.auto.commit": False})
        consumer.assign([TopicPartition("over-tls", 0, 0)])
        values: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while len(values) < 5 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.close()
        assert values == [b"secret-%d" % i for i in range(5)]
    finally:
        process.close()
