"""Start-up with data: ``kafka-wire serve`` and Apache Kafka 4.4 restarted over a data directory of
many partitions holding segments, after a clean stop and after a kill, in one run.

Not a test. For each broker: one topic of ``--partitions`` partitions is filled through the broker
itself (confluent-kafka, acks=1, no compression, records of ``--record-kb`` KiB spread evenly) to
``--mb-per-partition`` MB each, then the broker is killed with SIGKILL (nothing fsynced yet with
the default flush settings: the next start recovers every partition's data), restarted, stopped
with SIGTERM (a clean stop) and restarted ``--starts`` times (each start stopped cleanly again).
Each start is timed twice from ``Popen``:

* **accepting**: kafka-wire prints its ``listening on`` line; Kafka answers ApiVersions (polled
  every 50 ms, as ``tests/e2e/apache_kafka.py`` does);
* **serving**: one AdminClient ``list_offsets`` of every partition (latest) answers with the
  filled end offsets (asked again until it does).

The segments are in the page cache (the machine has the memory): these are warm restarts, the
work a restart does rather than the disk's speed. Kafka 4.4 is the jars of ``make peers`` (one
KRaft combined node, ``-Xmx1G``); both keep the default segment size (1 GiB), so each partition's
data is its active segment.

Run: ``.venv/bin/python bench/bench_start_partitions.py [--partitions 1000] [--mb-per-partition 10]
[--starts 3] [--brokers kafka-wire,kafka-4.4]`` (10 GB of disk per broker at the defaults).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.e2e.brokers (the broker processes of the e2e suite)

from confluent_kafka import KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # noqa: E402  # not in its stubs' exports
    AdminClient,
    NewTopic,
    OffsetSpec,
)

from tests.e2e.apache_kafka import apache_kafka  # noqa: E402
from tests.e2e.brokers import BrokerProcess, kafka_wire  # noqa: E402

TOPIC = "filled"
MakeBroker = Callable[[Path], BrokerProcess]
BROKERS: dict[str, MakeBroker] = {"kafka-wire": kafka_wire, "kafka-4.4": apache_kafka}
SERVING_TIMEOUT_S = 600.0


def fill(bootstrap: str, partitions: int, records_each: int, record: bytes) -> dict[int, int]:
    """Create the topic and fill it; the end offset of every partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=partitions, replication_factor=1)])[TOPIC].result(
        timeout=120
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "compression.type": "none",
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    failures: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    for _ in range(records_each):
        for partition in range(partitions):
            while True:
                try:
                    producer.produce(TOPIC, value=record, partition=partition, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
    left = producer.flush(600)
    if left or failures:
        raise RuntimeError(f"fill failed: {left} undelivered, errors {failures[:5]}")
    return {partition: records_each for partition in range(partitions)}


def serves(bootstrap: str, ends: dict[int, int]) -> bool:
    """Whether one ``list_offsets`` of every partition answers with ``ends``."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # untyped in its stubs
    request = {TopicPartition(TOPIC, p): latest for p in ends}
    try:
        futures = admin.list_offsets(request, request_timeout=30)
        return all(futures[tp].result().offset == ends[tp.partition] for tp in request)
    except Exception:  # not yet: leaders unknown, timeouts, a broker still loading
        return False


def timed_start(broker: BrokerProcess, ends: dict[int, int]) -> tuple[float, float]:
    """Seconds from Popen until accepting, and until every partition serves its end offset."""
    begin = time.monotonic()
    accepting = broker.restart(timeout_s=SERVING_TIMEOUT_S)
    while not serves(broker.bootstrap, ends):
        if time.monotonic() - begin > SERVING_TIMEOUT_S:
            raise RuntimeError(f"{broker.name}: partitions not served within {SERVING_TIMEOUT_S} s")
        time.sleep(0.05)
    return accepting, time.monotonic() - begin


def run(name: str, make: MakeBroker, workdir: Path, args: argparse.Namespace) -> list[str]:
    broker = make(workdir)
    record = os.urandom(args.record_kb * 1024)
    records_each = max(1, args.mb_per_partition * 1_000_000 // len(record))
    broker.start(timeout_s=SERVING_TIMEOUT_S)
    rows = []
    try:
        begin = time.monotonic()
        ends = fill(broker.bootstrap, args.partitions, records_each, record)
        fill_s = time.monotonic() - begin
        broker.kill()
        stored = sum(f.stat().st_size for f in broker.data_dir.rglob("*.log"))
        print(f"{name}: filled {stored / 1e9:.2f} GB of .log files in {fill_s:.0f} s", flush=True)
        unclean = timed_start(broker, ends)
        broker.stop(timeout_s=SERVING_TIMEOUT_S)
        clean = []
        for _ in range(args.starts):
            clean.append(timed_start(broker, ends))
            broker.stop(timeout_s=SERVING_TIMEOUT_S)
        rows.append(
            f"| {name} | after a clean stop (median of {args.starts}) | "
            f"{statistics.median(a for a, _ in clean) * 1000:,.0f} | {statistics.median(s for _, s in clean) * 1000:,.0f} |"
        )
        rows.append(
            f"| {name} | after SIGKILL right after the fill | {unclean[0] * 1000:,.0f} | {unclean[1] * 1000:,.0f} |"
        )
    finally:
        broker.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description="restarts over a data directory of many filled partitions")
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--mb-per-partition", type=int, default=10)
    parser.add_argument("--record-kb", type=int, default=64)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--brokers", default=",".join(BROKERS), help="which of them, comma-separated")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where the data goes (default: a temp dir)"
    )
    args = parser.parse_args()
    if "kafka-wire" in args.brokers.split(","):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kafka_wire")], check=True)
    load_before = os.getloadavg()[0]
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-start-", dir=args.workdir) as tmp:
        for name in args.brokers.split(","):
            rows += run(name, BROKERS[name], Path(tmp) / name, args)
    print(
        f"\n{args.partitions:,} partitions x {args.mb_per_partition} MB (records of {args.record_kb} KiB); "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs; "
        f"load average (1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after\n"
    )
    print("| broker | start | Popen to accepting, ms | Popen to every partition served, ms |")
    print("|---|---|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
