"""Share-group benchmark: KIP-932 share consumers against a classic consumer group on the same
topic, ``kafka-wire serve`` beside Apache Kafka 4.4 in one run, one client (confluent-kafka).

Not a test. For each broker, a topic of ``--partitions`` partitions holds ``--records`` records of
``--value-bytes`` bytes (produced first, spread evenly). Then, each ``--rounds`` times, on a group
of its own:

* **classic x1**: one ``Consumer`` (``group.protocol=classic``, ``auto.offset.reset=earliest``)
  subscribes and reads every record;
* **share x1** and **share x3**: one or three ``ShareConsumer`` (librdkafka's preview share
  consumer, implicit acknowledgement: a poll accepts what the previous one returned), each polling
  on a thread of its own, on a share group whose ``share.auto.offset.reset`` is set to
  ``earliest`` first (IncrementalAlterConfigs on the group, as ``kafka-configs.sh`` does); done
  when every record was delivered to one of them.

Two times per run: **join** from the subscribe until the first record arrives (the group's join,
assignment and first fetch; a classic group also waits ``group.initial.rebalance.delay.ms``, 3 s
by default on both brokers), and **read** from that first record to the last one; the rate is
records / read time, the median of the rounds. Records delivered twice (a share consumer's
redelivery) count once. Kafka 4.4 is the jars of ``make peers`` (one KRaft combined node,
``tests/e2e/apache_kafka.py``).

Run: ``.venv/bin/python bench/bench_share.py [--records N] [--partitions P] [--value-bytes B]
[--rounds R] [--brokers kafka-wire,kafka-4.4]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.e2e (the broker processes of the e2e suite)

from confluent_kafka import Consumer, Message, Producer, ShareConsumer  # noqa: E402
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # noqa: E402  # not in its stubs' exports
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from tests.e2e.apache_kafka import apache_kafka  # noqa: E402
from tests.e2e.brokers import BrokerProcess, kafka_wire  # noqa: E402

TOPIC = "share-bench"
#: A run that has not read every record by then failed.
RUN_TIMEOUT_S = 180.0

MakeBroker = Callable[[Path], BrokerProcess]
BROKERS: dict[str, MakeBroker] = {"kafka-wire": kafka_wire, "kafka-4.4": apache_kafka}
#: The consumer setups of a round, in order: (name, share group?, consumers).
SETUPS = (("classic x1", False, 1), ("share x1", True, 1), ("share x3", True, 3))


@dataclass
class Reading:
    """What one run saw: seconds from the subscribe to the first record, and from it to the last."""

    join_s: float
    read_s: float


class Delivered:
    """The distinct records delivered so far, shared by a run's consumer threads."""

    def __init__(self, records: int) -> None:
        self.records = records
        self.seen: set[tuple[int, int]] = set()
        self.first: float | None = None
        self.last = 0.0
        self.done = threading.Event()
        self._lock = threading.Lock()

    def add(self, positions: list[tuple[int, int]]) -> None:
        now = time.monotonic()
        with self._lock:
            if self.first is None and positions:
                self.first = now
            self.seen.update(positions)
            if len(self.seen) >= self.records and not self.done.is_set():
                self.last = now
                self.done.set()


def fill(bootstrap: str, topic: str, partitions: int, records: int, value: bytes) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:  # the client's queue is full: let deliveries drain it
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("the topic was not filled")


def earliest(bootstrap: str, group: str) -> None:
    """``share.auto.offset.reset=earliest`` for the share group ``group`` (before it exists)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def consume(bootstrap: str, topic: str, records: int, share: bool, consumers: int) -> Reading:
    group = f"bench-{uuid.uuid4().hex[:8]}"
    if share:
        earliest(bootstrap, group)
    delivered = Delivered(records)
    stop = threading.Event()
    failures: list[str] = []

    def take(messages: list[Message]) -> None:
        positions = []
        for m in messages:
            partition, offset = m.partition(), m.offset()
            if m.error() is not None or partition is None or offset is None:
                failures.append(str(m.error()))
            else:
                positions.append((partition, offset))
        delivered.add(positions)

    def classic_member() -> None:
        client = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        try:
            client.subscribe([topic])
            while not stop.is_set():
                take(client.consume(10000, 0.2))
        except Exception as exc:  # reported by the run
            failures.append(repr(exc))
        finally:
            client.close()

    def share_member() -> None:
        client = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
        try:
            client.subscribe([topic])
            while not stop.is_set():
                take(list(client.poll(0.2)))
        except Exception as exc:  # reported by the run
            failures.append(repr(exc))
        finally:
            client.close()

    begin = time.monotonic()
    member = share_member if share else classic_member
    threads = [threading.Thread(target=member, daemon=True) for _ in range(consumers)]
    for thread in threads:
        thread.start()
    finished = delivered.done.wait(RUN_TIMEOUT_S)
    stop.set()
    for thread in threads:
        thread.join(60)
    if not finished or delivered.first is None:
        raise RuntimeError(f"{len(delivered.seen)} of {records} records read; errors {failures[:5]}")
    return Reading(delivered.first - begin, delivered.last - delivered.first)


def run(name: str, make: MakeBroker, workdir: Path, args: argparse.Namespace) -> dict[str, list[Reading]]:
    broker = make(workdir)
    broker.start()
    readings: dict[str, list[Reading]] = {setup: [] for setup, _, _ in SETUPS}
    try:
        fill(broker.bootstrap, TOPIC, args.partitions, args.records, b"v" * args.value_bytes)
        for _ in range(args.rounds):
            for setup, share, consumers in SETUPS:
                readings[setup].append(consume(broker.bootstrap, TOPIC, args.records, share, consumers))
    finally:
        broker.close()
    return readings


def main() -> None:
    parser = argparse.ArgumentParser(
        description="share consumers against a classic group: kafka-wire serve and Apache Kafka 4.4"
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--brokers", default=",".join(BROKERS), help="which of them, comma-separated")
    args = parser.parse_args()
    names = args.brokers.split(",")
    if "kafka-wire" in names:  # bytecode current before the clock starts, as ``make run`` does
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kafka_wire")], check=True)
    load_before = os.getloadavg()[0]
    results: dict[str, dict[str, list[Reading]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-share-") as tmp:
        for name in names:
            results[name] = run(name, BROKERS[name], Path(tmp) / name, args)
    print(
        f"{args.records:,} records of {args.value_bytes} bytes on {args.partitions} partitions, "
        f"confluent-kafka; median of {args.rounds} rounds; {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} CPUs; load average (1 min) {load_before:.2f} "
        f"before the run, {os.getloadavg()[0]:.2f} after\n"
    )
    print("| broker | consumers | join ms | read rec/s | vs classic x1 |")
    print("|---|---|---:|---:|---:|")
    for name, readings in results.items():
        rates = {
            setup: args.records / statistics.median(r.read_s for r in runs)
            for setup, runs in readings.items()
        }
        for setup, runs in readings.items():
            join_ms = statistics.median(r.join_s for r in runs) * 1000
            ratio = rates[setup] / rates["classic x1"]
            print(f"| {name} | {setup} | {join_ms:.0f} | {rates[setup]:,.0f} | {ratio:.2f}x |")
    if len(results) == 2:
        ours, kafka = (results[n] for n in names)
        for setup, _, _ in SETUPS:
            ratio = statistics.median(r.read_s for r in kafka[setup]) / statistics.median(
                r.read_s for r in ours[setup]
            )
            print(f"{names[0]} / {names[1]}, {setup}: {ratio:.2f}x the rate")


if __name__ == "__main__":
    main()
