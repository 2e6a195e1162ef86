"""``kafka-wire fuzz`` for a long run against ``kafka-wire serve``, Apache Kafka 4.4 and Tansu.

Not a test (``tests/netfuzz/test_live_servers.py`` runs short versions). For each peer it starts
the server on a free port, watches it from a supervisor thread that starts it again on the same
port whenever it exits (as systemd would), and runs ``kafka-wire fuzz HOST:PORT --requests N
--seed S --wait-restart 300 --report build/netfuzz/PEER-seedS.json``. It prints the fuzzer's
summary for each peer, and the server's restarts.
Kafka 4.4 is one KRaft node from the jars of ``make peers`` (``tests/e2e/apache_kafka.py``); a
restart keeps its data directory, as a restarted Kafka does.
Run: ``.venv/bin/python bench/netfuzz_peers.py [--requests N] [--seed S] [--peer kafka-wire|kafka-4.4|tansu]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.apache_kafka import answers_api_versions, apache_kafka  # noqa: E402
from tests.e2e.brokers import BrokerProcess, kafka_wire, kafka_wire_cli, tansu  # noqa: E402

PEERS: dict[str, Callable[[Path], BrokerProcess]] = {
    "kafka-wire": kafka_wire,
    "kafka-4.4": apache_kafka,
    "tansu": tansu,
}


class Supervisor:
    """Starts the broker again whenever it has exited, or has not answered an ApiVersions for
    ``HUNG_S`` seconds (then it is killed first), until stopped."""

    #: Seconds without an answer to the probe (sent every ``PROBE_EVERY_S``, each waiting
    #: ``PROBE_TIMEOUT_S``) before the server counts as hung; on loopback an answer takes
    #: milliseconds.
    HUNG_S = 3.0
    PROBE_EVERY_S = 0.5
    PROBE_TIMEOUT_S = 1.0
    #: How long a start may take before it is killed and tried again (Kafka's JVM took 40 s on
    #: two loaded cores); the fuzzer waits ``WAIT_RESTART_S`` for the server to come back.
    START_TIMEOUT_S = 120.0
    WAIT_RESTART_S = 300

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.restarts = 0
        self.hung = 0
        self.failed_starts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        address = self.broker.address
        silent_since: float | None = None
        probed = time.monotonic()
        while not self._stop.wait(0.05):  # an exit is seen within 50 ms
            if self.broker.running():
                now = time.monotonic()
                if now - probed < self.PROBE_EVERY_S:
                    continue
                probed = now
                if answers_api_versions(address, self.PROBE_TIMEOUT_S):
                    silent_since = None
                    continue
                silent_since = silent_since or now
                if time.monotonic() - silent_since < self.HUNG_S:
                    continue
                self.broker.kill()
                self.hung += 1
            self.broker.stop()  # collects the exit status and the rest of its log
            silent_since = None
            try:
                self.broker.restart(self.START_TIMEOUT_S)
            except RuntimeError:  # not serving in time (a JVM on a loaded machine): again
                self.broker.kill()
                self.failed_starts += 1
            else:
                self.restarts += 1

    def __enter__(self) -> Supervisor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run(peer: str, requests: int, seed: int, extra: list[str]) -> int:
    out_dir = ROOT / "build" / "netfuzz"
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / f"{peer}-seed{seed}.json"
    with tempfile.TemporaryDirectory() as tmp:
        broker = PEERS[peer](Path(tmp))
        broker.start()
        try:
            with Supervisor(broker) as supervisor:
                started = time.monotonic()
                command = [str(kafka_wire_cli()), "fuzz", broker.bootstrap, "--requests", str(requests)]
                command += [
                    "--seed",
                    str(seed),
                    "--wait-restart",
                    str(Supervisor.WAIT_RESTART_S),
                    "--report",
                    str(report),
                    *extra,
                ]
                status = subprocess.run(command, check=False).returncode
                elapsed = time.monotonic() - started
        finally:
            broker.close()
    startup = statistics.median(broker.startups_s)
    print(
        f"{peer}: exit {status} in {elapsed:.0f} s, server restarted {supervisor.restarts} times "
        f"({supervisor.hung} killed as hung, {supervisor.failed_starts} starts too slow and killed; "
        f"median start {startup:.2f} s), report {report}"
    )
    return status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--peer", choices=sorted(PEERS), action="append", help="default: all")
    args, extra = parser.parse_known_args()
    worst = max(run(peer, args.requests, args.seed, extra) for peer in args.peer or sorted(PEERS))
    sys.exit(worst)


if __name__ == "__main__":
    main()
