"""confluent-kafka (librdkafka) as the cluster tests' idempotent acks=all producer, in its own process.

    python -m tests.cluster.confluent_producer BOOTSTRAP TOPIC COUNT NAME

The same protocol as ``java/ClusterClient.java produce``: COUNT records with values
``NAME-<n>`` and no key, sent only below the credit given on stdin (``credit N`` lines; stdin's
end gives all); one line per completed delivery, ``ack <n> <partition> <offset>`` or
``fail <n> <error>``, then ``done <acked> <failed>``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from confluent_kafka import KafkaError, Message, Producer

#: How long one produce() call may wait for room in librdkafka's queue before polling again.
POLL_S = 0.05


class Credit:
    """How many records may be sent, raised by the lines read from stdin."""

    def __init__(self) -> None:
        self._limit = 0
        self._changed = threading.Condition()

    def read(self) -> None:
        for line in sys.stdin:
            if line.startswith("credit "):
                self._set(int(line.split()[1]))
        self._set(2**62)

    def _set(self, limit: int) -> None:
        with self._changed:
            self._limit = limit
            self._changed.notify_all()

    def allows(self, n: int, timeout_s: float) -> bool:
        """Whether record ``n`` may be sent, waiting up to ``timeout_s`` for more credit."""
        with self._changed:
            if n >= self._limit:
                self._changed.wait(timeout_s)
            return n < self._limit


def main(argv: list[str]) -> int:
    bootstrap, topic, count_text, name = argv
    count = int(count_text)
    out: list[str] = []
    totals = {"acked": 0, "failed": 0}

    def report(number: int) -> Callable[[KafkaError | None, Message], None]:
        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is None:
                totals["acked"] += 1
                out.append(f"ack {number} {message.partition()} {message.offset()}\n")
            else:
                totals["failed"] += 1
                out.append(f"fail {number} {error.name()}\n")

        return on_delivery

    def flush_out() -> None:
        if out:
            sys.stdout.write("".join(out))
            sys.stdout.flush()
            out.clear()

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 120_000,
            "request.timeout.ms": 10_000,
            "retry.backoff.ms": 100,
            "topic.metadata.refresh.interval.ms": 5_000,
        }
    )
    credit = Credit()
    threading.Thread(target=credit.read, daemon=True).start()
    for n in range(count):
        while not credit.allows(n, POLL_S):  # serve delivery reports while waiting
            producer.poll(0)
            flush_out()
        while True:
            try:
                producer.produce(topic, f"{name}-{n}".encode(), on_delivery=report(n))
                break
            except BufferError:  # the local queue is full: serve delivery reports first
                producer.poll(POLL_S)
        if n % 1000 == 0:
            producer.poll(0)
            flush_out()
    while len(producer) > 0:
        producer.poll(POLL_S)
        flush_out()
    producer.flush()
    flush_out()
    sys.stdout.write(f"done {totals['acked']} {totals['failed']}\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
