"""A topic's ``compression.type`` with real clients (Kafka 4.4 and ``kafka-wire serve``:
``disk_target``): librdkafka produces in one codec, the broker stores the batches in the topic's
codec (read from the segment files of its data directory, Kafka's log format on both), and a
librdkafka consumer reads every record back as it was sent."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from kafka_wire.records import RecordBatch, read_batches
from tests.e2e.brokers import BrokerProcess

COUNT = 30
TIMEOUT_S = 30.0


def stored_codecs(data_dir: Path, topic: str) -> list[str]:
    codecs = []
    for segment in sorted((data_dir / f"{topic}-0").glob("*.log")):
        for batch in read_batches(segment.read_bytes()):
            assert isinstance(batch, RecordBatch)
            codecs.append(batch.compression)
    return codecs


Sent = tuple[bytes | None, bytes | None, list[tuple[str, str | bytes | None]]]


def produce(bootstrap: str, topic: str, codec: str) -> list[Sent]:
    sent: list[Sent] = [
        (f"k{i}".encode(), f"{codec}-value-{i}-".encode() * 10, [("i", str(i).encode())])
        for i in range(COUNT)
    ]
    producer = Producer(
        {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20, "acks": "all"}
    )
    errors: list[object] = []
    for key, value, headers in sent:
        producer.produce(
            topic,
            value,
            key,
            partition=0,
            headers=headers,
            on_delivery=lambda err, _: errors.append(err) if err else None,
        )
    assert producer.flush(TIMEOUT_S) == 0 and errors == []
    return sent


def consume(bootstrap: str, topic: str, count: int) -> list[Sent]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[Sent] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            headers = message.headers() or []
            assert isinstance(headers, list)
            got.append((message.key(), message.value(), headers))
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize(
    ("topic_codec", "producer_codec", "stored"),
    [
        ("zstd", "none", "zstd"),
        ("uncompressed", "lz4", "none"),
        ("gzip", "snappy", "gzip"),
        ("producer", "lz4", "lz4"),
    ],
)
def test_batches_are_stored_in_the_topics_codec_and_read_back(
    disk_target: BrokerProcess, topic_codec: str, producer_codec: str, stored: str
) -> None:
    bootstrap = disk_target.bootstrap
    topic = f"rc-{topic_codec}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, 1, 1, config={"compression.type": topic_codec})])
    futures[topic].result(TIMEOUT_S)
    sent = produce(bootstrap, topic, producer_codec)
    assert consume(bootstrap, topic, COUNT) == sent
    codecs = stored_codecs(disk_target.data_dir, topic)
    assert codecs and set(codecs) == {stored}
