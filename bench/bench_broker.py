"""Broker benchmark: ``kafka-wire serve`` beside Apache Kafka 4.4 and Tansu, in one run, with one
real client (confluent-kafka).

Not a test. For each broker:

* **start**: seconds from ``Popen`` until the broker answers its first ApiVersions request, median
  of ``--starts`` fresh starts (each with an empty data dir; Kafka's is formatted by its storage
  tool before the clock starts, as ``kafka-storage.sh format`` runs before ``kafka-server-start.sh``).
* **produce**: one confluent-kafka ``Producer`` (acks=all, linger.ms=5, no compression) sends
  ``--records`` records of ``--value-bytes`` bytes (no key) to a one-partition topic; timed from the
  first ``produce()`` until ``flush()`` returns with every delivery report in.
* **consume**: one ``Consumer`` assigned partition 0 from the beginning (no group join, so no
  rebalance delay is counted) reads them all; timed from ``assign()`` until the last record.
* produce and consume run ``--rounds`` times (a fresh topic each round) and the median counts.
* **produce CPU**: the CPU time (user + system, medians of the rounds) the client process (its
  Python loop and librdkafka's threads) and the broker's processes spent while producing; on a
  2-core machine a client near a core's worth of its wall time is what limits the produce figure.
* **client ceiling**: the same ``produce()`` + ``poll(0)`` loop against no broker at all (records
  only queue), to show where the client itself limits the produce figure.

MB/s counts value bytes only, 1 MB = 10^6 bytes. Tansu runs with memory storage
(``--storage-engine memory://tansu/``); kafka-wire serve and Kafka write to their data dirs in the
temp dir. Kafka 4.4 is the jars of ``make peers``, one KRaft combined node configured as its example
``server.properties`` with the JVM heap of its start script (``-Xmx1G -Xms1G``;
``tests/e2e/apache_kafka.py``).
Bytecode is compiled first (as ``make run`` does); the header line gives the load average.
With ``--old COMMIT``, ``kafka-wire`` at that commit runs too (``kafka-wire-old``: its package
extracted with ``git archive`` and put first on ``PYTHONPATH``, as ``bench/bench_stall.py`` does), and
both kafka-wire builds run the pure flavour (their compiled sources differ).
Run: ``.venv/bin/python bench/bench_broker.py [--records N] [--value-bytes B] [--starts K] [--rounds R]
[--brokers kafka-wire,kafka-4.4,tansu] [--old COMMIT]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.e2e.brokers (the broker processes of the e2e suite)

from bench_stall import Build, old_package  # noqa: E402  # bench/ is sys.path[0] when run as a script
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # noqa: E402  # not in its stubs' exports

from tests.e2e.apache_kafka import KafkaNode, answers_api_versions, apache_kafka  # noqa: E402
from tests.e2e.brokers import BrokerProcess, kafka_wire, tansu  # noqa: E402
from tests.interop.harness import Address, free_port, stop_process_group  # noqa: E402

TOPIC = "bench"

MakeBroker = Callable[[Path], BrokerProcess]
#: Every broker the script can measure, in the order of its table.
BROKERS: dict[str, MakeBroker] = {"kafka-wire": kafka_wire, "kafka-4.4": apache_kafka, "tansu": tansu}


@dataclass
class Result:
    broker: str
    start_s: float
    produce_s: float
    consume_s: float
    records: int
    value_bytes: int
    produce_client_cpu_s: float
    """CPU time of this process (the client's Python loop and librdkafka's threads) while producing."""
    produce_broker_cpu_s: float
    """CPU time of the broker's processes while producing."""

    def rate(self, seconds: float) -> tuple[float, float]:
        return self.records / seconds, self.records * self.value_bytes / seconds / 1e6


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and every process below it, so far."""
    parents: dict[int, int] = {}
    spent: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        spent[int(entry)] = (int(fields[11]) + int(fields[12])) / tick

    def below(p: int) -> bool:
        while p > 1:
            if p == pid:
                return True
            p = parents.get(p, 0)
        return False

    return sum(cpu for p, cpu in spent.items() if below(p))


def client_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_start(make: MakeBroker, workdir: Path, starts: int) -> float:
    """Median seconds from Popen until the first ApiVersions answer, over ``starts`` fresh starts."""
    times = []
    for i in range(starts):
        broker = make(workdir / f"start-{i}")
        broker.data_dir.mkdir(parents=True, exist_ok=True)
        if isinstance(broker, KafkaNode):
            broker.format()
        begin = time.monotonic()
        process = subprocess.Popen(
            broker.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=broker.env(),
            start_new_session=True,
        )
        try:
            while not answers_api_versions(broker.address, timeout_s=0.5):
                if process.poll() is not None or time.monotonic() - begin > 120:
                    raise RuntimeError(f"{broker.name} did not answer ApiVersions (status {process.poll()})")
                time.sleep(0.002)
            times.append(time.monotonic() - begin)
        finally:
            stop_process_group(process)
    return statistics.median(times)


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=30)


def producer_config(bootstrap: str, records: int) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 5,
        "queue.buffering.max.messages": records + 1000,
        "compression.type": "none",
    }


def client_ceiling(records: int, value: bytes) -> float:
    """Seconds for the produce loop alone: the port is closed, so records only queue."""
    producer = Producer({**producer_config(f"127.0.0.1:{free_port()}", records), "log_level": 0})
    begin = time.monotonic()
    for _ in range(records):
        producer.produce(TOPIC, value=value, partition=0)
        producer.poll(0)
    elapsed = time.monotonic() - begin
    producer.purge()
    producer.flush(0)
    return elapsed


def produce(
    bootstrap: str, topic: str, records: int, value: bytes, config: dict[str, object] | None = None
) -> float:
    """Seconds to produce ``records`` copies of ``value`` until every delivery report is in;
    ``config`` adds to or overrides :func:`producer_config`."""
    producer = Producer({**producer_config(bootstrap, records), **(config or {})})
    failures: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    begin = time.monotonic()
    for _ in range(records):
        producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
        producer.poll(0)
    left = producer.flush(120)
    elapsed = time.monotonic() - begin
    if left or failures:
        raise RuntimeError(f"produce failed: {left} undelivered, errors {failures[:5]}")
    return elapsed


def consume(bootstrap: str, topic: str, records: int, value_bytes: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    got = 0
    try:
        begin = time.monotonic()
        consumer.assign([TopicPartition(topic, 0, 0)])  # offset 0: from the beginning
        deadline = begin + 120
        while got < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consumed {got} of {records} records in 120 s")
            for msg in consumer.consume(num_messages=10000, timeout=1.0):
                if msg.error() is not None:
                    raise RuntimeError(str(msg.error()))
                size = len(msg.value() or b"")
                if size != value_bytes:
                    raise RuntimeError(f"record at offset {msg.offset()} has {size} bytes")
                got += 1
        return time.monotonic() - begin
    finally:
        consumer.close()


def run(name: str, make: MakeBroker, workdir: Path, args: argparse.Namespace) -> Result:
    start_s = measure_start(make, workdir, args.starts)
    broker = make(workdir / "throughput")
    broker.start()
    produce_s, consume_s, client_s, broker_s = [], [], [], []
    assert broker.process is not None, "started"
    pid = broker.process.pid
    try:
        for round_ in range(args.rounds):
            topic = f"{TOPIC}-{round_}"
            create_topic(broker.bootstrap, topic)
            client, served = client_cpu_s(), tree_cpu_s(pid)
            produce_s.append(produce(broker.bootstrap, topic, args.records, value_of(args.value_bytes)))
            client_s.append(client_cpu_s() - client)
            broker_s.append(tree_cpu_s(pid) - served)
            consume_s.append(consume(broker.bootstrap, topic, args.records, args.value_bytes))
    finally:
        broker.close()
    return Result(
        name,
        start_s,
        statistics.median(produce_s),
        statistics.median(consume_s),
        args.records,
        args.value_bytes,
        statistics.median(client_s),
        statistics.median(broker_s),
    )


def pure_build(package: Path | None) -> MakeBroker:
    """``kafka-wire serve`` from ``package`` (None: this checkout), pure flavour."""

    def make(workdir: Path) -> BrokerProcess:
        host = "127.0.0.1"
        build = Build("kafka_wire", Address(host, free_port(host)), workdir / "data", workdir / "serve.log",
                      persistent=True)  # fmt: skip
        build.package = package
        return build

    return make


def value_of(size: int) -> bytes:
    return (b"0123456789abcdef" * (size // 16 + 1))[:size]


def main() -> None:
    parser = argparse.ArgumentParser(
        description="kafka-wire serve, Apache Kafka 4.4 and Tansu: start time, produce and consume throughput"
    )
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--brokers", default=",".join(BROKERS), help="which of them, comma-separated")
    parser.add_argument(
        "--old", default="", help="also kafka-wire at this commit; both kafka-wire builds pure"
    )
    args = parser.parse_args()

    brokers = [(name, BROKERS[name]) for name in args.brokers.split(",")]
    if "kafka-wire" in args.brokers.split(","):
        # As ``make run`` does: bytecode current before the clock starts (with
        # PYTHONDONTWRITEBYTECODE set, a stale cache would be compiled again at every start).
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kafka_wire")], check=True)
    load_before = os.getloadavg()[0]

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as tmp:
        if args.old:
            package = old_package(args.old, Path(tmp), compiled=False)
            brokers = [
                (name, pure_build(None) if name == "kafka-wire" else make) for name, make in brokers
            ] + [("kafka-wire-old", pure_build(package))]
        for name, make in brokers:
            results.append(run(name, make, Path(tmp) / name, args))

    ceiling = args.records / client_ceiling(args.records, value_of(args.value_bytes))
    print(
        f"{args.records:,} records of {args.value_bytes} bytes, one partition, confluent-kafka "
        f"(acks=all, linger.ms=5, no compression); start: median of {args.starts}; produce and consume: "
        f"median of {args.rounds} rounds; {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; load average (1 min) {load_before:.2f} before the run, "
        f"{os.getloadavg()[0]:.2f} after\n"
    )
    print(
        "| broker | start ms | produce rec/s | produce MB/s | produce: client CPU s | produce: broker CPU s"
        " | consume rec/s | consume MB/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        p_rec, p_mb = r.rate(r.produce_s)
        c_rec, c_mb = r.rate(r.consume_s)
        print(
            f"| {r.broker} | {r.start_s * 1000:.0f} | {p_rec:,.0f} | {p_mb:.1f} | {r.produce_client_cpu_s:.2f}"
            f" | {r.produce_broker_cpu_s:.2f} | {c_rec:,.0f} | {c_mb:.1f} |"
        )
    print(f"\nclient ceiling (the produce loop with no broker): {ceiling:,.0f} rec/s")
    ours = next((r for r in results if r.broker == "kafka-wire"), None)
    for other in results:
        if ours is None or other is ours:
            continue
        print(
            f"kafka-wire / {other.broker}: start {ours.start_s / other.start_s:.2f}x the time, "
            f"produce {other.produce_s / ours.produce_s:.2f}x the rate, "
            f"consume {other.consume_s / ours.consume_s:.2f}x the rate"
        )


if __name__ == "__main__":
    main()
