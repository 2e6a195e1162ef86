"""Produce and consume throughput over TLS against plaintext, ``kafka-wire serve`` beside Apache
Kafka 4.4, with confluent-kafka (librdkafka) in this script's process.

Three broker processes: ``kafka-wire serve`` on a PLAINTEXT listener, ``kafka-wire serve`` on an
SSL listener (one listener a process), and one Kafka 4.4 node with both (after ``make peers``);
the TLS listeners are configured alike (``tests/e2e/tls_brokers.py``: PEM keystore, client
certificates required, an EC P-256 key made at run time), and the client presents a certificate
on every TLS path. Per round and path, a fresh one-partition topic; ``--records`` records of
``--value-bytes`` bytes produced (acks=all, linger.ms=5, no compression) until every delivery
report is in, then consumed back by assignment from offset 0; median of ``--rounds`` rounds, the
paths interleaved in each round, after a warm-up of 1,000 records a path.

It prints one Markdown table and, per broker, TLS / plaintext ratios. Figures:
``docs/benchmarks/tls.md``.

    .venv/bin/python bench/bench_tls.py [--records 100000] [--value-bytes 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for the e2e suite's broker processes
sys.path.insert(0, str(ROOT / "bench"))

from bench_broker import produce, value_of  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # noqa: E402

from kafka_wire.flavour import is_compiled  # noqa: E402
from tests.e2e.brokers import BrokerProcess, kafka_wire  # noqa: E402
from tests.e2e.certs import Pki, make_pki  # noqa: E402
from tests.e2e.tls_brokers import apache_kafka_tls, kafka_wire_ssl  # noqa: E402
from tests.interop.harness import Address  # noqa: E402


def tls_config(pki: Pki) -> dict[str, Any]:
    alice = pki.clients["alice"]
    return {
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.ca),
        "ssl.certificate.location": str(alice.cert),
        "ssl.key.location": str(alice.key),
    }


def create_topic(bootstrap: str, topic: str, config: dict[str, Any]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **config})
    for future in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
        future.result(30)


def consume(bootstrap: str, topic: str, records: int, value_bytes: int, config: dict[str, Any]) -> float:
    """Seconds to read ``records`` records of ``topic`` partition 0 from offset 0."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **config,
        }
    )
    got = 0
    try:
        begin = time.monotonic()
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = begin + 180
        while got < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consumed {got} of {records} records in 180 s")
            for msg in consumer.consume(num_messages=10000, timeout=1.0):
                if msg.error() is not None:
                    raise RuntimeError(str(msg.error()))
                if len(msg.value() or b"") != value_bytes:
                    raise RuntimeError(f"record at offset {msg.offset()} has the wrong size")
                got += 1
        return time.monotonic() - begin
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="throughput over TLS against plaintext")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--value-bytes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    value = value_of(args.value_bytes)

    with tempfile.TemporaryDirectory(prefix="bench-tls-") as tmp:
        work = Path(tmp)
        pki = make_pki(work / "pki")
        tls = tls_config(pki)
        plain_wire = kafka_wire(work / "kw-plain")
        tls_wire = kafka_wire_ssl(work / "kw-ssl", pki)
        node = apache_kafka_tls(work / "kafka", pki)
        node.log_requests = False
        processes: list[BrokerProcess] = [plain_wire, tls_wire, node]
        paths: dict[str, tuple[Address, dict[str, Any]]] = {
            "kafka-wire plaintext": (plain_wire.address, {}),
            "kafka-wire TLS": (tls_wire.address, tls),
            "Kafka 4.4 plaintext": (node.address, {}),
            "Kafka 4.4 TLS": (node.ssl_address, tls),
        }
        produce_s: dict[str, list[float]] = {name: [] for name in paths}
        consume_s: dict[str, list[float]] = {name: [] for name in paths}
        try:
            for process in processes:
                process.start()
            for i, (address, config) in enumerate(paths.values()):  # warm-up
                create_topic(address.bootstrap, f"warm-{i}", config)
                produce(address.bootstrap, f"warm-{i}", 1000, value, config)
                consume(address.bootstrap, f"warm-{i}", 1000, args.value_bytes, config)
            for round_ in range(args.rounds):
                for i, (name, (address, config)) in enumerate(paths.items()):
                    topic = f"bench-{i}-{round_}"
                    create_topic(address.bootstrap, topic, config)
                    produce_s[name].append(produce(address.bootstrap, topic, args.records, value, config))
                    consume_s[name].append(
                        consume(address.bootstrap, topic, args.records, args.value_bytes, config)
                    )
        finally:
            for process in processes:
                process.close()

    flavour = "compiled" if is_compiled("kafka_wire._compiled.records") else "pure Python"
    print(
        f"{args.records:,} records of {args.value_bytes} bytes, one partition, confluent-kafka "
        f"(acks=all, linger.ms=5, no compression; TLS with a client certificate, EC P-256), median of "
        f"{args.rounds} rounds; kafka-wire {flavour} on {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| path | produce rec/s | produce MB/s | consume rec/s | consume MB/s |")
    print("|---|---:|---:|---:|---:|")
    rates: dict[str, tuple[float, float]] = {}
    for name in paths:
        p = args.records / statistics.median(produce_s[name])
        c = args.records / statistics.median(consume_s[name])
        rates[name] = (p, c)
        mb = args.value_bytes / 1e6
        print(f"| {name} | {p:,.0f} | {p * mb:.1f} | {c:,.0f} | {c * mb:.1f} |")
    print()
    for broker in ("kafka-wire", "Kafka 4.4"):
        plain, over_tls = rates[f"{broker} plaintext"], rates[f"{broker} TLS"]
        print(
            f"{broker}: TLS / plaintext produce {over_tls[0] / plain[0]:.2f}x, consume {over_tls[1] / plain[1]:.2f}x"
        )


if __name__ == "__main__":
    main()
