"""Separate roles: three controller-only nodes and two broker-only nodes (``process.roles``
``controller`` and ``broker``), the brokers following the metadata log as observers of the
quorum. Records produced with acks=all are read back by a consumer group, and the cluster goes on
serving when the active controller is SIGKILLed."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer

from tests.cluster.conftest import ClusterFactory

pytestmark = pytest.mark.cluster

RECORDS = 5_000


def produce(bootstrap: str, topic: str, first: int, count: int) -> list[int]:
    acked: list[int] = []
    failed: list[str] = []

    def done(err: object, msg: object) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            acked.append(int(msg.value()))  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for n in range(first, first + count):
        producer.produce(topic, str(n).encode(), on_delivery=done)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not failed, failed[:3]
    return acked


def consume(bootstrap: str, topic: str, expected: int) -> list[int]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "separate-roles",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe([topic])
    got: list[int] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None and (value := msg.value()) is not None:
                got.append(int(value))
    finally:
        consumer.close()
    return got


def test_controllers_and_brokers_in_their_own_processes(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(size=2, controllers=3)
    cluster.start_all()
    assert cluster.brokers() == {4, 5}  # the controllers are no brokers
    cluster.create_topic("roles", 2, 2, {"min.insync.replicas": "2"})
    cluster.wait_full_isr("roles")
    acked = produce(cluster.bootstrap, "roles", 0, RECORDS)
    active = cluster.quorum_leader()
    assert active in (1, 2, 3)
    cluster.kill(active)  # two controllers of three still make the quorum
    cluster.create_topic("after", 1, 2)
    acked += produce(cluster.bootstrap, "roles", RECORDS, RECORDS)
    got = consume(cluster.bootstrap, "roles", len(acked))
    assert sorted(got) == sorted(acked) == list(range(2 * RECORDS))
