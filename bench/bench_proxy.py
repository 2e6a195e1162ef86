"""``kafka-wire proxy`` against a direct connection: throughput, added latency, encryption's cost.

One upstream broker process (Tansu by default: the fastest here, so the proxy's own cost shows;
``--upstream kafka-wire`` for ``kafka-wire serve``, ``--upstream apache-kafka`` for Apache Kafka
4.4 after ``make peers``), and two ``kafka-wire proxy`` processes in
front of it: one with no filter and one with the record encryption filter. One client,
confluent-kafka (librdkafka), in this script's process, drives all three paths in the same run:

- **warm-up**: 1,000 records produced and consumed on each path first, untimed (the proxies
  import their codec modules on first use);
- **throughput**: per round and path, a fresh one-partition topic; ``--records`` records of
  ``--value-bytes`` bytes produced (acks=all, linger.ms=5, batch.size 256 KiB, no compression)
  until every delivery report is in, then consumed back by assignment from offset 0 (no group);
  median of ``--rounds`` rounds, the paths interleaved in each round;
- **latency**: ``--pings`` single records produced one at a time (linger.ms=0, each ``flush()``
  waited for), direct and through the plain proxy, interleaved in blocks of 50; p50 and p99 of each
  and their differences (what the proxy adds).

It prints one Markdown table and the ratios (proxy / direct). ``--baseline DIR`` adds the two
proxies of another checkout (``kafka_wire`` imported from ``DIR``, e.g. a worktree of the main
branch) to the same rounds and latency blocks, so that a change is measured against what it
changes in one run, under the same load. Method and figures: ``docs/benchmarks/proxy.md``.

    .venv/bin/python bench/bench_proxy.py [--records 100000] [--value-bytes 100] [--rounds 3] [--pings 2000]
        [--upstream tansu|kafka-wire|apache-kafka] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for the e2e suite's broker processes and the proxy test process
sys.path.insert(0, str(ROOT / "bench"))

from bench_broker import consume, create_topic, produce, value_of  # noqa: E402
from confluent_kafka import Producer  # noqa: E402

from tests.e2e.apache_kafka import apache_kafka  # noqa: E402
from tests.e2e.brokers import BrokerProcess, kafka_wire, tansu  # noqa: E402
from tests.proxy.harness import ProxyProcess, proxy  # noqa: E402


class CheckoutProxy(ProxyProcess):
    """A proxy that imports ``kafka_wire`` from a given checkout (this one, or ``--baseline``)."""

    checkout: str = ""

    def env(self) -> dict[str, str]:
        return {**super().env(), "PYTHONPATH": self.checkout}


def from_checkout(process: ProxyProcess, checkout: str | Path) -> ProxyProcess:
    process.__class__ = CheckoutProxy
    assert isinstance(process, CheckoutProxy)
    process.checkout = str(checkout)
    return process


UPSTREAMS: dict[str, Callable[[Path], BrokerProcess]] = {
    "tansu": tansu,
    "kafka-wire": kafka_wire,
    "apache-kafka": apache_kafka,
}


#: On every path: batches of at most 256 KiB. The encryption filter about doubles a batch of
#: 100-byte values, and a broker refuses one beyond its ``message.max.bytes`` (Apache Kafka: 1 MiB)
#: with MESSAGE_TOO_LARGE; librdkafka's default batches are 1 MB.
PRODUCER: dict[str, object] = {"batch.size": 262_144}


def latencies(bootstrap: str, topic: str, count: int, value: bytes) -> list[float]:
    """Milliseconds from ``produce()`` to the end of ``flush()`` for ``count`` single records."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    producer.produce(topic, value=value, partition=0)  # connect and learn the leader first
    producer.flush(30)
    out = []
    for _ in range(count):
        begin = time.perf_counter()
        producer.produce(topic, value=value, partition=0)
        if producer.flush(30):
            raise RuntimeError("a record was not delivered within 30 s")
        out.append((time.perf_counter() - begin) * 1000)
    return out


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description="kafka-wire proxy against a direct connection")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pings", type=int, default=2000)
    parser.add_argument("--upstream", choices=sorted(UPSTREAMS), default="tansu")
    parser.add_argument("--baseline", help="another checkout whose proxies run in the same rounds")
    args = parser.parse_args()
    value = value_of(args.value_bytes)

    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp:
        work = Path(tmp)
        upstream: BrokerProcess = UPSTREAMS[args.upstream](work / "upstream")
        upstream.start()
        keys = work / "keys.txt"
        keys.write_text("bench=" + os.urandom(32).hex() + "\n")
        plain = from_checkout(proxy(work / "plain", upstream.bootstrap), ROOT)
        sealed = from_checkout(
            proxy(work / "encrypt", upstream.bootstrap, [f"encrypt:key-file={keys}"]), ROOT
        )
        paths = {"direct": upstream, "proxy": plain, "proxy+encrypt": sealed}
        if args.baseline:
            paths["baseline proxy"] = from_checkout(
                proxy(work / "b-plain", upstream.bootstrap), args.baseline
            )
            paths["baseline proxy+encrypt"] = from_checkout(
                proxy(work / "b-encrypt", upstream.bootstrap, [f"encrypt:key-file={keys}"]), args.baseline
            )
        try:
            for process in paths.values():
                if process is not upstream:
                    process.start()
            for name, process in paths.items():  # warm-up: connections made, codec modules imported
                warm = f"warm-{name.replace('+', '-').replace(' ', '-')}"
                create_topic(process.bootstrap, warm)
                produce(process.bootstrap, warm, 1000, value)
                consume(process.bootstrap, warm, 1000, args.value_bytes)
            produce_s: dict[str, list[float]] = {name: [] for name in paths}
            consume_s: dict[str, list[float]] = {name: [] for name in paths}
            for round_ in range(args.rounds):
                order = list(paths.items())
                for name, process in order[::-1] if round_ % 2 else order:  # no path always first
                    topic = f"bench-{name.replace('+', '-').replace(' ', '-')}-{round_}"
                    create_topic(process.bootstrap, topic)
                    elapsed = produce(process.bootstrap, topic, args.records, value, PRODUCER)
                    produce_s[name].append(elapsed)
                    consume_s[name].append(consume(process.bootstrap, topic, args.records, args.value_bytes))
            pings: dict[str, list[float]] = {name: [] for name in paths if "encrypt" not in name}
            for name in pings:
                create_topic(paths[name].bootstrap, f"ping-{name.replace(' ', '-')}")
            for block in range(max(1, args.pings // 50)):
                for name in list(pings)[::-1] if block % 2 else pings:  # no path always first
                    pings[name] += latencies(
                        paths[name].bootstrap, f"ping-{name.replace(' ', '-')}", 50, value
                    )
        finally:
            for process in reversed(paths.values()):
                process.close()

    print(
        f"{args.records:,} records of {args.value_bytes} bytes, one partition, confluent-kafka "
        f"(acks=all, linger.ms=5, batch.size 256 KiB, no compression), upstream {args.upstream}; median of {args.rounds} "
        f"rounds; latency: {len(pings['direct'])} single produces per path (linger.ms=0); "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| path | produce rec/s | produce MB/s | consume rec/s | consume MB/s |")
    print("|---|---:|---:|---:|---:|")
    rates = {}
    for name in paths:
        p = args.records / statistics.median(produce_s[name])
        c = args.records / statistics.median(consume_s[name])
        rates[name] = (p, c)
        mb = args.value_bytes / 1e6
        print(f"| {name} | {p:,.0f} | {p * mb:.1f} | {c:,.0f} | {c * mb:.1f} |")
    print("\n| path | produce p50 ms | produce p99 ms |")
    print("|---|---:|---:|")
    for name, values in pings.items():
        print(f"| {name} | {percentile(values, 50):.3f} | {percentile(values, 99):.3f} |")
    for prefix in ("", "baseline ") if args.baseline else ("",):
        direct, through = rates["direct"], rates[f"{prefix}proxy"]
        encrypted = rates[f"{prefix}proxy+encrypt"]
        p50 = percentile(pings[f"{prefix}proxy"], 50) - percentile(pings["direct"], 50)
        p99 = percentile(pings[f"{prefix}proxy"], 99) - percentile(pings["direct"], 99)
        print(
            f"\n{prefix}proxy / direct: produce {through[0] / direct[0]:.2f}x, consume {through[1] / direct[1]:.2f}x; "
            f"added latency p50 {p50:+.3f} ms, p99 {p99:+.3f} ms; "
            f"encryption / plain proxy: produce {encrypted[0] / through[0]:.2f}x, consume {encrypted[1] / through[1]:.2f}x"
        )


if __name__ == "__main__":
    main()
