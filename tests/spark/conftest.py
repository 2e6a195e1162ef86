"""Fixtures of the Spark suite: one local[2] SparkSession and one ``kafka-wire serve`` broker
holding what librdkafka produced, per test session."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # NewTopic is not in its stubs' exports
    AdminClient,
    NewTopic,
)
from pyspark.sql import SparkSession

from tests.e2e.brokers import KafkaWireBroker, kafka_wire

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

Sent = tuple[str, int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]], int]
"""What librdkafka reported delivered: topic, partition, offset, key, value, headers, timestamp ms."""


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ["PYSPARK_PYTHON"] = sys.executable  # Spark's Python workers run this venv
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafka_wire tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    # No dataSource.register: Spark finds ``pyspark_kafka_wire`` (the project root is the working directory).
    try:
        yield session
    finally:
        session.stop()


@dataclass
class Cluster:
    broker: KafkaWireBroker
    sent: dict[str, list[Sent]] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def create(self, *topics: str, partitions: int = 2) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
            future.result(30)

    def produce(self, topic: str, count: int, *, compression: str = "none", first: int = 0) -> list[Sent]:
        """Produce ``count`` records with librdkafka and return what it reports delivered."""
        delivered: list[Sent] = []
        now = int(time.time() * 1000)

        def report(err: Any, msg: Any, headers: list[tuple[str, bytes | None]]) -> None:
            assert err is None, err  # librdkafka does not hand the headers back: keep what was sent
            delivered.append(
                (
                    msg.topic(),
                    msg.partition(),
                    msg.offset(),
                    msg.key(),
                    msg.value(),
                    headers,
                    msg.timestamp()[1],
                )
            )

        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "compression.type": compression, "linger.ms": 20}
        )
        for i in range(first, first + count):
            key = None if i % 7 == 0 else f"key-{i}".encode()
            value = None if i % 11 == 5 else (f"value-{i}-" * (i % 13 + 1)).encode()
            headers: list[tuple[str, bytes | None]] = [("n", str(i).encode()), ("empty", None)]

            def on_delivery(err: Any, msg: Any, h: list[tuple[str, bytes | None]] = headers) -> None:
                report(err, msg, h)

            producer.produce(
                topic,
                key=key,
                value=value,
                headers=list(headers),
                partition=i % 2,
                timestamp=now + i,
                on_delivery=on_delivery,
            )
        assert producer.flush(30) == 0
        assert len(delivered) == count
        self.sent.setdefault(topic, []).extend(delivered)
        return delivered


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A broker with one topic per codec (2 partitions, 300 records each, from librdkafka)."""
    broker = kafka_wire(tmp_path_factory.mktemp("spark-broker"))
    broker.start()
    try:
        c = Cluster(broker)
        c.create(*(f"codec-{name}" for name in CODECS))
        for name in CODECS:
            c.produce(f"codec-{name}", 300, compression=name)
        yield c
    finally:
        broker.close()


def data_dir(cluster: Cluster) -> Path:
    return cluster.broker.data_dir
