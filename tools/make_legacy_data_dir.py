"""Make the data directory of a single node of the release before the one-voter node
(``tests/data/legacy-single-node/``): topics in ``kafka-wire-metadata.json``, no metadata log.

Runs ``kafka-wire serve`` from another checkout of kafka_wire (``--source``: a worktree of the
commit to record, e.g. ``git worktree add --detach /tmp/old 90b1cef``) on a fresh directory with
``offsets.topic.num.partitions=5`` (Kafka's 50 would make 50 directories), then,
with confluent-kafka (librdkafka): creates ``orders`` (3 partitions, ``retention.ms`` and
``max.message.bytes`` set) and ``events`` (1 partition, ``cleanup.policy=compact``); produces 20
keyed records to ``orders`` with an idempotent producer and 5 to ``events`` with another one (each
takes a producer id); consumes ``orders`` in group ``readers`` and commits its offsets; stops the
broker with SIGTERM. The directory is copied to ``--out`` without its empty index files
(``.index`` / ``.timeindex`` of zero bytes; the broker recreates them).

    .venv/bin/python tools/make_legacy_data_dir.py --source /tmp/old --out tests/data/legacy-single-node
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from kafka_wire.adapters.ports import free_port

TOPICS = {
    "orders": (3, {"retention.ms": "3153600000000", "max.message.bytes": "500000"}),
    "events": (1, {"cleanup.policy": "compact"}),
}


def wait_for(predicate: object, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():  # type: ignore[operator]  # a callable returning a truth value
                return
        except Exception:  # not up yet
            pass
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=f"key-{i}".encode(), value=f"{topic}-{i}".encode())
    if producer.flush(30) != 0:
        raise SystemExit(f"records to {topic} not delivered")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="checkout of the kafka_wire to record")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        env = {**os.environ, "PYTHONPATH": str(args.source.resolve()), "KAFKA_WIRE_PURE": "1"}
        command = [
            sys.executable,
            "-m",
            "kafka_wire.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        command += ["--data-dir", str(data), "--set", "offsets.topic.num.partitions=5"]
        server = subprocess.Popen(
            command,
            env=env,
            cwd=tmp,
        )
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            wait_for(lambda: admin.list_topics(timeout=1) is not None, "the broker")
            futures = admin.create_topics(
                [NewTopic(name, partitions, config=configs) for name, (partitions, configs) in TOPICS.items()]
            )
            for future in futures.values():
                future.result(30)
            produce(bootstrap, "orders", 20)
            produce(bootstrap, "events", 5)
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": "readers",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            consumer.subscribe(["orders"])
            seen = 0
            deadline = time.monotonic() + 30
            while seen < 20 and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    seen += 1
            if seen < 20:
                raise SystemExit(f"consumed {seen} of 20 records")
            consumer.commit(asynchronous=False)
            committed = consumer.committed([TopicPartition("orders", p) for p in range(3)], timeout=10)
            print("committed:", [(tp.partition, tp.offset) for tp in committed])
            consumer.close()
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
        if args.out.exists():
            shutil.rmtree(args.out)
        shutil.copytree(
            data,
            args.out,
            ignore=lambda d, names: [
                n for n in names if n.endswith((".index", ".timeindex")) and (Path(d) / n).stat().st_size == 0
            ],
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
