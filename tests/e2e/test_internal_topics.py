"""``__consumer_offsets`` belongs to ``kafka-wire serve``, checked with librdkafka (confluent-kafka).

The issue's reproducer: a producer writing ``key=b"\\x00\\x01\\xff\\xff\\xff"`` to
``__consumer_offsets`` made the topic an ordinary one and left a record the group coordinator
could not replay, so the broker never started again. Now the write is refused with Kafka's
INVALID_TOPIC_EXCEPTION, the broker restarts, and a consumer group's committed offsets survive
restarts as before. The clients run in a child process (as in ``test_sasl.py``). The refusal
alone is checked on every target (Kafka 4.4's ``ReplicaManager`` refuses a client's Produce to an
internal topic); the restarts on ``kafka-wire serve``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.brokers import QUICK_GROUPS, BrokerProcess, KafkaWireBroker, kafka_wire

TIMEOUT_S = 60
#: librdkafka's ERR_TOPIC_EXCEPTION, Kafka's INVALID_TOPIC_EXCEPTION.
INVALID_TOPIC_EXCEPTION = 17

POISON = r"""
import json, sys
import confluent_kafka as ck
producer = ck.Producer({"bootstrap.servers": sys.argv[1], "message.timeout.ms": 15000})
delivered = []
producer.produce("__consumer_offsets", key=b"\x00\x01\xff\xff\xff", value=b"x",
                 callback=lambda err, msg: delivered.append(None if err is None else err.code()))
producer.flush(20)
print(json.dumps({"delivered": delivered}))
"""

GROUP = r"""
import json, sys, time
import confluent_kafka as ck
bootstrap, topic, group, step = sys.argv[1:5]
out = {}
if step == "commit":
    producer = ck.Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce(topic, key=b"k", value=str(i).encode())
    out["unsent"] = producer.flush(20)
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                            "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 40
    while seen < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    out["seen"] = seen
    out["committed"] = {tp.partition: tp.offset for tp in consumer.commit(asynchronous=False)}
    consumer.close()
else:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    found = consumer.committed([ck.TopicPartition(topic, 0)], timeout=20)
    out["committed"] = {tp.partition: tp.offset for tp in found}
    consumer.close()
print(json.dumps(out))
"""


@pytest.fixture
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaWireBroker]:
    """``kafka-wire serve`` without the 3 s initial rebalance delay (the group has one member)."""
    server = kafka_wire(tmp_path_factory.mktemp("internal"), settings=QUICK_GROUPS)
    server.start()
    yield server
    server.close()


def run(script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=Path(__file__).parent,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def restart(broker: KafkaWireBroker) -> None:
    status = broker.stop()
    assert status == 0, f"SIGTERM: exit status {status}\n{broker.log()[-3000:]}"
    broker.restart()  # raises, with the log, if the broker does not start


def test_a_client_cannot_write_to_the_offsets_topic(
    target: BrokerProcess, request: pytest.FixtureRequest
) -> None:
    if target.name == "tansu":
        reason = "Tansu 0.6.0 acknowledges a client's Produce to __consumer_offsets"
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
    assert run(POISON, target.bootstrap) == {"delivered": [INVALID_TOPIC_EXCEPTION]}


def test_clients_cannot_poison_the_offsets_topic_and_offsets_survive_restarts(
    broker: KafkaWireBroker,
) -> None:
    assert run(POISON, broker.bootstrap) == {"delivered": [INVALID_TOPIC_EXCEPTION]}
    restart(broker)

    committed = run(GROUP, broker.bootstrap, "orders", "billing", "commit")
    assert committed == {"unsent": 0, "seen": 10, "committed": {"0": 10}}
    restart(broker)
    assert run(GROUP, broker.bootstrap, "orders", "billing", "read") == {"committed": {"0": 10}}
    assert "Traceback" not in broker.log()
