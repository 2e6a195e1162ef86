"""Byte-rate quotas against a real client: confluent-kafka (librdkafka) produces, then consumes,
as fast as it can under a 1 MiB/s quota for its client id, set with the Java 4.4 admin client
(``tests/e2e/java/QuotaAdmin.java``: confluent-kafka 2.16 has no client-quota admin API), on
Apache Kafka 4.4 (the reference, which checks the test itself) and on ``kafka-wire serve``, side
by side in the same test (:func:`_side_by_side`: a client held to 1 MiB/s takes little of the
machine, and the two runs take the time of one); the consumer on kafka-wire alone (see
:func:`test_a_consume_quota_holds`).

The rate is measured from the client's side: the bytes of the values delivered (or consumed)
over a run of :data:`RUN_S` seconds. The throttle time the broker reported comes from
librdkafka's statistics (``brokers.*.throttle``, every ``statistics.interval.ms``).

What Kafka's quota promises is the rate over its sampled windows, and that is not 1 MiB/s over
any 30 s: its rate spreads a first burst over ``quota.window.num - 1`` windows (about 10 MiB go
at once), and once a burst's window expires (11 s later) the next burst may go. Kafka 4.4
measured here gives 1.15 to 1.22 times the quota over 30 s (a burst of 9 to 12 MiB about every
12 s, about the quota in between), with or without the first burst. So the bounds are: both
brokers throttled the client (a throttle time > 0 in its statistics), both within 0.9 and
:data:`MAX_OVER` times the quota, and kafka-wire's rate within 10% of Kafka's (for one producer;
two sharing their user's quota vary more on Kafka itself, see
:func:`test_clients_of_one_user_share_its_quota_as_in_kafka`). A loaded machine
can only make the client slower, which the lower bound tolerates no further than 10%.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

from tests.e2e.apache_kafka import apache_kafka
from tests.e2e.brokers import QUICK_GROUPS, BrokerProcess
from tests.interop.harness import java_command

QUOTA_ADMIN: Final = Path(__file__).resolve().parent / "java" / "QuotaAdmin.java"
QUOTA: Final = 1_048_576
#: How long each client runs; the rate is measured over the whole run.
RUN_S: Final = 30.0
#: How far over the quota the rate over the run may be: Kafka 4.4's own, measured here (see the
#: module docstring).
MAX_OVER: Final = 1.35
VALUE: Final = b"q" * 1000


def _set_quota(broker: BrokerProcess, client_id: str, key: str, entity_type: str = "client-id") -> None:
    result = subprocess.run(
        java_command(QUOTA_ADMIN, broker.bootstrap, entity_type, client_id, f"{key}={QUOTA}", client="java4"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, (result.stdout, result.stderr[-3000:])
    assert result.stdout.splitlines() == [f"quota {key} {float(QUOTA)}"]


def _create(broker: BrokerProcess, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=60)


class _Stats:
    """The largest throttle time librdkafka's statistics reported, over every broker."""

    def __init__(self) -> None:
        self.throttle_max_ms = 0
        self.lock = threading.Lock()

    def __call__(self, text: str) -> None:
        stats: dict[str, Any] = json.loads(text)
        for broker in stats.get("brokers", {}).values():
            with self.lock:
                self.throttle_max_ms = max(
                    self.throttle_max_ms, int(broker.get("throttle", {}).get("max", 0))
                )


def _rate(events: list[tuple[float, int]], start: float) -> float:
    """Bytes per second over the run, the first burst included."""
    return sum(n for t, n in events if t < start + RUN_S) / RUN_S


def _per_second(events: list[tuple[float, int]], start: float) -> list[float]:
    seconds = [0] * int(RUN_S)
    for t, n in events:
        if t < start + RUN_S:
            seconds[int(t - start)] += n
    return [round(n / QUOTA, 2) for n in seconds]


def _produce(
    broker: BrokerProcess, topic: str, client_id: str, seconds: float, stats: _Stats | None
) -> list[tuple[float, int]]:
    """Produce as fast as the producer takes values for ``seconds``; (time, bytes) per delivery."""
    settings: dict[str, Any] = {
        "bootstrap.servers": broker.bootstrap,
        "client.id": client_id,
        "linger.ms": 5,
        "acks": 1,
        "queue.buffering.max.kbytes": 2048,  # the application feels the broker's pace
    }
    if stats is not None:
        settings.update({"statistics.interval.ms": 1000, "stats_cb": stats})
    producer = Producer(settings)
    delivered: list[tuple[float, int]] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        assert err is None, err
        delivered.append((time.monotonic(), len(msg.value() or b"")))

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            producer.produce(topic, VALUE, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.05)
        else:
            producer.poll(0)
    assert producer.flush(120) == 0
    return delivered


def _produce_run(broker: BrokerProcess) -> tuple[float, int, list[float]]:
    """The produce rate under the quota (bytes/s of values over the run), the largest throttle
    time reported, and the rate per second (for the failure message)."""
    name = f"quota-p-{uuid.uuid4().hex[:8]}"
    _create(broker, name)
    _set_quota(broker, name, "producer_byte_rate")
    stats = _Stats()
    start = time.monotonic()
    delivered = _produce(broker, name, name, RUN_S, stats)
    return _rate(delivered, start), stats.throttle_max_ms, _per_second(delivered, start)


