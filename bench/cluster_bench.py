"""Replication benchmark: ``acks=all`` produce and consume on three replicating nodes against one
node, and how long a partition is unavailable after its leader is SIGKILLed; kafka-wire and Apache
Kafka 4.4 in one run (and Tansu's single node beside them).

Not a test. Every node is a real ``kafka-wire serve`` process, or an Apache Kafka 4.4 process with
the same properties (the jars of ``make peers``), started by the cluster tests'
harness (``tests/cluster/harness.py``: combined mode, ``process.roles=broker,controller``,
Kafka's property names, the quick-failover settings ``broker.session.timeout.ms=3000``,
``broker.heartbeat.interval.ms=1000``), all on this machine, in one run:

* **produce** and **consume**: one confluent-kafka ``Producer`` (``acks=all``, ``linger.ms=5``, no compression,
  idempotence off) sends ``--records`` records of ``--value-bytes`` bytes (no key) to partition 0
  of a fresh one-partition topic; timed from the first ``produce()`` until ``flush()`` returns
  with every delivery report in; then one ``Consumer`` assigned the partition reads them back
  (``bench_broker.consume``); median of ``--rounds`` rounds, each on a fresh topic. For each of
  kafka-wire and Kafka 4.4: once on the three-node cluster (replication factor 3,
  ``min.insync.replicas=2``: each acknowledgement waits for a follower's fetch), once on a one-node
  cluster (replication factor 1); then the plain single-node ``kafka-wire serve`` and Tansu (memory
  storage, no replication). The ratio three nodes / one node is printed per implementation.
* **failover**: on the three-node cluster, a one-partition topic (replication factor 3); its
  leader is SIGKILLed, and a probe asks a live node for Metadata every ``--probe-ms`` and, once a
  live leader is named, sends it an ``acks=all`` Produce of one record (through kafka_wire's own
  client); the time from the kill to the first such produce answered without error is one
  sample. The node is then restarted and the test waits until it is back in the ISR. Median,
  minimum and maximum of ``--failovers`` samples, per implementation.

MB/s counts value bytes only, 1 MB = 10^6 bytes. The flavour (compiled or pure) is the one the
nodes load: ``KAFKA_WIRE_PURE=1`` in the environment makes them pure.
Run: ``.venv/bin/python bench/cluster_bench.py [--records N] [--value-bytes B] [--rounds R]
[--failovers F] [--probe-ms M]``; ``docs/benchmarks/cluster.md`` records the figures.
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.cluster.harness (the cluster processes of the tests)


from bench_broker import consume, create_topic, produce  # noqa: E402  # timed client rounds

from kafka_wire.messages import ErrorCode, ProduceRequest  # noqa: E402
from tests.cluster.harness import Implementation, LocalCluster  # noqa: E402
from tests.e2e.brokers import BrokerProcess, kafka_wire, tansu  # noqa: E402


def value_of(size: int) -> bytes:
    return (b"0123456789abcdef" * (size // 16 + 1))[:size]


@dataclass
class Row:
    """One line of the table: medians over the rounds, in seconds."""

    where: str
    replicas: int
    produce_s: float
    consume_s: float


def rounds(bootstrap: str, topic_of: Callable[[int], str], args: argparse.Namespace) -> tuple[float, float]:
    """Median produce and consume seconds over ``args.rounds`` topics (``topic_of(round)`` makes
    each and names it)."""
    produced, consumed = [], []
    for i in range(args.rounds):
        topic = topic_of(i)
        produced.append(produce(bootstrap, topic, args.records, value_of(args.value_bytes)))
        consumed.append(consume(bootstrap, topic, args.records, args.value_bytes))
    return statistics.median(produced), statistics.median(consumed)


def cluster_row(where: str, cluster: LocalCluster, replicas: int, args: argparse.Namespace) -> Row:
    """Produce and consume on the started ``cluster`` (topics of ``replicas`` replicas)."""

    def topic_of(i: int) -> str:
        topic = f"bench-rf{replicas}-{i}"
        cluster.create_topic(topic, 1, replicas)
        return topic

    return Row(where, replicas, *rounds(cluster.bootstrap, topic_of, args))


def broker_row(where: str, broker: BrokerProcess, args: argparse.Namespace) -> Row:
    """The same on one broker process (started and stopped here), topics made by the admin client."""
    broker.start()
    try:

        def topic_of(i: int) -> str:
            topic = f"bench-single-{i}"
            create_topic(broker.bootstrap, topic)
            return topic

        return Row(where, 1, *rounds(broker.bootstrap, topic_of, args))
    finally:
        broker.close()


def failover_samples(cluster: LocalCluster, args: argparse.Namespace) -> list[float]:
    """Seconds from a leader's SIGKILL to the first acks=all produce answered without error."""
    topic = "bench-failover"
    cluster.create_topic(topic, 1, 3)
    cluster.wait_full_isr(topic)
    samples = []
    for _ in range(args.failovers):
        leader = cluster.wait_leader(topic, 0)
        begin = time.monotonic()
        cluster.kill(leader)
        while True:
            if time.monotonic() - begin > 120:
                raise RuntimeError(f"no successful produce within 120 s of killing node {leader}")
            try:
                now_leader = cluster.leader(topic, 0)
                if now_leader >= 0 and now_leader != leader:
                    error, _ = cluster.produce_to(now_leader, topic, 0, [b"probe"], acks=-1)
                    if error == ErrorCode.NONE:
                        break
            except (OSError, TimeoutError, ConnectionError, RuntimeError):
                pass
            time.sleep(args.probe_ms / 1000)
        samples.append(time.monotonic() - begin)
        cluster.start(leader)
        cluster.wait_brokers(set(cluster.nodes))
        cluster.wait_full_isr(topic)
    return samples


