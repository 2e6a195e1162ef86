"""Soak `kafka-wire serve` on loopback: many connections, producers and consumers for minutes.

One `kafka-wire serve` process with its data in a temporary directory (or `--data-dir`); one topic
of `--partitions` partitions. In this process:

* `--producers` librdkafka producers (idempotent, acks=all), each sending `--rate` records a
  second with a unique key;
* `--consumers` librdkafka consumers in groups of 10, each group reading the whole topic and
  committing offsets (auto-commit), so the group coordinator works all along;
* idle-ish connections of kafka_wire's own asyncio client up to `--connections` connections in
  all, each sending Metadata every 20 s (below `connections.max.idle.ms`).

Every 10 s it prints the broker's RSS, its open sockets, records acknowledged and consumed, and
errors. At the end producers stop, consumers catch up, and the run passes when no client saw an
error, every group read every acknowledged record, and the broker's RSS over the last fifth of the
run is within `--rss-growth` of its RSS after the first fifth. Exit status 0 when it passed.

    .venv/bin/python bench/soak.py                 # 500 connections, 50 + 50 clients, 10 minutes
    .venv/bin/python bench/soak.py --minutes 1     # a short run
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka_wire.adapters.asyncio import KafkaClient  # noqa: E402
from kafka_wire.messages import MetadataRequest  # noqa: E402
from tests.interop.harness import free_port  # noqa: E402

TOPIC = "soak"
GROUP_SIZE = 10
SAMPLE_S = 10.0
METADATA_EVERY_S = 20.0


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: set[bytes] = field(default_factory=set)
    sent: int = 0
    errors: list[str] = field(default_factory=list)
    consumed: dict[str, set[bytes]] = field(default_factory=dict)
    idle_requests: int = 0

    def error(self, text: str) -> None:
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(text)
            else:
                self.errors[-1] = f"... and more; last: {text}"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def open_sockets(pid: int) -> int:
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if fd.readlink().name.startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


def start_broker(data_dir: Path, port: int) -> subprocess.Popen[str]:
    command = [str(ROOT / ".venv/bin/kafka-wire"), "serve", "--port", str(port), "--data-dir", str(data_dir)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if "listening on" not in line:
        raise SystemExit(f"kafka-wire serve did not start: {line}{process.stdout.read()}")
    threading.Thread(
        target=lambda: [sys.stderr.write(f"[broker] {x}") for x in process.stdout or []], daemon=True
    ).start()
    return process


def produce_loop(bootstrap: str, count: int, rate: float, tally: Tally, stop: threading.Event) -> None:
    producers = [
        Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "client.id": f"soak-p{i}",
            }
        )
        for i in range(count)
    ]

    def report(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            tally.error(f"delivery: {error.str()}")
        else:
            key = message.key()
            with tally.lock:
                tally.acked.add(key if isinstance(key, bytes) else b"")

    interval = 1.0 / rate
    next_at = time.monotonic()
    n = 0
    while not stop.is_set():
        for i, producer in enumerate(producers):
            producer.produce(TOPIC, key=f"{i}-{n}".encode(), value=b"x" * 200, on_delivery=report)
            producer.poll(0)
        with tally.lock:
            tally.sent += count
        n += 1
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    for producer in producers:
        if producer.flush(60) != 0:
            tally.error("a producer did not flush within 60 s")


def consume_loop(bootstrap: str, group: str, index: int, tally: Tally, stop: threading.Event) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": f"soak-{group}-{index}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 1000,
        }
    )
    consumer.subscribe([TOPIC])
    seen = tally.consumed.setdefault(group, set())
    try:
        while not stop.is_set():
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                tally.error(f"consumer {group}/{index}: {message.error()}")
                continue
            key = message.key()
            with tally.lock:
                seen.add(key if isinstance(key, bytes) else b"")
    finally:
        consumer.close()


async def idle_connections(host: str, port: int, count: int, tally: Tally, stop: threading.Event) -> None:
    async def one(i: int) -> None:
        await asyncio.sleep(i * METADATA_EVERY_S / max(count, 1))  # spread the requests
        try:
            async with await KafkaClient.connect(host, port) as client:
                while not stop.is_set():
                    await client.request(MetadataRequest(topics=None))
                    with tally.lock:
                        tally.idle_requests += 1
                    for _ in range(int(METADATA_EVERY_S * 10)):
                        if stop.is_set():
                            return
                        await asyncio.sleep(0.1)
        except Exception as exc:  # a failed connection is a finding of the soak
            tally.error(f"connection {i}: {type(exc).__name__}: {exc}")

    await asyncio.gather(*(one(i) for i in range(count)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=500, help="connections in all (default 500)")
    parser.add_argument("--producers", type=int, default=50)
    parser.add_argument("--consumers", type=int, default=50)
    parser.add_argument("--rate", type=float, default=10.0, help="records a second per producer (default 10)")
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument(
        "--rss-growth", type=float, default=0.10, help="largest allowed RSS growth (default 0.10)"
    )
    parser.add_argument("--data-dir", type=Path)
    args = parser.parse_args(argv)

    scratch = tempfile.TemporaryDirectory(prefix="kafka-wire-soak-")
    data_dir = args.data_dir or Path(scratch.name) / "data"
    port = free_port("127.0.0.1")
    bootstrap = f"127.0.0.1:{port}"
    broker = start_broker(data_dir, port)
    tally = Tally()
    stop_producing, stop_all = threading.Event(), threading.Event()
    samples: list[tuple[float, int, int]] = []
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])[TOPIC].result(30)
        groups = [f"soak-g{g}" for g in range((args.consumers + GROUP_SIZE - 1) // GROUP_SIZE)]
        threads = [
            threading.Thread(
                target=consume_loop,
                args=(bootstrap, groups[i // GROUP_SIZE], i, tally, stop_all),
                daemon=True,
            )
            for i in range(args.consumers)
        ]
        producer = threading.Thread(
            target=produce_loop,
            args=(bootstrap, args.producers, args.rate, tally, stop_producing),
            daemon=True,
        )
        for thread in threads:
            thread.start()
        producer.start()
        time.sleep(5)  # let the groups form and the producers connect before the clock starts
        clients = open_sockets(broker.pid) - 1  # the listening socket is not a connection
        extra = max(0, args.connections - clients)
        idle = threading.Thread(
            target=lambda: asyncio.run(idle_connections("127.0.0.1", port, extra, tally, stop_all)),
            daemon=True,
        )
        idle.start()
        started = time.monotonic()
        end = started + args.minutes * 60
        print(
            "| t (s) | broker RSS (MiB) | broker sockets | sent | acknowledged | consumed (min per group) | errors |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|")
        while time.monotonic() < end and broker.poll() is None:
            time.sleep(SAMPLE_S)
            t = time.monotonic() - started
            rss, sockets = rss_kib(broker.pid), open_sockets(broker.pid)
            samples.append((t, rss, sockets))
            with tally.lock:
                least = min((len(s) for s in tally.consumed.values()), default=0)
                print(
                    f"| {t:.0f} | {rss / 1024:.1f} | {sockets} | {tally.sent} | {len(tally.acked)} | {least} | {len(tally.errors)} |",
                    flush=True,
                )
        stop_producing.set()
        producer.join(90)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with tally.lock:
                if all(tally.acked <= seen for seen in tally.consumed.values()):
                    break
            time.sleep(1)
        stop_all.set()
        for thread in threads:
            thread.join(30)
        idle.join(30)
    finally:
        stop_producing.set()
        stop_all.set()
        broker.terminate()
        status = broker.wait(30)
        scratch.cleanup()

    fifth = max(1, len(samples) // 5)
    early = statistics.median(r for _, r, _ in samples[:fifth]) if samples else 0
    late = statistics.median(r for _, r, _ in samples[-fifth:]) if samples else 0
    growth = (late - early) / early if early else 0.0
    missing = {g: len(tally.acked - seen) for g, seen in tally.consumed.items()}
    peak_sockets = max((s for _, _, s in samples), default=1) - 1
    print()
    print(
        f"duration {args.minutes} min; peak broker connections {peak_sockets}; producers {args.producers}, consumers "
        f"{args.consumers} in {len(tally.consumed)} groups; idle-connection requests {tally.idle_requests}"
    )
    print(f"records sent {tally.sent}, acknowledged {len(tally.acked)}; missing per group {missing}")
    print(
        f"broker RSS after the first fifth {early / 1024:.1f} MiB, over the last fifth {late / 1024:.1f} MiB "
        f"({growth:+.1%}); broker exit status {status}"
    )
    for error in tally.errors:
        print(f"error: {error}")
    passed = not tally.errors and not any(missing.values()) and growth <= args.rss_growth and status == 0
    print("PASSED" if passed else "FAILED")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
