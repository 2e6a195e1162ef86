"""Transactional produce benchmark: ``kafka-wire serve`` beside Apache Kafka 4.4, in one run, with
one real client (confluent-kafka).

Not a test. For each broker (one node each, fresh data dir), one confluent-kafka ``Producer`` sends
``--records`` records of ``--value-bytes`` bytes (no key, no compression, linger.ms=5) to a
one-partition topic, in these modes:

* **plain**: an idempotent producer (``enable.idempotence=true``, so acks=all), no transaction;
* **txn N** for N in ``--sizes``: a transactional producer (``transactional.id``; idempotent too),
  N records per transaction: ``begin_transaction``, N ``produce()`` calls,
  ``commit_transaction`` (which flushes and waits for the markers), repeated until every record is
  sent. ``init_transactions`` runs before the clock starts.

Each mode is timed from the first ``produce()`` (or ``begin_transaction``) until every delivery
report is in (the last commit returned), on a fresh topic per mode and round; the median of
``--rounds`` rounds counts. The ratio printed for each transaction size is its throughput over the
plain producer's on the same broker in the same run. Kafka 4.4 is the jars of ``make peers``
(``tests/e2e/apache_kafka.py``), kafka-wire serve is this checkout's, bytecode compiled first.
Run: ``.venv/bin/python bench/bench_txn.py [--records N] [--value-bytes B] [--sizes 10,100,1000]
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for the e2e suite's broker processes
sys.path.insert(0, str(ROOT / "bench"))

from bench_broker import BROKERS, create_topic, produce, value_of  # noqa: E402
from confluent_kafka import KafkaError, Producer  # noqa: E402


def produce_transactions(bootstrap: str, topic: str, records: int, value: bytes, size: int) -> float:
    """Seconds to send ``records`` copies of ``value`` in transactions of ``size`` records."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-{topic}",
            "linger.ms": 5,
            "queue.buffering.max.messages": max(size, 1000) + 1000,
            "compression.type": "none",
        }
    )
    failures: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    producer.init_transactions(60)
    begin = time.monotonic()
    sent = 0
    while sent < records:
        producer.begin_transaction()
        for _ in range(min(size, records - sent)):
            producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
            producer.poll(0)
            sent += 1
        producer.commit_transaction(60)
    elapsed = time.monotonic() - begin
    if failures:
        raise RuntimeError(f"transactional produce failed: {failures[:5]}")
    return elapsed


def run(name: str, workdir: Path, args: argparse.Namespace, sizes: list[int]) -> dict[str, float]:
    """Median seconds of each mode on one broker."""
    broker = BROKERS[name](workdir)
    broker.start()
    value = value_of(args.value_bytes)
    times: dict[str, list[float]] = {}
    try:
        for round_ in range(args.rounds):
            topic = f"plain-{round_}"
            create_topic(broker.bootstrap, topic)
            elapsed = produce(broker.bootstrap, topic, args.records, value, {"enable.idempotence": True})
            times.setdefault("plain", []).append(elapsed)
            for size in sizes:
                topic = f"txn-{size}-{round_}"
                create_topic(broker.bootstrap, topic)
                elapsed = produce_transactions(broker.bootstrap, topic, args.records, value, size)
                times.setdefault(f"txn {size}", []).append(elapsed)
    finally:
        broker.close()
    return {mode: statistics.median(seconds) for mode, seconds in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description="transactional against idempotent produce throughput, kafka-wire serve beside Kafka 4.4"
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--sizes", default="10,100,1000", help="records per transaction, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--brokers", default="kafka-wire,kafka-4.4", help="which of them, comma-separated")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    names = args.brokers.split(",")
    if "kafka-wire" in names:  # as ``make run`` does: bytecode current before the clock starts
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kafka_wire")], check=True)
    load_before = os.getloadavg()[0]
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-txn-") as tmp:
        for name in names:
            results[name] = run(name, Path(tmp) / name, args, sizes)

    print(
        f"{args.records:,} records of {args.value_bytes} bytes per mode, one partition, confluent-kafka "
        f"(linger.ms=5, no compression); median of {args.rounds} rounds; "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs; "
        f"load average (1 min) {load_before:.2f} before the run, {os.getloadavg()[0]:.2f} after\n"
    )
    modes = ["plain", *(f"txn {s}" for s in sizes)]
    print(
        "| broker | "
        + " | ".join(f"{m} rec/s" for m in modes)
        + " | "
        + " | ".join(f"txn {s} / plain" for s in sizes)
        + " |"
    )
    print("|---|" + "---:|" * (len(modes) + len(sizes)))
    for name, seconds in results.items():
        rates = {m: args.records / seconds[m] for m in modes}
        cells = [f"{rates[m]:,.0f}" for m in modes] + [
            f"{rates[f'txn {s}'] / rates['plain']:.2f}" for s in sizes
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if len(results) > 1 and "kafka-wire" in results:
        ours = results["kafka-wire"]
        for name, seconds in results.items():
            if name != "kafka-wire":
                ratios = ", ".join(f"{m} {seconds[m] / ours[m]:.2f}x" for m in modes)
                print(f"\nkafka-wire / {name} (rate): {ratios}")


if __name__ == "__main__":
    main()
