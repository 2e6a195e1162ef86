"""The transaction coordinator's state comes back from ``__transaction_state`` when ``kafka-wire
serve`` is killed and restarted: a committed transaction stays committed, a transaction left open
is still open (same producer id, epoch and partitions), and a new producer with the same
transactional id fences it and aborts it, so that a read_committed consumer reads exactly the
committed records and is not held back by the open one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from kafka_wire.messages import DescribeTransactionsRequest, DescribeTransactionsResponse, ErrorCode
from tests.differential.wire import Connection
from tests.e2e.brokers import KafkaWireBroker, kafka_wire

TOPIC: Final = "txn-restart"
TXN_ID: Final = "txn-restart-id"
TIMEOUT_S: Final = 60.0
#: The broker's own topics: one partition each, so that a restart loads them quickly.
SETTINGS: Final = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[KafkaWireBroker]:
    server = kafka_wire(tmp_path, settings=SETTINGS)
    server.start()
    try:
        yield server
    finally:
        server.close()


def describe(broker: KafkaWireBroker) -> DescribeTransactionsResponse:
    """DescribeTransactions of :data:`TXN_ID`, asked again while the coordinator loads its state."""
    connection = Connection(broker.address)
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while True:
            answer = connection.request(DescribeTransactionsRequest(transactional_ids=[TXN_ID]), 0)
            assert isinstance(answer, DescribeTransactionsResponse)
            code = answer.transaction_states[0].error_code
            if code not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR):
                return answer
            assert time.monotonic() < deadline, f"the coordinator did not load: {answer}"
            time.sleep(0.1)
    finally:
        connection.close()


def producer(broker: KafkaWireBroker) -> Producer:
    made = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": TXN_ID})
    made.init_transactions(TIMEOUT_S)
    return made


def send(made: Producer, *values: str) -> None:
    for value in values:
        made.produce(TOPIC, value=value.encode(), partition=0)
    made.flush(TIMEOUT_S)


def read_committed(broker: KafkaWireBroker, expected: int) -> list[str]:
    """What a read_committed consumer reads of :data:`TOPIC` until it reaches the end of the
    partition with at least ``expected`` records."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "txn-restart-reader",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe([TOPIC])
    values: list[str] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
                if len(values) >= expected:
                    return values
                continue
            value = msg.value()
            assert value is not None
            values.append(value.decode())
    finally:
        consumer.close()
    raise AssertionError(f"read_committed read {values}, expected {expected} records")


def test_transaction_state_survives_a_restart(broker: KafkaWireBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=TIMEOUT_S)
    first = producer(broker)
    first.begin_transaction()
    send(first, "c1", "c2", "c3")
    first.commit_transaction(TIMEOUT_S)
    first.begin_transaction()
    send(first, "open1", "open2")  # on the broker, never committed
    [before] = describe(broker).transaction_states
    assert (before.error_code, before.transaction_state) == (ErrorCode.NONE, "Ongoing")

    broker.kill()
    broker.restart()

    [after] = describe(broker).transaction_states
    assert (after.error_code, after.transaction_state) == (ErrorCode.NONE, "Ongoing")
    assert (after.producer_id, after.producer_epoch) == (before.producer_id, before.producer_epoch)
    assert after.transaction_start_time_ms == before.transaction_start_time_ms
    assert [(t.topic, list(t.partitions)) for t in after.topics] == [(TOPIC, [0])]

    second = producer(broker)  # fences the first and aborts its open transaction
    second.begin_transaction()
    send(second, "c4")
    second.commit_transaction(TIMEOUT_S)
    assert read_committed(broker, 4) == ["c1", "c2", "c3", "c4"]
    [last] = describe(broker).transaction_states
    assert (last.transaction_state, last.producer_id) == ("CompleteCommit", before.producer_id)
