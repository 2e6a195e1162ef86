"""``kafka-wire serve`` under ``kafka-wire fuzz`` while a well-behaved client keeps working.

Not a test (``tests/netfuzz/test_memory.py`` runs a short version). It starts ``kafka-wire
serve`` on a free port, a confluent-kafka producer (acks=all) and consumer (assigned partition 0
of one topic) in threads, then ``kafka-wire fuzz`` for ``--requests`` requests; every
``--sample`` seconds it reads the server's ``VmRSS`` from ``/proc/PID/status``. It prints the
RSS before the fuzzer, its peak, its value at the end, the records produced and consumed during
the run (and any client error), and the fuzzer's summary line.
Run: ``.venv/bin/python bench/netfuzz_memory.py [--requests N] [--seed S] [--json]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.brokers import kafka_wire, kafka_wire_cli  # noqa: E402

TOPIC = "well-behaved"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


@dataclass
class Result:
    requests: int
    seed: int
    fuzz_status: int = -1
    fuzz_seconds: float = 0.0
    rss_before_kib: int = 0
    rss_peak_kib: int = 0
    rss_after_kib: int = 0
    samples: list[int] = field(default_factory=list)
    produced: int = 0
    consumed: int = 0
    client_errors: list[str] = field(default_factory=list)
    fuzz_summary: str = ""


class Clients:
    """A producer and a consumer in threads, counting what gets through."""

    def __init__(self, bootstrap: str) -> None:
        import confluent_kafka as ck
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # not in its stubs' exports

        self.stop = threading.Event()
        self.produced = 0
        self.consumed = 0
        self.errors: list[str] = []
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])["well-behaved"].result(10)
        self.producer = ck.Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "error_cb": self._error}
        )
        self.consumer = ck.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "netfuzz-memory",
                "enable.auto.commit": False,
                "error_cb": self._error,
            }
        )
        self.consumer.assign([ck.TopicPartition(TOPIC, 0, 0)])
        self.threads = [
            threading.Thread(target=self._produce, daemon=True),
            threading.Thread(target=self._consume, daemon=True),
        ]

    def _error(self, err: object) -> None:
        if len(self.errors) < 20:
            self.errors.append(str(err))

    def _delivered(self, err: object, _msg: object) -> None:
        if err is None:
            self.produced += 1
        else:
            self._error(err)

    def _produce(self) -> None:
        n = 0
        while not self.stop.is_set():
            self.producer.produce(TOPIC, f"value {n}".encode(), callback=self._delivered)
            n += 1
            self.producer.poll(0.01)
        self.producer.flush(10)

    def _consume(self) -> None:
        while not self.stop.is_set():
            msg = self.consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                self.consumed += 1
        self.consumer.close()

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


def measure(requests: int, seed: int, sample_s: float = 0.5, workdir: Path | None = None) -> Result:
    result = Result(requests=requests, seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        broker = kafka_wire(workdir or Path(tmp))
        broker.start()
        stack = contextlib.ExitStack()
        try:
            assert broker.process is not None
            pid = broker.process.pid
            clients = Clients(broker.bootstrap)
            clients.start()
            stack.callback(clients.finish)
            time.sleep(2)
            result.rss_before_kib = rss_kib(pid)
            started = time.monotonic()
            produced_before, consumed_before = clients.produced, clients.consumed
            fuzz = subprocess.Popen(
                [
                    str(kafka_wire_cli()),
                    "fuzz",
                    broker.bootstrap,
                    "--requests",
                    str(requests),
                    "--seed",
                    str(seed),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            while fuzz.poll() is None and broker.running():
                result.samples.append(rss_kib(pid))
                time.sleep(sample_s)
            if not broker.running():
                result.client_errors.append(f"the server exited with status {broker.process.returncode}")
            result.fuzz_seconds = time.monotonic() - started
            result.fuzz_summary = fuzz.communicate()[0]  # also closes the pipe
            result.fuzz_status = fuzz.returncode
            result.produced = clients.produced - produced_before
            result.consumed = clients.consumed - consumed_before
            clients.finish()
            result.client_errors += clients.errors
            result.rss_after_kib = rss_kib(pid) if broker.running() else 0
            result.rss_peak_kib = max([*result.samples, result.rss_after_kib])
        finally:
            stack.close()
            broker.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--workdir", type=Path, help="keep the server's data and log here")
    args = parser.parse_args()
    result = measure(args.requests, args.seed, workdir=args.workdir)
    if args.json:
        print(json.dumps(asdict(result), indent=2))
        return
    print(
        f"fuzz: {args.requests} requests, seed {args.seed}, exit {result.fuzz_status}, {result.fuzz_seconds:.1f} s"
    )
    print(
        f"server RSS: {result.rss_before_kib / 1024:.1f} MiB before, {result.rss_peak_kib / 1024:.1f} MiB peak, "
        f"{result.rss_after_kib / 1024:.1f} MiB after ({len(result.samples)} samples)"
    )
    print(f"well-behaved client during the run: {result.produced} produced, {result.consumed} consumed")
    if result.client_errors:
        print("client errors:", *result.client_errors[:5], sep="\n  ")
    print(result.fuzz_summary)


if __name__ == "__main__":
    main()
