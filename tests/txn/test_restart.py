"""The transaction coordinator of ``kafka-wire serve`` with confluent-kafka (librdkafka):

- a transaction left open is aborted at its timeout, and its producer cannot commit it;
- a zombie (a producer whose transactional id was initialized again) is fenced;
- the coordinator's state comes back from ``__transaction_state`` when the broker is killed and
  restarted: a committed transaction stays committed, a transaction left open is still open
  (same producer id, epoch and partitions), and a new producer with the same transactional id
  fences it and aborts it, so that a read_committed consumer reads exactly the committed records
  and is not held back by the open one.

The tests share one broker (the last restarts it); each uses its own topic and transactional id.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
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
#: The broker's own topics: one partition each, so that a restart loads them quickly; timed-out
#: transactions looked for every 100 ms (Kafka: 10 s).
SETTINGS: Final = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaWireBroker]:
    server = kafka_wire(tmp_path_factory.mktemp("txn-broker"), settings=SETTINGS)
    server.start()
    try:
        yield server
    finally:
        server.close()


def create(broker: KafkaWireBroker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=TIMEOUT_S)


def describe(broker: KafkaWireBroker, transactional_id: str = TXN_ID) -> DescribeTransactionsResponse:
    """DescribeTransactions of one id, asked again while the coordinator loads its state."""
    connection = Connection(broker.address)
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while True:
            answer = connection.request(DescribeTransactionsRequest(transactional_ids=[transactional_id]), 0)
            assert isinstance(answer, DescribeTransactionsResponse)
            code = answer.transaction_states[0].error_code
            if code not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR):
                return answer
            assert time.monotonic() < deadline, f"the coordinator did not load: {answer}"
            time.sleep(0.1)
    finally:
        connection.close()


def producer(broker: KafkaWireBroker, transactional_id: str = TXN_ID, **config: object) -> Producer:
    made = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": transactional_id, **config})
    made.init_transactions(TIMEOUT_S)
    return made


def send(made: Producer, *values: str, topic: str = TOPIC) -> None:
    for value in values:
        made.produce(topic, value=value.encode(), partition=0)
    made.flush(TIMEOUT_S)


def read_committed(broker: KafkaWireBroker, expected: int, topic: str = TOPIC) -> list[str]:
    """What a read_committed consumer reads of ``topic`` until it reaches the end of the
    partition with at least ``expected`` records."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"{topic}-reader",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe([topic])
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


def wait_for_state(broker: KafkaWireBroker, transactional_id: str, state: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while (found := describe(broker, transactional_id).transaction_states[0].transaction_state) != state:
        assert time.monotonic() < deadline, f"{transactional_id} is {found}, not {state}"
        time.sleep(0.1)


def test_an_open_transaction_is_aborted_at_its_timeout(broker: KafkaWireBroker) -> None:
    topic, txn_id = "txn-timeout", "txn-timeout-id"
    create(broker, topic)
    made = producer(broker, txn_id, **{"transaction.timeout.ms": 1000})
    made.begin_transaction()
    send(made, "lost1", "lost2", topic=topic)
    wait_for_state(broker, txn_id, "CompleteAbort")  # no commit came within the second
    with pytest.raises(KafkaException) as refused:
        made.commit_transaction(TIMEOUT_S)
    assert refused.value.args[0].txn_requires_abort() or refused.value.args[0].fatal()
    later = producer(broker, txn_id)
    later.begin_transaction()
    send(later, "kept", topic=topic)
    later.commit_transaction(TIMEOUT_S)
    assert read_committed(broker, 1, topic) == ["kept"]


def test_a_zombie_is_fenced(broker: KafkaWireBroker) -> None:
    topic, txn_id = "txn-zombie", "txn-zombie-id"
    create(broker, topic)
    zombie = producer(broker, txn_id)
    zombie.begin_transaction()
    send(zombie, "zombie", topic=topic)
    successor = producer(broker, txn_id)  # the same id again: the zombie's epoch is old now
    with pytest.raises(KafkaException) as fenced:
        zombie.commit_transaction(TIMEOUT_S)
    assert fenced.value.args[0].fatal(), fenced.value.args[0]  # librdkafka: fenced is fatal
    successor.begin_transaction()
    send(successor, "successor", topic=topic)
    successor.commit_transaction(TIMEOUT_S)
    assert read_committed(broker, 1, topic) == ["successor"]


def test_transaction_state_survives_a_restart(broker: KafkaWireBroker) -> None:
    create(broker, TOPIC)
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