def measure_clusters(
    name: str, implementation: Implementation, workdir: Path, args: argparse.Namespace
) -> tuple[list[Row], list[float]]:
    """A three-node cluster (produce, consume, failover), then a one-node cluster (produce,
    consume), of ``implementation``."""
    three = LocalCluster(workdir / f"{name}-three", 3, implementation=implementation)
    one = LocalCluster(workdir / f"{name}-one", 1, implementation=implementation)
    try:
        three.start_all()
        rows = [cluster_row(f"{name}, three-node cluster", three, 3, args)]
        failovers = failover_samples(three, args)
        three.close()
        one.start_all()
        rows.append(cluster_row(f"{name}, one-node cluster", one, 1, args))
        return rows, failovers
    finally:
        three.close()
        one.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Replication: acks=all produce and consume on 3 nodes vs 1, and failover time, "
        "for kafka-wire and Apache Kafka 4.4 (and Tansu's single node)"
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--failovers", type=int, default=5)
    parser.add_argument("--probe-ms", type=int, default=50)
    args = parser.parse_args()

    flavour = "compiled" if ProduceRequest._native_decoders else "pure"  # as bench_produce_fetch.py tells
    rows: list[Row] = []
    failovers: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        work = Path(tmp)
        implementations: list[tuple[str, Implementation]] = [
            ("kafka-wire", "kafka_wire"),
            ("kafka-4.4", "apache_kafka"),
        ]
        for name, implementation in implementations:
            found, failovers[name] = measure_clusters(name, implementation, work, args)
            rows += found
        rows.append(
            broker_row("kafka-wire, single-node `kafka-wire serve`", kafka_wire(work / "single"), args)
        )
        rows.append(
            broker_row("tansu (one node, memory storage, no replication)", tansu(work / "tansu"), args)
        )

    def rates(seconds: float) -> str:
        return f"{args.records / seconds:,.0f} | {args.records * args.value_bytes / seconds / 1e6:.2f}"

    print(
        f"{args.records:,} records of {args.value_bytes} bytes to one partition, confluent-kafka "
        f"(acks=all, linger.ms=5, no compression); median of {args.rounds} rounds; kafka-wire nodes on "
        f"the {flavour} flavour; {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d')}\n"
    )
    print("| where | replication factor | produce rec/s | produce MB/s | consume rec/s | consume MB/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row.where} | {row.replicas} | {rates(row.produce_s)} | {rates(row.consume_s)} |")
    by_where = {row.where: row for row in rows}
    for name in failovers:
        three, one = by_where[f"{name}, three-node cluster"], by_where[f"{name}, one-node cluster"]
        print(
            f"\n{name}: three nodes / one node (acks=all produce rate): {one.produce_s / three.produce_s:.2f}x"
        )
    ours, kafka = by_where["kafka-wire, three-node cluster"], by_where["kafka-4.4, three-node cluster"]
    print(
        f"kafka-wire / Kafka 4.4, three nodes: produce {kafka.produce_s / ours.produce_s:.2f}x the rate, "
        f"consume {kafka.consume_s / ours.consume_s:.2f}x the rate"
    )
    for name, samples in failovers.items():
        print(
            f"\n{name} failover (leader SIGKILLed -> first acks=all produce answered, probe every "
            f"{args.probe_ms} ms), {len(samples)} samples: median {statistics.median(samples):.2f} s, "
            f"min {min(samples):.2f} s, max {max(samples):.2f} s"
        )


if __name__ == "__main__":
    main()
