"""Replication benchmark: ``acks=all`` produce on three replicating nodes against one node, and
how long a partition is unavailable after its leader is SIGKILLed.

Not a test. Every node is a real ``kafka-wire serve`` process started by the cluster tests'
harness (``tests/cluster/harness.py``: combined mode, ``process.roles=broker,controller``,
Kafka's property names, the quick-failover settings ``broker.session.timeout.ms=3000``,
``broker.heartbeat.interval.ms=1000``), all on this machine, in one run:

* **produce**: one confluent-kafka ``Producer`` (``acks=all``, ``linger.ms=5``, no compression,
  idempotence off) sends ``--records`` records of ``--value-bytes`` bytes (no key) to partition 0
  of a fresh one-partition topic; timed from the first ``produce()`` until ``flush()`` returns
  with every delivery report in; median of ``--rounds`` rounds, each on a fresh topic. Once on
  the three-node cluster (replication factor 3, ``min.insync.replicas=2``: each acknowledgement
  waits for a follower's fetch), once on a one-node cluster (replication factor 1), and once on
  the plain single-node ``kafka-wire serve`` (no ``process.roles``). The ratio three nodes / one
  node is printed.
* **failover**: on the three-node cluster, a one-partition topic (replication factor 3); its
  leader is SIGKILLed, and a probe asks a live node for Metadata every ``--probe-ms`` and, once a
  live leader is named, sends it an ``acks=all`` Produce of one record (through kafka_wire's own
  client); the time from the kill to the first such produce answered without error is one
  sample. The node is then restarted and the test waits until it is back in the ISR. Median,
  minimum and maximum of ``--failovers`` samples.

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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.cluster.harness (the cluster processes of the tests)


from bench_broker import produce  # noqa: E402  # one acks=all producer, timed to its last report

from kafka_wire.messages import ErrorCode, ProduceRequest  # noqa: E402
from tests.cluster.harness import LocalCluster  # noqa: E402
from tests.e2e.brokers import kafka_wire  # noqa: E402


def value_of(size: int) -> bytes:
    return (b"0123456789abcdef" * (size // 16 + 1))[:size]


def cluster_produce(cluster: LocalCluster, replicas: int, args: argparse.Namespace) -> float:
    """Median produce seconds over ``args.rounds`` fresh topics of the started ``cluster``."""
    times = []
    for i in range(args.rounds):
        topic = f"bench-rf{replicas}-{i}"
        cluster.create_topic(topic, 1, replicas)
        times.append(produce(cluster.bootstrap, topic, args.records, value_of(args.value_bytes)))
    return statistics.median(times)


def single_node_produce(workdir: Path, args: argparse.Namespace) -> float:
    """The same on the plain single-node ``kafka-wire serve`` (topics made on first use)."""
    broker = kafka_wire(workdir)
    broker.start()
    try:
        times = []
        for i in range(args.rounds):
            topic = f"bench-single-{i}"
            times.append(produce(broker.bootstrap, topic, args.records, value_of(args.value_bytes)))
        return statistics.median(times)
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description="kafka-wire replication: acks=all produce on 3 nodes vs 1, and failover time"
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--failovers", type=int, default=5)
    parser.add_argument("--probe-ms", type=int, default=50)
    args = parser.parse_args()

    flavour = "compiled" if ProduceRequest._native_decoders else "pure"  # as bench_produce_fetch.py tells
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        three = LocalCluster(Path(tmp) / "three", 3)
        one = LocalCluster(Path(tmp) / "one", 1)
        try:
            three.start_all()
            three_s = cluster_produce(three, 3, args)
            failovers = failover_samples(three, args)
            three.close()
            one.start_all()
            one_s = cluster_produce(one, 1, args)
            one.close()
        finally:
            three.close()
            one.close()
        single_s = single_node_produce(Path(tmp) / "single", args)

    def rates(seconds: float) -> str:
        return f"{args.records / seconds:,.0f} | {args.records * args.value_bytes / seconds / 1e6:.2f}"

    print(
        f"{args.records:,} records of {args.value_bytes} bytes to one partition, confluent-kafka "
        f"(acks=all, linger.ms=5, no compression); median of {args.rounds} rounds; nodes on the "
        f"{flavour} flavour; {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d')}\n"
    )
    print("| where | replication factor | produce rec/s | produce MB/s |")
    print("|---|---:|---:|---:|")
    print(f"| three-node cluster | 3 | {rates(three_s)} |")
    print(f"| one-node cluster | 1 | {rates(one_s)} |")
    print(f"| single-node `kafka-wire serve` | 1 | {rates(single_s)} |")
    print(f"\nthree nodes / one node (acks=all produce rate): {one_s / three_s:.2f}x")
    print(
        f"\nfailover (leader SIGKILLed -> first acks=all produce answered, probe every {args.probe_ms} ms), "
        f"{len(failovers)} samples: median {statistics.median(failovers):.2f} s, "
        f"min {min(failovers):.2f} s, max {max(failovers):.2f} s"
    )


if __name__ == "__main__":
    main()
