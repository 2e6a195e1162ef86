"""confluent-kafka (librdkafka) as the consumer of the moved-leader test, in its own process.

    python -m tests.cluster.confluent_consumer BOOTSTRAP TOPIC WARM PARTITION COUNT

The same protocol as ``java/ClusterClient.java consume-moved`` (see ``consumers.py``): the
consumer is assigned partition WARM of TOPIC from offset 0 and prints ``warm`` once it has read a
record there (its metadata now holds every partition of TOPIC); after a ``go`` line on stdin it
prints ``leader <id>``, the leader of PARTITION that its metadata names (librdkafka's statistics,
which report the client's own view), then adds PARTITION from offset 0 to its assignment and
prints ``record <offset> <value>`` for each record of PARTITION until COUNT were read, then
``done``. Errors the client reports are printed as ``error <name>``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Final

from confluent_kafka import Consumer, Message, TopicPartition

#: How long one poll waits (the test bounds the whole run with its own deadline).
POLL_S: Final = 0.2


def main(argv: list[str]) -> int:
    bootstrap, topic, warm_text, partition_text, count_text = argv
    warm, partition, count = int(warm_text), int(partition_text), int(count_text)
    stats: list[dict[str, object]] = []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"moved-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "statistics.interval.ms": 100,
            "stats_cb": lambda text: stats.append(json.loads(text)),
        }
    )

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def records_of(wanted: int) -> Iterator[Message]:
        """The records of partition ``wanted`` as they come; errors are printed."""
        while True:
            message = consumer.poll(POLL_S)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                say(f"error {error.name()}")
            elif message.partition() == wanted:
                yield message

    try:
        consumer.assign([TopicPartition(topic, warm, 0)])
        next(records_of(warm))
        say("warm")
        if sys.stdin.readline().strip() != "go":
            return 1
        stats.clear()
        while not stats:  # a statistics report made after the leader moved
            consumer.poll(POLL_S)
        partitions = stats[-1]["topics"][topic]["partitions"]  # type: ignore[index]  # librdkafka's stats JSON
        say(f"leader {partitions[str(partition)]['leader']}")
        consumer.incremental_assign([TopicPartition(topic, partition, 0)])
        for _, message in zip(range(count), records_of(partition), strict=False):
            say(f"record {message.offset()} {(message.value() or b'').decode()}")
        say("done")
        return 0
    finally:
        consumer.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
