"""confluent-kafka (librdkafka) peer driver; see driver_common for the command line and output."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from driver_common import Args, emit, run

CLIENT = "confluent"


def _config(args: Args, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": args.bootstrap,
        "client.id": f"kw-interop-{CLIENT}",
        "socket.timeout.ms": int(args.timeout_s * 1000),
        **extra,
    }


def metadata(args: Args) -> None:
    md = AdminClient(_config(args)).list_topics(timeout=args.remaining_s)
    brokers = [[b.id, b.host, b.port] for b in md.brokers.values()]
    emit("metadata", brokers=sorted(brokers), topics=sorted(md.topics))


def create(args: Args) -> None:
    admin = AdminClient(_config(args))  # keep a reference: the futures fail once the handle is collected
    futures = admin.create_topics(
        [NewTopic(args.topic, num_partitions=1, replication_factor=1)], request_timeout=args.remaining_s
    )
    futures[args.topic].result(timeout=args.remaining_s)
    emit("created", topic=args.topic)


def produce(args: Args) -> None:
    producer = Producer(_config(args, **{"message.timeout.ms": int(args.remaining_s * 1000)}))
    offsets: list[int] = []
    partitions: set[int] = set()
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            offsets.append(msg.offset())
            partitions.add(msg.partition())

    for i, value in enumerate(args.values(CLIENT)):
        producer.produce(args.topic, value=value.encode(), key=f"k{i}".encode(), on_delivery=on_delivery)
    left = producer.flush(args.remaining_s)
    if errors or left:
        raise RuntimeError(f"delivery failed: errors={errors} undelivered={left}")
    emit("produced", topic=args.topic, partition=sorted(partitions), offsets=offsets)


def consume(args: Args) -> None:
    consumer = Consumer(
        _config(
            args,
            **{
                "group.id": f"kw-interop-{CLIENT}-{args.topic}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 1000,
            },
        )
    )
    values: list[str] = []
    try:
        consumer.subscribe([args.topic])
        while len(values) < args.count and time.monotonic() < args.deadline:
            msg = consumer.poll(min(0.5, args.remaining_s))
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(msg.error())
            values.append(msg.value().decode())
    finally:
        consumer.close()
    emit("consumed", topic=args.topic, values=values)


if __name__ == "__main__":
    run({"metadata": metadata, "create": create, "produce": produce, "consume": consume})
