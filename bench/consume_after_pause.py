"""Consumers in a row after a pause, against a fresh ``kafka-wire serve`` (issue 27).

Starts a fresh serve (this checkout, or ``--package DIR``), produces ``--records`` records of 100
bytes to a one-partition topic with confluent-kafka, pauses ``--pause`` seconds, then times
``--consumers`` consumers one after the other, each reading every record from offset 0 (with a
``group.id``, as ``bench_broker.py``'s consume round: the first one's FindCoordinator creates
``__consumer_offsets``). Prints one line per run: the consume seconds of each consumer.

    .venv/bin/python bench/consume_after_pause.py [--runs 3] [--package DIR] [--compiled] [--kafka]
        [--consumer-set fetch.queue.backoff.ms=0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_broker import create_topic, produce, pure_build, value_of  # noqa: E402
from confluent_kafka import Consumer, TopicPartition  # noqa: E402

from tests.e2e.apache_kafka import apache_kafka  # noqa: E402
from tests.e2e.brokers import BrokerProcess  # noqa: E402


def consume(bootstrap: str, topic: str, records: int, config: dict[str, str]) -> float:
    """Seconds for one consumer (``bench_broker.py``'s, plus ``config``) to read every record."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False, **config}
    )
    got = 0
    try:
        begin = time.monotonic()
        consumer.assign([TopicPartition(topic, 0, 0)])
        while got < records:
            if time.monotonic() - begin > 120:
                raise RuntimeError(f"consumed {got} of {records} records in 120 s")
            for msg in consumer.consume(num_messages=10000, timeout=1.0):
                if msg.error() is not None:
                    raise RuntimeError(str(msg.error()))
                got += 1
        return time.monotonic() - begin
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--pause", type=float, default=3.0)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--package", type=Path, default=ROOT, help="the kafka_wire to run (default: this checkout)"
    )
    parser.add_argument("--compiled", action="store_true", help="the compiled flavour (default: pure)")
    parser.add_argument("--kafka", action="store_true", help="Apache Kafka 4.4 instead of kafka-wire serve")
    parser.add_argument("--consumer-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a consumer property (e.g. fetch.queue.backoff.ms=0)")  # fmt: skip
    args = parser.parse_args()
    config = dict(item.split("=", 1) for item in args.consumer_set)
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="consume-after-pause-") as tmp:
            broker: BrokerProcess
            if args.kafka:
                broker = apache_kafka(Path(tmp))
            else:
                broker = pure_build(args.package)(Path(tmp))
                broker.pure = not args.compiled  # type: ignore[attr-defined]
            broker.start()
            try:
                create_topic(broker.bootstrap, "t")
                produce_s = produce(broker.bootstrap, "t", args.records, value_of(100))
                time.sleep(args.pause)  # the pause is what is measured after, not a wait for a condition
                times = [consume(broker.bootstrap, "t", args.records, config) for _ in range(args.consumers)]
            finally:
                broker.close()
        print(f"produce {produce_s:.2f} s; consumers " + " ".join(f"{t:.2f}" for t in times), flush=True)


if __name__ == "__main__":
    main()