def _consume_run(broker: BrokerProcess) -> tuple[float, int, list[float]]:
    """The consume rate under the quota, as :func:`_produce_run`."""
    name = f"quota-c-{uuid.uuid4().hex[:8]}"
    _create(broker, name)
    need = int(QUOTA * RUN_S * 1.6)  # more than the consumer may take meanwhile
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "acks": 1})
    for _ in range(need // len(VALUE)):
        while True:
            try:
                producer.produce(name, VALUE)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    _set_quota(broker, name, "consumer_byte_rate")
    stats = _Stats()
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": name,
            "group.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "statistics.interval.ms": 1000,
            "stats_cb": stats,
        }
    )
    consumed: list[tuple[float, int]] = []
    try:
        consumer.subscribe([name])
        first = None
        while first is None or time.monotonic() < first + RUN_S:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            now = time.monotonic()
            first = now if first is None else first
            consumed.append((now, len(msg.value() or b"")))
    finally:
        consumer.close()
    assert first is not None
    assert sum(n for _, n in consumed) < need  # the data outlasted the run
    return _rate(consumed, first), stats.throttle_max_ms, _per_second(consumed, first)


def _side_by_side(
    run: Callable[[BrokerProcess], tuple[float, int, list[float]]],
    kafka: BrokerProcess,
    wire: BrokerProcess,
) -> tuple[tuple[float, int, list[float]], tuple[float, int, list[float]]]:
    """``run`` against both brokers at once, in two threads: (Kafka's result, kafka-wire's)."""
    with ThreadPoolExecutor(2) as pool:
        on_kafka, on_wire = pool.submit(run, kafka), pool.submit(run, wire)
        return on_kafka.result(), on_wire.result()


def _check(
    kafka: tuple[float, int, list[float]],
    wire: tuple[float, int, list[float]],
    max_over: float = MAX_OVER,
    max_apart: float | None = 0.1,
) -> None:
    """Both clients throttled, both rates within the bounds, and kafka-wire's rate within
    ``max_apart`` of Kafka's (``None``: the bounds only)."""
    facts = {"kafka": kafka, "kafka_wire": wire}
    print(
        {
            name: (round(rate / QUOTA, 3), throttle, per_second)
            for name, (rate, throttle, per_second) in facts.items()
        }
    )
    for name, (rate, throttle_ms, _) in facts.items():
        assert throttle_ms > 0, name  # the client was told to slow down
        assert 0.9 * QUOTA <= rate <= max_over * QUOTA, f"{name}: {rate / QUOTA:.3f} x the quota; {facts}"
    if max_apart is not None:
        assert abs(wire[0] / kafka[0] - 1) <= max_apart, f"{wire[0] / kafka[0]:.3f}; {facts}"


def test_a_produce_quota_holds_as_in_kafka(
    apache_kafka_node: BrokerProcess, kafka_wire_node: BrokerProcess
) -> None:
    _check(*_side_by_side(_produce_run, apache_kafka_node, kafka_wire_node))


def test_a_consume_quota_holds(kafka_wire_node: BrokerProcess) -> None:
    """kafka-wire alone, within 10% of the quota: Kafka 4.4's consumer rate in the same test was
    0.89 to 0.98 times the quota (0.89 to 0.93 on a loaded machine, as low as the lower bound),
    kafka-wire's 1.04 to 1.05, so the reference could not check the test any more closely than
    the bounds themselves do."""
    rate, throttle_ms, per_second = _consume_run(kafka_wire_node)
    print(round(rate / QUOTA, 3), throttle_ms, per_second)
    assert throttle_ms > 0  # the client was told to slow down
    assert 0.9 * QUOTA <= rate <= 1.1 * QUOTA, (rate / QUOTA, per_second)


def _shared_run(broker: BrokerProcess) -> tuple[float, int, list[float]]:
    """Two producers with their own client ids under one quota for their user (``ANONYMOUS``, on
    a plaintext listener): their rates together, as :func:`_produce_run`."""
    name = f"quota-u-{uuid.uuid4().hex[:8]}"
    _create(broker, name)
    _set_quota(broker, "ANONYMOUS", "producer_byte_rate", entity_type="user")
    stats = [_Stats(), _Stats()]
    runs: list[list[tuple[float, int]]] = [[], []]
    start = time.monotonic()

    def run(i: int) -> None:
        runs[i] = _produce(broker, name, f"{name}-{i}", RUN_S, stats[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(RUN_S + 180)
    assert all(run for run in runs)  # both delivered
    both = sorted(runs[0] + runs[1])
    return _rate(both, start), min(s.throttle_max_ms for s in stats), _per_second(both, start)


def test_clients_of_one_user_share_its_quota_as_in_kafka(
    tmp_path_factory: pytest.TempPathFactory, kafka_wire_broker: BrokerProcess
) -> None:
    """A user quota binds every broker's clients: fresh brokers (a quota for ``ANONYMOUS``
    would throttle the session brokers' other tests)."""
    kafka = apache_kafka(tmp_path_factory.mktemp("quota_kafka"), overrides=QUICK_GROUPS)
    kafka.start()
    try:
        expected, found = _side_by_side(_shared_run, kafka, kafka_wire_broker)
    finally:
        kafka.close()
    # Two producers in one burst window take more of it than one, and how much more depends on
    # when their bursts fall: Kafka 4.4 gave 1.36 times the quota over the run in one run here and
    # 1.00 in another (kafka-wire beside it 1.30), so the rates are held to the bounds, not to
    # each other. Each with a quota of its own, the two would take about twice one's rate (2.3 times
    # the quota and more), which the upper bound refuses.
    _check(expected, found, max_over=1.6, max_apart=None)
