"""confluent-kafka (librdkafka) peer driver; see driver_common for the command line and output."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from tests.interop.clients.driver_common import GOLDEN_LINGER_MS, Args, emit, run, text

CLIENT = "confluent"


def _config(args: Args, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": args.bootstrap,
        "client.id": f"kw-interop-{CLIENT}",
        "socket.timeout.ms": int(args.timeout_s * 1000),
        **_security(args),
        **extra,
    }


def _security(args: Args) -> dict[str, Any]:
    security = args.security
    if security is None:
        return {}
    settings = {
        "security.protocol": security.protocol,
        "ssl.ca.location": security.ca,
        "ssl.certificate.location": security.cert,
        "ssl.key.location": security.key,
        "sasl.mechanism": security.mechanism,
        "sasl.username": security.username,
        "sasl.password": security.password,
    }
    return {key: value for key, value in settings.items() if value is not None}


def _consumer_config(args: Args) -> dict[str, Any]:
    group: dict[str, Any] = {"group.id": args.group_id(CLIENT), "auto.offset.reset": "earliest"}
    if args.group_protocol == "consumer":  # KIP-848: the coordinator owns the session timeout
        group["group.protocol"] = "consumer"
    else:
        group.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    return _config(args, **{**group, "enable.auto.commit": False})


def metadata(args: Args) -> None:
    md = AdminClient(_config(args)).list_topics(timeout=args.remaining_s)
    brokers = [[b.id, b.host, b.port] for b in md.brokers.values()]
    emit("metadata", brokers=sorted(brokers), topics=sorted(md.topics))


def create(args: Args) -> None:
    admin = AdminClient(_config(args))  # keep a reference: the futures fail once the handle is collected
    futures = admin.create_topics(
        [NewTopic(args.topic, num_partitions=args.partitions, replication_factor=1)],
        request_timeout=args.remaining_s,
    )
    futures[args.topic].result(timeout=args.remaining_s)
    emit("created", topic=args.topic)


def produce(args: Args) -> None:
    settings: dict[str, Any] = {
        "message.timeout.ms": int(args.remaining_s * 1000),
        "compression.type": args.compression,
    }
    if args.golden:
        settings["linger.ms"] = GOLDEN_LINGER_MS
    producer = Producer(_config(args, **settings))
    if args.golden:  # records queued before the partition is known may leave in separate batches
        producer.list_topics(args.topic, timeout=args.remaining_s)
    sent: dict[int, tuple[int, int]] = {}
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            key = msg.key()
            assert key is not None  # every record is sent with key b"k<i>"
            sent[int(key[1:])] = _position(msg)

    for i, value in enumerate(args.values(CLIENT)):
        options: dict[str, Any] = {}
        partition = args.partition_of(i)
        if partition is not None:
            options["partition"] = partition
        if args.headers or args.golden:
            options["headers"] = args.record_headers(CLIENT, i)
        timestamp = args.timestamp_ms(i)
        if timestamp is not None:
            options["timestamp"] = timestamp
        producer.produce(
            args.topic, value=value.encode(), key=f"k{i}".encode(), on_delivery=on_delivery, **options
        )
        producer.poll(0)
    left = producer.flush(args.remaining_s)
    if errors or left:
        raise RuntimeError(f"delivery failed: errors={errors} undelivered={left}")
    records = [list(sent[i]) for i in sorted(sent)]
    emit(
        "produced",
        topic=args.topic,
        partition=sorted({p for p, _ in records}),
        offsets=[o for _, o in records],
        records=records,
    )


def _position(msg: Message) -> tuple[int, int]:
    """A delivered or consumed record's partition and offset (None only on error events)."""
    partition, offset = msg.partition(), msg.offset()
    assert partition is not None and offset is not None
    return partition, offset


def _headers(msg: Message) -> list[list[str | None]]:
    # A consumed record's headers are a list of (name, bytes or None); the dict form is for producing.
    headers = msg.headers() or []
    assert isinstance(headers, list)
    return [[k, v if isinstance(v, str) else text(v)] for k, v in headers]


def _skip_or_raise(msg: Message) -> bool:
    """True for a record; False for the end of a partition; raises on any other error."""
    error = msg.error()
    if error is None:
        return True
    if error.code() == KafkaError._PARTITION_EOF:
        return False
    raise KafkaException(error)


def consume(args: Args) -> None:
    consumer = Consumer(_consumer_config(args))
    records: list[list[Any]] = []
    try:
        consumer.subscribe([args.topic])
        while len(records) < args.count and time.monotonic() < args.deadline:
            msg = consumer.poll(min(0.5, args.remaining_s))
            if msg is None:
                continue
            if not _skip_or_raise(msg):
                continue
            records.append([msg.partition(), msg.offset(), text(msg.key()), text(msg.value()), _headers(msg)])
    finally:
        consumer.close()
    emit("consumed", topic=args.topic, values=[r[3] for r in records], records=records)


def group(args: Args) -> None:
    """A group member that commits synchronously after each batch, until SIGTERM or the deadline."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())

    incremental = args.group_protocol == "consumer"

    def on_assign(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # KIP-848 assignments are incremental: ``partitions`` is what was added.
        owned = {p.partition for p in consumer.assignment()} if incremental else set()
        emit("assigned", partitions=sorted(owned | {p.partition for p in partitions}), t=time.monotonic())

    def on_revoke(consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if incremental:
            gone = {p.partition for p in partitions}
            kept = sorted({p.partition for p in consumer.assignment()} - gone)
            emit("assigned", partitions=kept, t=time.monotonic())

    consumer = Consumer(_consumer_config(args))
    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)
    try:
        while not stop.is_set() and time.monotonic() < args.deadline:
            batch = consumer.consume(num_messages=args.batch, timeout=min(0.2, args.remaining_s))
            t = time.monotonic()
            good = []
            for msg in batch:
                if _skip_or_raise(msg):
                    good.append(msg)
            if not good:
                continue
            emit("processed", records=[[m.partition(), m.offset(), text(m.value())] for m in good], t=t)
            next_offsets: dict[int, int] = {}
            for m in good:
                partition, offset = _position(m)
                next_offsets[partition] = max(next_offsets.get(partition, 0), offset + 1)
            offsets = [TopicPartition(args.topic, p, o) for p, o in sorted(next_offsets.items())]
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as exc:
                # E.g. the group rebalanced meanwhile: the batch stays uncommitted, and the
                # partition's next owner processes it again, which at-least-once allows.
                emit(
                    "commit_failed",
                    offsets=sorted([p, o] for p, o in next_offsets.items()),
                    message=str(exc),
                    t=time.monotonic(),
                )
                continue
            emit("committed", offsets=sorted([p, o] for p, o in next_offsets.items()), t=time.monotonic())
    finally:
        consumer.close()  # leaves the group
    emit("closed", t=time.monotonic())


if __name__ == "__main__":
    run({"metadata": metadata, "create": create, "produce": produce, "consume": consume, "group": group})
