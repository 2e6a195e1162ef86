"""confluent-kafka (librdkafka) in the transactions scenario of ``common.py``."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.txn.clients.common import OFFSET_A, OFFSET_C, SETTLE_S, Args, emit, main

CLIENT = "confluent"


def scenario(args: Args) -> None:
    base = {"bootstrap.servers": args.bootstrap, "client.id": f"kw-txn-{CLIENT}"}
    producer = Producer({**base, "transactional.id": args.txn_id, "transaction.timeout.ms": 60_000})
    producer.init_transactions(args.remaining_s)
    metadata = Consumer({**base, "group.id": args.group}).consumer_group_metadata()
    committed: list[list[Any]] = []
    aborted: list[list[Any]] = []
    for phase, offset in (("A", OFFSET_A), ("B", None), ("C", OFFSET_C)):
        producer.begin_transaction()
        records = args.records(CLIENT, phase)
        for partition, key, value in records:
            producer.produce(args.topic, key=key.encode(), value=value.encode(), partition=partition)
        if offset is not None:
            producer.send_offsets_to_transaction(
                [TopicPartition(args.source, 0, offset)], metadata, args.remaining_s
            )
            producer.commit_transaction(args.remaining_s)
            committed += [[p, v] for p, _, v in records]
        else:
            producer.flush(args.remaining_s)  # on the broker before the abort (librdkafka purges)
            producer.abort_transaction(args.remaining_s)
            aborted += [[p, v] for p, _, v in records]
    emit("transacted", committed=committed, aborted=aborted)
    for isolation, expected in (("read_committed", len(committed)), ("read_uncommitted", 3 * args.count)):
        emit("consumed", isolation=isolation, records=consume(args, base, isolation, expected))
    group = Consumer({**base, "group.id": args.group})
    [position] = group.committed([TopicPartition(args.source, 0)], timeout=args.remaining_s)
    group.close()
    emit("committed", offset=position.offset)


def consume(args: Args, base: dict[str, Any], isolation: str, expected: int) -> list[list[Any]]:
    consumer = Consumer(
        {
            **base,
            "group.id": f"{args.group}-{isolation}",
            "isolation.level": isolation,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([args.topic])
    records: list[list[Any]] = []
    settle_at: float | None = None
    try:
        while time.monotonic() < args.deadline and (settle_at is None or time.monotonic() < settle_at):
            msg = consumer.poll(0.2)
            if msg is not None:
                error = msg.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
                if error is None:
                    value = msg.value()
                    records.append([msg.partition(), msg.offset(), None if value is None else value.decode()])
            if settle_at is None and len(records) >= expected:
                settle_at = time.monotonic() + SETTLE_S
    finally:
        consumer.close()
    return records


if __name__ == "__main__":
    main(scenario)
